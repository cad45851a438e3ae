"""``load_window``: the newest part of a branch, from a step point back, verified against
its signed head without reading the rest (issue 34 item 3, ADR 0107).

**Where a window starts.** ``trim_history(last, low_water=w)`` cuts a history of ``n``
messages (``n > last``) at ``cut = ceil((n - last) / step) * step`` with ``step = last -
w``: a multiple of the step, counted from the start (ADR 0078). The window starts one
step before it, at ``cut - step`` (``0`` while ``n <= last``; the sliding window,
``step == 0``, one message before its cut). So:

- the window holds between ``last + 1`` and ``last + step`` messages once the branch is
  longer than ``last``, whatever ``n`` is: the cost of a load does not grow with the
  conversation;
- its start moves once per ``step`` messages of growth, so every window is the previous
  one plus new messages between two moves: it is cache-stable itself;
- the same processor run on the window cuts where it cuts on the whole branch, and so
  returns the same messages: the window is longer than ``last`` (so the processor cuts)
  and starts on the step grid (so the step points it counts from the window's start
  are the branch's). The opening rule then advances from the same point. This holds for
  positions; a branch holding system messages (golem never stores them: a run's
  ``new_messages`` carry none) is windowed by positions, still cache-stable, and its
  processor may then cut elsewhere.

**Verification.** The window's rows chain (ADR 0071): ``link_i = MAC(link_{i-1},
seal_i)``, and the signed head holds the branch's length and last link. The row before
the window is read for its link only; each window row's seal is checked against its
plaintext and its link against the previous one, and the last link and the number of
rows against the verified head. No one without the key can make another sequence of
rows that reaches the head's link, so the window is the last ``n - start`` messages of
the branch the head signs, after every erasure it holds (an erased row restored from a
backup breaks its seal or its link), whatever is stored before it. Any failure raises
``CorruptHistoryError`` naming the position.

**A token budget's recorded step point.** ``append(..., window=)`` records a budget
window's start, signed, with the erasure revision of the head it was read at
(``record_step``); a ``load_window`` of that processor without ``after=`` anchors there
while the revision holds (``_recorded_anchor``), as it would with ``after=`` (ADR 0107,
amended).

**Pins.** ``keep_first=k`` also returns the branch's first ``k`` messages (the first
user message, a summary a compaction placed first). When they reach the window they
are checked as one chain with it, from the genesis; otherwise they are checked from the
genesis (sealed for this owner and conversation, in this order from its start) but not
bound to the head without reading the rows between: ADR 0107 says what that leaves out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import cast

from attrs import frozen
from returns.result import Failure, Success

from golem_core import (
    Message,
    budget_window,
    decode_history,
    decode_message,
    message_window,
)
from golem_shell._errors import UsageError
from golem_shell.store._crypto import mac
from golem_shell.store._errors import CorruptHistoryError, HistoryNotFound, check_length
from golem_shell.store._rows import (
    BranchRow,
    Config,
    Segment,
    branch_row,
    checked,
    head_of,
    segments,
    view_rows,
)
from golem_shell.store._sql import Dialect, Operation, Row, Steps
from golem_shell.store._values import MAIN, Finding, FindingKind, Head, Window
from golem_shell.store._verify import gone_verdict, rollback_findings

__all__ = [
    "check_run",
    "check_step_window",
    "clip",
    "decode_contents",
    "record_step",
    "window_op",
    "window_start",
]

_COLUMNS = "position, message, seal, link"


def window_start(length: int, last: int, low_water: int) -> int:
    """The first position of the window of a branch of ``length`` messages.

    ``0`` while ``length <= last``; else one step (``last - low_water``) before the
    stepped cut of ``trim_history(last, low_water=low_water)``, which is on the step
    grid; for the sliding window (``low_water == last``), one message before its cut.
    Total and deterministic; moves only when ``length`` passes ``last + k * step``.
    """
    if length <= last:
        return 0
    step = last - low_water
    if step == 0:
        return length - last - 1
    cut = -(-(length - last) // step) * step
    return cut - step


@frozen
class _Bound:
    """What bounds a window: ``trim_history``'s numbers, or a budget processor."""

    last: int = 0
    low_water: int = 0
    budget: object = None  # a processor ``budget_window`` answers for


def _check_args(
    last: object, low_water: object, keep_first: object, processor: object
) -> tuple[_Bound, int]:
    keep = check_length("keep_first", keep_first)
    if processor is not None:
        if last is not None or low_water is not None:
            raise UsageError(
                "load_window: pass processor= or last= (with low_water=), not both; "
                f"got processor={processor!r}, last={last!r}, low_water={low_water!r}"
            )
        numbers = message_window(processor)
        if numbers is not None:
            return _Bound(*numbers), keep
        if budget_window(processor, ()) is not None:
            return _Bound(budget=processor), keep
        raise UsageError(
            f"load_window(processor): {processor!r} may read every message of the "
            "history: only trim_history or budget_history, or a compose(...) whose first "
            "stage is one, bounds what a processor reads. Bound it with "
            "compose(trim_history(n), ...), or load() the whole branch"
        )
    if last is None:
        raise UsageError(
            "load_window: pass last= (your trim_history's max_messages) or processor= "
            "(the agent's history_processor)"
        )
    if isinstance(last, bool) or not isinstance(last, int) or last < 1:
        raise UsageError(f"load_window(last): an int of at least 1 (messages), got {last!r}")
    if low_water is None:
        low = last - last // 2
    elif isinstance(low_water, bool) or not isinstance(low_water, int):
        raise UsageError(
            f"load_window(low_water): None or an int from 1 to last, got {low_water!r}"
        )
    elif not 1 <= low_water <= last:
        raise UsageError(
            f"load_window(low_water): from 1 to last ({last}), got {low_water}; "
            "pass the numbers your trim_history has"
        )
    else:
        low = low_water
    return _Bound(last, low), keep


def window_op(
    config: Config,
    owner: str,
    cid: str,
    branch: str,
    last: int | None,
    low_water: int | None,
    keep_first: int,
    processor: object = None,
    last_head: object = None,
    after: object = None,
    stored: bool = True,
) -> Operation[Window]:
    checked(owner, cid, branch)
    bound, keep = _check_args(last, low_water, keep_first, processor)
    previous = _check_after(owner, cid, branch, after)
    if last_head is None and previous is not None:
        last_head = previous.head
    last_seen = _check_head(owner, cid, branch, last_head)
    grid = "" if bound.budget is None else repr(bound.budget)

    def steps(d: Dialect) -> Steps[Window]:
        row = yield from branch_row(d, owner, cid, branch)
        if row is None:
            if last_seen is not None and last_seen.length:
                _refuse(cid, gone_verdict(config, owner, last_seen).findings)
            if branch == MAIN:
                return Window(messages=(), start=0, length=0, pinned=0, head=None, step_grid=grid)
            raise HistoryNotFound(cid, branch)
        n = row.length
        found = yield from segments(d, owner, row)
        if bound.budget is None:
            start = window_start(n, bound.last, bound.low_water)
        elif previous is None and stored:  # a stateless first load: the recorded step
            start = yield from _recorded_anchor(d, config, owner, row, grid, keep)
        else:
            start = _anchor(row, previous, grid, keep)
        pinned = min(keep, start)
        if pinned >= start - 1:  # one run from the genesis: read it all
            start = start if bound.budget is None else 0
            rows = yield from view_rows(d, owner, found, _COLUMNS)
            contents = check_run(config, owner, row, rows, 0, n, None)
            _check_end(config, owner, row, rows)
            if last_seen is not None:
                links = {int(r[0]): str(r[3]) for r in rows}
                _refuse(cid, rollback_findings(config, owner, row, links, last_seen))
            read = decode_contents(cid, contents, 0, 0)
            start += _budget_start(bound, read[start:], anchored=False)
            pinned = min(keep, start)
            messages = read[:pinned] + read[start:]
            return Window(
                messages=messages, start=start, length=n, pinned=pinned,
                head=head_of(owner, row), step_grid=grid,
            )  # fmt: skip
        rows = yield from view_rows(d, owner, clip(found, start - 1, n), _COLUMNS)
        if not rows or int(rows[0][0]) != start - 1:
            raise CorruptHistoryError(cid, start - 1, "no row at this position (before the window)")
        contents = check_run(config, owner, row, rows[1:], start, n, str(rows[0][3]))
        _check_end(config, owner, row, rows)
        if last_seen is not None:
            links = yield from _links_back_to(d, config, owner, row, found, rows, last_seen)
            _refuse(cid, rollback_findings(config, owner, row, links, last_seen))
        read = decode_contents(cid, contents, 0, start)
        moved = _budget_start(bound, read, anchored=True)
        if moved < 0:  # the anchor was not a step point before the cut: read it all
            moved_window = yield from window_op(
                config, owner, cid, branch, None, None, keep, bound.budget, last_head,
                stored=False,
            ).steps(d)  # fmt: skip
            return moved_window
        start += moved
        pinned = min(keep, start)
        pins: tuple[Message, ...] = ()
        if pinned:
            pin_rows = yield from view_rows(d, owner, clip(found, 0, pinned), _COLUMNS)
            pins = decode_contents(
                cid, check_run(config, owner, row, pin_rows, 0, pinned, None), 0, 0
            )
        return Window(
            messages=pins + read[moved:], start=start, length=n, pinned=pinned,
            head=head_of(owner, row), step_grid=grid,
        )  # fmt: skip

    return Operation(steps)


def _check_after(owner: str, cid: str, branch: str, after: object) -> Window | None:
    if after is None:
        return None
    if not isinstance(after, Window):
        raise UsageError(f"load_window(after): the Window of an earlier load, got {after!r}")
    head = after.head
    if head is not None and (head.owner, head.conversation_id, head.branch) != (
        owner, cid, branch,
    ):  # fmt: skip
        raise UsageError(
            "load_window(after): a window of this owner, conversation and branch, got one "
            f"of {head.owner!r}, {head.conversation_id!r}, {head.branch!r}"
        )
    return after


def _anchor(row: BranchRow, previous: Window | None, grid: str, keep: int) -> int:
    """Where a budget window's read starts: the last window's start, when that is a step
    point of this processor on this branch as it is now; else ``0`` (read it all)."""
    if previous is None or previous.head is None or previous.step_grid != grid:
        return 0
    if row.rechained > previous.head.revision:  # an erasure since: counts may differ
        return 0
    start = previous.start
    if start > row.length or (keep and keep >= start - 1):
        return 0
    return start


def _grid_key(grid: str) -> str:
    return hashlib.sha256(grid.encode()).hexdigest()[:32]


def _step_mark(
    key: bytes, owner: str, cid: str, branch: str, grid: str, start: int, rechained: int
) -> str:
    return mac(
        key, b"step", owner.encode(), cid.encode(), branch.encode(), grid.encode(),
        str(start).encode(), str(rechained).encode(),
    )  # fmt: skip


def check_step_window(owner: str, cid: str, branch: str, window: object) -> Window | None:
    """``append(..., window=)``: a ``Window`` of this branch, or ``None``."""
    if window is None:
        return None
    if not isinstance(window, Window):
        raise UsageError(f"append(window): the Window the turn ran on, got {window!r}")
    head = window.head
    if head is not None and (head.owner, head.conversation_id, head.branch) != (
        owner, cid, branch,
    ):  # fmt: skip
        raise UsageError(
            "append(window): a window of this owner, conversation and branch, got one of "
            f"{head.owner!r}, {head.conversation_id!r}, {head.branch!r}"
        )
    return window


def record_step(
    d: Dialect, config: Config, owner: str, cid: str, branch: str, window: Window
) -> Steps[None]:
    """Record a budget window's start (a step point of its processor on the branch as its
    head was) for the next first load of that processor. Stamped with the head's
    ``rechained``: an erasure since (before or after this append) makes it stale."""
    if not window.step_grid or window.head is None or window.start == 0:
        return
    rechained = window.head.rechained
    mark = _step_mark(
        config.sealer.keys[0], owner, cid, branch, window.step_grid, window.start, rechained
    )
    yield d.q(
        "INSERT INTO {S} (owner, conversation_id, branch, grid, start, rechained, mark) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, conversation_id, branch, grid) "
        "DO UPDATE SET start = excluded.start, rechained = excluded.rechained, "
        "mark = excluded.mark",
        owner, cid, branch, _grid_key(window.step_grid), window.start, rechained, mark,
    )  # fmt: skip


def _recorded_anchor(
    d: Dialect, config: Config, owner: str, row: BranchRow, grid: str, keep: int
) -> Steps[int]:
    """The step point ``append(..., window=)`` recorded for this processor on this branch,
    when its mark verifies and no erasure re-chained the branch since; else ``0``."""
    rows = yield d.q(
        "SELECT start, rechained, mark FROM {S} WHERE owner = ? AND conversation_id = ? "
        "AND branch = ? AND grid = ?",
        owner, row.conversation_id, row.branch, _grid_key(grid),
    )  # fmt: skip
    if not rows:
        return 0
    start, rechained, stored = int(rows[0][0]), int(rows[0][1]), str(rows[0][2])
    keys = config.sealer.keys
    marks = (
        _step_mark(k, owner, row.conversation_id, row.branch, grid, start, rechained) for k in keys
    )
    if rechained != row.rechained or stored not in marks:
        return 0
    if start > row.length or (keep and keep >= start - 1):
        return 0
    return start


def _budget_start(bound: _Bound, read: tuple[Message, ...], *, anchored: bool) -> int:
    """How far past the first message read a budget window starts (``0`` for a window by
    message count); ``-1`` when an anchored read fits the budget whole, which a genuine
    anchor (a step point before the cut, on a history that only grew) never does."""
    if bound.budget is None:
        return 0
    window = budget_window(bound.budget, read)
    assert window is not None  # checked by _check_args
    return -1 if anchored and window.fits else window.start


def _check_head(owner: str, cid: str, branch: str, last_head: object) -> Head | None:
    if last_head is None:
        return None
    if not isinstance(last_head, Head):
        raise UsageError(
            f"load_window(last_head): the Head of an earlier window or append, got {last_head!r}"
        )
    if (last_head.owner, last_head.conversation_id, last_head.branch) != (owner, cid, branch):
        raise UsageError(
            "load_window(last_head): a head of this owner, conversation and branch, got one "
            f"of {last_head.owner!r}, {last_head.conversation_id!r}, {last_head.branch!r}"
        )
    return last_head


def _links_back_to(
    d: Dialect,
    config: Config,
    owner: str,
    row: BranchRow,
    found: Sequence[Segment],
    window: Sequence[Row],
    last: Head,
) -> Steps[dict[int, str]]:
    """The verified link at ``last.length - 1``, when ``rollback_findings`` needs it.

    ``window`` starts with the row before the window, whose link the window's check has
    bound to the signed head. A position in the window is read from it; an earlier one
    (the caller's head is older than the window) is bound to that link by reading the
    seals and links from it on and following the chain: the rows appended since the
    caller's head, and no more (nothing is decoded or decrypted).
    """
    position = last.length - 1
    if position < 0 or row.revision <= last.revision or row.rechained > last.revision:
        return {}  # not needed: the revisions decide
    first = int(window[0][0])
    if position >= first:
        return {int(r[0]): str(r[3]) for r in window if int(r[0]) == position}
    rows = yield from view_rows(d, owner, clip(found, position, first), "position, seal, link")
    if len(rows) != first - position or int(rows[0][0]) != position:
        return {}  # a position missing before the window: not an extension of the head
    sealer = config.sealer
    previous = str(rows[0][2])
    for _, seal, link in [*rows[1:], (window[0][0], window[0][2], window[0][3])]:
        if not any(link == sealer.link(previous, seal, k) for k in sealer.keys):
            return {}  # the chain does not lead from the head's message to the window
        previous = str(link)
    return {position: str(rows[0][2])}


def _refuse(cid: str, findings: Sequence[Finding]) -> None:
    """Raise on the first finding about the caller's last head (a rollback)."""
    for finding in findings:
        rolled_back = finding.kind is FindingKind.ROLLED_BACK
        hint = " (rolled back: the database is older than the head you kept)" if rolled_back else ""
        raise CorruptHistoryError(cid, finding.position, finding.detail + hint)


def clip(found: Sequence[Segment], lo: int, hi: int) -> list[Segment]:
    """The parts of a view's physical ranges within positions ``[lo, hi)``."""
    out: list[Segment] = []
    for cid, branch, seg_lo, seg_hi in found:
        top = hi if seg_hi is None else min(seg_hi, hi)
        bottom = max(seg_lo, lo)
        if bottom < top:
            out.append((cid, branch, bottom, top))
    return out


def check_run(
    config: Config,
    owner: str,
    row: BranchRow,
    rows: Sequence[Row],
    first: int,
    end: int,
    previous: str | None,
) -> list[bytes]:
    """The plaintexts of ``rows``, which must be positions ``first .. end - 1``, each
    sealed for this chain and linked to the one before (``previous``: the link before
    ``first``; ``None``: the genesis, ``first`` being 0)."""
    cid = row.conversation_id
    sealer = config.sealer
    keys = sealer.keys
    geneses = [(k, sealer.genesis(owner, row.root, k)) for k in keys]
    opened = config.cipher.open_text
    contents: list[bytes] = []
    expected = first
    for position, text, seal, link in rows:
        if position != expected:
            raise CorruptHistoryError(cid, expected, f"no row at this position (next: {position})")
        if not isinstance(text, str):
            raise CorruptHistoryError(cid, expected, f"stored value is {type(text).__name__}")
        content = opened(owner, text)
        if not any(seal == sealer.seal(g, content, k) for k, g in geneses):
            raise CorruptHistoryError(
                cid, expected, "does not verify: its content does not match its seal"
            )
        links = [g for _, g in geneses] if previous is None else [previous]
        if not any(link == sealer.link(p, seal, k) for p in links for k in keys):
            raise CorruptHistoryError(
                cid, expected, "does not verify: its link does not follow the message before it"
            )
        previous = str(link)
        contents.append(content)
        expected += 1
    if expected != end:
        raise CorruptHistoryError(
            cid, expected, f"does not verify: the signed head says {end} messages, fewer stored"
        )
    return contents


def _check_end(config: Config, owner: str, row: BranchRow, rows: Sequence[Row]) -> None:
    """The head verifies and its last link is the last row's."""
    sealer = config.sealer
    fields = row.head_fields(owner)
    if not any(row.head == sealer.head(fields, k) for k in sealer.keys):
        raise CorruptHistoryError(
            row.conversation_id, -1, "the branch's signed head does not verify"
        )
    last_link = str(rows[-1][3]) if rows else sealer.genesis(owner, row.root)
    if row.length and last_link != row.link:
        raise CorruptHistoryError(
            row.conversation_id,
            row.length - 1,
            "does not verify: the last message is not the one the signed head ends with",
        )


def decode_contents(
    cid: str, contents: list[bytes], pinned: int, start: int
) -> tuple[Message, ...]:
    """One ``decode_history`` over the rows; one at a time only to name a failure."""
    match decode_history(b"[" + b",".join(contents) + b"]"):
        case Success(messages) if len(messages) == len(contents):
            return cast(tuple[Message, ...], messages)
        case _:
            pass
    for index, content in enumerate(contents):
        match decode_message(content):
            case Failure(error):
                position = index if index < pinned else start + index - pinned
                raise CorruptHistoryError(cid, position, error.message)
            case _:
                pass
    raise CorruptHistoryError(cid, start, "the rows do not decode together")  # pragma: no cover
