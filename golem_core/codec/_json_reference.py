"""The reference decoder of ``Message`` JSON: the field table read one field at a time.

Owns what a decode error says. ``structure_message``, ``structure_part`` and
``structure_usage`` interpret the table of ``_json_fields.py``: each field in table
order, each kind with its check, then the unknown fields; the first problem raises
``_Invalid(path, reason)``, which the boundary turns into a ``DecodeError``. They
build values through the classes' own constructors. This is the path that explains;
the compiled fast decoder (``_json_compiled.py``) must build the very same values, and
gives up whenever this path would report an error (a property holds them to that).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final, NoReturn, TypeAlias, cast, get_args

from attrs import frozen

from golem_core._messages import (
    Extra,
    Message,
    Part,
    PartKind,
    Role,
    UnknownPart,
    Usage,
    nests_deeper,
)
from golem_core.codec._json_fields import (
    MESSAGE,
    NO_DEFAULT,
    PART_RECORDS,
    USAGE,
    Field,
    Kind,
    Record,
)

__all__ = [
    "MAX_UNKNOWN_DEPTH",
    "DecodeError",
    "JSONObject",
    "structure_message",
    "structure_part",
    "structure_usage",
]

JSONObject: TypeAlias = dict[str, Any]


@frozen
class DecodeError:
    """Why bytes could not be decoded as history: where (a JSON path) and what."""

    path: str
    reason: str

    @property
    def message(self) -> str:
        """A one-line explanation for a person."""
        where = self.path or "the top level"
        return f"invalid history JSON at {where}: {self.reason}"

    def __str__(self) -> str:
        return self.message


class _Invalid(Exception):
    """Internal: raised by the reference decoder, turned into ``DecodeError`` at the
    boundary."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _fail(path: str, key: str, expected: str, value: object) -> NoReturn:
    raise _Invalid(_join(path, key), f"expected {expected}, got {_describe(value)}")


# -- unknown fields -------------------------------------------------------------------

MAX_UNKNOWN_DEPTH: Final = 128
"""The deepest nesting an unknown field may hold. Deeper is refused at decode: encoding
recurses (in ``json``'s C code) as deep as the value, on top of the caller's stack, so
an unbounded depth that decodes at one stack depth could fail to encode at another."""


def _extra(d: JSONObject, known: frozenset[str], path: str = "") -> Extra:
    """The fields of ``d`` not in ``known``, as ``(key, compact JSON text)`` in order.

    Raises ``_Invalid`` for one holding NaN or an infinity, or nesting deeper than
    ``MAX_UNKNOWN_DEPTH``; ``RecursionError`` when the stack cannot write it.
    """
    if d.keys() <= known:
        return ()
    unknown = d.keys() - known
    out: list[tuple[str, str]] = []
    for k, v in d.items():
        if k not in unknown:
            continue
        try:
            text = json.dumps(v, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError:  # NaN or an infinity (a value built in Python): not standard JSON
            raise _Invalid(path, f"unknown field {k!r} holds NaN or an infinite number") from None
        if nests_deeper(v, text, MAX_UNKNOWN_DEPTH):
            raise _Invalid(
                _join(path, k), f"an unknown field nests deeper than {MAX_UNKNOWN_DEPTH} levels"
            )
        out.append((k, text))
    return tuple(out)


# -- one reader per kind ----------------------------------------------------------------

_ROLES: Final = {r.value: r for r in Role}
_KINDS: Final[frozenset[str]] = frozenset(get_args(PartKind))

_Reader: TypeAlias = Callable[[object, str], Any]
"""Reads a present, non-null value of a kind at a path (``path`` names the field)."""


def _read_role(v: object, path: str) -> Role:
    role = _ROLES.get(v) if type(v) is str else None
    if role is None:
        raise _Invalid(
            path, f"unknown role {v!r:.60}; expected one of system, user, assistant, tool"
        )
    return role


def _read_parts(v: object, path: str) -> tuple[Part, ...]:
    if type(v) is not list:
        raise _Invalid(path, f"expected an array, got {_describe(v)}")
    return tuple([structure_part(p, f"{path}[{j}]") for j, p in enumerate(v)])


def _read_str(v: object, path: str) -> str:
    if type(v) is not str:
        raise _Invalid(path, f"expected a string, got {_describe(v)}")
    return v


def _read_flag(v: object, path: str) -> bool:
    if type(v) is not bool:
        raise _Invalid(path, f"expected a boolean, got {_describe(v)}")
    return v


def _read_timestamp(v: object, path: str) -> datetime:
    if type(v) is not str:
        raise _Invalid(path, f"expected an ISO 8601 timestamp string, got {_describe(v)}")
    try:
        return datetime.fromisoformat(v)
    except ValueError:
        raise _Invalid(path, f"not an ISO 8601 timestamp: {v!r:.60}") from None


def _read_count(v: object, path: str) -> int:
    if type(v) is not int or v < 0:
        raise _Invalid(path, f"expected a non-negative integer, got {_describe(v)}")
    return v


def _read_usage(v: object, path: str) -> Usage:
    return structure_usage(v, path)


def _read_part_kind(v: object, path: str) -> PartKind:
    if type(v) is str and v in _KINDS:
        return cast(PartKind, v)
    raise _Invalid(path, f"expected one of {sorted(_KINDS)}, got {v!r:.60}")


def _read_base64(v: object, path: str) -> bytes:
    text = _read_str(v, path)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _Invalid(path, "not valid standard base64") from None


READERS: Final[dict[Kind, _Reader]] = {
    Kind.ROLE: _read_role,
    Kind.PARTS: _read_parts,
    Kind.STR: _read_str,
    Kind.OPTIONAL_STR: _read_str,
    Kind.FLAG: _read_flag,
    Kind.TIMESTAMP: _read_timestamp,
    Kind.COUNT: _read_count,
    Kind.USAGE: _read_usage,
    Kind.PART_KIND: _read_part_kind,
    Kind.BASE64: _read_base64,
}
assert READERS.keys() == set(Kind), "every kind has a reader"


# -- records ---------------------------------------------------------------------------

_MISSING: Final = object()


def _read_field(d: JSONObject, f: Field, default: object, path: str) -> object:
    v = d.get(f.key, _MISSING)
    where = _join(path, f.key)
    if v is _MISSING or (v is None and f.kind.nullable):
        if default is NO_DEFAULT:
            if v is _MISSING:
                raise _Invalid(where, "required field is missing")
        else:
            return default
    return READERS[f.kind](v, where)


def _read_record(record: Record, d: JSONObject, path: str) -> Any:
    values = {
        f.attr: _read_field(d, f, default, path)
        for f, default in zip(record.fields, record.defaults, strict=True)
    }
    return record.cls(**values, extra=_extra(d, record.known, path))


_PARTS_BY_TAG: Final = {r.tag: r for r in PART_RECORDS}
_TYPE_ONLY: Final = frozenset({"type"})


def structure_usage(d: object, path: str = "usage") -> Usage:
    """Build a ``Usage`` from its JSON object."""
    if type(d) is not dict:
        raise _Invalid(path, f"expected an object, got {_describe(d)}")
    usage: Usage = _read_record(USAGE, d, path)
    return usage


def structure_part(d: object, path: str = "part") -> Part:
    """Build a part from its JSON object, dispatching on ``type``."""
    if type(d) is not dict:
        raise _Invalid(path, f"expected an object, got {_describe(d)}")
    tag = d.get("type")
    if type(tag) is str and tag:
        record = _PARTS_BY_TAG.get(tag)
        if record is None:
            return UnknownPart(tag, _extra(d, _TYPE_ONLY, path))
        part: Part = _read_record(record, d, path)
        return part
    if tag is None and "type" not in d:
        raise _Invalid(_join(path, "type"), "required field is missing")
    _fail(path, "type", "a non-empty string", tag)


def structure_message(d: object, path: str = "") -> Message:
    """Build a ``Message`` from its JSON object; errors name paths below ``path``."""
    if type(d) is not dict:
        raise _Invalid(path, f"expected an object, got {_describe(d)}")
    message: Message = _read_record(MESSAGE, d, path)
    return message
