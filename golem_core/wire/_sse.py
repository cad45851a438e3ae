"""A pure, incremental Server-Sent Events decoder that follows WHATWG to the letter.

Owns the framing of ``text/event-stream`` bodies (HTML Living Standard §9.2.5 "Parsing
an event stream" and §9.2.6 "Interpreting an event stream"); what an event *means*
belongs to the wire codecs in ``golem_core.wire``. Bytes go in as they arrive from the
network, split anywhere; whole events come out. The rules:

- the stream is UTF-8 (invalid bytes decode to U+FFFD); one leading byte order mark is
  ignored, even when its three bytes arrive in different chunks;
- a line ends with CRLF, a lone LF or a lone CR; a CR that ends one chunk followed by an
  LF that starts the next is one line ending;
- an empty line dispatches the event; a line starting with ``:`` is a comment;
- a line splits at its first colon and one leading space of the value is dropped; a line
  without a colon is a field with an empty value;
- ``data`` lines join with ``\\n``; an event whose data buffer is empty is not
  dispatched, and its type is reset all the same;
- ``event`` names the next event only (default ``message``); ``id`` persists across
  events and is ignored when it contains NUL; ``retry`` counts only when all ASCII digits
  (and ignored beyond 18 significant digits, which no reconnection time needs);
  other fields are ignored;
- at the end of the stream, pending data and a partial last line are discarded.

Bounded and linear: each byte is scanned once, and a line longer than ``max_line_bytes``
is refused with ``SSEError`` instead of buffered forever.
"""

from __future__ import annotations

import re

from attrs import frozen

__all__ = ["DEFAULT_MAX_LINE_BYTES", "SSEDecoder", "SSEError", "ServerSentEvent"]

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line the decoder buffers by default: 16 MiB."""

_BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"\r\n|\r|\n")
_DIGITS = re.compile(r"[0-9]+")


@frozen
class ServerSentEvent:
    """One dispatched event.

    ``event`` is its type (``"message"`` unless an ``event`` field named it), ``data``
    its data lines joined with ``\\n``, ``id`` the stream's last event id at dispatch
    (``""`` when none was ever set), ``retry`` the reconnection time in milliseconds
    set by a ``retry`` field of this event, if any.
    """

    data: str
    event: str = "message"
    id: str = ""
    retry: int | None = None


class SSEError(ValueError):
    """The stream cannot be decoded within the decoder's bounds (a line is too long)."""


class SSEDecoder:
    """Bytes in, ``ServerSentEvent`` values out, incrementally.

    A builder, not a value: ``feed`` changes it in place. Deterministic and effect-free:
    the same bytes give the same events however they are split into chunks.

    Args:
        max_line_bytes: the longest line (without its ending) the decoder will buffer.
    """

    __slots__ = (
        "_at_start",
        "_data",
        "_event",
        "_last_id",
        "_max_line",
        "_partial",
        "_reconnection_time",
        "_retry",
        "_skip_lf",
    )

    def __init__(self, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self._max_line = max_line_bytes
        self._partial = bytearray()  # the current line, not yet ended
        self._at_start = True  # still deciding about a leading BOM
        self._skip_lf = False  # the previous chunk ended with CR
        self._data: list[str] = []  # one entry per data line
        self._event = ""
        self._last_id = ""
        self._retry: int | None = None  # set by this event's retry field
        self._reconnection_time: int | None = None

    @property
    def last_event_id(self) -> str:
        """The last event id the stream set (``""`` when none)."""
        return self._last_id

    @property
    def reconnection_time(self) -> int | None:
        """The reconnection time (milliseconds) the stream last set, if it set one."""
        return self._reconnection_time

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode the next bytes of the stream.

        Args:
            chunk: the bytes that arrived, split anywhere.

        Returns:
            The events completed by these bytes, in order.

        Raises:
            SSEError: a line grew longer than ``max_line_bytes``.
        """
        if self._at_start:
            self._partial += chunk
            if len(self._partial) < len(_BOM) and _BOM.startswith(self._partial):
                return []  # maybe a BOM split across chunks: wait for more
            self._at_start = False
            buffered = bytes(self._partial)
            self._partial.clear()
            chunk = buffered[len(_BOM) :] if buffered.startswith(_BOM) else buffered
        if not chunk:
            return []
        events: list[ServerSentEvent] = []
        pos = 0
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0] == 0x0A:
                pos = 1
        if b"\r" not in chunk:  # LF endings only (the usual stream): split, no regex
            lines = chunk[pos:].split(b"\n")
            tail = lines.pop()
            if lines and self._partial:
                self._partial += lines[0]
                lines[0] = bytes(self._partial)
                self._partial.clear()
            for line in lines:
                self._check_length(len(line))
                self._process_line(line, events)
            if tail:
                self._check_length(len(self._partial) + len(tail))
                self._partial += tail
            return events
        for match in _LINE_END.finditer(chunk, pos):
            start, end = match.span()
            if self._partial:
                self._partial += chunk[pos:start]
                line = bytes(self._partial)
                self._partial.clear()
            else:
                line = chunk[pos:start]
            self._check_length(len(line))
            self._process_line(line, events)
            pos = end
            if match.group() == b"\r" and end == len(chunk):
                self._skip_lf = True
        if pos < len(chunk):
            self._check_length(len(self._partial) + len(chunk) - pos)
            self._partial += chunk[pos:]
        return events

    def close(self) -> list[ServerSentEvent]:
        """End the stream: pending data and a partial last line are discarded.

        Returns:
            Always an empty list (nothing is dispatched at the end of a stream); the
            list is returned so that callers can treat ``close`` like ``feed``.
        """
        self._partial.clear()
        self._data.clear()
        self._event = ""
        self._retry = None
        self._at_start = False
        self._skip_lf = False
        return []

    def _check_length(self, n: int) -> None:
        if n > self._max_line:
            raise SSEError(
                f"server-sent event line longer than {self._max_line} bytes; refusing to buffer it"
            )

    def _process_line(self, raw: bytes, events: list[ServerSentEvent]) -> None:
        if not raw:
            self._dispatch(events)
            return
        if raw[0] == 0x3A:  # ':' comment
            return
        line = raw.decode("utf-8", errors="replace")
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\x00" not in value:
            self._last_id = value
        elif name == "retry" and _DIGITS.fullmatch(value):
            digits = value.lstrip("0") or "0"
            if len(digits) <= 18:  # longer is no reconnection time (and int() may refuse it)
                self._retry = self._reconnection_time = int(digits)

    def _dispatch(self, events: list[ServerSentEvent]) -> None:
        event_type = self._event or "message"
        retry = self._retry
        self._event = ""
        self._retry = None
        if not self._data:
            return
        data = "\n".join(self._data)
        self._data.clear()
        events.append(ServerSentEvent(data, event=event_type, id=self._last_id, retry=retry))
