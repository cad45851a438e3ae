# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Windowed loads (issue 34 item 3, ADR 0107), on SQLite and a real PostgreSQL.

``load_window(last=, low_water=)`` reads the newest part of a branch, from a step point
of ``trim_history(last, low_water=...)`` back: the processor returns from the window
exactly what it returns from the whole branch, the window is bounded and cache-stable,
the rows before it are never read (deleting them does not change it), and what it reads
is verified against the signed head: altered, removed, reordered rows, an erased row
restored, a forged head or a truncated branch raise ``CorruptHistoryError``. Branches
(a window reaching into the parent), erasure and encryption keep their guarantees.
"""

from __future__ import annotations

import asyncio

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
    HistoryProcessor,
    Message,
    ModelRequest,
    Role,
    TextPart,
    ToolCallPart,
    approximate_tokens,
    budget_history,
    check_pairing,
    compose,
    drop_thinking,
    message_window,
    trim_history,
)
from golem_shell import Agent, FunctionModel, UsageError
from golem_shell.store import (
    CorruptHistoryError,
    EncryptionKeys,
    HistoryNotFound,
    Window,
)
from golem_shell.store._window import window_start


def turns(n: int, tag: str = "m") -> list[Message]:
    """``n`` messages of a conversation with tool exchanges (so cuts need the opening rule)."""
    out: list[Message] = []
    k = 0
    while len(out) < n:
        out.append(user(f"{tag}{k} question"))
        if k % 3 == 1:
            call = f"call_{tag}_{k}"
            out.append(Message(Role.ASSISTANT, (ToolCallPart(call, "look", '{"q": 1}'),)))
            out.append(Message(Role.TOOL, (TextPart(f"{tag}{k} result"),), tool_call_id=call))
        out.append(Message(Role.ASSISTANT, (TextPart(f"{tag}{k} answer"),)))
        k += 1
    return out[:n]


def budgeted(last: int, max_tokens: int, low_water: int | None = None) -> HistoryProcessor:
    return compose(
        trim_history(last, low_water=low_water), budget_history(approximate_tokens, max_tokens)
    )


def same_as_whole(store: Store, cid: str, last: int, low_water: int | None, branch: str) -> Window:
    processor = trim_history(last, low_water=low_water)
    whole = store.load_sync(OWNER, cid, branch=branch)
    window = store.load_window_sync(OWNER, cid, last=last, low_water=low_water, branch=branch)
    assert window.length == len(whole)
    assert window.messages == whole[window.start :]
    assert processor(window.messages) == processor(whole), (len(whole), window.start)
    return window


# -- the window -------------------------------------------------------------------------


@pytest.mark.parametrize(("last", "low_water"), [(40, None), (40, 30), (40, 40), (7, 1)])
def test_the_processor_returns_from_the_window_what_it_returns_from_the_whole(
    backend: Backend, last: int, low_water: int | None
) -> None:
    store = backend.open(signing_keys=KEY)
    history = turns(200)
    stored = 0
    previous: Window | None = None
    step = last - (low_water if low_water is not None else last - last // 2)
    for n in (*range(0, 60), *range(60, 200, 7)):
        store.append_sync(OWNER, "c", history[stored:n], stored)
        stored = n
        window = same_as_whole(store, "c", last, low_water, "main")
        assert len(window.messages) <= last + max(step, 1)
        if n > last:
            assert len(window.messages) > last  # so the processor cuts, as on the whole
        if previous is not None and window.start == previous.start:
            # cache-stable: the same start, the previous window plus the new messages
            assert window.messages[: len(previous.messages)] == previous.messages
        previous = window


def test_the_start_moves_once_per_step() -> None:
    starts = [window_start(n, 100, 50) for n in range(0, 1000)]
    assert starts[:101] == [0] * 101
    moves = [n for n in range(1, 1000) if starts[n] != starts[n - 1]]
    assert moves == list(range(151, 1000, 50))
    assert all(s % 50 == 0 for s in starts)
    assert [window_start(n, 10, 10) for n in (10, 11, 12)] == [0, 0, 1]  # sliding window


def test_rows_before_the_window_are_never_read(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", turns(500), 0)
    before = store.load_window_sync(OWNER, "c", last=100)
    assert (before.start, before.length, before.omitted) == (350, 500, 350)
    backend.raw("DELETE FROM {M} WHERE position < ?", before.start - 1)
    assert store.load_window_sync(OWNER, "c", last=100) == before
    with pytest.raises(CorruptHistoryError):
        store.load_sync(OWNER, "c")  # the whole load needs them


def test_sync_and_async_give_the_same_window(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", turns(300), 0)

    async def load() -> Window:
        return await store.load_window(OWNER, "c", last=64, keep_first=1)

    assert asyncio.run(load()) == store.load_window_sync(OWNER, "c", last=64, keep_first=1)


def test_nothing_stored_and_other_owners(backend: Backend) -> None:
    store = backend.open()
    empty = store.load_window_sync(OWNER, "none", last=10)
    assert (empty.messages, empty.length, empty.start, empty.head) == ((), 0, 0, None)
    store.append_sync(OWNER, "c", turns(30), 0)
    assert store.load_window_sync("bob", "c", last=10).messages == ()
    with pytest.raises(HistoryNotFound):
        store.load_window_sync(OWNER, "c", last=10, branch="nope")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"last": 0}, "last"),
        ({"last": True}, "last"),
        ({"last": 10, "low_water": 11}, "low_water"),
        ({"last": 10, "low_water": 0}, "low_water"),
        ({"last": 10, "keep_first": -1}, "keep_first"),
    ],
)
def test_bad_arguments_are_refused_by_name(args: dict[str, int], message: str) -> None:
    from golem_shell.store import SQLiteHistoryStore

    with SQLiteHistoryStore() as store, pytest.raises(UsageError, match=message):
        store.load_window_sync(OWNER, "c", **args)


def test_pinned_first_messages(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    history = turns(400)
    store.append_sync(OWNER, "c", history, 0)
    window = store.load_window_sync(OWNER, "c", last=100, keep_first=2)
    assert window.pinned == 2 and window.omitted == window.start - 2
    assert window.messages == (*history[:2], *history[window.start :])
    small = store.load_window_sync(OWNER, "c", last=1000, keep_first=5)  # all fits
    assert (small.pinned, small.start, small.messages) == (0, 0, tuple(history))
    backend.raw("UPDATE {M} SET message = ? WHERE position = 1", '{"role":"user","parts":[]}')
    with pytest.raises(CorruptHistoryError, match=r"position 1: .*seal"):
        store.load_window_sync(OWNER, "c", last=100, keep_first=2)
    assert store.load_window_sync(OWNER, "c", last=100).start == window.start  # not read


# -- verification against the signed head ---------------------------------------------------


def _stored(backend: Backend) -> Store:
    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", turns(300), 0)
    return store


def test_an_altered_row_in_the_window_is_refused(backend: Backend) -> None:
    store = _stored(backend)
    start = store.load_window_sync(OWNER, "c", last=100).start
    backend.raw(
        "UPDATE {M} SET message = ? WHERE position = ?",
        '{"role":"user","parts":[{"kind":"text","text":"forged"}]}', start + 5,
    )  # fmt: skip
    with pytest.raises(CorruptHistoryError, match=f"position {start + 5}: .*seal"):
        store.load_window_sync(OWNER, "c", last=100)


def test_a_removed_or_reordered_row_is_refused(backend: Backend) -> None:
    store = _stored(backend)
    start = store.load_window_sync(OWNER, "c", last=100).start
    a, b = start + 3, start + 4
    rows = {
        p: backend.raw("SELECT message, seal, link FROM {M} WHERE position = ?", p)[0]
        for p in (a, b)
    }
    for p, q in ((a, b), (b, a)):
        backend.raw(
            "UPDATE {M} SET message = ?, seal = ?, link = ? WHERE position = ?", *rows[q], p
        )
    with pytest.raises(CorruptHistoryError, match=f"position {a}: .*link"):
        store.load_window_sync(OWNER, "c", last=100)
    for p in (a, b):
        backend.raw(
            "UPDATE {M} SET message = ?, seal = ?, link = ? WHERE position = ?", *rows[p], p
        )
    store.load_window_sync(OWNER, "c", last=100)  # restored: verifies again
    backend.raw("DELETE FROM {M} WHERE position = ?", b)
    with pytest.raises(CorruptHistoryError, match=f"position {b}: cannot load: no row"):
        store.load_window_sync(OWNER, "c", last=100)


def test_the_row_before_the_window_must_lead_to_the_head(backend: Backend) -> None:
    store = _stored(backend)
    start = store.load_window_sync(OWNER, "c", last=100).start
    other = backend.raw("SELECT link FROM {M} WHERE position = ?", start - 7)[0][0]
    backend.raw("UPDATE {M} SET link = ? WHERE position = ?", other, start - 1)
    with pytest.raises(CorruptHistoryError, match=f"position {start}: .*link"):
        store.load_window_sync(OWNER, "c", last=100)


def test_a_truncated_branch_or_a_forged_head_is_refused(backend: Backend) -> None:
    store = _stored(backend)
    backend.raw("DELETE FROM {M} WHERE position = 299")
    with pytest.raises(CorruptHistoryError, match=r"position 299: .*signed head says 300"):
        store.load_window_sync(OWNER, "c", last=100)
    backend.raw("UPDATE {B} SET length = 299, link = (SELECT link FROM {M} WHERE position = 298)")
    with pytest.raises(CorruptHistoryError, match="signed head does not verify"):
        store.load_window_sync(OWNER, "c", last=100)


def test_an_erased_row_restored_from_a_backup_is_refused(backend: Backend) -> None:
    store = _stored(backend)
    window = store.load_window_sync(OWNER, "c", last=100)
    secret = window.start + 10
    before = backend.raw("SELECT message, seal, link FROM {M} WHERE position = ?", secret)[0]
    store.erase_sync(OWNER, "c", [secret])
    erased = store.load_window_sync(OWNER, "c", last=100)
    assert erased.messages[10].text == "[erased]" and erased.start == window.start
    assert erased.head is not None and window.head is not None
    assert erased.head.revision > window.head.revision
    backend.raw(
        "UPDATE {M} SET message = ?, seal = ?, link = ? WHERE position = ?", *before, secret
    )
    with pytest.raises(CorruptHistoryError, match=f"position {secret + 1}: .*link"):
        store.load_window_sync(OWNER, "c", last=100)


# -- branches, forks, encryption ------------------------------------------------------------


def test_a_branch_window_reaches_into_its_parent(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    history = turns(300)
    store.append_sync(OWNER, "c", history, 0)
    edit = store.branch_sync(OWNER, "c", 280)
    store.append_sync(OWNER, "c", turns(30, "b"), 280, branch=edit)
    window = same_as_whole(store, "c", 100, None, edit)
    assert window.start < 280 < window.length  # read from the parent's rows, then its own
    store.fork_sync(OWNER, "c", 290, "f", branch=edit)
    store.append_sync(OWNER, "f", turns(5, "f"), 290)
    window = same_as_whole(store, "f", 100, None, "main")
    assert window.start < 280
    store.erase_sync(OWNER, "c", [window.start + 2])  # shared: the fork sees the tombstone
    assert store.load_window_sync(OWNER, "f", last=100).messages[2].text == "[erased]"
    store.delete_sync(OWNER, "c")  # the fork keeps its own copy, and still verifies
    assert (
        store.load_window_sync(OWNER, "f", last=100).messages
        == window.messages[:2] + (store.load_sync(OWNER, "f")[window.start + 2 :])
    )


def test_an_encrypted_window_decrypts_and_verifies(backend: Backend) -> None:
    pytest.importorskip("cryptography")
    keys = EncryptionKeys({"k1": b"0" * 32}, current="k1")
    store = backend.open(signing_keys=KEY, encryption=keys)
    store.append_sync(OWNER, "c", turns(250), 0)
    window = same_as_whole(store, "c", 64, None, "main")
    assert window.start > 0
    assert "question" not in str(backend.raw("SELECT message FROM {M}"))


# -- the documented pattern ------------------------------------------------------------------


@pytest.mark.parametrize(
    "processor",
    [trim_history(60), budgeted(80, 150), budget_history(approximate_tokens, 150)],
    ids=["trim", "trim-then-budget", "budget"],
)
def test_the_agent_pattern_sends_what_the_whole_history_sends(
    backend: Backend, processor: HistoryProcessor
) -> None:
    """Turn after turn, an agent run on the window (passed back as ``after=``) sends the
    very requests it sends run on the whole branch, and stores the same messages."""
    seen: list[tuple[Message, ...]] = []

    def model(request: ModelRequest) -> str:
        seen.append(request.messages)
        asked = request.messages[-1].text  # "q<turn>": answers of varied lengths
        return f"answer to {asked} " + "words " * (int(asked[1:]) * 5 % 7)

    agent = Agent(FunctionModel(model), history_processor=processor)
    whole_store, window_store = (
        backend.open(signing_keys=KEY),
        backend.open(signing_keys=KEY, table=backend.table + "_w"),
    )
    for s in (whole_store, window_store):
        s.append_sync(OWNER, "c", turns(200), 0)  # ends with a whole exchange
    window: Window | None = None
    for turn in range(14):
        history = whole_store.load_sync(OWNER, "c")
        result = agent.run_with_history_sync(history, f"q{turn}", conversation_id="c")
        whole_store.append_sync(OWNER, "c", result.new_messages, len(history))
        window = window_store.load_window_sync(
            OWNER, "c", processor=agent.history_processor, after=window
        )
        result = agent.run_with_history_sync(window.messages, f"q{turn}", conversation_id="c")
        window_store.append_sync(OWNER, "c", result.new_messages, window.length)
        sent_whole, sent_window = seen[-2], seen[-1]
        assert [(m.role, m.text) for m in sent_whole] == [(m.role, m.text) for m in sent_window]
    assert texts(whole_store.load_sync(OWNER, "c")) == texts(window_store.load_sync(OWNER, "c"))
    assert check_pairing(window_store.load_sync(OWNER, "c")) == ()


def test_the_last_row_restored_from_a_backup_is_refused(backend: Backend) -> None:
    store = _stored(backend)
    before = backend.raw("SELECT message, seal, link FROM {M} WHERE position = 299")[0]
    store.erase_sync(OWNER, "c", [299])
    assert store.load_window_sync(OWNER, "c", last=100).messages[-1] != turns(300)[-1]
    backend.raw("UPDATE {M} SET message = ?, seal = ?, link = ? WHERE position = 299", *before)
    with pytest.raises(CorruptHistoryError, match="not the one the signed head ends with"):
        store.load_window_sync(OWNER, "c", last=100)


# -- a token budget with a bounded load: the processor names the window ---------------------


@pytest.mark.parametrize(("last", "low_water", "max_tokens"), [(40, None, 60), (24, 24, 400)])
def test_a_budget_behind_a_trim_returns_from_the_window_what_it_returns_from_the_whole(
    backend: Backend, last: int, low_water: int | None, max_tokens: int
) -> None:
    store = backend.open(signing_keys=KEY)
    history = turns(160)
    processor = budgeted(last, max_tokens, low_water)
    stored = 0
    for n in (*range(0, 50), *range(50, 160, 9)):
        store.append_sync(OWNER, "c", history[stored:n], stored)
        stored = n
        whole = store.load_sync(OWNER, "c")
        window = store.load_window_sync(OWNER, "c", processor=processor)
        assert window == store.load_window_sync(OWNER, "c", last=last, low_water=low_water)
        assert window.messages == whole[window.start :]
        assert processor(window.messages) == processor(whole), n


def test_processor_names_the_window_of_a_trim_or_a_compose_that_starts_with_one() -> None:
    assert message_window(trim_history(40)) == (40, 20)
    assert message_window(trim_history(40, low_water=40)) == (40, 40)
    assert message_window(budgeted(30, 900, low_water=10)) == (30, 10)
    assert message_window(compose(trim_history(9), compose(drop_thinking))) == (9, 5)
    assert message_window(budget_history(approximate_tokens, 900)) is None
    assert message_window(compose(budget_history(approximate_tokens, 9), trim_history(9))) is None
    assert message_window(compose()) is None
    assert message_window(lambda history: history) is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "pass last= .* or processor="),
        ({"processor": trim_history(9), "last": 9}, "not both"),
        ({"processor": trim_history(9), "low_water": 3}, "not both"),
        ({"processor": drop_thinking()}, "may read every message"),
        ({"processor": compose(drop_thinking, trim_history(9))}, r"compose\(trim_history\(n\)"),
    ],
)
def test_a_processor_that_does_not_bound_the_load_is_refused(
    args: dict[str, object], message: str
) -> None:
    from golem_shell.store import SQLiteHistoryStore

    with SQLiteHistoryStore() as store, pytest.raises(UsageError, match=message):
        store.load_window_sync(OWNER, "c", **args)  # type: ignore[arg-type]


# -- rollback: the head you kept (last_head=) --------------------------------------------------


def test_every_turn_given_the_head_kept_from_the_last_one_loads(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    history = turns(400)
    kept = None
    stored = 0
    for n in (*range(1, 40, 3), *range(40, 400, 23)):
        window = store.load_window_sync(OWNER, "c", last=30, last_head=kept)
        assert window.length == stored
        store.append_sync(OWNER, "c", history[stored:n], window.length)
        stored = n
        kept = window.head  # the head the turn ran on: the next load must extend it
    first = store.head_sync(OWNER, "c")
    assert first is not None
    store.append_sync(OWNER, "c", turns(300, "later"), stored)
    # a head from 300 messages before the window: the chain is followed back to it
    window = store.load_window_sync(OWNER, "c", last=30, last_head=first)
    assert window.start - 1 > first.length
    store.erase_sync(OWNER, "c", [5])  # an erasure rechains: still a successor
    assert store.load_window_sync(OWNER, "c", last=30, last_head=first).length == window.length


def test_a_rolled_back_database_is_refused_given_the_last_head(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", turns(200), 0)
    snapshot = backend.snapshot()
    store.append_sync(OWNER, "c", turns(10, "lost"), 200)
    kept = store.load_window_sync(OWNER, "c", last=40).head
    assert kept is not None and kept.length == 210
    backend.restore(snapshot)
    assert store.load_window_sync(OWNER, "c", last=40).length == 200  # consistent: unnoticed
    with pytest.raises(CorruptHistoryError, match=r"older than your head.s.*rolled back"):
        store.load_window_sync(OWNER, "c", last=40, last_head=kept)


def test_a_rewritten_branch_at_a_later_revision_does_not_extend_the_head(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", turns(120), 0)
    kept = store.head_sync(OWNER, "c")
    assert kept is not None
    # the same key, another history of more revisions: in the window's reach and beyond it
    for length, extra in ((125, 5), (400, 280)):
        other = backend.open(signing_keys=KEY, table=f"{backend.table}_r{length}")
        other.append_sync(OWNER, "c", turns(100, "other"), 0)
        other.append_sync(OWNER, "c", turns(20, "x"), 100)
        other.append_sync(OWNER, "c", turns(extra, "y"), 120)
        assert other.load_window_sync(OWNER, "c", last=40).length == length
        with pytest.raises(CorruptHistoryError, match="does not extend your head"):
            other.load_window_sync(OWNER, "c", last=40, last_head=kept)
    # and with the kept head's link written over the row it names (outside the window):
    # the chain from that row on does not lead to the window, so it is still refused
    backend.raw(
        f"UPDATE {backend.table}_r400_messages SET link = ? WHERE position = ?"
        .replace("?", "?" if backend.kind == "sqlite" else "%s"),
        kept.link, kept.length - 1,
    )  # fmt: skip
    with pytest.raises(CorruptHistoryError, match="does not extend your head"):
        other.load_window_sync(OWNER, "c", last=40, last_head=kept)


def test_a_forged_head_or_a_lost_branch_is_refused(backend: Backend) -> None:
    import attrs

    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", turns(50), 0)
    snapshot = backend.snapshot()
    name = store.branch_sync(OWNER, "c", 20)
    store.append_sync(OWNER, "c", turns(5, "b"), 20, branch=name)
    kept = store.head_sync(OWNER, "c", branch=name)
    assert kept is not None
    forged = attrs.evolve(kept, length=kept.length + 1)
    with pytest.raises(CorruptHistoryError, match="the head you gave does not verify"):
        store.load_window_sync(OWNER, "c", last=10, branch=name, last_head=forged)
    backend.restore(snapshot)  # back to before the branch existed
    with pytest.raises(CorruptHistoryError, match=r"not stored.*older than that branch"):
        store.load_window_sync(OWNER, "c", last=10, branch=name, last_head=kept)


def test_a_head_of_another_branch_or_not_a_head_is_a_usage_error(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", turns(10), 0)
    store.append_sync(OWNER, "d", turns(10), 0)
    kept = store.head_sync(OWNER, "d")
    with pytest.raises(UsageError, match="a head of this owner, conversation and branch"):
        store.load_window_sync(OWNER, "c", last=5, last_head=kept)
    with pytest.raises(UsageError, match="the Head of an earlier window"):
        store.load_window_sync(OWNER, "c", last=5, last_head="01ab")  # type: ignore[arg-type]


# -- budget_history's own windows: from its step point before the cut (after=) ------------------


@pytest.mark.parametrize(("max_tokens", "low_water"), [(150, None), (150, 40), (120, 120)])
def test_a_budget_window_returns_what_the_whole_branch_returns(
    backend: Backend, max_tokens: int, low_water: int | None
) -> None:
    store = backend.open(signing_keys=KEY)
    processor = budget_history(approximate_tokens, max_tokens, low_water=low_water)
    history = turns(260)
    previous: Window | None = None
    stored = 0
    for n in (*range(0, 40, 3), *range(40, 260, 11)):
        store.append_sync(OWNER, "c", history[stored:n], stored)
        stored = n
        whole = store.load_sync(OWNER, "c")
        window = store.load_window_sync(OWNER, "c", processor=processor, after=previous)
        fresh = store.load_window_sync(OWNER, "c", processor=processor)  # reads it all
        assert (window.start, window.messages) == (fresh.start, fresh.messages), n
        assert window.messages == whole[window.start :]
        assert window.step_grid == repr(processor)
        assert processor(window.messages) == processor(whole), n
        # bounded: the cut keeps at most the budget; one step more, and the message
        # that crossed it, were read before it
        kept = processor(window.messages).unwrap()
        assert len(window.messages) - len(kept) <= 30
        previous = window


def test_an_anchored_budget_window_never_reads_before_the_last_start(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    processor = budget_history(approximate_tokens, 200)
    store.append_sync(OWNER, "c", turns(600), 0)
    first = store.load_window_sync(OWNER, "c", processor=processor)
    assert first.start > 500
    store.append_sync(OWNER, "c", turns(40, "n"), 600)
    backend.raw("DELETE FROM {M} WHERE position < ?", first.start - 1)
    window = store.load_window_sync(OWNER, "c", processor=processor, after=first)
    assert window.start >= first.start and window.length == 640
    assert texts(window.messages) == texts([*turns(600), *turns(40, "n")][window.start :])
    with pytest.raises(CorruptHistoryError):
        store.load_window_sync(OWNER, "c", processor=processor)  # without after: it reads all


def test_an_erasure_or_another_processor_drops_the_anchor(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    processor = budget_history(approximate_tokens, 200)
    store.append_sync(OWNER, "c", turns(300), 0)
    first = store.load_window_sync(OWNER, "c", processor=processor)
    store.erase_sync(OWNER, "c", list(range(0, 250)))  # shorter counts: other step points
    whole = store.load_sync(OWNER, "c")
    window = store.load_window_sync(OWNER, "c", processor=processor, after=first)
    assert processor(window.messages) == processor(whole)
    other = budget_history(approximate_tokens, 90)
    window = store.load_window_sync(OWNER, "c", processor=other, after=first)
    assert window.step_grid == repr(other)
    assert other(window.messages) == other(whole)
    trimmed = store.load_window_sync(OWNER, "c", last=20, after=window)  # the head checked only
    assert trimmed.step_grid == "" and trimmed.length == 300


def test_an_anchor_that_is_not_a_step_point_before_the_cut_is_not_trusted(
    backend: Backend,
) -> None:
    """A window edited by hand (its start moved past the cut) would fit the budget whole:
    the store reads the whole branch instead of returning less than the processor keeps."""
    import attrs

    store = backend.open(signing_keys=KEY)
    processor = budget_history(approximate_tokens, 200)
    store.append_sync(OWNER, "c", turns(300), 0)
    first = store.load_window_sync(OWNER, "c", processor=processor)
    edited = attrs.evolve(first, start=first.length - 2)
    window = store.load_window_sync(OWNER, "c", processor=processor, after=edited)
    assert (window.start, window.messages) == (first.start, first.messages)


def test_after_must_be_a_window_of_this_branch(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    processor = budget_history(approximate_tokens, 200)
    store.append_sync(OWNER, "c", turns(30), 0)
    store.append_sync(OWNER, "d", turns(30), 0)
    other = store.load_window_sync(OWNER, "d", processor=processor)
    with pytest.raises(UsageError, match="a window of this owner, conversation and branch"):
        store.load_window_sync(OWNER, "c", processor=processor, after=other)
    with pytest.raises(UsageError, match="the Window of an earlier load"):
        store.load_window_sync(OWNER, "c", processor=processor, after=3)  # type: ignore[arg-type]


def test_a_budget_window_after_a_rollback_is_refused(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    processor = budget_history(approximate_tokens, 200)
    store.append_sync(OWNER, "c", turns(200), 0)
    snapshot = backend.snapshot()
    store.append_sync(OWNER, "c", turns(20, "lost"), 200)
    seen = store.load_window_sync(OWNER, "c", processor=processor)
    backend.restore(snapshot)
    with pytest.raises(CorruptHistoryError, match="rolled back"):
        store.load_window_sync(OWNER, "c", processor=processor, after=seen)


def test_pinned_first_messages_with_a_budget(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    processor = budget_history(approximate_tokens, 200)
    store.append_sync(OWNER, "c", turns(400), 0)
    first = store.load_window_sync(OWNER, "c", processor=processor, keep_first=2)
    store.append_sync(OWNER, "c", turns(10, "n"), 400)
    window = store.load_window_sync(OWNER, "c", processor=processor, keep_first=2, after=first)
    whole = store.load_sync(OWNER, "c")
    assert window.pinned == 2 and window.messages[:2] == whole[:2]
    assert window.messages[2:] == whole[window.start :]


def test_a_budget_window_on_a_branch_and_encrypted_rows(backend: Backend) -> None:
    """Anchored on the branch's last window, a budget window reads into the parent's rows
    where the step point lies there, and decrypts and verifies only what it reads."""
    pytest.importorskip("cryptography")
    keys = EncryptionKeys({"k1": b"1" * 32}, current="k1")
    store = backend.open(signing_keys=KEY, encryption=keys)
    processor = budget_history(approximate_tokens, 300)
    store.append_sync(OWNER, "c", turns(300), 0)
    edit = store.branch_sync(OWNER, "c", 290)
    store.append_sync(OWNER, "c", turns(4, "b"), 290, branch=edit)
    first = store.load_window_sync(OWNER, "c", processor=processor, branch=edit)
    assert first.start < 290 < first.length  # from the parent's rows, then the branch's
    store.append_sync(OWNER, "c", turns(6, "c"), first.length, branch=edit)
    window = store.load_window_sync(OWNER, "c", processor=processor, branch=edit, after=first)
    whole = store.load_sync(OWNER, "c", branch=edit)
    assert window.messages == whole[window.start :]
    assert processor(window.messages) == processor(whole)
    assert "question" not in str(backend.raw("SELECT message FROM {M}"))
