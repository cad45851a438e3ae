"""Python types to JSON Schema, strict validation of JSON values into them, and back.

Owns the bridge between a tool's (or an output's) Python annotations and the model:
``json_schema(tp)`` describes the type to the model; ``validate(value, tp)`` turns the
model's JSON back into the type or says, with paths, what was wrong; ``to_jsonable(value)``
writes a value of such a type (or a tool's return value) as plain JSON.

Supported: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``,
``list``/``tuple``/``set``/``frozenset``/``Sequence``, ``dict[str, X]``/``Mapping``,
unions and ``Optional``, ``Literal``, ``Enum``, ``datetime`` (``format: date-time``),
``date`` (``date``), ``time`` (``time``), ``UUID`` (``uuid``), ``Decimal`` (a number or a
numeric string, as pydantic writes it), attrs classes, dataclasses, ``TypedDict`` (from
``typing`` or ``typing_extensions``) and,
when pydantic is installed, pydantic ``BaseModel`` subclasses (described and validated by
pydantic itself, with the model's own rules). Recursive classes are described with
``$defs``/``$ref``. A field's default appears as ``"default"`` when it is JSON.

Validation is strict for golem's own types (no string becomes a number, no boolean
counts as an integer, no extra keys) and total: whatever JSON it is given, ``validate``
returns a value of the type or raises ``ValidationFailed`` naming each problem's path
(``city``, ``$.items[2].name``); an exception raised by a class's own ``__init__`` (an
attrs validator, ``__post_init__``) is reported the same way.

Over 600 lines because it is one concept: describing a type and validating into it walk
the same cases (one branch per supported kind, side by side), so that what the schema
promises is what validation accepts; split, the two halves would drift apart.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import datetime as dt
import decimal
import enum
import functools
import json
import math
import re
import sys
import types
import typing
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin

import attrs
import cattrs
import typing_extensions

__all__ = [
    "NO_DEFAULT",
    "SchemaError",
    "ValidationFailed",
    "is_pydantic_model",
    "json_schema",
    "make_strict_converter",
    "object_schema",
    "to_jsonable",
    "validate",
]

MAX_DEPTH = 100
"""How deeply nested a value ``validate`` and ``to_jsonable`` follow before refusing it."""

NO_DEFAULT: Any = object()
"""Marks a property of ``object_schema`` that has no default (it is required)."""

DECIMAL_PATTERN = r"^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$"


class SchemaError(TypeError):
    """A type golem cannot describe to a model."""


class ValidationFailed(ValueError):
    """A JSON value does not fit the type; ``errors`` lists each problem with its path."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("; ".join(errors))


# -- recognising types -------------------------------------------------------------------


def is_pydantic_model(tp: object) -> bool:
    """Whether ``tp`` is a pydantic ``BaseModel`` subclass; never imports pydantic.

    A class can only derive from ``BaseModel`` if pydantic is already imported, so when
    it is not in ``sys.modules`` the answer is no.
    """
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(tp, type):
        return False
    base = getattr(pydantic, "BaseModel", None)
    return isinstance(base, type) and issubclass(tp, base)


def _is_typeddict(tp: object) -> bool:
    """``typing.TypedDict`` or ``typing_extensions.TypedDict`` (the spelling pydantic
    requires before Python 3.12; ``typing.is_typeddict`` does not know it)."""
    return isinstance(tp, type) and (typing.is_typeddict(tp) or typing_extensions.is_typeddict(tp))


def _is_class_type(tp: object) -> bool:
    return isinstance(tp, type) and (
        attrs.has(tp) or dataclasses.is_dataclass(tp) or _is_typeddict(tp) or is_pydantic_model(tp)
    )


_SEQUENCES = (
    list,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Iterable,
    collections.abc.Collection,
    set,
    frozenset,
    collections.abc.Set,
    collections.abc.MutableSet,
)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _hints(tp: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(tp)
    except Exception as e:  # a forward reference that cannot be resolved, ...
        raise SchemaError(f"cannot read the type hints of {tp!r}: {e}") from e


# -- JSON Schema -------------------------------------------------------------------------


class _Context:
    """One schema being built: the ``$defs`` of recursive classes and pydantic models."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self.names: dict[Any, str] = {}
        self.building: set[Any] = set()
        self.recursive: set[Any] = set()

    def name(self, tp: Any) -> str:
        if tp not in self.names:
            base = getattr(tp, "__name__", "Type")
            name, n = base, 2
            while name in self.names.values() or name in self.defs:
                name, n = f"{base}{n}", n + 1
            self.names[tp] = name
        return self.names[tp]

    def add_def(self, name: str, schema: dict[str, Any]) -> None:
        if name in self.defs and self.defs[name] != schema:
            raise SchemaError(f"two different types are both named {name!r} in one schema")
        self.defs[name] = schema

    def finish(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {**schema, "$defs": dict(self.defs)} if self.defs else schema


def json_schema(tp: Any, *, description: str | None = None) -> dict[str, Any]:
    """The JSON Schema of a Python type (see the module header for what is supported).

    Raises:
        SchemaError: the type cannot be described.
    """
    context = _Context()
    schema = _schema(tp, context)
    ref = schema.get("$ref")
    if len(schema) == 1 and isinstance(ref, str) and ref.startswith("#/$defs/"):
        schema = dict(context.defs[ref.removeprefix("#/$defs/")])  # the root, inline
    if description:
        schema = {**schema, "description": description}
    return context.finish(schema)


def object_schema(properties: Sequence[tuple[str, Any, str | None, Any]]) -> dict[str, Any]:
    """The JSON Schema of an object (a tool's parameters) from ``(name, type, description,
    default)`` entries; ``default`` is ``NO_DEFAULT`` for a required property.

    Every property shares one ``$defs`` at the root.

    Raises:
        SchemaError: a type cannot be described.
    """
    context = _Context()
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, tp, description, default in properties:
        try:
            schema = _schema(tp, context)
        except SchemaError as e:
            raise SchemaError(f"parameter {name!r}: {e}") from e
        if description:
            schema = {**schema, "description": description}
        if default is NO_DEFAULT:
            required.append(name)
        else:
            schema = _with_default(schema, default)
        props[name] = schema
    schema = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return context.finish(schema)


def _with_default(schema: dict[str, Any], default: Any) -> dict[str, Any]:
    try:
        plain = to_jsonable(default)
        json.dumps(plain, allow_nan=False)
    except (TypeError, ValueError):
        return schema  # not JSON: the model just sees the property as optional
    return {**schema, "default": plain}


def _schema(tp: Any, context: _Context) -> dict[str, Any]:
    if tp is Any or tp is object:
        return {}
    if tp is None or tp is type(None):
        return {"type": "null"}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is dt.datetime:
        return {"type": "string", "format": "date-time"}
    if tp is dt.date:
        return {"type": "string", "format": "date"}
    if tp is dt.time:
        return {"type": "string", "format": "time"}
    if tp is uuid.UUID:
        return {"type": "string", "format": "uuid"}
    if tp is decimal.Decimal:
        return {"anyOf": [{"type": "number"}, {"type": "string", "pattern": DECIMAL_PATTERN}]}
    origin = get_origin(tp)
    args = get_args(tp)
    if origin in (Required, NotRequired, typing.Annotated):
        return _schema(args[0], context)
    if origin is Literal:
        return {"enum": [_literal_json(a, tp) for a in args]}
    if origin in (Union, types.UnionType):
        non_null = [a for a in args if a is not type(None)]
        options = [_schema(a, context) for a in non_null]
        if len(non_null) < len(args):
            options.append({"type": "null"})
        return {"anyOf": options}
    if origin in _SEQUENCES:
        return {"type": "array", "items": _schema(args[0], context) if args else {}}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], context)}
        if args == ((),):  # tuple[()]
            return {"type": "array", "maxItems": 0}
        return {
            "type": "array",
            "prefixItems": [_schema(a, context) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin in _MAPPINGS:
        if args and args[0] is not str:
            raise SchemaError(f"JSON object keys are strings; cannot describe {tp!r}")
        return {"type": "object", "additionalProperties": _schema(args[1], context) if args else {}}
    if tp in (list, tuple, set, frozenset):
        return {"type": "array"}
    if tp is dict:
        return {"type": "object"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [_literal_json(m.value, tp) for m in tp]}
    if _is_class_type(tp):
        return _class_schema(tp, context)
    raise SchemaError(f"cannot describe {tp!r} as JSON Schema")


def _literal_json(value: Any, tp: Any) -> Any:
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, str | bool | int):
        return value
    raise SchemaError(f"{tp!r}: {value!r} is not a JSON value")


def _class_schema(tp: type, context: _Context) -> dict[str, Any]:
    if tp in context.building:  # recursive: refer to the definition
        context.recursive.add(tp)
        return {"$ref": f"#/$defs/{context.name(tp)}"}
    context.building.add(tp)
    try:
        body = (
            _pydantic_schema(tp, context) if is_pydantic_model(tp) else _fields_schema(tp, context)
        )
    finally:
        context.building.discard(tp)
    if tp in context.recursive:
        name = context.name(tp)
        context.add_def(name, body)
        return {"$ref": f"#/$defs/{name}"}
    return body


def _fields_schema(tp: type, context: _Context) -> dict[str, Any]:
    hints = _hints(tp)
    props: dict[str, Any] = {}
    required: list[str] = []
    for key, hint, default in _fields(tp, hints):
        prop = _schema(hint, context)
        if default is NO_DEFAULT:
            required.append(key)
        elif default is not _MISSING_VALUE:
            prop = _with_default(prop, default)
        props[key] = prop
    schema: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    doc = (tp.__doc__ or "").strip()
    if doc and not doc.startswith(tp.__name__ + "("):
        schema["description"] = doc.split("\n\n")[0]
    return schema


def _fields(tp: type, hints: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(JSON key, type, default or NO_DEFAULT)`` of the fields a JSON object sets."""
    out: list[tuple[str, Any, Any]] = []
    if attrs.has(tp):
        for f in attrs.fields(tp):
            if not f.init:
                continue
            default = f.default
            if default is attrs.NOTHING:
                default = NO_DEFAULT
            elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = _MISSING_VALUE
            out.append((f.alias or f.name, hints.get(f.name, Any), default))
    elif dataclasses.is_dataclass(tp):
        for df in dataclasses.fields(tp):
            if not df.init:
                continue
            if df.default is not dataclasses.MISSING:
                default = df.default
            elif df.default_factory is not dataclasses.MISSING:
                default = _MISSING_VALUE
            else:
                default = NO_DEFAULT
            out.append((df.name, hints.get(df.name, Any), default))
    else:  # TypedDict
        required_keys = getattr(tp, "__required_keys__", frozenset(hints))
        try:  # the markers themselves: under PEP 563 __required_keys__ misses them
            marked = typing.get_type_hints(tp, include_extras=True)
        except Exception:  # already read once by _hints: never in practice
            marked = {}
        for key, hint in hints.items():
            marker = get_origin(marked.get(key))
            required = marker is Required or (marker is not NotRequired and key in required_keys)
            out.append((key, hint, NO_DEFAULT if required else _MISSING_VALUE))
    return out


@functools.lru_cache(maxsize=512)
def _class_fields(tp: type) -> list[tuple[str, Any, Any]]:
    """``_fields`` of a class, read once (type hints are slow to resolve)."""
    return _fields(tp, _hints(tp))


class _Missing:
    """An optional field whose default is not a value (a factory): not in the schema."""


_MISSING_VALUE: Any = _Missing()


def _pydantic_schema(tp: type, context: _Context) -> dict[str, Any]:
    try:
        schema = typing.cast(Any, tp).model_json_schema(ref_template="#/$defs/{model}")
    except Exception as e:  # pydantic refuses to describe it
        raise SchemaError(f"pydantic cannot describe {tp.__name__}: {e}") from e
    schema = dict(schema)
    for name, definition in schema.pop("$defs", {}).items():
        context.add_def(name, definition)
    return schema


# -- validation --------------------------------------------------------------------------


def validate(value: Any, tp: Any, *, path: str = "") -> Any:
    """``value`` (parsed JSON) made into ``tp``, strictly.

    Total over JSON values: returns a value of ``tp`` or raises ``ValidationFailed``.

    Args:
        value: the parsed JSON.
        tp: a type ``json_schema`` can describe.
        path: where ``value`` sits, for messages (``""`` is the root, ``$``).

    Raises:
        ValidationFailed: with one message per problem, each naming its path.
        SchemaError: ``tp`` is not a type golem can describe (a programming error, found
            when the tool or agent is built).
    """
    if tp is Any or tp is object:
        return value
    return _validate(value, tp, path or "$", 0)


def _fail(path: str, expected: str, value: Any) -> ValidationFailed:
    return ValidationFailed([f"{path}: expected {expected}, got {_describe_value(value)}"])


def _describe_value(value: Any) -> str:
    if value is None:
        return "null"
    kind = {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(value), type(value).__name__)
    text = repr(value) if not isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{kind} {text}"


def _describe_type(tp: Any) -> str:
    simple = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
        type(None): "null",
        None: "null",
        dt.datetime: "a date-time string (ISO 8601)",
        dt.date: "a date string (YYYY-MM-DD)",
        dt.time: "a time string (HH:MM[:SS])",
        uuid.UUID: "a UUID string",
        decimal.Decimal: "a decimal number (a number or a numeric string)",
    }
    if tp in simple:
        return simple[tp]
    origin = get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(json.dumps(_literal_json(a, tp)) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_describe_type(a) for a in get_args(tp))
    if origin in (Required, NotRequired, typing.Annotated):
        return _describe_type(get_args(tp)[0])
    if origin in _SEQUENCES or origin is tuple or tp in (list, tuple, set, frozenset):
        return "an array"
    if origin in _MAPPINGS or tp is dict:
        return "an object"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(json.dumps(m.value) for m in tp)
    if isinstance(tp, type):
        return f"an object ({tp.__name__})"
    return repr(tp)


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _same_json(value: Any, literal: Any) -> bool:
    """Whether JSON ``value`` equals ``literal`` as JSON does (a boolean is not a number)."""
    if isinstance(literal, bool) or isinstance(value, bool):
        return type(value) is bool and type(literal) is bool and value == literal
    if literal is None:
        return value is None
    if isinstance(literal, int):
        return type(value) in (int, float) and value == literal
    if isinstance(literal, str):
        return type(value) is str and value == literal
    return False


def _validate(value: Any, tp: Any, path: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ValidationFailed([f"{path}: nested more than {MAX_DEPTH} levels deep"])
    if tp is Any or tp is object:
        return value
    if tp is None or tp is type(None):
        if value is None:
            return None
        raise _fail(path, "null", value)
    if tp is str:
        if type(value) is str:
            return value
        raise _fail(path, "a string", value)
    if tp is bool:
        if type(value) is bool:
            return value
        raise _fail(path, "a boolean", value)
    if tp is int:
        if type(value) is int:
            return value
        if type(value) is float and math.isfinite(value) and value.is_integer():
            return int(value)
        raise _fail(path, "an integer", value)
    if tp is float:
        if type(value) in (int, float) and math.isfinite(value):
            return float(value)
        raise _fail(path, "a finite number", value)
    if tp in (dt.datetime, dt.date, dt.time, uuid.UUID, decimal.Decimal):
        return _validate_scalar(value, tp, path)
    origin = get_origin(tp)
    args = get_args(tp)
    if origin in (Required, NotRequired, typing.Annotated):
        return _validate(value, args[0], path, depth)
    if origin is Literal:
        for literal in args:
            plain = literal.value if isinstance(literal, enum.Enum) else literal
            if _same_json(value, plain):
                return literal
        raise _fail(path, _describe_type(tp), value)
    if origin in (Union, types.UnionType):
        return _validate_union(value, tp, args, path, depth)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        for member in tp:
            if _same_json(value, member.value):
                return member
        raise _fail(path, _describe_type(tp), value)
    if origin in _SEQUENCES or origin is tuple or tp in (list, tuple, set, frozenset):
        return _validate_array(value, tp, origin, args, path, depth)
    if origin in _MAPPINGS or tp is dict:
        if type(value) is not dict:
            raise _fail(path, "an object", value)
        if not args:
            return dict(value)
        errors: list[str] = []
        out: dict[str, Any] = {}
        for key, item in value.items():
            try:
                out[key] = _validate(item, args[1], _child(path, key), depth + 1)
            except ValidationFailed as e:
                errors.extend(e.errors)
        if errors:
            raise ValidationFailed(errors)
        return out
    if is_pydantic_model(tp):
        return _validate_pydantic(value, tp, path)
    if _is_class_type(tp):
        return _validate_fields(value, tp, path, depth)
    raise SchemaError(f"cannot validate into {tp!r}")


def _validate_scalar(value: Any, tp: Any, path: str) -> Any:
    parsed: Any = None
    if tp is decimal.Decimal:
        if type(value) in (int, float) and math.isfinite(value):
            return decimal.Decimal(str(value))
        if type(value) is str and re.search(DECIMAL_PATTERN, value):
            try:
                parsed = decimal.Decimal(value)
            except decimal.InvalidOperation:
                parsed = None
            if parsed is not None and parsed.is_finite():
                return parsed
        raise _fail(path, _describe_type(tp), value)
    if type(value) is str:
        try:
            if tp is dt.datetime:
                parsed = dt.datetime.fromisoformat(value)
            elif tp is dt.date:
                if "T" not in value and len(value) <= 10:
                    parsed = dt.date.fromisoformat(value)
            elif tp is dt.time:
                parsed = dt.time.fromisoformat(value)
            else:
                parsed = uuid.UUID(value)
        except ValueError:
            parsed = None
        if parsed is not None:
            return parsed
    raise _fail(path, _describe_type(tp), value)


def _validate_union(value: Any, tp: Any, args: tuple[Any, ...], path: str, depth: int) -> Any:
    deeper: list[str] = []
    for option in args:
        try:
            return _validate(value, option, path, depth)
        except ValidationFailed as e:
            # problems inside a matching container say more than "expected X or Y"
            deeper.extend(m for m in e.errors if not m.startswith(f"{path}: expected"))
    failure = _fail(path, _describe_type(tp), value)
    if deeper:
        failure = ValidationFailed([f"{failure.errors[0]} ({'; '.join(deeper)})"])
    raise failure


def _validate_array(
    value: Any, tp: Any, origin: Any, args: tuple[Any, ...], path: str, depth: int
) -> Any:
    if type(value) is not list:
        raise _fail(path, "an array", value)
    kind = origin or tp
    fixed: tuple[Any, ...] | None = None
    item_type: Any = Any
    if kind is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        fixed = () if args == ((),) else args
        if len(value) != len(fixed):
            raise ValidationFailed(
                [f"{path}: expected an array of {len(fixed)} items, got {len(value)}"]
            )
    elif args:
        item_type = args[0]
    errors: list[str] = []
    items: list[Any] = []
    for i, item in enumerate(value):
        try:
            items.append(
                _validate(
                    item, fixed[i] if fixed is not None else item_type, _child(path, i), depth + 1
                )
            )
        except ValidationFailed as e:
            errors.extend(e.errors)
    if errors:
        raise ValidationFailed(errors)
    if kind is tuple:
        return tuple(items)
    if kind in (set, frozenset, collections.abc.Set, collections.abc.MutableSet):
        try:
            return frozenset(items) if kind is frozenset else set(items)
        except TypeError as e:
            raise ValidationFailed([f"{path}: the items cannot form a set: {e}"]) from None
    return items


def _validate_fields(value: Any, tp: type, path: str, depth: int) -> Any:
    if type(value) is not dict:
        raise _fail(path, _describe_type(tp), value)
    fields = _class_fields(tp)
    known = {key for key, _, _ in fields}
    errors = [
        f"{_child(path, key)}: unexpected field (the fields are {', '.join(sorted(known))})"
        for key in value
        if key not in known
    ]
    kwargs: dict[str, Any] = {}
    for key, hint, default in fields:
        if key not in value:
            if default is NO_DEFAULT:
                errors.append(f"{_child(path, key)}: missing required field")
            continue
        try:
            kwargs[key] = _validate(value[key], hint, _child(path, key), depth + 1)
        except ValidationFailed as e:
            errors.extend(e.errors)
    if errors:
        raise ValidationFailed(errors)
    if _is_typeddict(tp):
        return kwargs
    try:
        return tp(**kwargs)
    except Exception as e:  # the class's own checks (attrs validators, __post_init__)
        raise ValidationFailed([f"{path}: {tp.__name__}: {e}"]) from None


def _validate_pydantic(value: Any, tp: type, path: str) -> Any:
    pydantic = sys.modules["pydantic"]
    try:
        return typing.cast(Any, tp).model_validate(value)
    except pydantic.ValidationError as e:
        errors = []
        for error in e.errors(include_url=False):
            where = path
            for key in error.get("loc", ()):
                where = _child(where, key if isinstance(key, int) else str(key))
            errors.append(f"{where}: {error.get('msg', 'invalid')}")
        raise ValidationFailed(errors or [f"{path}: {e}"]) from None
    except Exception as e:  # a model_validator that raised something else
        raise ValidationFailed([f"{path}: {tp.__name__}: {e}"]) from None


# -- writing values as JSON ----------------------------------------------------------------


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON (``dict``, ``list``, ``str``, numbers, ``bool``, ``None``).

    The inverse of ``validate``: ``validate(to_jsonable(v), T) == v`` for the supported
    types. ``datetime``/``date``/``time`` become ISO 8601 strings, ``UUID`` and
    ``Decimal`` strings, enums their value, attrs classes and dataclasses objects keyed
    as ``validate`` reads them, pydantic models ``model_dump(mode="json")``, sets and
    tuples arrays.

    Raises:
        TypeError: a value that has no JSON form (bytes, an arbitrary object).
        ValueError: a float or Decimal that is not finite, or nesting deeper than
            ``MAX_DEPTH`` (a cycle).
    """
    return _jsonable(value, 0)


def _jsonable(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError(f"the value is nested more than {MAX_DEPTH} levels deep (a cycle?)")
    if isinstance(value, enum.Enum):
        return _jsonable(value.value, depth + 1)
    if value is None or isinstance(value, bool | str):
        return value if type(value) in (bool, str) or value is None else _scalar(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a JSON number")
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"{value!r} is not a JSON number")
        return str(value)
    if is_pydantic_model(type(value)):
        return typing.cast(Any, value).model_dump(mode="json", by_alias=True)
    cls = type(value)
    if attrs.has(cls) or (dataclasses.is_dataclass(cls) and isinstance(cls, type)):
        return {key: _jsonable(getattr(value, name), depth + 1) for key, name in _field_names(cls)}
    if isinstance(value, collections.abc.Mapping):
        return {_key(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, bytes | bytearray):
        raise TypeError("bytes are not JSON (return a DataPart for binary content)")
    raise TypeError(f"a {cls.__name__} has no JSON form")


def _scalar(value: Any) -> Any:  # a subclass of str (an enum is handled before)
    return str(value) if isinstance(value, str) else bool(value)


def _field_names(cls: type) -> list[tuple[str, str]]:
    if attrs.has(cls):
        return [(f.alias or f.name, f.name) for f in attrs.fields(cls) if f.init]
    return [(f.name, f.name) for f in dataclasses.fields(cls) if f.init]


def _key(key: Any) -> str:
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bool | int | float) or key is None:
        return json.dumps(key)
    raise TypeError(f"a {type(key).__name__} cannot be a JSON object key")


# -- a converter for code that wants cattrs ------------------------------------------------


def make_strict_converter() -> cattrs.Converter:
    """A cattrs converter whose ``structure`` is ``validate`` and ``unstructure`` is
    ``to_jsonable``: strict (``"1"`` is not an int, ``True`` is not 1), the same rules
    everywhere."""
    converter = cattrs.Converter(forbid_extra_keys=True)
    always: Callable[[Any], bool] = lambda _: True  # noqa: E731
    converter.register_structure_hook_func(always, lambda value, tp: validate(value, tp))
    converter.register_unstructure_hook_func(always, to_jsonable)
    return converter
