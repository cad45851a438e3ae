"""The operations that take content away: erase (tombstones), delete, prune, reencrypt.

``erase`` turns messages (or parts) into tombstones where they are stored, once, so
every branch and fork that shares them sees the tombstone; it then re-chains every
branch whose chain passed through them and re-signs their heads (revision + 1,
``rechained`` = that revision) and every mark of their rows (``_pages``). ``delete``
first gives every fork in another conversation its own copy of what it shares with the
deleted one (and marks for it), then deletes the rows, marks and recorded step points;
after commit SQLite checkpoints its WAL (``secure_delete`` zeroes the freed pages) and
PostgreSQL vacuums the tables. Each returns a ``Receipt``.

**Erasure reaches summaries** (ADR 0143): the references (``message_ref``) of the
messages an operation erases or deletes are taken before they change; every summary of
the same owner whose compaction record names one of them (or names a summary made
stale the same way: a summary of a summary) keeps its place, its summary marker and its
record, but its text becomes ``STALE_SUMMARY_TEXT`` and its record gains ``"stale":
true`` (the next fold of that history summarizes from what remains); a provider's
native compaction (an OpenAI item, an Anthropic block, each recorded with what it was
built from) is the part replaced, the rest of its turn kept. The receipt lists
them in ``summaries``. ``delete`` and ``prune`` spare a summary whose replaced messages
the owner still stores unchanged elsewhere (a fork's own copy); ``erase`` spares none,
since a content reference cannot tell which copy a summary was built from.

On PostgreSQL each takes its owner's exclusive lock (``prune`` and ``reencrypt``
without an owner: the store's) before it reads anything, so it decides from a state no
append, erasure or deletion of that owner changes before it commits: ``prune`` never
deletes a conversation appended to after it chose, ``reencrypt`` never writes back
content an erasure removed, nor misses the rows a ``delete`` copies into a fork.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence, Set
from typing import Final, cast

import attrs
from returns.result import Failure, Success

from golem_core import (
    COMPACTION_KEY,
    Message,
    Part,
    TextPart,
    compaction_of,
    decode_message,
    encode_message,
    message_ref,
)
from golem_core.providers import PROFILES, CompactionRule
from golem_shell._errors import UsageError
from golem_shell.store._errors import (
    CorruptHistoryError,
    HistoryNotFound,
    check_id,
    messages_count,
)
from golem_shell.store._pages import rewrite_marks
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

__all__ = [
    "STALE_SUMMARY_TEXT",
    "Selection",
    "delete_op",
    "erase_op",
    "prune_op",
    "rechain",
    "reencrypt_op",
    "stale_summary",
]

STALE_SUMMARY_TEXT: Final = "[summary removed: it was built from erased messages]"
"""The whole text of a summary built from a message that was erased or deleted."""

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
    new = sign(
        config, owner, attrs.evolve(row, link=previous, revision=revision, rechained=revision)
    )
    yield write_branch(d, owner, new)
    yield from rewrite_marks(d, config, owner, new)
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


def stale_summary(message: Message) -> Message | None:
    """``message`` as a stale summary, or ``None`` when it is not a summary (its
    compaction record of kind ``summary``) or is stale already.

    The text becomes ``STALE_SUMMARY_TEXT``; the summary marker and the record stay, the
    record with ``"stale": true``; a ``provenance`` signature goes (it signed the text).
    A message holding a provider's native compaction (an OpenAI compaction item, an
    Anthropic ``compaction`` block) loses only that part: in its place the issuer's
    ``CompactionRule.removed`` (a no-op that keeps the turn valid; none for OpenAI),
    then the stand-in text; its other parts (an answer's text, its ``tool_use``) stay,
    so the history stays provider-valid.
    Total, deterministic; a stale summary is never made stale again.
    """
    record = compaction_of(message)
    if record is None or record.kind != "summary":
        return None
    raw = json.loads(dict(message.extra)[COMPACTION_KEY])
    if raw.get("stale") is True:
        return None
    raw["stale"] = True
    text = json.dumps(raw, ensure_ascii=False, separators=(",", ":"))
    extra = tuple(
        (k, text if k == COMPACTION_KEY else v) for k, v in message.extra if k != "provenance"
    )
    return attrs.evolve(message, parts=_stale_parts(message.parts), extra=extra)


_NATIVE: Final = {
    p.compaction.marker: p.compaction for p in PROFILES.values() if p.compaction is not None
}
"""Every provider's native compaction rule, by the ``extra`` key marking its parts."""


def _native_rule(part: Part) -> CompactionRule | None:
    if type(part) is not TextPart:
        return None
    return next((_NATIVE[k] for k, _ in part.extra if k in _NATIVE), None)


def _stale_parts(parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """The parts of a stale summary: the stand-in alone, or, where native compactions
    stand, each replaced by its issuer's no-op (if any) and the stand-in, once."""
    if not any(_native_rule(p) is not None for p in parts):
        return (TextPart(STALE_SUMMARY_TEXT),)
    out: list[Part] = []
    for part in parts:
        rule = _native_rule(part)
        if rule is None:
            out.append(part)
            continue
        if rule.removed is not None:
            out.append(rule.removed)
        if TextPart(STALE_SUMMARY_TEXT) not in out:
            out.append(TextPart(STALE_SUMMARY_TEXT))
    return tuple(out)


_Stale = dict[Physical, tuple[Message, int]]  # where a summary is stored: it made stale, bytes


def _stale_summaries(
    d: Dialect, config: Config, owner: str, gone: Set[str], *, spare_kept: bool
) -> Steps[_Stale]:
    """Make stale, where they are stored, the owner's summaries built from a message in
    ``gone`` (by reference), and those built from such a summary, and so on.

    ``spare_kept``: a reference the owner still stores unchanged is not gone (``delete``).
    """
    if not gone:
        return {}
    rows = yield d.q(
        "SELECT conversation_id, branch, position, message FROM {M} WHERE owner = ?", owner
    )
    found: dict[Physical, tuple[Message, Message, int]] = {}
    kept: set[str] = set()
    for cid, branch, position, text in rows:
        plain = config.cipher.open_text(owner, text)
        where = (str(cid), str(branch), int(position))
        if spare_kept:
            kept.add(message_ref(_decode(plain, where[0], where[2])))
        if COMPACTION_KEY.encode() not in plain:
            continue
        message = _decode(plain, where[0], where[2])
        stale = stale_summary(message)
        if stale is not None:
            found[where] = (message, stale, len(plain))
    refs = set(gone) - kept
    chosen: _Stale = {}
    grew = True
    while grew:  # a summary of a stale summary holds what the first one held
        grew = False
        for where, (message, stale, size) in sorted(found.items()):
            record = compaction_of(message)
            if where in chosen or record is None or refs.isdisjoint(record.replaced):
                continue
            chosen[where] = (stale, size)
            refs.add(message_ref(message))
            grew = True
    for (cid, branch, position), (stale, _) in sorted(chosen.items()):
        yield from branch_row(d, owner, cid, branch, lock=True)
        yield d.q(
            "UPDATE {M} SET message = ? WHERE " + _OWN_ROWS + " AND position = ?",
            config.cipher.seal_text(owner, encode_message(stale)), owner, cid, branch, position,
        )  # fmt: skip
    return chosen


def _by_view(
    d: Dialect, owner: str, changed: dict[tuple[str, str], dict[int, int]]
) -> Steps[tuple[Erased, ...]]:
    """One ``Erased`` per view holding a changed row: its positions, and the bytes of the
    rows changed in the branch storing them."""
    views: dict[tuple[str, str], set[int]] = defaultdict(set)
    for (seg_cid, seg_branch), sizes in sorted(changed.items()):
        for position in sizes:
            for view in (yield from _views(d, owner, seg_cid, seg_branch, position)):
                views[view].add(position)
    return tuple(
        Erased(owner, cid, branch, tuple(sorted(ps)), sum(changed.get((cid, branch), {}).values()))
        for (cid, branch), ps in sorted(views.items())
    )


def _grouped(stale: _Stale) -> dict[tuple[str, str], dict[int, int]]:
    out: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)
    for (cid, branch, position), (_, size) in stale.items():
        out[(cid, branch)][position] = size
    return out


def _rechain_all(
    d: Dialect, config: Config, owner: str, *changed: dict[tuple[str, str], dict[int, int]]
) -> Steps[None]:
    starts: dict[tuple[str, str], int] = {}
    for group in changed:
        for key, sizes in group.items():
            starts[key] = min(starts.get(key, min(sizes)), min(sizes))
    for (seg_cid, seg_branch), start in sorted(starts.items()):
        yield from rechain(d, config, owner, seg_cid, seg_branch, start)


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
        changed: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)
        gone: set[str] = set()
        for seg_cid, seg_branch, position in sorted(chosen):
            yield from branch_row(d, owner, seg_cid, seg_branch, lock=True)
            rows = yield d.q(
                "SELECT message FROM {M} WHERE " + _OWN_ROWS + " AND position = ?",
                owner, seg_cid, seg_branch, position,
            )  # fmt: skip
            plain = config.cipher.open_text(owner, rows[0][0])
            original = _decode(plain, seg_cid, position)
            tombstone = erase_message(original, parts)
            if tombstone is None:
                continue
            gone.add(message_ref(original))  # as a compaction record names it
            stored = config.cipher.seal_text(owner, encode_message(tombstone))
            yield d.q(
                "UPDATE {M} SET message = ? WHERE " + _OWN_ROWS + " AND position = ?",
                stored, owner, seg_cid, seg_branch, position,
            )  # fmt: skip
            changed[(seg_cid, seg_branch)][position] = len(plain)
        stale = _grouped((yield from _stale_summaries(d, config, owner, gone, spare_kept=False)))
        yield from _rechain_all(d, config, owner, changed, stale)
        erased = yield from _by_view(d, owner, changed)
        summaries = yield from _by_view(d, owner, stale)
        return Receipt("erase", config.now(), erased, summaries=summaries)

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
    own = sign(config, owner, attrs.evolve(row, parent=None, at=0))
    yield write_branch(d, owner, own)
    yield from rewrite_marks(d, config, owner, own)


def _delete(
    d: Dialect, config: Config, owner: str, cid: str, gone: set[str]
) -> Steps[list[Erased]]:
    """Delete the conversation; add the references of the rows it stored to ``gone``."""
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
    stored = yield d.q(
        "SELECT position, message FROM {M} WHERE owner = ? AND conversation_id = ?", owner, cid
    )
    for position, text in stored:
        gone.add(message_ref(_decode(config.cipher.open_text(owner, text), cid, int(position))))
    where = " WHERE owner = ? AND conversation_id = ?"
    yield d.q("DELETE FROM {M}" + where, owner, cid)
    yield d.q("DELETE FROM {K}" + where, owner, cid)
    yield d.q("DELETE FROM {S}" + where, owner, cid)
    yield d.q("UPDATE {B} SET parent_conversation = NULL, parent_branch = NULL" + where, owner, cid)
    yield d.q("DELETE FROM {B}" + where, owner, cid)
    yield d.q("DELETE FROM {C}" + where, owner, cid)
    return [
        Erased(owner, cid, r.branch, tuple(range(r.length)), size.get(r.branch, 0)) for r in rows
    ]


def _after_delete(
    d: Dialect, config: Config, owner: str, gone: set[str]
) -> Steps[tuple[Erased, ...]]:
    """Make stale the owner's remaining summaries built from deleted messages."""
    stale = _grouped((yield from _stale_summaries(d, config, owner, gone, spare_kept=True)))
    yield from _rechain_all(d, config, owner, stale)
    summaries = yield from _by_view(d, owner, stale)
    return summaries


def delete_op(config: Config, owner: str, cid: str) -> Operation[Receipt]:
    check_id("owner", owner)
    check_id("conversation_id", cid)

    def steps(d: Dialect) -> Steps[Receipt]:
        yield from _owner_lock(d, owner)
        gone: set[str] = set()
        erased = yield from _delete(d, config, owner, cid, gone)
        summaries = yield from _after_delete(d, config, owner, gone)
        return Receipt("delete", config.now(), tuple(erased), summaries=summaries)

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
        gone: dict[str, set[str]] = defaultdict(set)
        for doomed_owner, doomed_cid in doomed:
            erased += yield from _delete(d, config, doomed_owner, doomed_cid, gone[doomed_owner])
        summaries: list[Erased] = []
        for gone_owner, refs in sorted(gone.items()):
            summaries += yield from _after_delete(d, config, gone_owner, refs)
        return Receipt("prune", config.now(), tuple(erased), summaries=tuple(summaries))

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
