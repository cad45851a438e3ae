"""The operations that take content away: erase (tombstones), delete, prune, reencrypt.

``erase`` turns messages (or parts) into tombstones where they are stored, once, so
every branch and fork that shares them sees the tombstone; it then re-chains every
branch whose chain passed through them and re-signs their heads (revision + 1,
``rechained`` = that revision). ``delete`` first gives every fork in another
conversation its own copy of what it shares with the deleted one, then deletes the
rows; after commit SQLite checkpoints its WAL (``secure_delete`` zeroes the freed
pages) and PostgreSQL vacuums the tables. Each returns a ``Receipt``.

On PostgreSQL each takes its owner's exclusive lock (``prune`` and ``reencrypt``
without an owner: the store's) before it reads anything, so it decides from a state no
append, erasure or deletion of that owner changes before it commits: ``prune`` never
deletes a conversation appended to after it chose, ``reencrypt`` never writes back
content an erasure removed, nor misses the rows a ``delete`` copies into a fork.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import cast

import attrs
from returns.result import Failure, Success

from golem_core import Message, decode_message, encode_message
from golem_shell._errors import UsageError
from golem_shell.store._errors import (
    CorruptHistoryError,
    HistoryNotFound,
    check_id,
    messages_count,
)
from golem_shell.store._rows import (
    BranchRow,
    Config,
    branch_row,
    branch_rows,
    checked,
    link_at,
    require,
    segments,
    sign,
    write_branch,
)
from golem_shell.store._sql import Dialect, Operation, Steps, take_locks
from golem_shell.store._tombstone import PartFilter, erase_message
from golem_shell.store._values import Erased, Receipt

__all__ = ["Selection", "delete_op", "erase_op", "prune_op", "reencrypt_op", "rechain"]

Selection = int | Sequence[int] | Callable[[Message], bool]
"""Positions of one branch, or a predicate over every message of every branch."""

Physical = tuple[str, str, int]  # conversation, branch, position: where a row is stored
_OWN_ROWS = "owner = ? AND conversation_id = ? AND branch = ?"


def _octets(d: Dialect) -> str:
    return "OCTET_LENGTH(message)" if d.postgres else "LENGTH(CAST(message AS BLOB))"


def _owner_lock(d: Dialect, owner: str | None) -> Steps[None]:
    """One owner's exclusive lock, or (``None``) every owner's: taken before anything is
    read, so what the operation decides from is what it rewrites (PostgreSQL)."""
    yield from take_locks(d.owner_locks(owner) if owner is not None else d.every_owner_locks())


def _decode(data: bytes, cid: str, position: int) -> Message:
    match decode_message(data):
        case Success(message):
            return cast(Message, message)
        case Failure(error):
            raise CorruptHistoryError(cid, position, error.message)
    raise AssertionError("unreachable")  # pragma: no cover


def _physical(d: Dialect, owner: str, row: BranchRow, position: int) -> Steps[Physical]:
    current = row
    while current.at > position and current.parent is not None:
        current = require((yield from branch_row(d, owner, *current.parent)), *current.parent)
    return (current.conversation_id, current.branch, position)


def _children(d: Dialect, owner: str, cid: str, branch: str, after: int) -> Steps[list[BranchRow]]:
    found = yield from branch_rows(
        d, owner, "parent_conversation = ? AND parent_branch = ? AND fork_at > ?",
        cid, branch, after,
    )  # fmt: skip
    return found


def _views(
    d: Dialect, owner: str, cid: str, branch: str, position: int
) -> Steps[list[tuple[str, str]]]:
    """Every (conversation, branch) whose view holds the row stored at ``position``."""
    found = [(cid, branch)]
    for child in (yield from _children(d, owner, cid, branch, position)):
        found += yield from _views(d, owner, child.conversation_id, child.branch, position)
    return found


def rechain(
    d: Dialect, config: Config, owner: str, cid: str, branch: str, start: int
) -> Steps[None]:
    """Recompute seals and links of ``branch``'s own rows from ``start``, re-sign its head,
    and do the same for every branch that shares the rewritten part."""
    row = require((yield from branch_row(d, owner, cid, branch, lock=True)), cid, branch)
    begin = max(start, row.at)
    previous = yield from link_at(d, config, owner, attrs.evolve(row, length=-1), begin - 1)
    own = yield d.q(
        "SELECT position, message, seal, link FROM {M} WHERE " + _OWN_ROWS
        + " AND position >= ? ORDER BY position",
        owner, cid, branch, begin,
    )  # fmt: skip
    genesis = config.sealer.genesis(owner, row.root)
    updates = []
    for position, text, seal, link in own:
        new_seal = config.sealer.seal(genesis, config.cipher.open_text(owner, text))
        previous = config.sealer.link(previous, new_seal)
        if (new_seal, previous) != (seal, link):
            updates.append((new_seal, previous, owner, cid, branch, position))
    if updates:
        yield d.batch(
            "UPDATE {M} SET seal = ?, link = ? WHERE " + _OWN_ROWS + " AND position = ?",
            tuple(updates),
        )
    revision = row.revision + 1
    new = attrs.evolve(row, link=previous, revision=revision, rechained=revision)
    yield write_branch(d, owner, sign(config, owner, new))
    for child in (yield from _children(d, owner, cid, branch, start)):  # they share ``start``
        yield from rechain(d, config, owner, child.conversation_id, child.branch, start)


def _selected(
    d: Dialect, config: Config, owner: str, cid: str, branch: str, select: Selection
) -> Steps[set[Physical]]:
    if callable(select):
        rows = yield from branch_rows(d, owner, "conversation_id = ?", cid)
        if not rows:
            raise HistoryNotFound(cid)
        chosen: set[Physical] = set()
        for row in rows:
            for seg_cid, seg_branch, lo, hi in (yield from segments(d, owner, row)):
                texts = yield d.q(
                    "SELECT position, message FROM {M} WHERE " + _OWN_ROWS
                    + " AND position >= ? AND position < ?",
                    owner, seg_cid, seg_branch, lo, hi,
                )  # fmt: skip
                for position, text in texts:
                    plain = config.cipher.open_text(owner, text)
                    if select(_decode(plain, cid, position)):
                        chosen.add((seg_cid, seg_branch, int(position)))
        return chosen
    positions = (select,) if isinstance(select, int) else tuple(select)
    row = require((yield from branch_row(d, owner, cid, branch)), cid, branch)
    chosen = set()
    for p in positions:
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < row.length:
            raise UsageError(
                f"cannot erase position {p!r} of branch {branch!r} of conversation {cid!r}: "
                f"it has {messages_count(row.length)}"
            )
        chosen.add((yield from _physical(d, owner, row, p)))
    return chosen


def erase_op(
    config: Config,
    owner: str,
    cid: str,
    select: Selection,
    branch: str,
    parts: PartFilter | None,
) -> Operation[Receipt]:
    checked(owner, cid, branch)
    if not callable(select) and (
        isinstance(select, str | bytes) or not isinstance(select, int | Sequence)
    ):
        raise UsageError(f"erase takes positions or a predicate, got {type(select).__name__}")
    if parts is not None and not callable(parts):
        raise UsageError(f"parts must be a predicate over parts, got {type(parts).__name__}")

    def steps(d: Dialect) -> Steps[Receipt]:
        yield from _owner_lock(d, owner)
        chosen = yield from _selected(d, config, owner, cid, branch, select)
        by_branch: dict[tuple[str, str], list[int]] = defaultdict(list)
        erased_bytes: dict[tuple[str, str], int] = defaultdict(int)
        for seg_cid, seg_branch, position in sorted(chosen):
            yield from branch_row(d, owner, seg_cid, seg_branch, lock=True)
            rows = yield d.q(
                "SELECT message FROM {M} WHERE " + _OWN_ROWS + " AND position = ?",
                owner, seg_cid, seg_branch, position,
            )  # fmt: skip
            plain = config.cipher.open_text(owner, rows[0][0])
            tombstone = erase_message(_decode(plain, seg_cid, position), parts)
            if tombstone is None:
                continue
            stored = config.cipher.seal_text(owner, encode_message(tombstone))
            yield d.q(
                "UPDATE {M} SET message = ? WHERE " + _OWN_ROWS + " AND position = ?",
                stored, owner, seg_cid, seg_branch, position,
            )  # fmt: skip
            by_branch[(seg_cid, seg_branch)].append(position)
            erased_bytes[(seg_cid, seg_branch)] += len(plain)
        views: dict[tuple[str, str], set[int]] = defaultdict(set)
        for (seg_cid, seg_branch), positions in sorted(by_branch.items()):
            yield from rechain(d, config, owner, seg_cid, seg_branch, min(positions))
            for position in positions:
                for view in (yield from _views(d, owner, seg_cid, seg_branch, position)):
                    views[view].add(position)
        erased = tuple(
            Erased(
                owner,
                view_cid,
                view_branch,
                tuple(sorted(ps)),
                erased_bytes[(view_cid, view_branch)],
            )
            for (view_cid, view_branch), ps in sorted(views.items())
        )
        return Receipt("erase", config.now(), erased)

    return Operation(steps, write=True, erases=True)


def _materialize(d: Dialect, owner: str, row: BranchRow, config: Config) -> Steps[None]:
    """Give ``row`` its own copy of what it shares with its parent, and no parent."""
    for seg_cid, seg_branch, lo, hi in (yield from segments(d, owner, row)):
        if (seg_cid, seg_branch) == (row.conversation_id, row.branch):
            continue
        yield d.q(
            "INSERT INTO {M} (owner, conversation_id, branch, position, message, seal, link) "
            "SELECT owner, ?, ?, position, message, seal, link FROM {M} WHERE " + _OWN_ROWS
            + " AND position >= ? AND position < ?",
            row.conversation_id, row.branch, owner, seg_cid, seg_branch, lo, hi,
        )  # fmt: skip
    yield write_branch(d, owner, sign(config, owner, attrs.evolve(row, parent=None, at=0)))


def _delete(d: Dialect, config: Config, owner: str, cid: str) -> Steps[list[Erased]]:
    rows = yield from branch_rows(d, owner, "conversation_id = ?", cid, lock=True)
    if not rows:
        return []
    dependents = yield from branch_rows(
        d, owner, "parent_conversation = ? AND conversation_id <> ?", cid, cid
    )
    for dependent in dependents:
        yield from _materialize(d, owner, dependent, config)
    sizes = yield d.q(
        "SELECT branch, SUM(" + _octets(d) + ") FROM {M} WHERE owner = ? AND conversation_id = ? "
        "GROUP BY branch",
        owner, cid,
    )  # fmt: skip
    size = {str(b): int(n or 0) for b, n in sizes}
    where = " WHERE owner = ? AND conversation_id = ?"
    yield d.q("DELETE FROM {M}" + where, owner, cid)
    yield d.q("UPDATE {B} SET parent_conversation = NULL, parent_branch = NULL" + where, owner, cid)
    yield d.q("DELETE FROM {B}" + where, owner, cid)
    yield d.q("DELETE FROM {C}" + where, owner, cid)
    return [
        Erased(owner, cid, r.branch, tuple(range(r.length)), size.get(r.branch, 0)) for r in rows
    ]


def delete_op(config: Config, owner: str, cid: str) -> Operation[Receipt]:
    check_id("owner", owner)
    check_id("conversation_id", cid)

    def steps(d: Dialect) -> Steps[Receipt]:
        yield from _owner_lock(d, owner)
        erased = yield from _delete(d, config, owner, cid)
        return Receipt("delete", config.now(), tuple(erased))

    return Operation(steps, write=True, erases=True)


def prune_op(
    config: Config, owner: str | None, older_than_ms: int | None, keep_newest: int | None
) -> Operation[Receipt]:
    if owner is not None:
        check_id("owner", owner)
    if older_than_ms is None and keep_newest is None:
        raise UsageError("prune needs older_than=, keep_newest= or both")
    if keep_newest is not None and (
        isinstance(keep_newest, bool) or not isinstance(keep_newest, int) or keep_newest < 0
    ):
        raise UsageError(f"keep_newest must be an int >= 0, got {keep_newest!r}")

    def steps(d: Dialect) -> Steps[Receipt]:
        yield from _owner_lock(d, owner)  # before choosing: no append slips in after
        sql = "SELECT owner, conversation_id, updated_ms FROM {C}"
        params: tuple[object, ...] = ()
        if owner is not None:
            sql += " WHERE owner = ?"
            params = (owner,)
        rows = yield d.q(sql + " ORDER BY owner, updated_ms DESC, conversation_id", *params)
        doomed: list[tuple[str, str]] = []
        rank: dict[str, int] = defaultdict(int)
        for row_owner, row_cid, updated in rows:
            rank[row_owner] += 1
            too_old = older_than_ms is not None and int(updated) < older_than_ms
            too_many = keep_newest is not None and rank[row_owner] > keep_newest
            if too_old or too_many:
                doomed.append((str(row_owner), str(row_cid)))
        erased: list[Erased] = []
        for doomed_owner, doomed_cid in doomed:
            erased += yield from _delete(d, config, doomed_owner, doomed_cid)
        return Receipt("prune", config.now(), tuple(erased))

    return Operation(steps, write=True, erases=True)


def reencrypt_op(config: Config, owner: str | None) -> Operation[int]:
    if owner is not None:
        check_id("owner", owner)
    keys = config.cipher.keys
    if keys is None:
        raise UsageError("reencrypt needs a store opened with encryption=EncryptionKeys(...)")

    def steps(d: Dialect) -> Steps[int]:
        yield from _owner_lock(d, owner)  # no erase or delete rewrites a row meanwhile
        sql = "SELECT owner, conversation_id, branch, position, message FROM {M}"
        rows = yield (d.q(sql + " WHERE owner = ?", owner) if owner is not None else d.q(sql))
        updates = []
        for row_owner, row_cid, row_branch, position, text in rows:
            if config.cipher.current_key_id(text) == keys.current:
                continue
            plain = config.cipher.open_text(row_owner, text)
            updates.append(
                (
                    config.cipher.seal_text(row_owner, plain),
                    row_owner,
                    row_cid,
                    row_branch,
                    position,
                )
            )
        if updates:
            yield d.batch(
                "UPDATE {M} SET message = ? WHERE " + _OWN_ROWS + " AND position = ?",
                tuple(updates),
            )
        return len(updates)

    return Operation(steps, write=True, erases=True)
