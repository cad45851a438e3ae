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
before. Then the seals and links after the page are followed to the first mark at or
after ``end - 1`` in the branch storing that row (at most 63 rows when every row has its
mark); the mark must verify against that branch's signed head (signature and
``rechained``). When that branch is the one loaded, done; with no mark before its end,
the walk reaches its last row, whose link must be the signed head's. When it is an
ancestor (a page of a branch or a fork reading its parent's rows), the ancestor's head
could be an older genuine state of it, so the walk goes on: from the ancestor's last mark
before its part of the view ends (same ``rechained``: the same chain), through the rows
to that end, into the next branch's rows, to a mark or the head of the branch loaded
(``_reach``). Nobody without the key can make other rows reach that link, so the page is
the messages at those positions of the branch its head signs. Cost: the page, at most
about two marks' distance of seals and links per branch crossed, one branch row per
ancestor.

**What a page does not detect** (documented in ``docs/stores.md``): a rollback of the
branch loaded, as any load without the last head; and rows of a deleted conversation
restored under a new conversation of the same id and owner (its revisions start again),
which ``verify`` and ``load_window`` detect.
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
        yield from _reach(d, config, owner, row, views, end - 1, str(rows[-1][3]))
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


def _reach(
    d: Dialect,
    config: Config,
    owner: str,
    row: BranchRow,
    views: Sequence[tuple[BranchRow, int, int]],
    position: int,
    link: str,
) -> Steps[None]:
    """Bind ``link`` (the chain's link at ``position``, from the rows just checked) to
    ``row``'s signed head, reading seals and links forward only as far as needed.

    In the branch storing ``position``, the rows are followed to its first mark. That mark
    binds the link to that branch's head; when the branch is ``row`` itself, done. An
    ancestor's head alone could be an older genuine state of the ancestor (restored whole
    from a backup), so the walk goes on to the view's own rows: from the ancestor's last
    mark before its part of the view ends (a mark of the same erasure revision: the same
    chain), through the rows up to that end, into the next branch's rows, and so on up to
    a mark of ``row``'s own rows or its last row, whose link must be the head's. Per
    branch crossed: at most two marks' distance of seals and links.
    """
    cid = row.conversation_id
    index = next(i for i, (_, lo, hi) in enumerate(views) if lo <= position < hi)
    while True:
        view, lo, hi = views[index]
        final = index == len(views) - 1
        found = yield from _marks(
            d, owner, view, max(position, lo), row.length - 1 if final else hi
        )
        if found:
            mark, stored = found[0]
            link = yield from _walk(d, config, owner, view, position, mark, link, cid)
            _check_mark(config, owner, cid, (mark, stored, view), link)
            if final:
                return
            position = mark
            later = yield from _marks(d, owner, view, mark + 1, hi, last=True)
            if later:
                position, stored = later[0]
                at = yield d.q(
                    "SELECT link FROM {M} WHERE " + _OWN + " AND position = ?",
                    owner, view.conversation_id, view.branch, position,
                )  # fmt: skip
                if not at:
                    raise CorruptHistoryError(cid, position, "no row at this position")
                link = str(at[0][0])
                _check_mark(config, owner, cid, (position, stored, view), link)
        stop = row.length - 1 if final else hi - 1
        link = yield from _walk(d, config, owner, view, position, stop, link, cid)
        if final:
            if link != row.link:
                raise CorruptHistoryError(
                    cid, stop,
                    "does not verify: the chain from the page does not end at the signed head",
                )  # fmt: skip
            return
        position = stop
        index += 1


def _marks(
    d: Dialect, owner: str, view: BranchRow, lo: int, hi: int, *, last: bool = False
) -> Steps[list[tuple[int, str]]]:
    """The first (``last``: the last) mark ``view`` stores at a position in ``[lo, hi)``."""
    if lo >= hi:
        return []
    rows = yield d.q(
        "SELECT position, mark FROM {K} WHERE " + _OWN + " AND position >= ? "
        "AND position < ? ORDER BY position" + (" DESC" if last else "") + " LIMIT 1",
        owner, view.conversation_id, view.branch, lo, hi,
    )  # fmt: skip
    return [(int(p), str(m)) for p, m in rows]


def _walk(
    d: Dialect,
    config: Config,
    owner: str,
    view: BranchRow,
    position: int,
    stop: int,
    link: str,
    cid: str,
) -> Steps[str]:
    """The link at ``stop``, following ``link`` (at ``position``) through ``view``'s rows."""
    if stop <= position:
        return link
    rows = yield d.q(
        "SELECT position, seal, link FROM {M} WHERE " + _OWN + " AND position > ? "
        "AND position <= ? ORDER BY position",
        owner, view.conversation_id, view.branch, position, stop,
    )  # fmt: skip
    return _follow(config, cid, rows, position + 1, stop + 1, link)


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
