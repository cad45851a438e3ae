"""The boundary pass for history from across a trust boundary, and how it reads URLs.

Owns ``sanitize_history`` and its report, and the browser-faithful reading of a URL's
scheme (``url_scheme``, ``is_safe_url``). A history a client submitted can assert
anything: a system prompt with operator authority, a media URL naming
``file:///etc/passwd``, a fabricated tool call. The pass drops system messages and
every URL part a browser would not fetch over http(s), repairs pairing, and reports
each of these so that the boundary can log, reject or bill the attempt.

It narrows reach, not trust: see ADR 0029 for what it does not prove. Runs never call
it; the boundary is the application's.
"""

from __future__ import annotations

import string
from collections.abc import Collection, Sequence

import attrs
from attrs import field, frozen

from golem_core._history import (
    HistoryRepair,
    RepairEntry,
    _holds_nothing,
    normalize_history,
)
from golem_core._messages import Message, Part, PartKind, Role, URLPart
from golem_core._provenance import SigningKeys, _keyed_view

__all__ = [
    "SanitizeReport",
    "UnsafePart",
    "is_safe_url",
    "sanitize_history",
    "url_scheme",
]

_C0_OR_SPACE = "".join(chr(c) for c in range(0x21))
_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")
_ALPHA = frozenset(string.ascii_letters)
_SCHEME_CHARS = frozenset(string.ascii_letters + string.digits + "+-.")
_SAFE_SCHEMES = frozenset({"http", "https"})
_AUTHORITY_END = frozenset("/\\?#")
# WHATWG "forbidden domain code points", without "%" (hosts may be percent-encoded).
_FORBIDDEN_HOST = frozenset(chr(c) for c in range(0x20)) | frozenset(" #/:<>?@[\\]^|\x7f")
_IPV6_CHARS = frozenset(string.hexdigits + ":.")
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
            signed and intact (ADR 0056).
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


def _browser_view(url: str) -> str:
    """The URL as the WHATWG parser starts on it: leading and trailing C0 controls and
    spaces stripped, ASCII tabs and newlines removed everywhere."""
    return url.strip(_C0_OR_SPACE).translate(_TAB_OR_NEWLINE)


def _scheme_of(view: str) -> str:
    if not view or view[0] not in _ALPHA:
        return ""
    for k, c in enumerate(view):
        if c == ":":
            return view[:k].lower()  # ASCII only here, so lower() is ASCII case folding
        if c not in _SCHEME_CHARS:
            return ""
    return ""


def _names_a_host(rest: str) -> bool:
    """Whether what follows ``http:``/``https:`` has a host, as a browser reads it.

    Slashes and backslashes after the scheme are skipped (``https:/x`` and ``https:x``
    are ``https://x/`` to a browser); the authority ends at ``/``, ``\\``, ``?`` or
    ``#``; credentials end at its last ``@``; the port must be decimal and at most 65535.
    """
    rest = rest.lstrip("/\\")
    end = len(rest)
    for k, c in enumerate(rest):
        if c in _AUTHORITY_END:
            end = k
            break
    authority = rest[:end].rpartition("@")[2]
    if authority.startswith("["):
        close = authority.find("]")
        if close < 2 or any(c not in _IPV6_CHARS for c in authority[1:close]):
            return False
        after = authority[close + 1 :]
        if after and after[0] != ":":
            return False
        port = after[1:]
    else:
        host, _, port = authority.partition(":")
        if not host or any(c in _FORBIDDEN_HOST for c in host):
            return False
    if not port:
        return True
    digits = port.lstrip("0")  # leading zeros are allowed; more than 5 digits is out of range
    return port.isascii() and port.isdigit() and len(digits) <= 5 and int(digits or "0") <= 65535


def url_scheme(url: str) -> str:
    """The scheme of ``url`` as a browser (the WHATWG URL parser) reads it.

    Leading and trailing C0 controls and spaces are stripped and ASCII tabs and
    newlines removed anywhere before reading; the scheme is an ASCII letter followed by
    letters, digits, ``+``, ``-`` or ``.``, ended by ``:``, and is case folded.
    ``"  FILE:///x"`` and ``"jav\\tascript:x"`` are ``file`` and ``javascript``.

    Args:
        url: Any string.

    Returns:
        The lowercase scheme, or ``""`` when there is none (``//host/x``, ``""``,
        ``"/etc/passwd"``). Total and deterministic.
    """
    return _scheme_of(_browser_view(url))


def is_safe_url(url: str) -> bool:
    """Whether ``url`` is one ``sanitize_history`` keeps: a browser reads it as http or
    https with a host.

    ``https:/x`` is kept (a browser reads it as ``https://x/``); ``http:`` and
    ``https://`` are not (no host: a browser refuses them). The URL is never rewritten:
    this only decides. Host names are not checked further (an internal address is an
    http URL all the same: guarding against it is the fetcher's job).

    Args:
        url: Any string.

    Returns:
        ``True`` for a fetchable http(s) URL. Total and deterministic.
    """
    view = _browser_view(url)
    scheme = _scheme_of(view)
    return scheme in _SAFE_SCHEMES and _names_a_host(view[len(scheme) + 1 :])


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
    - with ``key``: a ``tool`` message that is not signed and intact is dropped
      (``unverified``; the neutral no-result result excepted), signed and intact
      assistant and tool messages pass unchanged (the server's own bytes: their
      signatures keep verifying), and only dangling calls that ``signed_calls`` vouches
      for stay open (and are in ``awaiting``, if given).

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
    own: frozenset[int] = frozenset()
    if key is not None:  # signatures vouch; a non-empty awaiting narrows them further
        forged, own, vouched = _keyed_view(history, key)
        awaiting = vouched & frozenset(awaiting) if awaiting else vouched
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
        elif i in own:  # signed and intact: the server's own bytes pass unchanged
            if kept is not None:
                kept.append(m)
                origin.append(i)
            continue
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
