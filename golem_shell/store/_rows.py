"""Reading rows, shared by every operation: branch rows, a branch's view, heads, decoding.

A branch's *view* is its messages in order: the first ``at`` come from its parent's
view (recursively), the rest are rows the branch stores itself. ``segments`` turns that
into the physical ranges to read; positions are the same numbers in every view.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Final, cast

import attrs
from attrs import frozen
from returns.result import Failure, Success

from golem_core import Message, decode_history, decode_message
from golem_shell.store._crypto import Cipher, Sealer
from golem_shell.store._errors import CorruptHistoryError, HistoryNotFound, check_id
from golem_shell.store._sql import Dialect, Query, Row, Steps
from golem_shell.store._values import Head

__all__ = [
    "BranchRow",
    "Config",
    "Segment",
    "branch_row",
    "decode_joined",
    "decode_rows",
    "head_of",
    "link_at",
    "segments",
    "sign",
    "view_rows",
]

Segment = tuple[str, str, int, int | None]  # conversation, branch, from, to (None: the end)

_COLUMNS = (
    "conversation_id, branch, parent_conversation, parent_branch, fork_at, length, "
    "revision, rechained, root, link, head, created_ms"
)


@frozen
class Config:
    """What every operation of one store needs besides SQL: keys, cipher, clock."""

    sealer: Sealer
    cipher: Cipher
    clock: Callable[[], float] = time.time

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.now_ms() / 1000, UTC)


@frozen
class BranchRow:
    conversation_id: str
    branch: str
    parent: tuple[str, str] | None
    at: int
    length: int
    revision: int
    rechained: int
    root: str
    link: str
    head: str
    created_ms: int

    @classmethod
    def of(cls, row: Row) -> BranchRow:
        cid, branch, pc, pb, at, length, revision, rechained, root, link, head, created = row
        parent = (str(pc), str(pb)) if pc is not None else None
        return cls(
            str(cid), str(branch), parent, int(at), int(length), int(revision),
            int(rechained), str(root), str(link), str(head), int(created),
        )  # fmt: skip

    def values(self, owner: str) -> tuple[object, ...]:
        pc, pb = self.parent or (None, None)
        return (
            owner, self.conversation_id, self.branch, pc, pb, self.at, self.length,
            self.revision, self.rechained, self.root, self.link, self.head, self.created_ms,
        )  # fmt: skip

    def head_fields(self, owner: str) -> tuple[object, ...]:
        pc, pb = self.parent or ("", "")
        return (
            owner, self.conversation_id, self.branch, pc, pb, self.at, self.length,
            self.revision, self.rechained, self.link,
        )  # fmt: skip


INSERT_BRANCH = (
    "INSERT INTO {B} (owner, " + _COLUMNS + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
UPDATE_BRANCH = (
    "UPDATE {B} SET parent_conversation = ?, parent_branch = ?, fork_at = ?, length = ?, "
    "revision = ?, rechained = ?, link = ?, head = ? "
    "WHERE owner = ? AND conversation_id = ? AND branch = ?"
)


def sign(config: Config, owner: str, row: BranchRow) -> BranchRow:
    return attrs.evolve(row, head=config.sealer.head(row.head_fields(owner)))


def write_branch(d: Dialect, owner: str, row: BranchRow) -> Query:
    pc, pb = row.parent or (None, None)
    return d.q(
        UPDATE_BRANCH, pc, pb, row.at, row.length, row.revision, row.rechained, row.link,
        row.head, owner, row.conversation_id, row.branch,
    )  # fmt: skip


def head_of(owner: str, row: BranchRow) -> Head:
    return Head(
        owner, row.conversation_id, row.branch, row.parent, row.at, row.length,
        row.revision, row.rechained, row.link, row.head,
    )  # fmt: skip


def branch_row(
    d: Dialect, owner: str, cid: str, branch: str, *, lock: bool = False
) -> Steps[BranchRow | None]:
    rows = yield d.q(
        "SELECT " + _COLUMNS + " FROM {B} WHERE owner = ? AND conversation_id = ? AND branch = ?"
        + (d.for_update if lock else ""),
        owner, cid, branch,
    )  # fmt: skip
    return BranchRow.of(rows[0]) if rows else None


def branch_rows(
    d: Dialect, owner: str, where: str, *params: object, lock: bool = False
) -> Steps[list[BranchRow]]:
    rows = yield d.q(
        "SELECT " + _COLUMNS + " FROM {B} WHERE owner = ? AND " + where
        + " ORDER BY created_ms, conversation_id, branch" + (d.for_update if lock else ""),
        owner, *params,
    )  # fmt: skip
    return [BranchRow.of(r) for r in rows]


def segments(
    d: Dialect, owner: str, row: BranchRow, *, open_end: bool = False
) -> Steps[list[Segment]]:
    """The physical ranges of ``row``'s view, oldest first (``open_end``: the branch's own
    range runs to whatever is stored, past its length too)."""
    found: list[Segment] = []
    limit: int | None = None if open_end else row.length
    current = row
    while True:
        if limit is None or current.at < limit:
            found.append((current.conversation_id, current.branch, current.at, limit))
        limit = current.at if limit is None else min(limit, current.at)
        if current.parent is None or limit == 0:
            break
        parent = yield from branch_row(d, owner, *current.parent)
        if parent is None:
            raise CorruptHistoryError(
                row.conversation_id, limit - 1, f"its parent branch {current.parent} is missing"
            )
        current = parent
    found.reverse()
    return found


def view_rows(d: Dialect, owner: str, found: Sequence[Segment], columns: str) -> Steps[list[Row]]:
    out: list[Row] = []
    for cid, branch, lo, hi in found:
        sql = "SELECT " + columns + " FROM {M} WHERE owner = ? AND conversation_id = ? "
        sql += "AND branch = ? AND position >= ?"
        params: tuple[object, ...] = (owner, cid, branch, lo)
        if hi is not None:
            sql += " AND position < ?"
            params += (hi,)
        out += yield d.q(sql + " ORDER BY position", *params)
    return out


def link_at(d: Dialect, config: Config, owner: str, row: BranchRow, position: int) -> Steps[str]:
    """The chain link after ``position`` in ``row``'s view (``-1``: the genesis)."""
    if position < 0:
        return config.sealer.genesis(owner, row.root)
    if position == row.length - 1:
        return row.link
    current = row
    while current.at > position and current.parent is not None:
        parent = yield from branch_row(d, owner, *current.parent)
        if parent is None:
            break
        current = parent
    rows = yield d.q(
        "SELECT link FROM {M} WHERE owner = ? AND conversation_id = ? AND branch = ? "
        "AND position = ?",
        owner, current.conversation_id, current.branch, position,
    )  # fmt: skip
    if not rows:
        raise CorruptHistoryError(row.conversation_id, position, "no row at this position")
    return str(rows[0][0])


_TEXT: Final = operator.itemgetter(1)
"""A row's stored text (``(position, text)``)."""


def decode_rows(
    config: Config, owner: str, cid: str, rows: Sequence[Row], length: int
) -> tuple[Message, ...]:
    """``(position, text)`` rows as messages: one ``decode_history`` over the joined rows,
    and one row at a time only to name the position of a failure."""
    if (
        config.cipher.keys is None
        and len(rows) == length
        and (not rows or (rows[0][0], rows[-1][0]) == (0, length - 1))  # unique, ordered
    ):
        try:  # ``join`` refuses a value that is not text (the row path says where)
            joined: str | None = ",".join(map(_TEXT, rows))
        except TypeError:
            joined = None
        fast = None if joined is None else decode_joined(joined, length)
        if fast is not None:
            return fast
    texts: list[bytes] = []
    opened = config.cipher.open_text
    for index, (position, data) in enumerate(rows):
        if position != index:
            raise CorruptHistoryError(
                cid, index, f"no row at this position (the next is {position})"
            )
        if not isinstance(data, str):
            raise CorruptHistoryError(
                cid, index, f"stored value is {type(data).__name__}, not JSON text"
            )
        texts.append(opened(owner, data))
    if len(texts) < length:
        raise CorruptHistoryError(cid, len(texts), "no row at this position")
    match decode_history(b"[" + b",".join(texts) + b"]"):
        case Success(messages) if len(messages) == len(texts):
            return cast(tuple[Message, ...], messages)
        case _:
            pass
    for index, text in enumerate(texts):
        match decode_message(text):
            case Failure(error):
                raise CorruptHistoryError(cid, index, error.message)
            case _:
                pass
    raise CorruptHistoryError(cid, 0, "the rows do not decode together")  # pragma: no cover


def decode_joined(joined: str, length: int) -> tuple[Message, ...] | None:
    """The rows joined by the database (``a,b,c``), decoded at once; ``None`` when they
    do not decode to ``length`` messages (the caller reads row by row to say where)."""
    match decode_history("[" + joined + "]"):
        case Success(messages) if len(messages) == length:
            return cast(tuple[Message, ...], messages)
        case _:
            return None


def checked(owner: str, cid: str, branch: str) -> None:
    check_id("owner", owner)
    check_id("conversation_id", cid)
    check_id("branch", branch)


def require(row: BranchRow | None, cid: str, branch: str) -> BranchRow:
    if row is None:
        raise HistoryNotFound(cid, branch)
    return row
