"""The fast paths of the JSON codec, compiled from the field table at import.

Owns speed. From the table of ``_json_fields.py`` this module writes the source of
three functions per record (a message, a usage, each part type) and compiles it once,
as attrs and cattrs compile their ``__init__`` and hooks:

- ``fast_message(obj, names)``: the value of a message's JSON object, built without
  paths or constructors (slots set directly). It raises ``Unhandled`` at the first
  thing it does not handle (a wrong type, a missing required field, ``null`` where it
  is not allowed, bad base64 or timestamp, an unknown field the reference would
  refuse), and the caller then runs the reference decoder, which reports the error or
  builds the very same value. It never raises anything else on JSON input.
  ``fast_message_list(array, names)``: the same for each element, inlined in a loop.
- ``unstructure_message(m)`` / ``unstructure_part(p)`` / ``unstructure_usage(u)``: the
  JSON object of a value (the dict path; values are copied as they are).
- ``message_text(m)``: the compact JSON text of a message, exactly
  ``json.dumps(unstructure_message(m), ensure_ascii=False, separators=(",", ":"))``,
  written straight to text. It raises ``Unhandled`` for a record with unknown fields or
  a value of a type it does not write itself (a ``str`` subclass, an ``int`` where a
  ``str`` belongs); the caller then encodes the dict path's object.

The fast decoder also exists compiled (``_speedups.c``, built at install where a C
compiler is; ADR 0149): ``native_spec`` hands it this same table, and ``fast_message``
and ``fast_message_list`` are its functions when it is installed (``NATIVE_PATHS``), the
generated Python's otherwise (``PYTHON_PATHS``); both give the same values.

Each kind of field has one snippet per path (``_FAST``, ``_TO_JSON``, ``_TO_TEXT``);
``SOURCE`` holds the generated module (shown in tracebacks and profiles under
``<golem_core.codec._json_compiled>``). Over 600 lines because it is one concept: the three
paths are written from one table by one writer, and a snippet of one kind must be read
beside its twins on the other paths.
"""

from __future__ import annotations

import base64
import functools
import json
import json.encoder
import linecache
import warnings
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final, TypeAlias, get_args

from golem_core._messages import Message, Part, PartKind, Role, UnknownPart, Usage
from golem_core.codec._json_fields import MESSAGE, NO_DEFAULT, PART_RECORDS, USAGE, Kind, Record
from golem_core.codec._json_reference import JSONObject, _extra, _Invalid

__all__ = [
    "INEXACT_NUMBERS",
    "NATIVE_PATHS",
    "PYTHON_PATHS",
    "SOURCE",
    "Unhandled",
    "fast_message",
    "fast_message_list",
    "fast_messages",
    "message_text",
    "native_spec",
    "unstructure_message",
    "unstructure_part",
    "unstructure_usage",
]


class Unhandled(Exception):
    """Internal: a fast path met something it does not handle; the reference path decides."""


# -- helpers the generated code calls ----------------------------------------------------


INEXACT_NUMBERS: Final[Any] = object()
"""A key of the ``names`` dict of one decode (not a string, so never a shared one):
present when the JSON value came from a parser that reads an integer beyond 64 bits
as a float (orjson). Unknown fields are written back from their parsed value, so one
holding a float gives up there, and the stdlib parser decides."""


def _holds_float(value: object) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is float:
            return True
        if t is list:
            stack += v  # type: ignore[arg-type]
        elif t is dict:
            stack += v.values()  # type: ignore[attr-defined]
    return False


def _leftovers(
    d: JSONObject, known: frozenset[str], not_null: tuple[str, ...], names: dict[Any, str]
) -> Any:
    """The unknown fields of ``d`` (fast path): ``Unhandled`` where the reference would
    report an error (``null`` in a field that refuses it, an unknown field it refuses),
    and where an inexact parser may have read a number differently (``INEXACT_NUMBERS``)."""
    for key in not_null:
        if key in d and d[key] is None:
            raise Unhandled
    try:
        extra = _extra(d, known)
    except (_Invalid, RecursionError):
        raise Unhandled from None
    if extra and INEXACT_NUMBERS in names and _holds_float([d[k] for k, _ in extra]):
        raise Unhandled
    return extra


@functools.cache
def _twin(cls: type) -> type:
    """A subclass of ``cls`` that adds nothing but plain attribute setting.

    The fast decoder builds an instance of the twin with ordinary (specialized, cheap)
    slot stores and then makes it an instance of ``cls`` by ``__class__`` assignment,
    which Python allows between a class and a subclass with the same layout. The frozen
    class's own ``__setattr__`` is never bypassed on a value anyone else sees; the
    result is exactly the constructor's (a property holds it), about twice as cheap as
    calling each slot's ``__set__``. One twin per class (``functools.cache``).
    """
    twin = type(
        f"_Building{cls.__name__}",
        (cls,),
        {"__slots__": (), "__setattr__": object.__setattr__, "__delattr__": object.__delattr__},
    )
    return twin


def _put_extra(out: JSONObject, extra: tuple[tuple[str, str], ...]) -> JSONObject:
    for k, text in extra:
        if k not in out:
            out[k] = json.loads(text)
    return out


def _not_a_part(p: object) -> Any:
    raise TypeError(f"not a message part: {p!r:.80}")


# -- snippets per kind -------------------------------------------------------------------
#
# A fast snippet reads ``v`` (present and not null) into ``x`` or raises ``Unhandled``.
# A dict snippet is an expression of ``v``; a text snippet is a list of lines that
# check ``v`` (raising ``Unhandled``) and an expression of its JSON text.

_RAISE: Final = "raise _Unhandled"


def _shared(x: str, v: str) -> list[str]:
    """``x``: the first string equal to ``v`` in this decode (names repeat: a hit)."""
    return ["try:", f"    {x} = names[{v}]", "except KeyError:", f"    {x} = names[{v}] = {v}"]


_FAST: Final[dict[Kind, Callable[[str, bool, str], list[str]]]] = {
    Kind.ROLE: lambda x, shared, v: [
        f"{x} = _ROLES.get({v}) if type({v}) is str else None",
        f"if {x} is None: {_RAISE}",
    ],
    Kind.PARTS: lambda x, shared, v: [f"{x} = _fast_parts({v}, names)"],  # see _inline_parts
    Kind.STR: lambda x, shared, v: [
        f"if type({v}) is not str: {_RAISE}",
        *(_shared(x, v) if shared else [f"{x} = {v}"]),
    ],
    Kind.FLAG: lambda x, shared, v: [f"if type({v}) is not bool: {_RAISE}", f"{x} = {v}"],
    Kind.TIMESTAMP: lambda x, shared, v: [
        f"if type({v}) is not str: {_RAISE}",
        "try:",
        f"    {x} = _fromisoformat({v})",
        "except ValueError:",
        f"    {_RAISE} from None",
    ],
    Kind.COUNT: lambda x, shared, v: [
        f"if type({v}) is not int or {v} < 0: {_RAISE}",
        f"{x} = {v}",
    ],
    Kind.USAGE: lambda x, shared, v: [
        f"if type({v}) is not dict: {_RAISE}",
        f"{x} = _fast_Usage({v}, names)",
    ],
    Kind.PART_KIND: lambda x, shared, v: [
        f"if type({v}) is not str or {v} not in _PART_KINDS: {_RAISE}",
        f"{x} = {v}",
    ],
    Kind.BASE64: lambda x, shared, v: [
        f"if type({v}) is not str: {_RAISE}",
        "try:",
        f"    {x} = _b64decode({v}, validate=True)",
        "except ValueError:",
        f"    {_RAISE} from None",
    ],
}
_FAST[Kind.OPTIONAL_STR] = _FAST[Kind.STR]

_TO_JSON: Final[dict[Kind, str]] = {
    Kind.ROLE: "v._value_",  # the plain str; ``.value`` is a slower descriptor
    Kind.PARTS: "_unstructure_parts(v)",
    Kind.STR: "v",
    Kind.OPTIONAL_STR: "v",
    Kind.FLAG: "True",
    Kind.TIMESTAMP: "v.isoformat()",
    Kind.COUNT: "v",
    Kind.USAGE: "_unstructure_Usage(v)",
    Kind.PART_KIND: "v",
    Kind.BASE64: '_b64encode(v).decode("ascii")',
}

_Piece: TypeAlias = tuple[bool, str]
"""Part of a concatenation: ``(True, literal text)`` or ``(False, expression)``."""


def _quoted(expression: str) -> list[_Piece]:
    """The pieces of a JSON string whose characters need no escape (an enum's value)."""
    return [(True, '"'), (False, expression), (True, '"')]


_TO_TEXT: Final[dict[Kind, Callable[[str], tuple[list[str], list[_Piece]]]]] = {
    # no check: ``Message`` converts its role to a ``Role``, and both paths read ``_value_``
    Kind.ROLE: lambda v: ([], _quoted(f"{v}._value_")),
    Kind.PARTS: lambda v: ([], [(True, "["), (False, f"_parts_text({v})"), (True, "]")]),
    Kind.STR: lambda v: ([f"if type({v}) is not str: {_RAISE}"], [(False, f"_quote({v})")]),
    Kind.FLAG: lambda v: ([], [(True, "true")]),
    Kind.TIMESTAMP: lambda v: (
        [f"if type({v}) is not _datetime: {_RAISE}"],
        [(False, f"_quote({v}.isoformat())")],
    ),
    Kind.COUNT: lambda v: ([f"if type({v}) is not int: {_RAISE}"], [(False, f"str({v})")]),
    Kind.USAGE: lambda v: (
        [f"if type({v}) is not _Usage: {_RAISE}"],
        [(False, f"_text_Usage({v})")],
    ),
    Kind.BASE64: lambda v: (
        [f"if type({v}) is not bytes: {_RAISE}"],
        _quoted(f"_b64encode({v}).decode('ascii')"),
    ),
}
_TO_TEXT[Kind.OPTIONAL_STR] = _TO_TEXT[Kind.STR]
_TO_TEXT[Kind.PART_KIND] = _TO_TEXT[Kind.STR]
assert _FAST.keys() == _TO_JSON.keys() == _TO_TEXT.keys() == set(Kind), "a snippet per kind"


# -- the writer --------------------------------------------------------------------------


class _Source:
    """Generated source and the names it refers to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, object] = {}

    def name(self, label: str, value: object) -> str:
        self.names[label] = value
        return label

    def literal(self, value: object) -> str:
        if value is None or type(value) in (bool, int, str):
            return repr(value)
        return self.name(f"_default_{len(self.names)}", value)

    def emit(self, lines: list[str], indent: int) -> None:
        self.lines += ["    " * indent + line for line in lines]


def _indent(lines: list[str], levels: int = 1) -> list[str]:
    return ["    " * levels + line for line in lines]


def _build(src: _Source, record: Record, values: list[str], p: str = "") -> list[str]:
    """Lines building ``{p}o``, an instance of the record's class, from ``values`` (one
    expression per field, then ``extra``), setting its slots directly on a twin
    (``_twin``): the fields have no converters or validators, so this equals the
    constructor (a property holds it)."""
    cls = record.cls
    name = src.name(cls.__name__, cls)
    twin = src.name(f"_Building{name}", _twin(cls))
    o = f"{p}o"
    out = [f"{o} = _new({twin})"]
    for a, value in zip([*(f.attr for f in record.fields), "extra"], values, strict=True):
        out.append(f"{o}.{a} = {value}")
    out.append(f"{o}.__class__ = {name}")
    return out


def _fast_body(src: _Source, record: Record, finish: list[str], p: str = "") -> list[str]:
    """Lines reading ``{p}d`` (a dict; ``{p}n = len({p}d)``) into
    ``{p}o``, an instance of the record's class; ``finish`` follows each place where it
    is done. The prefix ``p`` names the variables of a body inlined in another's."""
    known = src.name(f"_KNOWN_{record.cls.__name__}", record.known)
    not_null = src.name(f"_NOT_NULL_{record.cls.__name__}", record.not_null)
    v, seen_, n = f"{p}v", f"{p}seen", f"{p}n"
    out: list[str] = []
    seen: int | None = 1 if record.tag is not None else 0  # a number until a field is optional
    required_left = sum(1 for d in record.defaults if d is NO_DEFAULT)
    values: list[str] = []
    count = len(record.fields)
    bound = False  # whether ``{p}get = {p}d.get`` is done (before the first optional key)
    for i, (f, default) in enumerate(zip(record.fields, record.defaults, strict=True)):
        x = f"{p}x{i}"
        values.append(x)
        # a required key is read by subscript (a missing one raises ``KeyError``, which
        # each generated function turns into ``Unhandled``); an optional one by ``get``
        if default is NO_DEFAULT:
            out.append(f"{v} = {p}d[{f.key!r}]")
        else:
            if not bound:
                out.append(f"{p}get = {p}d.get")
                bound = True
            out.append(f"{v} = {p}get({f.key!r})")
        fast = _FAST[f.kind]
        read = _inline_parts(src, x, v) if f.kind is Kind.PARTS else fast(x, f.shared, v)
        if default is NO_DEFAULT:
            out += read
            required_left -= 1
            if seen is None:
                out.append(f"{seen_} += 1")
            else:
                seen += 1
        else:
            if seen is not None:
                out.append(f"{seen_} = {seen}")
                seen = None
            out += [f"if {v} is None:", f"    {x} = {src.literal(default)}", "else:"]
            out += _indent([*read, f"{seen_} += 1"])
        if required_left == 0 and i < count - 1:  # no other key: the rest at their defaults
            rest = [src.literal(d) for d in record.defaults[i + 1 :]]
            test = f"{n} == {seen}" if seen is not None else f"{seen_} == {n}"
            out.append(f"if {test}:")
            out += _indent([*_build(src, record, [*values, *rest, "()"], p), *finish])
    test = f"{n} == {seen}" if seen is not None else f"{seen_} == {n}"
    extra = f"{p}extra"
    out.append(f"{extra} = () if {test} else _leftovers({p}d, {known}, {not_null}, names)")
    out += [*_build(src, record, [*values, extra], p), *finish]
    return out


def _inline_parts(src: _Source, x: str, v: str) -> list[str]:
    """Lines reading the parts array ``v`` into ``x``: one part (the usual case) read
    inline (variables prefixed ``p``; a one-pass loop that ``break`` leaves when the
    part is done), more than one by ``_fast_parts``. The same part bodies either way."""
    out = [f"if type({v}) is not list: {_RAISE}", f"if len({v}) == 1:", f"    pd = {v}[0]"]
    out += _indent(["for _ in _ONCE:"])
    unknown = f"{x} = (_unknown_part(pd, names),)"
    out += _indent(_part_dispatch(src, None, [f"{x} = (po,)", "break"], unknown, "p"), 2)
    out += ["else:", f"    {x} = _fast_parts({v}, names)"]
    return out


def _guarded(lines: list[str]) -> list[str]:
    """``lines`` in a ``try`` that turns a missing required key (``KeyError``) into
    ``Unhandled`` (free in CPython 3.11+ until raised)."""
    return ["try:", *_indent(lines), "except KeyError:", f"    {_RAISE} from None"]


def _write_fast(src: _Source) -> None:
    for record in (USAGE, MESSAGE):
        name = record.cls.__name__
        src.emit([f"def _fast_{name}(d, names):"], 0)
        body = [f"if type(d) is not dict: {_RAISE}", "n = len(d)"]
        src.emit(_guarded([*body, *_fast_body(src, record, ["return o"])]), 1)
    # a history: the body of ``_fast_Message`` inlined in a loop (no call per message)
    src.emit(["def _fast_Messages(raw, names):"], 0)
    body = ["for d in raw:", f"    if type(d) is not dict: {_RAISE}", "    n = len(d)"]
    body += _indent(_fast_body(src, MESSAGE, ["append(o)", "continue"]))
    src.emit(["out = []", "append = out.append", *_guarded(body), "return out"], 1)
    # a message's parts: one part (the usual case) read straight into a 1-tuple, more
    # than one in a loop; both from the same bodies, so they cannot disagree
    src.emit(["def _fast_parts(raw, names):"], 0)
    body = ["if len(raw) == 1:"]
    unknown = "return (_unknown_part(d, names),)"
    body += _indent(_part_dispatch(src, "raw[0]", ["return (o,)"], unknown))
    body += ["out = []", "append = out.append", "for d in raw:"]
    unknown = "append(_unknown_part(d, names))"
    body += _indent(_part_dispatch(src, None, ["append(o)", "continue"], unknown))
    src.emit([*_guarded(body), "return tuple(out)"], 1)
    src.emit(
        [
            "def _unknown_part(d, names):",
            '    tag = d.get("type")',
            "    if type(tag) is str and tag:",
            "        return _UnknownPart(tag, _leftovers(d, _TYPE_ONLY, (), names))",
            f"    {_RAISE}",
        ],
        0,
    )


def _part_dispatch(
    src: _Source, item: str | None, finish: list[str], unknown: str, p: str = ""
) -> list[str]:
    """Lines reading ``{p}d`` (``item``, else already set) into a part by its ``type``,
    each known type's body ending with ``finish``, any other type with ``unknown``."""
    d = f"{p}d"
    out = [] if item is None else [f"{d} = {item}"]
    out += [f"if type({d}) is not dict: {_RAISE}", f"{p}n = len({d})"]
    out.append(f'{p}tag = {d}.get("type")')
    # `==` below would take a `str` subclass for its text: the reference and the compiled
    # decoder refuse it, so the Python one gives up on it too (ADR 0149: the same values)
    out.append(f"if type({p}tag) is not str: {_RAISE}")
    for k, record in enumerate(PART_RECORDS):
        out.append(f"{'if' if k == 0 else 'elif'} {p}tag == {record.tag!r}:")
        out += _indent(_fast_body(src, record, finish, p))
    out.append(unknown)
    return out


def _omitted(src: _Source, default: object, v: str = "v") -> str | None:
    """The test that a value ``v`` is written (``None``: always written)."""
    if default is NO_DEFAULT:
        return None
    if default is None:
        return f"{v} is not None"
    if not default:
        return v
    return f"{v} != {src.literal(default)}"


def _write_to_json(src: _Source, record: Record, var: str) -> list[str]:
    """Lines building ``var``, the JSON object of the record ``o``."""
    out = [f"{var} = {{}}" if record.tag is None else f"{var} = {{'type': {record.tag!r}}}"]
    for f, default in zip(record.fields, record.defaults, strict=True):
        test = None if f.always else _omitted(src, default)
        put = f"{var}[{f.key!r}] = {_TO_JSON[f.kind]}"
        out.append(f"v = o.{f.attr}")
        out += [put] if test is None else [f"if {test}:", f"    {put}"]
    out += ["extra = o.extra", f"if extra: _put_extra({var}, extra)"]
    return out


def _write_dicts(src: _Source) -> None:
    for record in (USAGE, MESSAGE, *PART_RECORDS):
        name = record.cls.__name__
        src.emit([f"def _unstructure_{name}(o):"], 0)
        src.emit([*_write_to_json(src, record, "out"), "return out"], 1)
    src.emit(
        [
            "def _unstructure_UnknownPart(o):",
            '    out = {"type": o.type}',
            "    extra = o.extra",
            "    if extra: _put_extra(out, extra)",
            "    return out",
            "def _unstructure_parts(parts):",
            "    out = []",
            "    append = out.append",
            "    for o in parts:",
            "        t = type(o)",
        ],
        0,
    )
    for k, record in enumerate(PART_RECORDS):
        cls = src.name(record.cls.__name__, record.cls)
        src.emit([f"{'if' if k == 0 else 'elif'} t is {cls}:"], 2)
        src.emit([*_write_to_json(src, record, "p"), "append(p)"], 3)
    src.emit(["else:", "    append(_unstructure_part(o))"], 2)
    src.emit(["return out"], 1)
    src.emit(["def _unstructure_part(o):", "    return _PART_DICT.get(type(o), _not_a_part)(o)"], 0)


class _Concat:
    """One ``var = a + b + ...`` statement in the making; adjacent literals merged."""

    def __init__(self, var: str) -> None:
        self.var = var
        self.pieces: list[tuple[bool, str]] = []  # (is a literal, text or expression)
        self.assigned = False

    def literal(self, text: str) -> None:
        if self.pieces and self.pieces[-1][0]:
            text = self.pieces.pop()[1] + text
        self.pieces.append((True, text))

    def add(self, pieces: list[_Piece]) -> None:
        for is_literal, text in pieces:
            if is_literal:
                self.literal(text)
            else:
                self.pieces.append((False, text))

    def flush(self) -> list[str]:
        if not self.pieces:
            return []
        code = " + ".join(repr(t) if is_literal else t for is_literal, t in self.pieces)
        self.pieces = []
        line = f"{self.var} {'+=' if self.assigned else '='} {code}"
        self.assigned = True
        return [line]


def _write_to_text(src: _Source, record: Record, var: str) -> list[str]:
    """Lines building ``var``, the JSON text of the record ``o`` (``Unhandled`` when the
    text path does not write it). Consecutive fields that are always written become one
    concatenation."""
    out = [f"if o.extra: {_RAISE}"]
    concat = _Concat(var)
    fields = list(zip(record.fields, record.defaults, strict=True))
    comma = True  # whether the next field is written after a comma
    drop_first_comma = False
    if record.tag is not None:  # the discriminator first, then every field after a comma
        concat.literal('{"type":' + json.dumps(record.tag))
    elif fields and fields[0][1] is NO_DEFAULT:  # a required first field opens the object
        concat.literal("{")
        comma = False
    else:  # every field optional: each written after a comma, the first comma dropped
        out.append(f"{var} = ''")
        concat.assigned = True
        drop_first_comma = True
    for i, (f, default) in enumerate(fields):
        v = f"v{i}"
        test = None if f.always else _omitted(src, default, v)
        check, pieces = _TO_TEXT[f.kind](v)
        key = ("," if comma else "") + json.dumps(f.key) + ":"
        comma = True
        if test is None:
            out += [f"{v} = o.{f.attr}", *check]
            concat.literal(key)
            concat.add(pieces)
        else:
            out += concat.flush()
            out += [f"{v} = o.{f.attr}", f"if {test}:", *_indent(check)]
            concat.literal(key)
            concat.add(pieces)
            out += _indent(concat.flush())
    if drop_first_comma:
        out.append(f"{var} = '{{' + {var}[1:] + '}}'")
    else:
        concat.literal("}")
        out += concat.flush()
    return out


def _write_texts(src: _Source) -> None:
    for record in (USAGE, MESSAGE):
        name = record.cls.__name__
        src.emit([f"def _text_{name}(o):"], 0)
        src.emit([*_write_to_text(src, record, "out"), "return out"], 1)
    src.emit(
        [
            "def _parts_text(parts):",
            "    out = []",
            "    append = out.append",
            "    for o in parts:",
            "        t = type(o)",
        ],
        0,
    )
    for k, record in enumerate(PART_RECORDS):
        cls = src.name(record.cls.__name__, record.cls)
        src.emit([f"{'if' if k == 0 else 'elif'} t is {cls}:"], 2)
        src.emit([*_write_to_text(src, record, "p"), "append(p)"], 3)
    src.emit(
        [
            "elif t is _UnknownPart:",
            f"    if o.extra: {_RAISE}",
            "    v = o.type",
            f"    if type(v) is not str: {_RAISE}",
            """    append('{"type":' + _quote(v) + '}')""",
            "else:",
            f"    {_RAISE}",
        ],
        2,
    )
    src.emit(["""return ','.join(out)"""], 1)


def _compile() -> tuple[str, dict[str, Any]]:
    src = _Source()
    src.names.update(
        _Unhandled=Unhandled,
        _new=object.__new__,
        _ROLES={r.value: r for r in Role},
        _Usage=Usage,
        _UnknownPart=UnknownPart,
        _datetime=datetime,
        _PART_KINDS=frozenset(get_args(PartKind)),
        _TYPE_ONLY=frozenset({"type"}),
        _ONCE=(None,),
        _fromisoformat=datetime.fromisoformat,
        _b64decode=base64.b64decode,
        _b64encode=base64.b64encode,
        _quote=json.encoder.encode_basestring,  # what ``json`` writes with ensure_ascii=False
        _leftovers=_leftovers,
        _put_extra=_put_extra,
        _not_a_part=_not_a_part,
    )
    _write_fast(src)
    _write_dicts(src)
    _write_texts(src)
    source = "\n".join(src.lines) + "\n"
    filename = "<golem_core.codec._json_compiled>"
    namespace: dict[str, Any] = dict(src.names)
    exec(compile(source, filename, "exec"), namespace)  # our own source, from the field table
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace["_PART_DICT"] = {
        **{r.cls: namespace[f"_unstructure_{r.cls.__name__}"] for r in PART_RECORDS},
        UnknownPart: namespace["_unstructure_UnknownPart"],
    }
    return source, namespace


SOURCE, _NS = _compile()

# -- the compiled fast decoder (optional) ------------------------------------------------

_KIND_CODES: Final = {
    Kind.ROLE: 1,
    Kind.PARTS: 2,
    Kind.STR: 3,
    Kind.OPTIONAL_STR: 4,
    Kind.FLAG: 5,
    Kind.TIMESTAMP: 6,
    Kind.COUNT: 7,
    Kind.USAGE: 8,
    Kind.PART_KIND: 9,
    Kind.BASE64: 10,
}
"""Each kind's number in ``_speedups.c`` (its ``K_`` enum)."""
assert _KIND_CODES.keys() == set(Kind), "a code per kind"


def _native_record(record: Record) -> tuple[object, ...]:
    """A record of the table as ``_speedups.decoder`` reads it (its ``read_record``):
    what the generated Python reads from the same row, in the same order."""
    fields = tuple(
        (
            f.key,
            f.attr,
            _KIND_CODES[f.kind],
            default is NO_DEFAULT,
            None if default is NO_DEFAULT else default,
            f.shared,
            f.kind.nullable,
        )
        for f, default in zip(record.fields, record.defaults, strict=True)
    )
    return (record.cls, record.tag, record.known, record.not_null, fields)


def native_spec(namespace: dict[str, Any]) -> tuple[object, ...]:
    """The spec of the compiled decoder: the field table and the Python helpers it
    calls for what is rare (``namespace``: the generated module's)."""
    helpers = (
        Unhandled,
        namespace["_ROLES"],
        namespace["_PART_KINDS"],
        datetime.fromisoformat,
        functools.partial(base64.b64decode, validate=True),
        _leftovers,
        namespace["_unknown_part"],
    )
    parts = tuple(_native_record(r) for r in PART_RECORDS)
    return (helpers, _native_record(MESSAGE), _native_record(USAGE), parts)


_MessageList: TypeAlias = Callable[[list[object], dict[Any, str]], list[Message]]
_OneMessage: TypeAlias = Callable[[object, dict[Any, str]], Message]

PYTHON_PATHS: Final[tuple[_OneMessage, _MessageList]] = (
    _NS["_fast_Message"],
    _NS["_fast_Messages"],
)
"""The fast decoder written in Python: ``(message, message_list)``."""


def _native_paths() -> tuple[_OneMessage, _MessageList] | None:
    try:  # built at install when a C compiler is there (ADR 0149); the same values
        from golem_core._native import _speedups
    except ImportError:  # no compiler at install, or an interpreter it was not built for
        return None
    try:
        native = _speedups.decoder(native_spec(_NS))
    except TypeError as e:  # built from another version's table: never a wrong value
        warnings.warn(f"golem_core._native._speedups is stale ({e}); reinstall golem", stacklevel=1)
        return None
    return (native.message, native.messages)


NATIVE_PATHS: Final = _native_paths()
"""The compiled fast decoder, ``(message, message_list)``, or ``None`` without it."""

fast_message: Final[_OneMessage] = (NATIVE_PATHS or PYTHON_PATHS)[0]
"""The message of a JSON object, or ``Unhandled`` (the reference path then decides).
``names`` shares equal strings of the ``shared`` fields within one decode. Compiled
(``_speedups``) when installed, else the generated Python: the same values."""

fast_message_list: Final[_MessageList] = (NATIVE_PATHS or PYTHON_PATHS)[1]
"""``fast_message`` of each element of a list, in one call."""


def fast_messages(value: list[object]) -> tuple[Message, ...]:
    """The messages of a JSON array, or ``Unhandled``."""
    return tuple(fast_message_list(value, {}))


unstructure_message: Final[Callable[[Message], JSONObject]] = _NS["_unstructure_Message"]
unstructure_part: Final[Callable[[Part], JSONObject]] = _NS["_unstructure_part"]
unstructure_usage: Final[Callable[[Usage], JSONObject]] = _NS["_unstructure_Usage"]
message_text: Final[Callable[[Message], str]] = _NS["_text_Message"]
