# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Erasure, deletion and retention, with receipts, on SQLite and a real PostgreSQL.

``delete`` erases the bytes: on SQLite a planted canary is no longer anywhere in the
database file or its WAL; on PostgreSQL the rows are gone and the tables vacuumed.
``erase`` leaves a valid history (a tool call stays paired, its result says the content
was erased) in every branch and fork sharing the message. Retention drops conversations
older than a date, or all but the newest N per owner.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from store_backends import (  # noqa: F401 (fixtures)
    KEY,
    OWNER,
    Backend,
    Store,
    backend,
    postgres_backend,
    sqlite_backend,
    store,
    store_database,
    texts,
    user,
)

from golem_core import (
    COMPACTION_KEY,
    DataPart,
    Message,
    ModelRequest,
    Role,
    TextPart,
    ToolCallPart,
    check_pairing,
    compaction_of,
    encode_message,
    is_summary,
    message_ref,
)
from golem_shell import FunctionModel, UsageError, summarize_history
from golem_shell.store import (
    ERASED_RESULT_TEXT,
    ERASED_TEXT,
    MAIN,
    STALE_SUMMARY_TEXT,
    Erased,
    HistoryNotFound,
    Receipt,
)

CANARY = "canary-7f3a91c2-do-not-keep"


def tool_turn(secret: str) -> tuple[Message, ...]:
    return (
        user(f"look up {secret}"),
        Message(
            Role.ASSISTANT,
            (TextPart("let me check"), ToolCallPart("call_1", "lookup", f'{{"q": "{secret}"}}')),
        ),
        Message(
            Role.TOOL, (TextPart(f"found {secret}"),), tool_call_id="call_1", tool_name="lookup"
        ),
        Message(Role.ASSISTANT, (TextPart(f"the answer is {secret}"),)),
    )


def _files(backend: Backend) -> bytes:
    path = Path(backend.target)
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


# -- delete ---------------------------------------------------------------------------------


def test_delete_overwrites_the_bytes_in_the_sqlite_file(sqlite_backend: Backend) -> None:
    store = sqlite_backend.open()
    store.append_sync(OWNER, "keep", [user("unrelated " * 50)], 0)
    store.append_sync(OWNER, "doomed", [user(f"{CANARY} " * 20), *tool_turn(CANARY)], 0)
    branch = store.branch_sync(OWNER, "doomed", 2)
    store.append_sync(OWNER, "doomed", [user(f"branch {CANARY}")], 2, branch=branch)
    assert CANARY.encode() in _files(sqlite_backend)  # planted: it is there
    receipt = store.delete_sync(OWNER, "doomed")
    assert CANARY.encode() not in _files(sqlite_backend)  # file and WAL
    assert receipt.action == "delete" and receipt.conversations == ("doomed",)
    assert {(e.branch, e.positions) for e in receipt.erased} == {
        (MAIN, (0, 1, 2, 3, 4)),
        (branch, (0, 1, 2)),
    }
    assert receipt.bytes > 20 * len(CANARY)
    assert receipt.at.tzinfo is UTC
    assert store.load_sync(OWNER, "doomed") == () and store.branches_sync(OWNER, "doomed") == ()
    assert store.list_conversations_sync(OWNER) == ("keep",)


def test_delete_on_postgres_removes_the_rows_and_vacuums(postgres_backend: Backend) -> None:
    backend = postgres_backend
    store = backend.open()
    store.append_sync(OWNER, "doomed", [user(CANARY), *tool_turn(CANARY)], 0)
    store.append_sync(OWNER, "keep", [user("fine")], 0)
    store.delete_sync(OWNER, "doomed")
    for table in ("{M}", "{B}", "{C}"):
        assert backend.raw(f"SELECT COUNT(*) FROM {table} WHERE conversation_id = 'doomed'") == [
            (0,)
        ]
    assert backend.raw("SELECT COUNT(*) FROM {M} WHERE message LIKE ?", f"%{CANARY}%") == [(0,)]
    messages = f"{backend.table}_messages"
    vacuums = 0
    for _ in range(100):  # statistics reach pg_stat_user_tables shortly after (bounded poll)
        ((vacuums,),) = backend.raw(
            "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = ?", messages
        )
        if vacuums:
            break
        time.sleep(0.05)
    assert vacuums >= 1


def test_delete_of_nothing_is_an_empty_receipt(store: Store) -> None:
    assert store.delete_sync(OWNER, "never-stored").erased == ()


# -- erase ------------------------------------------------------------------------------------


def test_erase_a_tool_result_keeps_the_history_valid(store: Store, backend: Backend) -> None:
    store.append_sync(OWNER, "c", tool_turn(CANARY), 0)
    receipt = store.erase_sync(OWNER, "c", [1, 2])  # the call and its result
    history = store.load_sync(OWNER, "c")
    assert check_pairing(history) == ()
    call, result = history[1], history[2]
    assert [type(p).__name__ for p in call.parts] == ["TextPart", "ToolCallPart"]
    assert call.parts[0] == TextPart(ERASED_TEXT)
    (erased_call,) = call.tool_calls
    assert (erased_call.id, erased_call.name, erased_call.arguments) == ("call_1", "lookup", "{}")
    assert result.tool_call_id == "call_1" and result.text == ERASED_RESULT_TEXT
    assert json.loads(encode_message(result))["erased"] is True
    assert texts(history)[3] == f"the answer is {CANARY}"  # position 3 was not selected
    assert receipt.action == "erase"
    assert receipt.erased == (Erased(OWNER, "c", MAIN, (1, 2), receipt.bytes),)
    assert receipt.bytes > 0
    assert store.verify_sync(OWNER, "c").intact  # re-chained and re-signed
    assert backend.raw("SELECT COUNT(*) FROM {M} WHERE message LIKE ?", "%found canary%") == [(0,)]


def test_erase_reaches_every_branch_and_fork_sharing_the_message(store: Store) -> None:
    store.append_sync(OWNER, "c", [user("hello"), user(f"my card is {CANARY}"), user("ok")], 0)
    edit = store.branch_sync(OWNER, "c", 2)
    store.append_sync(OWNER, "c", [user("edited")], 2, branch=edit)
    early = store.branch_sync(OWNER, "c", 1)  # does not share position 1
    store.append_sync(OWNER, "c", [user("other")], 1, branch=early)
    store.fork_sync(OWNER, "c", 3, "fork", branch=edit)
    store.append_sync(OWNER, "fork", [user("forked on")], 3)
    receipt = store.erase_sync(OWNER, "c", lambda m: CANARY in m.text)
    views = {(e.conversation_id, e.branch): e.positions for e in receipt.erased}
    assert views == {("c", MAIN): (1,), ("c", edit): (1,), ("fork", MAIN): (1,)}
    for cid, branch in [("c", MAIN), ("c", edit), ("fork", MAIN)]:
        loaded = store.load_sync(OWNER, cid, branch=branch)
        assert loaded[1].text == ERASED_TEXT and CANARY not in "".join(texts(loaded))
    assert texts(store.load_sync(OWNER, "fork")) == ["hello", ERASED_TEXT, "edited", "forked on"]
    assert texts(store.load_sync(OWNER, "c", branch=early)) == ["hello", "other"]
    assert store.verify_sync(OWNER, "c").intact and store.verify_sync(OWNER, "fork").intact
    assert store.append_sync(OWNER, "fork", [user("after")], 4) == 5  # the chain goes on


def test_redact_only_some_parts(store: Store) -> None:
    photo = DataPart(data=CANARY.encode(), kind="image", media_type="image/png")
    store.append_sync(OWNER, "c", [Message(Role.USER, (TextPart("my id card"), photo))], 0)
    receipt = store.erase_sync(OWNER, "c", 0, parts=lambda p: isinstance(p, DataPart))
    (message,) = store.load_sync(OWNER, "c")
    assert message.parts == (TextPart("my id card"), TextPart(ERASED_TEXT))
    assert receipt.erased[0].positions == (0,)
    again = store.erase_sync(OWNER, "c", 0, parts=lambda p: isinstance(p, DataPart))
    assert again.erased == ()  # nothing left to erase: idempotent


def test_erase_overwrites_the_bytes_in_the_sqlite_file(sqlite_backend: Backend) -> None:
    store = sqlite_backend.open()
    store.append_sync(OWNER, "c", [user("keep me"), user(f"{CANARY} " * 30), user("me too")], 0)
    store.erase_sync(OWNER, "c", 1)
    assert CANARY.encode() not in _files(sqlite_backend)
    assert texts(store.load_sync(OWNER, "c")) == ["keep me", ERASED_TEXT, "me too"]


def test_erase_refuses_bad_requests(store: Store) -> None:
    store.append_sync(OWNER, "c", [user("0")], 0)
    with pytest.raises(UsageError, match=r"cannot erase position 1 .* it has 1 message$"):
        store.erase_sync(OWNER, "c", 1)
    with pytest.raises(UsageError, match="positions or a predicate"):
        store.erase_sync(OWNER, "c", "0")  # type: ignore[arg-type]
    with pytest.raises(HistoryNotFound, match="branch 'b9'"):
        store.erase_sync(OWNER, "c", 0, branch="b9")
    assert texts(store.load_sync(OWNER, "c")) == ["0"]


# -- retention --------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_prune_older_than_a_date_and_newest_n_per_owner(backend: Backend) -> None:
    clock = Clock()
    store = backend.open(clock=clock)
    for owner in (OWNER, "bob"):
        for i in range(5):
            clock.now += 60
            store.append_sync(owner, f"c{i}", [user(f"{owner} {i}")], 0)
    clock.now += 60
    store.append_sync(OWNER, "c0", [user("c0 is active again")], 1)  # now alice's newest
    cutoff = datetime.fromtimestamp(1_700_000_000 + 60 * 7 + 1, UTC)  # bob's c0, c1 older
    receipt = store.prune_sync(owner="bob", older_than=cutoff)
    assert receipt.action == "prune"
    assert {(e.owner, e.conversation_id) for e in receipt.erased} == {("bob", "c0"), ("bob", "c1")}
    assert store.list_conversations_sync("bob") == ("c2", "c3", "c4")
    assert store.list_conversations_sync(OWNER) == ("c0", "c1", "c2", "c3", "c4")
    receipt = store.prune_sync(keep_newest=2)  # every owner
    assert store.list_conversations_sync(OWNER) == ("c0", "c4")
    assert store.list_conversations_sync("bob") == ("c3", "c4")
    assert {e.conversation_id for e in receipt.erased if e.owner == OWNER} == {"c1", "c2", "c3"}
    assert texts(store.load_sync(OWNER, "c0")) == ["alice 0", "c0 is active again"]


def test_prune_refuses_bad_requests(store: Store) -> None:
    with pytest.raises(UsageError, match="older_than=, keep_newest= or both"):
        store.prune_sync()
    with pytest.raises(UsageError, match="timezone-aware"):
        store.prune_sync(older_than=datetime(2020, 1, 1))
    with pytest.raises(UsageError, match="keep_newest must be an int >= 0"):
        store.prune_sync(keep_newest=-1)


def test_erase_rechains_branches_of_forks_at_the_same_point(store: Store) -> None:
    """Found by the state machine: a branch of a fork, both at 1, after erasing position 0
    of the source: the branch's head must be re-signed over the new link too."""
    store.append_sync(OWNER, "a", [user("0"), user("1")], 0)
    store.fork_sync(OWNER, "a", 1, "f")
    branch = store.branch_sync(OWNER, "f", 1)
    store.erase_sync(OWNER, "a", 0)
    assert store.verify_sync(OWNER, "f").intact
    assert store.load_sync(OWNER, "f", branch=branch)[0].text == ERASED_TEXT
    nothing = store.erase_sync(OWNER, "a", [1], parts=lambda p: not isinstance(p, TextPart))
    assert nothing.erased == ()  # no part selected: the message is left as it is


# -- erasure reaches summaries (correctness round 4) ---------------------------------------
# Erasure reaches summaries (issue 35 item 4, ADR 0143), on SQLite and a real PostgreSQL.
#
# A conversation is summarized by ``summarize_history`` with a model that copies what it
# reads, so the summary holds a canary; the summary is stored (in a branch, and a summary
# of that summary in another conversation). Erasing, deleting or pruning the canary's
# message leaves no canary anywhere the owner stores it: each summary built from it (a
# summary of a summary too) keeps its place and record, its text is the stand-in, its
# record says ``"stale": true``, and the receipt names it. Another owner's identical
# conversation keeps its summary.


SUMMARY_CANARY = "canary-4b1e-erase-me"


def copier() -> FunctionModel:
    """A summarizer that copies every text it was asked to summarize."""

    def answer(request: ModelRequest) -> str:
        return " | ".join(m.text for m in request.messages[:-1])

    return FunctionModel(answer)


def turn(i: int, text: str) -> tuple[Message, Message]:
    return user(f"q{i}: {text}"), Message(Role.ASSISTANT, (TextPart(f"a{i}: noted"),))


def originals() -> tuple[Message, ...]:
    out: list[Message] = []
    for i, text in enumerate(("hello", f"my code is {SUMMARY_CANARY}", "weather", "plans")):
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
    return any(
        SUMMARY_CANARY in m.text or any(SUMMARY_CANARY in v for _, v in m.extra) for m in messages
    )


def setup(store: Store, owner: str) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    """c1/main: the originals; c1/compacted: their summary and the kept turn; c2/main:
    a summary of c1/compacted and a new turn. Both summaries hold the canary."""
    history = originals()
    store.append_sync(owner, "c1", history, 0)
    compacted = summarized(history)
    assert is_summary(compacted[0]) and SUMMARY_CANARY in compacted[0].text
    store.branch_sync(owner, "c1", 0, name="compacted")
    store.append_sync(owner, "c1", compacted, 0, branch="compacted")
    second = summarized((*compacted, *turn(9, "later")))
    assert SUMMARY_CANARY in second[0].text
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
        "SELECT COUNT(*) FROM {M} WHERE owner = ? AND message LIKE ?", OWNER, f"%{SUMMARY_CANARY}%"
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
        store.erase(OWNER, "c1", lambda m: SUMMARY_CANARY in m.text, parts=lambda p: True)
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
    item = compaction_part("cmp_1", f"gAAAAB-encrypted-{SUMMARY_CANARY}")  # what the server folded
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


# -- an SQLite erase does not wait for a reader (correctness round 4, issue 33 item 10) ----


def test_an_sqlite_erase_does_not_wait_for_a_reader(sqlite_backend: Backend) -> None:
    """Another connection holds a read transaction (its snapshot still needs the WAL): the
    erase commits and returns without waiting for it (before: the whole busy timeout, 30 s
    by default, here an hour); the WAL is emptied at the store's next operation after the
    reader ends."""
    canary = "canary-33-10-do-not-keep"
    store = sqlite_backend.open(timeout=3600)
    store.append_sync(OWNER, "c", [user("keep"), user(f"{canary} " * 30)], 0)
    reader = sqlite3.connect(sqlite_backend.target, isolation_level=None)
    finished = threading.Event()
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM " + sqlite_backend.table + "_messages").fetchall()

        def erase() -> None:
            store.erase_sync(OWNER, "c", 1)
            finished.set()

        eraser = threading.Thread(target=erase, daemon=True)
        eraser.start()
        assert finished.wait(120), "erase waited for the reader's transaction"
        assert texts(store.load_sync(OWNER, "c")) == ["keep", ERASED_TEXT]
    finally:
        reader.execute("COMMIT")
        reader.close()
    store.list_conversations_sync(OWNER)  # the next operation finishes the checkpoint
    path = Path(sqlite_backend.target)
    assert canary.encode() not in b"".join(
        p.read_bytes() for p in path.parent.glob(path.name + "*")
    )
