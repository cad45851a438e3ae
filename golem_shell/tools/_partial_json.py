"""The value a prefix of a JSON document stands for so far: what ``stream_output`` shows.

Owns ``parse_partial``: a streamed structured answer arrives as a growing prefix of one
JSON document (``{"city": "Par``). Its value so far is the prefix with every open
container closed: an unfinished string is kept as far as it goes (``"Par"``), an
unfinished key, a key without its value, or an unfinished literal (``tru``, ``-``) is left
out, and so is a dangling comma. A complete document parses to exactly what
``json.loads`` gives. Pure: no state between calls, so each call reads the whole prefix
(``EventStream.stream_output`` bounds how often it asks, so a long answer costs a
bounded multiple of its length).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

__all__ = ["INCOMPLETE", "parse_partial"]

INCOMPLETE: Any = type("Incomplete", (), {"__repr__": lambda self: "INCOMPLETE"})()
"""What ``parse_partial`` returns when the prefix holds no value yet (``""``, ``{"a``
inside a bare literal, ``tru``)."""

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<punct>[{}\[\],:])
      | "(?P<string>(?:[^"\\]|\\.)*\\?)(?P<closed>")?
      | (?P<bare>[^\s{}\[\],:"]+)
    )""",
    re.VERBOSE | re.DOTALL,
)
_HEX = frozenset("0123456789abcdefABCDEF")


class _Stop(Exception):
    """The prefix ended inside the value being read."""


class _Tokens:
    def __init__(self, text: str) -> None:
        self.items: list[tuple[str, str, bool, int]] = []  # (kind, text, complete, offset)
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None or match.end() == position:
                if text[position:].strip():
                    raise ValueError(f"not JSON at offset {position}: {text[position:][:20]!r}")
                break
            position = match.end()
            if match["punct"] is not None:
                self.items.append(("punct", match["punct"], True, match.start("punct")))
            elif match["string"] is not None:
                closed = match["closed"] is not None
                at = match.start("string") - 1  # its opening quote
                self.items.append(("string", match["string"], closed, at))
            elif match["bare"] is not None:
                at = match.start("bare")
                self.items.append(("bare", match["bare"], position < len(text), at))
        self.index = 0

    def peek(self) -> tuple[str, str, bool, int]:
        if self.index >= len(self.items):
            raise _Stop
        return self.items[self.index]

    def take(self) -> tuple[str, str, bool, int]:
        item = self.peek()
        self.index += 1
        return item


def _half_escape(body: str) -> int | None:
    """Where an escape cut off at the end of ``body`` (``\\``, ``\\u12``) starts, or
    ``None``. Reads back from the end only: the optional ``u`` and up to three hex digits,
    then the run of backslashes before them (an odd run ends in an escape's backslash), so
    it takes time linear in that run, never more (a regular expression searched for it
    backtracks through the run from each of its positions: quadratic)."""
    end = len(body)
    start = end
    while start > 0 and end - start < 3 and body[start - 1] in _HEX:
        start -= 1
    tail = start - 1 if start > 0 and body[start - 1] == "u" else end
    run = tail
    while run > 0 and body[run - 1] == "\\":
        run -= 1
    return tail - 1 if (tail - run) % 2 == 1 else None


def _string(body: str, complete: bool, offset: int) -> str:
    if not complete:  # an escape cut off at the end (`\\`, `\\u12`) is left out
        half = _half_escape(body)
        if half is not None:
            body = body[:half]
    try:
        value: str = json.loads(f'"{body}"')
    except ValueError as e:  # a bad escape, a control character
        raise ValueError(f"not a JSON string at offset {offset}: {e}") from None
    return value


def _value(tokens: _Tokens) -> Any:
    kind, text, complete, at = tokens.take()
    if kind == "string":
        return _string(text, complete, at)
    if kind == "bare":
        try:
            return json.loads(text)
        except ValueError:
            if complete:
                raise ValueError(f"not a JSON value at offset {at}: {text!r}") from None
            raise _Stop from None  # `tru`, `-`, `1e` at the end of the prefix
    if text == "{":
        return _object(tokens)
    if text == "[":
        return _array(tokens)
    raise ValueError(f"unexpected {text!r} at offset {at}")


def _after_item(tokens: _Tokens, close: str) -> bool:
    """Read what follows an item: ``True`` at the container's end, ``False`` at a comma."""
    kind, text, _, at = tokens.take()
    if kind == "punct" and text in (close, ","):
        return text == close
    raise ValueError(f"expected ',' or {close!r} at offset {at}, got {text!r}")


def _object(tokens: _Tokens) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        if tokens.peek()[:2] == ("punct", "}"):  # not a string "}"
            tokens.take()
            return out
        while True:
            kind, text, complete, at = tokens.take()
            if kind != "string":
                raise ValueError(f"expected a key at offset {at}, got {text!r}")
            if not complete:
                return out  # an unfinished key is left out
            key = _string(text, True, at)
            kind, text, _, at = tokens.take()
            if (kind, text) != ("punct", ":"):
                raise ValueError(f"expected ':' after key {key!r} at offset {at}, got {text!r}")
            out[key] = _value(tokens)
            if _after_item(tokens, "}"):
                return out
    except _Stop:
        return out


def _array(tokens: _Tokens) -> list[Any]:
    out: list[Any] = []
    try:
        if tokens.peek()[:2] == ("punct", "]"):
            tokens.take()
            return out
        while True:
            out.append(_value(tokens))
            if _after_item(tokens, "]"):
                return out
    except _Stop:
        return out


def parse_partial(text: str) -> Any:
    """The value of ``text``, a prefix of one JSON document, so far (``INCOMPLETE`` when
    it holds none yet).

    Raises:
        ValueError: ``text`` is not the beginning of a JSON document (the message says at
            which offset it stops being one), or it is nested
            too deeply to read here (past the interpreter's recursion limit; the whole
            document is still read by ``json.loads``, which has its own limit).
    """
    tokens = _Tokens(text)
    try:
        value = _value(tokens)
    except _Stop:
        return INCOMPLETE
    except RecursionError:
        raise ValueError(
            f"nested too deeply to read a partial value (recursion limit {sys.getrecursionlimit()})"
        ) from None
    if tokens.index < len(tokens.items):
        _, text, _, at = tokens.items[tokens.index]
        raise ValueError(f"text after the JSON value at offset {at}: {text!r}")
    return value
