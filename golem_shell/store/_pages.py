"""``load_page``: any page of a branch, verified against the chain without reading the
rest; and the *marks* that make that possible (issue 47 item 3).

**The problem.** A branch's chain (ADR 0071) binds each row to the signed head only
through every row after it: ``link_i = MAC(link_{i-1}, seal_i)``, and the head signs
the last link. ``load_window`` reads the newest rows, so it reaches the head at once.
A page of old messages would have to follow the links of every newer row to reach it:
time proportional to the branch, not the page.

**Marks.** Every ``MARK_EVERY``-th row a branch stores (positions ``p`` with ``(p + 1) %
64 == 0``) gets a mark in ``{prefix}_marks``::

    mark_p = MAC(key, "mark", owner, conversation, branch, p, link_p, rechained)

where ``(conversation, branch)`` stores the row and ``rechained`` is that branch's
revision of its last erasure (signed in its head). Appends only add rows, so the link at
``p`` never changes until an erasure re-chains the branch; that bumps ``rechained`` and
re-signs every mark of the branch (``rewrite_marks``), so a mark from before it no
longer matches. A mark is written by the append that stores its row, re-signed by an
erasure, and written for the copies ``delete`` gives a fork.

**A page.** Positions ``[start, end)``: the row before the page is read for its link
only; each page row's seal is checked against its content and its link against the one
before; then the seals and links of the rows after the page are followed up to the first
mark at or after ``end - 1`` (at most 63 rows, when every row has its mark) or, with no
mark before the end, up to the last row, whose link must be the signed head's. The mark
must verify against the head of the branch storing its row (signature and
``rechained``). Nobody without the key can make other rows reach that link, so the page
is the messages at those positions of the branch as its heads sign it. Cost: the page,
at most ``MARK_EVERY`` seals and links after it, and one branch row per ancestor.

**What a page does not detect** (documented in ``docs/stores.md``): a rollback, as any
load without the last head; where the page's rows are an ancestor's (a branch, a fork),
restoring that ancestor branch whole (its signed head and its rows) from an older backup;
and rows of a deleted conversation restored under a new conversation of the same id and
owner (its revisions start again). ``verify`` and ``load_window`` detect the last two.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from golem_shell._errors import UsageError
from golem_shell.store._crypto import mac
from golem_shell.store._errors import CorruptHistoryError, HistoryNotFound, check_length
from golem_shell.store._rows import BranchRow, Config, branch_row, checked, head_of, view_rows
from golem_shell.store._sql import Dialect, Operation, Row, Steps
from golem_shell.store._values import MAIN, Page
from golem_shell.store._window import check_run, clip, decode_contents

__all__ = ["MARK_EVERY", "append_marks", "page_op", "rewrite_marks"]

MARK_EVERY: Final = 64
"""Every how many positions a branch's row carries a mark."""

_UPSERT = (
    "INSERT INTO {K} (owner, conversation_id, branch, position, mark) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (owner, conversation_id, branch, position) DO UPDATE SET mark = excluded.mark"
)
_OWN = "owner = ? AND conversation_id = ? AND branch = ?"


def _mark(key: bytes, owner: str, row: BranchRow, position: int, link: str) -> str:
    return mac(
        key, b"mark", owner.encode(), row.conversation_id.encode(), row.branch.encode(),
        str(position).encode(), link.encode(), str(row.rechained).encode(),
    )  # fmt: skip


def _on_grid(position: int) -> bool:
    return (position + 1) % MARK_EVERY == 0


def append_marks(
    d: Dialect, config: Config, owner: str, row: BranchRow, links: Iterable[tuple[int, str]]
) -> Steps[None]:
    """Write the marks of ``row``'s newly stored rows (``(position, link)``); ``row`` is
    the branch as just signed."""
    key = config.sealer.keys[0]
    marks = tuple(
        (owner, row.conversation_id, row.branch, p, _mark(key, owner, row, p, link))
        for p, link in links
        if _on_grid(p)
    )
    if marks:
        yield d.batch(_UPSERT, marks)


def rewrite_marks(d: Dialect, config: Config, owner: str, row: BranchRow) -> Steps[None]:
    """Sign again every mark of the rows ``row`` stores itself, for its links and its
    ``rechained`` as they are now (after an erasure re-chained it, or a copy)."""
    yield d.q("DELETE FROM {K} WHERE " + _OWN, owner, row.conversation_id, row.branch)
    rows = yield d.q(
        "SELECT position, link FROM {M} WHERE " + _OWN + " AND position >= ? AND position < ? "
        f"AND (position + 1) / {MARK_EVERY} * {MARK_EVERY} = position + 1",
        owner, row.conversation_id, row.branch, row.at, row.length,
    )  # fmt: skip
    yield from append_marks(d, config, owner, row, ((int(p), str(k)) for p, k in rows))


def page_op(
    config: Config, owner: str, cid: str, branch: str, before: object, limit: object
) -> Operation[Page]:
    checked(owner, cid, branch)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(f"load_page(limit): an int of at least 1 (messages), got {limit!r}")
    until = None if before is None else check_length("load_page(before)", before)

    def steps(d: Dialect) -> Steps[Page]:
        row = yield from branch_row(d, owner, cid, branch)
        if row is None and branch != MAIN:
            raise HistoryNotFound(cid, branch)
        n = 0 if row is None else row.length
        end = n if until is None else until
        if end > n:
            raise UsageError(f"load_page(before): at most the branch's length ({n}), got {end}")
        if row is None:
            return Page(messages=(), start=0, length=0, head=None)
        _check_signed(config, owner, row)
        start = max(0, end - limit)
        if start == end:
            return Page(messages=(), start=start, length=n, head=head_of(owner, row))
        views = yield from _ancestry(d, owner, row)
        found = [(v.conversation_id, v.branch, lo, hi) for v, lo, hi in views]
        mark = yield from _first_mark(d, owner, views, end - 1, n - 1)
        stop = n - 1 if mark is None else mark[0]
        rows = yield from view_rows(
            d, owner, clip(found, max(start - 1, 0), end), "position, message, seal, link"
        )
        previous: str | None = None
        if start > 0:
            if not rows or int(rows[0][0]) != start - 1:
                raise CorruptHistoryError(
                    cid, start - 1, "no row at this position (before the page)"
                )
            previous = str(rows[0][3])
            rows = rows[1:]
        contents = check_run(config, owner, row, rows, start, end, previous)
        tail = yield from view_rows(d, owner, clip(found, end, stop + 1), "position, seal, link")
        last = _follow(config, cid, tail, end, stop + 1, str(rows[-1][3]))
        if mark is None:
            if last != row.link:
                raise CorruptHistoryError(
                    cid, n - 1,
                    "does not verify: the chain from the page does not end at the signed head",
                )  # fmt: skip
        else:
            _check_mark(config, owner, cid, mark, last)
        return Page(
            messages=decode_contents(cid, contents, 0, start), start=start, length=n,
            head=head_of(owner, row),
        )  # fmt: skip

    return Operation(steps)


def _check_signed(config: Config, owner: str, row: BranchRow) -> None:
    sealer = config.sealer
    fields = row.head_fields(owner)
    if not any(row.head == sealer.head(fields, k) for k in sealer.keys):
        raise CorruptHistoryError(
            row.conversation_id, -1,
            f"the signed head of branch {row.branch!r} of {row.conversation_id!r} does not verify",
        )  # fmt: skip


def _ancestry(d: Dialect, owner: str, row: BranchRow) -> Steps[list[tuple[BranchRow, int, int]]]:
    """The branches storing ``row``'s view, each with the positions it gives, oldest first
    (as ``segments``, with the branch rows: their heads vouch for their marks)."""
    found: list[tuple[BranchRow, int, int]] = []
    limit = row.length
    current = row
    while True:
        if current.at < limit:
            found.append((current, current.at, limit))
        limit = min(limit, current.at)
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


def _first_mark(
    d: Dialect, owner: str, views: Sequence[tuple[BranchRow, int, int]], lo: int, hi: int
) -> Steps[tuple[int, str, BranchRow] | None]:
    """The first mark of the view at a position in ``[lo, hi)``, and the branch storing it."""
    for view, seg_lo, seg_hi in views:
        bottom, top = max(lo, seg_lo), min(hi, seg_hi)
        if bottom >= top:
            continue
        rows = yield d.q(
            "SELECT position, mark FROM {K} WHERE " + _OWN + " AND position >= ? "
            "AND position < ? ORDER BY position LIMIT 1",
            owner, view.conversation_id, view.branch, bottom, top,
        )  # fmt: skip
        if rows:
            return int(rows[0][0]), str(rows[0][1]), view
    return None


def _follow(
    config: Config, cid: str, rows: Sequence[Row], first: int, end: int, previous: str
) -> str:
    """The link at ``end - 1``, following ``previous`` (the link at ``first - 1``) through
    ``rows`` (``position, seal, link``), which must be positions ``first .. end - 1``."""
    sealer = config.sealer
    expected = first
    for position, seal, link in rows:
        if position != expected:
            raise CorruptHistoryError(cid, expected, f"no row at this position (next: {position})")
        if not any(link == sealer.link(previous, seal, k) for k in sealer.keys):
            raise CorruptHistoryError(
                cid, expected, "does not verify: its link does not follow the message before it"
            )
        previous = str(link)
        expected += 1
    if expected != end:
        raise CorruptHistoryError(cid, expected, "no row at this position")
    return previous


def _check_mark(
    config: Config, owner: str, cid: str, mark: tuple[int, str, BranchRow], link: str
) -> None:
    position, stored, view = mark
    _check_signed(config, owner, view)
    if not any(stored == _mark(k, owner, view, position, link) for k in config.sealer.keys):
        raise CorruptHistoryError(
            cid, position,
            "does not verify: the chain from the page does not reach the signed mark of "
            "this position (a row in or after the page was changed, or restored from a backup)",
        )  # fmt: skip
