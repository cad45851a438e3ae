"""The operations that read and grow conversations: load, append, branch, fork, list, head.

Each function checks its arguments (``UsageError`` before any SQL) and returns an
``Operation``: steps written once, run by a sync or an async driver. Every query names
the owner: it is the first column of every key.

Compare-and-set: an append names the length it saw; the branch row is read (``FOR
UPDATE`` on PostgreSQL, after the owner's shared lock, so no prune, erasure or
reencrypt of that owner runs beside it; SQLite holds its write lock from ``BEGIN
IMMEDIATE``) and a different length raises ``HistoryConflict`` with nothing written.
Two first appends to a new conversation race on the branch row's primary key: the
loser's transaction rolls back and it gets ``HistoryConflict`` too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from golem_core import Message, Role, TextPart, encode_message
from golem_shell._errors import UsageError
from golem_shell._results import partial_from
from golem_shell.store._errors import (
    HistoryConflict,
    HistoryNotFound,
    check_id,
    check_length,
    messages_count,
)
from golem_shell.store._pages import append_marks
from golem_shell.store._rows import (
    INSERT_BRANCH,
    BranchRow,
    Config,
    Segment,
    branch_row,
    branch_rows,
    checked,
    decode_joined,
    decode_rows,
    head_of,
    link_at,
    require,
    segments,
    sign,
    view_rows,
    write_branch,
)
from golem_shell.store._sql import Dialect, Operation, Steps, take_locks
from golem_shell.store._values import MAIN, BranchInfo, Head
from golem_shell.store._window import check_step_window, record_step

__all__ = [
    "append_op",
    "branch_op",
    "branches_op",
    "fork_op",
    "head_op",
    "interrupted_messages",
    "list_op",
    "load_op",
]

INSERT_MESSAGE = (
    "INSERT INTO {M} (owner, conversation_id, branch, position, message, seal, link) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _length_steps(owner: str, cid: str, branch: str) -> Callable[[Dialect], Steps[int]]:
    def steps(d: Dialect) -> Steps[int]:
        row = yield from branch_row(d, owner, cid, branch)
        return row.length if row is not None else 0

    return steps


def load_op(config: Config, owner: str, cid: str, branch: str) -> Operation[tuple[Message, ...]]:
    checked(owner, cid, branch)

    def steps(d: Dialect) -> Steps[tuple[Message, ...]]:
        row = yield from branch_row(d, owner, cid, branch)
        if row is None:
            if branch == MAIN:
                return ()
            raise HistoryNotFound(cid, branch)
        found = yield from segments(d, owner, row)
        if d.postgres and config.cipher.keys is None:
            joined = yield from _joined(d, owner, found)
            messages = decode_joined(joined, row.length) if joined is not None else None
            if messages is not None:
                return messages
        rows = yield from view_rows(d, owner, found, "position, message")
        return decode_rows(config, owner, cid, rows, row.length)

    return Operation(steps)


def _joined(d: Dialect, owner: str, found: Sequence[Segment]) -> Steps[str | None]:
    """PostgreSQL joins the rows itself: one text instead of a row per message (the
    load's cost is then the decode's); ``None`` when a position is missing."""
    texts: list[str] = []
    for seg_cid, seg_branch, lo, hi in found:
        assert hi is not None
        rows = yield d.q(
            "SELECT COUNT(*), MIN(position), MAX(position), "
            "string_agg(message, ',' ORDER BY position) FROM {M} WHERE owner = ? "
            "AND conversation_id = ? AND branch = ? AND position >= ? AND position < ?",
            owner, seg_cid, seg_branch, lo, hi,
        )  # fmt: skip
        count, first, last, text = rows[0]
        if (count, first, last) != (hi - lo, lo, hi - 1):
            return None
        texts.append(text)
    return ",".join(texts)


def _check_messages(messages: object) -> tuple[Message, ...]:
    if isinstance(messages, Message | str | bytes) or not isinstance(messages, Sequence):
        raise UsageError(f"messages must be a sequence of Message, got {type(messages).__name__}")
    for index, message in enumerate(messages):
        if not isinstance(message, Message):
            raise UsageError(f"messages[{index}] is {type(message).__name__}, not a Message")
    return tuple(messages)


def append_op(
    config: Config,
    owner: str,
    cid: str,
    messages: Sequence[Message],
    expected_length: int,
    branch: str,
    window: object = None,
) -> Operation[int]:
    checked(owner, cid, branch)
    check_length("expected_length", expected_length)
    contents = [encode_message(m) for m in _check_messages(messages)]
    step = check_step_window(owner, cid, branch, window)

    def steps(d: Dialect) -> Steps[int]:
        if not contents:  # nothing to add: still checked, nothing created
            row = yield from branch_row(d, owner, cid, branch)
            if row is None and branch != MAIN:
                raise HistoryNotFound(cid, branch)
            actual = row.length if row is not None else 0
            if actual != expected_length:
                raise HistoryConflict(cid, expected_length, actual, branch)
            return actual
        yield from take_locks(d.owner_locks(owner, shared=True))
        now = config.now_ms()
        yield d.q(
            "INSERT INTO {C} (owner, conversation_id, created_ms, updated_ms) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            owner, cid, now, now,
        )  # fmt: skip
        row = yield from branch_row(d, owner, cid, branch, lock=True)
        created = row is None
        if row is None:
            if branch != MAIN:
                raise HistoryNotFound(cid, branch)
            genesis = config.sealer.genesis(owner, cid)
            row = BranchRow(cid, MAIN, None, 0, 0, 0, 0, cid, genesis, "", now)
        if row.length != expected_length:
            raise HistoryConflict(cid, expected_length, row.length, branch)
        genesis = config.sealer.genesis(owner, row.root)
        chain = config.sealer.chain(genesis, row.link, contents)
        seal_text = config.cipher.seal_text
        rows = tuple(
            (owner, cid, branch, expected_length + i, seal_text(owner, content), seal, link)
            for i, (content, (seal, link)) in enumerate(zip(contents, chain, strict=True))
        )
        new = sign(
            config,
            owner,
            BranchRow(
                cid, branch, row.parent, row.at, expected_length + len(rows), row.revision + 1,
                row.rechained, row.root, chain[-1][1], "", row.created_ms,
            ),
        )  # fmt: skip
        if created:
            yield d.q(INSERT_BRANCH, *new.values(owner))
        else:
            yield write_branch(d, owner, new)
        yield d.batch(INSERT_MESSAGE, rows)
        yield from append_marks(d, config, owner, new, ((r[3], r[6]) for r in rows))
        if step is not None:
            yield from record_step(d, config, owner, cid, branch, step)
        yield d.q(
            "UPDATE {C} SET updated_ms = ? WHERE owner = ? AND conversation_id = ?",
            now, owner, cid,
        )  # fmt: skip
        return new.length

    conflict = HistoryConflict(cid, expected_length, expected_length, branch)
    return Operation(
        steps,
        write=True,
        guards=(_length_steps(owner, cid, branch), conflict),
    )


def _child(
    d: Dialect, config: Config, owner: str, source: BranchRow, at: int, cid: str, name: str
) -> Steps[BranchRow]:
    link = yield from link_at(d, config, owner, source, at - 1)
    # strictly after its source: listings by age (``verify``, ``branches``) put a branch
    # after the one it was made from even when both were made in the same millisecond
    now = max(config.now_ms(), source.created_ms + 1)
    parent = (source.conversation_id, source.branch) if at else None
    row = BranchRow(cid, name, parent, at, at, 0, 0, source.root, link, "", now)
    return sign(config, owner, row)


def branch_op(
    config: Config, owner: str, cid: str, at: int, source: str, name: str | None
) -> Operation[str]:
    checked(owner, cid, source)
    check_length("at", at)
    if name is not None:
        check_id("name", name)

    def steps(d: Dialect) -> Steps[str]:
        yield from take_locks(d.owner_locks(owner))
        src = require((yield from branch_row(d, owner, cid, source, lock=True)), cid, source)
        if at > src.length:
            raise UsageError(
                f"cannot branch {source!r} of conversation {cid!r} at {at}: "
                f"it has {messages_count(src.length)}"
            )
        rows = yield d.q(
            "SELECT branch FROM {B} WHERE owner = ? AND conversation_id = ?", owner, cid
        )
        names = {str(r[0]) for r in rows}
        chosen = name
        if chosen is None:
            k = len(names)
            while f"b{k}" in names:
                k += 1
            chosen = f"b{k}"
        elif chosen in names:
            raise UsageError(f"conversation {cid!r} already has a branch {chosen!r}")
        row = yield from _child(d, config, owner, src, at, cid, chosen)
        yield d.q(INSERT_BRANCH, *row.values(owner))
        return chosen

    return Operation(steps, write=True)


def fork_op(
    config: Config, owner: str, cid: str, at: int, new_id: str, branch: str
) -> Operation[None]:
    checked(owner, cid, branch)
    check_id("new_id", new_id)
    check_length("at", at)
    if new_id == cid:
        raise UsageError(f"cannot fork conversation {cid!r} into itself")

    def steps(d: Dialect) -> Steps[None]:
        yield from take_locks(d.owner_locks(owner))
        src = yield from branch_row(d, owner, cid, branch, lock=True)
        length = src.length if src is not None else 0
        if src is None and branch != MAIN:
            raise HistoryNotFound(cid, branch)
        if at > length:
            raise UsageError(
                f"cannot fork conversation {cid!r} at {at}: it has {messages_count(length)}"
            )
        taken = yield from branch_row(d, owner, new_id, MAIN)
        if taken is not None:
            raise HistoryConflict(new_id, 0, taken.length)
        if not at or src is None:
            return
        row = yield from _child(d, config, owner, src, at, new_id, MAIN)
        now = config.now_ms()
        yield d.q(
            "INSERT INTO {C} (owner, conversation_id, created_ms, updated_ms) VALUES (?, ?, ?, ?)",
            owner, new_id, now, now,
        )  # fmt: skip
        yield d.q(INSERT_BRANCH, *row.values(owner))

    conflict = HistoryConflict(new_id, 0, 0)
    return Operation(
        steps,
        write=True,
        guards=(_length_steps(owner, new_id, MAIN), conflict),
    )


def list_op(owner: str) -> Operation[tuple[str, ...]]:
    check_id("owner", owner)

    def steps(d: Dialect) -> Steps[tuple[str, ...]]:
        rows = yield d.q(
            "SELECT conversation_id FROM {C} WHERE owner = ? ORDER BY conversation_id", owner
        )
        return tuple(str(r[0]) for r in rows)

    return Operation(steps)


def branches_op(owner: str, cid: str) -> Operation[tuple[BranchInfo, ...]]:
    checked(owner, cid, MAIN)

    def steps(d: Dialect) -> Steps[tuple[BranchInfo, ...]]:
        rows = yield from branch_rows(d, owner, "conversation_id = ?", cid)
        rows.sort(key=lambda r: (r.branch != MAIN, r.created_ms))  # main first, then by age
        return tuple(BranchInfo(r.branch, r.parent, r.at, r.length, r.revision) for r in rows)

    return Operation(steps)


def head_op(owner: str, cid: str, branch: str) -> Operation[Head | None]:
    checked(owner, cid, branch)

    def steps(d: Dialect) -> Steps[Head | None]:
        row = yield from branch_row(d, owner, cid, branch)
        return head_of(owner, row) if row is not None else None

    return Operation(steps)


def interrupted_messages(
    prompt: str | Message, error: BaseException, expected_length: int
) -> tuple[Message, ...]:
    """What a failed or cancelled run leaves to store: the prompt, and every completed step.

    The steps are the run's partial (``partial_from(error)``): a ``RunError``'s
    ``partial``, or the one golem attaches to the ``CancelledError`` (or timeout) that
    ended a run cancelled from outside. It is the conversation through every completed
    outcome, history included: answers, tool calls with their results, and a call
    still running closed as unfinished (the loop's ``partial_messages``), so it pairs.
    Without a partial (a cancellation before the first step, any other exception) only
    the prompt is kept.
    """
    if isinstance(prompt, str):
        prompt_message = Message(Role.USER, (TextPart(prompt),))
    elif isinstance(prompt, Message):
        prompt_message = prompt
    else:
        raise UsageError(f"prompt must be a str or a Message, got {type(prompt).__name__}")
    partial = partial_from(error)
    messages: tuple[Message, ...] = getattr(partial, "messages", ()) or ()
    if len(messages) < expected_length:
        messages = ()
    added = messages[expected_length:]
    if not any(m.role is Role.USER for m in added):
        if partial is not None and prompt_message.run_id is None:
            prompt_message = attrs.evolve(
                prompt_message, run_id=partial.run_id, conversation_id=partial.conversation_id
            )
        added = (prompt_message, *added)
    return added
