# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Erasure, deletion and retention, with receipts, on SQLite and a real PostgreSQL.

``delete`` erases the bytes: on SQLite a planted canary is no longer anywhere in the
database file or its WAL; on PostgreSQL the rows are gone and the tables vacuumed.
``erase`` leaves a valid history (a tool call stays paired, its result says the content
was erased) in every branch and fork sharing the message. Retention drops conversations
older than a date, or all but the newest N per owner.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from store_backends import (  # noqa: F401 (fixtures)
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
    DataPart,
    Message,
    Role,
    TextPart,
    ToolCallPart,
    check_pairing,
    encode_message,
)
from golem_shell import UsageError
from golem_shell.store import (
    ERASED_RESULT_TEXT,
    ERASED_TEXT,
    MAIN,
    Erased,
    HistoryNotFound,
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
