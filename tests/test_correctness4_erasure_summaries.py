# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Erasure reaches summaries (issue 35 item 4, ADR 0143), on SQLite and a real PostgreSQL.

A conversation is summarized by ``summarize_history`` with a model that copies what it
reads, so the summary holds a canary; the summary is stored (in a branch, and a summary
of that summary in another conversation). Erasing, deleting or pruning the canary's
message leaves no canary anywhere the owner stores it: each summary built from it (a
summary of a summary too) keeps its place and record, its text is the stand-in, its
record says ``"stale": true``, and the receipt names it. Another owner's identical
conversation keeps its summary.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from store_backends import (  # noqa: F401 (fixtures)
    OWNER,
    Backend,
    Store,
    backend,
    postgres_backend,
    sqlite_backend,
    store,
    store_database,
    user,
)

from golem_core import (
    COMPACTION_KEY,
    Message,
    ModelRequest,
    Role,
    TextPart,
    check_pairing,
    compaction_of,
    is_summary,
    message_ref,
)
from golem_shell import FunctionModel, summarize_history
from golem_shell.store import STALE_SUMMARY_TEXT, Erased, Receipt

CANARY = "canary-4b1e-erase-me"


def copier() -> FunctionModel:
    """A summarizer that copies every text it was asked to summarize."""

    def answer(request: ModelRequest) -> str:
        return " | ".join(m.text for m in request.messages[:-1])

    return FunctionModel(answer)


def turn(i: int, text: str) -> tuple[Message, Message]:
    return user(f"q{i}: {text}"), Message(Role.ASSISTANT, (TextPart(f"a{i}: noted"),))


def originals() -> tuple[Message, ...]:
    out: list[Message] = []
    for i, text in enumerate(("hello", f"my code is {CANARY}", "weather", "plans")):
        out += turn(i, text)
    return tuple(out)


def summarized(history: tuple[Message, ...]) -> tuple[Message, ...]:
    processor = summarize_history(copier(), keep_last_turns=1, step_turns=0)
    result = asyncio.run(processor(history))
    return result.unwrap()


def everything(store: Store, owner: str) -> list[Message]:
    found: list[Message] = []
    for cid in store.list_conversations_sync(owner):
        for info in store.branches_sync(owner, cid):
            found += store.load_sync(owner, cid, branch=info.name)
    return found


def holds_canary(messages: list[Message]) -> bool:
    return any(CANARY in m.text or any(CANARY in v for _, v in m.extra) for m in messages)


def setup(store: Store, owner: str) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    """c1/main: the originals; c1/compacted: their summary and the kept turn; c2/main:
    a summary of c1/compacted and a new turn. Both summaries hold the canary."""
    history = originals()
    store.append_sync(owner, "c1", history, 0)
    compacted = summarized(history)
    assert is_summary(compacted[0]) and CANARY in compacted[0].text
    store.branch_sync(owner, "c1", 0, name="compacted")
    store.append_sync(owner, "c1", compacted, 0, branch="compacted")
    second = summarized((*compacted, *turn(9, "later")))
    assert CANARY in second[0].text
    record = compaction_of(second[0])
    assert record is not None and message_ref(compacted[0]) in record.replaced
    assert message_ref(history[2]) not in record.replaced  # only through the first summary
    store.append_sync(owner, "c2", second, 0)
    return compacted, second


def assert_stale(message: Message, before: Message) -> None:
    assert message.text == STALE_SUMMARY_TEXT
    assert is_summary(message)
    raw = json.loads(dict(message.extra)[COMPACTION_KEY])
    assert raw["stale"] is True
    record, old = compaction_of(message), compaction_of(before)
    assert record is not None and old is not None and record.replaced == old.replaced


def assert_summaries(receipt: Receipt, expected: set[tuple[str, str, tuple[int, ...]]]) -> None:
    assert {(e.conversation_id, e.branch, e.positions) for e in receipt.summaries} == expected
    for entry in receipt.summaries:
        assert isinstance(entry, Erased) and entry.owner == OWNER and entry.bytes > 0


def test_erase_makes_every_summary_built_from_the_message_stale(backend: Backend) -> None:
    store = backend.open()
    compacted, second = setup(store, OWNER)
    setup(store, "bob")  # the same conversation, another owner
    receipt = store.erase_sync(OWNER, "c1", 2)  # the canary's question
    assert [(e.conversation_id, e.branch, e.positions) for e in receipt.erased] == [
        ("c1", "main", (2,))
    ]
    assert_summaries(receipt, {("c1", "compacted", (0,)), ("c2", "main", (0,))})
    assert receipt.conversations == ("c1", "c2")
    stored = everything(store, OWNER)
    assert not holds_canary(stored)
    (rows,) = backend.raw(
        "SELECT COUNT(*) FROM {M} WHERE owner = ? AND message LIKE ?", OWNER, f"%{CANARY}%"
    )
    assert rows[0] == 0
    branch = store.load_sync(OWNER, "c1", branch="compacted")
    assert_stale(branch[0], compacted[0])
    assert branch[1:] == compacted[1:]  # the kept turn is untouched
    assert not check_pairing(branch)
    assert_stale(store.load_sync(OWNER, "c2")[0], second[0])
    assert store.verify_sync(OWNER, "c1").intact and store.verify_sync(OWNER, "c2").intact
    assert holds_canary(everything(store, "bob"))  # never another owner's summaries
    again = store.erase_sync(OWNER, "c1", 2)
    assert again.erased == () and again.summaries == ()


def test_redacting_a_part_and_the_async_twin(store: Store) -> None:
    setup(store, OWNER)
    receipt = asyncio.run(
        store.erase(OWNER, "c1", lambda m: CANARY in m.text, parts=lambda p: True)
    )
    assert {e.conversation_id for e in receipt.summaries} == {"c1", "c2"}
    assert not holds_canary(everything(store, OWNER))


def test_a_summary_not_built_from_the_message_is_kept(store: Store) -> None:
    compacted, second = setup(store, OWNER)
    receipt = store.erase_sync(OWNER, "c2", 2)  # c2's newest answer: in no summary
    assert receipt.summaries == () and len(receipt.erased) == 1
    assert store.load_sync(OWNER, "c1", branch="compacted")[0] == compacted[0]
    assert store.load_sync(OWNER, "c2")[0] == second[0]


def test_delete_makes_summaries_elsewhere_stale(store: Store) -> None:
    history = originals()
    store.append_sync(OWNER, "c1", history, 0)
    compacted = summarized(history)
    store.append_sync(OWNER, "c2", compacted, 0)  # the compacted history, kept apart
    receipt = store.delete_sync(OWNER, "c1")
    assert_summaries(receipt, {("c2", "main", (0,))})
    assert not holds_canary(everything(store, OWNER))
    assert_stale(store.load_sync(OWNER, "c2")[0], compacted[0])


def test_delete_spares_a_summary_whose_messages_a_fork_still_holds(store: Store) -> None:
    history = originals()
    store.append_sync(OWNER, "c1", history, 0)
    store.fork_sync(OWNER, "c1", len(history), "f")  # f gets its own copy on delete
    compacted = summarized(history)
    store.branch_sync(OWNER, "f", 0, name="compacted")
    store.append_sync(OWNER, "f", compacted, 0, branch="compacted")
    receipt = store.delete_sync(OWNER, "c1")
    assert receipt.summaries == ()
    assert store.load_sync(OWNER, "f", branch="compacted")[0] == compacted[0]


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_prune_makes_summaries_elsewhere_stale(backend: Backend) -> None:
    clock = Clock()
    store = backend.open(clock=clock)
    history = originals()
    store.append_sync(OWNER, "old", history, 0)
    clock.now += 3600
    compacted = summarized(history)
    store.append_sync(OWNER, "new", compacted, 0)
    receipt = store.prune_sync(older_than=datetime.fromtimestamp(1_700_000_060, UTC))
    assert {e.conversation_id for e in receipt.erased} == {"old"}
    assert_summaries(receipt, {("new", "main", (0,))})
    assert store.list_conversations_sync(OWNER) == ("new",)
    assert not holds_canary(everything(store, OWNER))


def test_erase_drops_a_provider_compaction_item_built_from_the_message(store: Store) -> None:
    """OpenAI's ``/responses/compact`` returns an encrypted compaction item: a summary no
    one can read or rewrite. Erasing a message it was built from must not leave it to
    be sent back: the stale summary keeps its place and record, and the item is gone."""
    from golem_core import SUMMARY_KEY, CompactionRecord, with_compaction
    from golem_core.wire.openai_responses import COMPACTION_CONTENT_KEY, compaction_part

    history = originals()
    folded = history[:6]  # the canary's turn among them
    item = compaction_part("cmp_1", f"gAAAAB-encrypted-{CANARY}")  # what the server folded
    marker = Message(
        Role.ASSISTANT,
        (item,),
        provider="openai",
        endpoint="responses",
        extra=((SUMMARY_KEY, '{"messages":0}'),),
    )
    record = CompactionRecord(
        "native_compaction(OpenAIResponsesModel)",
        replaced=tuple(message_ref(m) for m in folded),
    )
    compacted = (with_compaction(marker, record), *history[6:])
    store.append_sync(OWNER, "c1", history, 0)
    store.branch_sync(OWNER, "c1", 0, name="compacted")
    store.append_sync(OWNER, "c1", compacted, 0, branch="compacted")

    receipt = store.erase_sync(OWNER, "c1", 2)  # the canary's question
    assert_summaries(receipt, {("c1", "compacted", (0,))})
    (stale, *rest) = store.load_sync(OWNER, "c1", branch="compacted")
    assert_stale(stale, compacted[0])
    assert all(COMPACTION_CONTENT_KEY not in dict(p.extra) for p in stale.parts)
    assert not holds_canary(everything(store, OWNER))
    assert check_pairing((stale, *rest)) == ()
