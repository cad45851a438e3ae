"""The boundary pass for history from across a trust boundary.

Owns ``sanitize_history`` and its report. A history a client submitted can assert
anything: a system prompt with operator authority, a media URL naming
``file:///etc/passwd``, a fabricated tool call. The pass drops system messages and
every URL part a browser would not fetch over http(s) (``is_safe_url``, re-exported
here from ``_urls``), repairs pairing, and reports each of these so that the boundary
can log, reject or bill the attempt.

It narrows reach, not trust: see ADR 0029 for what it does not prove. Runs never call
it; the boundary is the application's. ``safe_parts`` is the same URL rule for one
answer a client gives a paused run (``ExternalResult``), applied before the run signs
it (ADR 0068).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import attrs
from attrs import field, frozen

from golem_core._messages import Message, Part, PartKind, Role, URLPart
from golem_core.history._history import (
    INTERRUPTED_RESULT_TEXT,
    UNFINISHED_RESULT_TEXT,
    HistoryRepair,
    RepairEntry,
    _holds_nothing,
    normalize_history,
)
from golem_core.history._provenance import (
    MessageProvenance,
    SigningKeys,
    _checked,
    _sign,
    _vouched,
    signing_keys,
)
from golem_core.history._urls import is_safe_url, url_scheme

__all__ = [
    "SanitizeReport",
    "UnsafePart",
    "is_safe_url",
    "safe_parts",
    "sanitize_history",
    "url_scheme",
]

_SYSTEM = Role.SYSTEM
_TOOL = Role.TOOL


@frozen
class UnsafePart:
    """A URL part that ``sanitize_history`` dropped.

    Attributes:
        message_index: Index of the message that held it, into the INPUT history.
        kind: What the part held (``image``, ``audio``, ``video``, ``document``).
        scheme: The scheme as a browser reads it, lowercase; ``""`` when the URL has
            none (``//host/x``, an empty string). ``http``/``https`` only for a URL a
            browser cannot parse (no host, a bad port).
    """

    message_index: int
    kind: PartKind
    scheme: str


@frozen
class SanitizeReport:
    """What ``sanitize_history`` removed and repaired; every index is into its input.

    Attributes:
        system_prompts: How many system messages were dropped.
        unsafe_parts: The URL parts dropped, in input order.
        emptied: User and assistant messages removed because dropping their unsafe parts
            left them holding nothing. ``tool`` messages are never removed for this.
        repair: The pairing repair of what remained (``normalize_history``'s report,
            its indices mapped back to the input of ``sanitize_history``).
        unverified: ``tool`` messages dropped because, with ``key=``, they are not
            signed (``v2``) and intact in their place (ADR 0056, 0068).
    """

    system_prompts: int = field(default=0, kw_only=True)
    unsafe_parts: tuple[UnsafePart, ...] = field(default=(), kw_only=True)
    emptied: tuple[int, ...] = field(default=(), kw_only=True)
    repair: HistoryRepair = field(default=HistoryRepair(), kw_only=True)
    unverified: tuple[int, ...] = field(default=(), kw_only=True)

    @property
    def changed(self) -> bool:
        """Whether the returned history differs from the input."""
        return bool(self.system_prompts or self.unsafe_parts or self.emptied) or (
            self.repair.changed or bool(self.unverified)
        )

    @property
    def clean(self) -> bool:
        """Whether the input passed untouched (``not changed``); detections such as
        truncated arguments may still be listed in ``repair``."""
        return not self.changed


def safe_parts(parts: Sequence[Part]) -> tuple[Part, ...]:
    """``parts`` without the URL parts ``sanitize_history`` drops (``is_safe_url``).

    For what a client asserts outside a history, such as the parts of an
    ``ExternalResult`` answering a paused call: a run signs what it adds, so these must
    be sanitized before they join the history (ADR 0068), or the signature would vouch
    for a client's ``file://`` URL. Total, deterministic and idempotent; the same tuple
    object when nothing is dropped.
    """
    kept = tuple(p for p in parts if type(p) is not URLPart or is_safe_url(p.url))
    if len(kept) == len(parts) and isinstance(parts, tuple):
        return parts
    return kept


@frozen
class _KeyedView:
    """What a keyed ``sanitize_history`` needs to know of a history (ADR 0056, 0068).

    Attributes:
        forged: indices of the ``tool`` messages to drop: not signed (``v2``) and intact
            in their place, the neutral no-result results excepted (``interrupted_result``
            and ``unfinished_result``: no stamps by design, derived from their call; the
            first is what repair would synthesize, and dropping the second would let a
            call that may have run read as one that never did).
        own: indices of assistant and ``tool`` messages signed (``v2``) and intact in
            their place: the server's own.
        vouched: ``signed_calls(history, keys)``.
        places: each message's place, to re-sign one in place.
        key: the newest key, which re-signs.
    """

    forged: frozenset[int]
    own: frozenset[int]
    vouched: frozenset[str]
    places: tuple[bytes, ...]
    key: bytes = field(repr=False)

    def resign(self, index: int, message: Message) -> Message:
        """``message`` (the one at ``index``, with unsafe URL parts dropped) signed again
        in its place: sanitizing never moves a message (``_chain_link``)."""
        return _sign(message, self.key, self.places[index])


def _neutral(m: Message) -> bool:
    return any(
        m == Message.tool_result(m.tool_call_id, m.tool_name, text)
        for text in (INTERRUPTED_RESULT_TEXT, UNFINISHED_RESULT_TEXT)
    )


def _keyed_view(history: Sequence[Message], keys: SigningKeys) -> _KeyedView:
    """The ``_KeyedView`` of ``history`` under ``keys``. Total and deterministic."""
    usable = signing_keys(keys)
    checked = _checked(history, usable)
    forged: set[int] = set()
    own: set[int] = set()
    for i, (m, (verdict, _, bound, _)) in enumerate(zip(history, checked, strict=True)):
        if m.role is not Role.TOOL and m.role is not Role.ASSISTANT:
            continue
        if verdict is MessageProvenance.SIGNED and bound:
            own.add(i)
        elif m.role is Role.TOOL and not _neutral(m):
            forged.add(i)
    return _KeyedView(
        forged=frozenset(forged),
        own=frozenset(own),
        vouched=_vouched(history, usable, checked),
        places=tuple(c[3] for c in checked),
        key=usable[0],
    )


def _remap(entries: tuple[RepairEntry, ...], origin: list[int]) -> tuple[RepairEntry, ...]:
    return tuple(attrs.evolve(e, message_index=origin[e.message_index]) for e in entries)


def sanitize_history(
    history: Sequence[Message],
    *,
    awaiting: Collection[str] = (),
    key: SigningKeys | None = None,
) -> tuple[tuple[Message, ...], SanitizeReport]:
    """Strip what an untrusted history may not assert, repair pairing, report it all.

    - every system message is dropped (counted in ``system_prompts``);
    - every URL part that ``is_safe_url`` rejects is dropped, wherever it sits
      (``unsafe_parts``); data parts and unknown parts are left alone;
    - a user or assistant message left holding nothing by those drops is removed
      (``emptied``); a ``tool`` message never is: it keeps its remaining parts, so
      pairing evidence survives;
    - pairing is repaired by ``normalize_history`` (``repair``), except that a dangling
      call of the last assistant turn whose id is in ``awaiting`` is left open;
    - with ``key``: a ``tool`` message that is not signed (``v2``) and intact in its
      place is dropped (``unverified``; the neutral no-result results excepted), and only
      dangling calls that ``signed_calls`` vouches for stay open (and are in
      ``awaiting``, if given). A signed, intact assistant or tool message loses unsafe
      URL parts like any other (a client's ``ExternalResult`` signed by an older golem
      may hold one) and is then signed again, in place, with the newest key, so it
      keeps verifying (ADR 0068); otherwise it passes unchanged.

    Content is never rewritten: a kept message is the same object, or the same message
    with unsafe parts removed; thinking, failure flags, arguments and stamps pass through.

    Args:
        history: A history from across a trust boundary.
        awaiting: call ids the *server* vouches are waiting for deferred answers (the
            ids of a paused run's ``deferred`` calls, kept server-side). Those calls,
            when they dangle in the last assistant turn, stay open so the paused run
            can be answered; every other dangling call, a fabricated one included, is
            closed and reported. Never take these ids from the history itself.
        key: the server's signing keys (one, or several newest first): a stateless
            server resumes from client-held history with signatures instead of stored
            ids (ADR 0056).

    Returns:
        The sanitized history and a ``SanitizeReport`` whose indices all refer to
        ``history``. Total, deterministic and idempotent; a clean input is returned as
        is (the same tuple object when it is a tuple).

    Raises:
        TypeError: ``awaiting`` is a single string (a programming error: ``"call_12"``
            would vouch for ``"1"``).
    """
    if isinstance(awaiting, str | bytes):
        raise TypeError(
            "awaiting must be a collection of call ids, not a single string"
            f" ({awaiting!r} would vouch for every id it contains, such as '1');"
            " pass a set or tuple: awaiting={...}"
        )
    forged: frozenset[int] = frozenset()
    keyed = None
    if key is not None:  # signatures vouch; a non-empty awaiting narrows them further
        keyed = _keyed_view(history, key)
        forged = keyed.forged
        awaiting = keyed.vouched & frozenset(awaiting) if awaiting else keyed.vouched
    unverified: list[int] = []
    kept: list[Message] | None = None  # built from the first change on
    origin: list[int] = []
    system_prompts = 0
    unsafe: list[UnsafePart] = []
    emptied: list[int] = []
    for i, m in enumerate(history):
        keep: Message | None = None
        if m.role is _SYSTEM:
            system_prompts += 1
        elif i in forged:
            unverified.append(i)
        else:
            for p in m.parts:
                if type(p) is URLPart and not is_safe_url(p.url):
                    break
            else:  # nothing to drop: the message stays as it is
                if kept is not None:
                    kept.append(m)
                    origin.append(i)
                continue
            remaining: list[Part] = []
            for p in m.parts:
                if type(p) is URLPart and not is_safe_url(p.url):
                    unsafe.append(UnsafePart(i, p.kind, url_scheme(p.url)))
                else:
                    remaining.append(p)
            if m.role is _TOOL or not _holds_nothing(remaining):
                keep = attrs.evolve(m, parts=tuple(remaining))
                if keyed is not None and i in keyed.own:  # the server's own: re-signed in place
                    keep = keyed.resign(i, keep)
            else:
                emptied.append(i)
        if kept is None:  # the first change: everything before it stays
            kept = list(history[:i])
            origin = list(range(i))
        if keep is not None:
            kept.append(keep)
            origin.append(i)

    if kept is None:
        out, repair = _restore_awaiting(history, *normalize_history(history), awaiting)
        return out, SanitizeReport(repair=repair)
    out, repair = _restore_awaiting(kept, *normalize_history(kept), awaiting)
    repair = HistoryRepair(
        synthesized=_remap(repair.synthesized, origin),
        dropped=_remap(repair.dropped, origin),
        moved=_remap(repair.moved, origin),
        truncated=_remap(repair.truncated, origin),
        reused=_remap(repair.reused, origin),
        empty=tuple(origin[j] for j in repair.empty),
    )
    report = SanitizeReport(
        system_prompts=system_prompts,
        unsafe_parts=tuple(unsafe),
        emptied=tuple(emptied),
        repair=repair,
        unverified=tuple(unverified),
    )
    return out, report


def _restore_awaiting(
    src: Sequence[Message],
    out: tuple[Message, ...],
    repair: HistoryRepair,
    awaiting: Collection[str],
) -> tuple[tuple[Message, ...], HistoryRepair]:
    """Take back the results repair synthesized for vouched calls of the last turn.

    Matched by turn, not only by id: only entries of the final assistant turn (its
    index in ``src``, the input of the repair) reopen, so a call with a reused id in an
    earlier turn keeps its synthesized result and its report entry, and a result that
    really answers the final turn is never taken away (repair synthesizes only for a
    call its turn left unanswered).
    """
    if not awaiting or not repair.synthesized:
        return out, repair
    end = len(out)
    while end > 0 and out[end - 1].role is _TOOL:
        end -= 1
    if end == 0 or out[end - 1].role is not Role.ASSISTANT:
        return out, repair
    turn = next(i for i in range(len(src) - 1, -1, -1) if src[i].role is Role.ASSISTANT)
    reopen = {
        e.call_id
        for e in repair.synthesized
        if e.message_index == turn and e.call_id is not None and e.call_id in awaiting
    }
    if not reopen:
        return out, repair
    kept = out[:end] + tuple(m for m in out[end:] if m.tool_call_id not in reopen)
    synthesized = tuple(
        e for e in repair.synthesized if not (e.message_index == turn and e.call_id in reopen)
    )
    return kept, attrs.evolve(repair, synthesized=synthesized)
