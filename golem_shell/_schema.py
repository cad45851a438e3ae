"""Python types to JSON Schema, and strict validation of JSON values into those types.

Owns the bridge between a tool's (or an output's) Python annotations and the model:
``json_schema(tp)`` describes the type to the model; ``validate(value, tp)`` turns the
model's JSON back into the type or says, with paths, what was wrong. Supported: ``str``,
``int``, ``float``, ``bool``, ``None``, ``Any``, ``list``/``tuple``/``set``/``Sequence``,
``dict[str, X]``, unions and ``Optional``, ``Literal``, ``Enum``, attrs classes,
dataclasses and ``TypedDict``. Validation is strict: no string is turned into a number
and no boolean counts as an integer.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import types
import typing
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import ClassValidationError, IterableValidationError

__all__ = ["SchemaError", "ValidationFailed", "json_schema", "make_strict_converter", "validate"]


class SchemaError(TypeError):
    """A type golem cannot describe to a model."""


class ValidationFailed(ValueError):
    """A JSON value does not fit the type; ``errors`` lists each problem with its path."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("; ".join(errors))


def _is_typeddict(tp: object) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def json_schema(tp: Any, *, description: str | None = None) -> dict[str, Any]:
    """The JSON Schema of a Python type (see the module header for what is supported).

    Raises:
        SchemaError: the type cannot be described.
    """
    schema = _schema(tp)
    if description:
        schema = {**schema, "description": description}
    return schema


def _schema(tp: Any) -> dict[str, Any]:
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
    origin = get_origin(tp)
    args = get_args(tp)
    if origin in (Required, NotRequired):
        return _schema(args[0])
    if origin is Literal:
        values = list(args)
        return {"enum": values}
    if origin in (Union, types.UnionType):
        non_null = [a for a in args if a is not type(None)]
        options = [_schema(a) for a in non_null]
        if len(non_null) < len(args):
            options.append({"type": "null"})
        return {"anyOf": options}
    if origin in (list, collections.abc.Sequence, collections.abc.Iterable, set, frozenset):
        return {"type": "array", "items": _schema(args[0]) if args else {}}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0])}
        return {
            "type": "array",
            "prefixItems": [_schema(a) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin in (dict, collections.abc.Mapping):
        if args and args[0] is not str:
            raise SchemaError(f"JSON object keys are strings; cannot describe {tp!r}")
        return {"type": "object", "additionalProperties": _schema(args[1]) if args else {}}
    if tp in (list, tuple, set, frozenset):
        return {"type": "array"}
    if tp is dict:
        return {"type": "object"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if isinstance(tp, type) and attrs.has(tp):
        hints = typing.get_type_hints(tp)
        props: dict[str, Any] = {}
        required: list[str] = []
        for f in attrs.fields(tp):
            if not f.init:
                continue
            name = f.alias or f.name
            props[name] = _schema(hints.get(f.name, Any))
            if f.default is attrs.NOTHING:
                required.append(name)
        return _object(props, required, tp)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp)
        props = {}
        required = []
        for df in dataclasses.fields(tp):
            if not df.init:
                continue
            props[df.name] = _schema(hints.get(df.name, Any))
            if df.default is dataclasses.MISSING and df.default_factory is dataclasses.MISSING:
                required.append(df.name)
        return _object(props, required, tp)
    if _is_typeddict(tp):
        hints = typing.get_type_hints(tp)
        props = {k: _schema(v) for k, v in hints.items()}
        required = sorted(getattr(tp, "__required_keys__", set(hints)))
        return _object(props, [k for k in hints if k in required], tp)
    raise SchemaError(f"cannot describe {tp!r} as JSON Schema")


def _object(props: dict[str, Any], required: list[str], tp: type) -> dict[str, Any]:
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


def _strict(kind: type, name: str) -> Any:
    def hook(value: Any, _: type) -> Any:
        if kind is float:
            if type(value) in (int, float):
                return float(value)
        elif kind is int:
            if type(value) is int:
                return value
            if type(value) is float and value.is_integer():
                return int(value)
        elif type(value) is kind:
            return value
        raise ValueError(f"expected {name}, got {type(value).__name__} {value!r:.40}")

    return hook


def make_strict_converter() -> cattrs.Converter:
    """A cattrs converter that refuses coercions (``"1"`` is not an int, ``True`` is not 1)."""
    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook(str, _strict(str, "a string"))
    converter.register_structure_hook(int, _strict(int, "an integer"))
    converter.register_structure_hook(float, _strict(float, "a number"))
    converter.register_structure_hook(bool, _strict(bool, "a boolean"))
    return converter


_CONVERTER = make_strict_converter()


def validate(value: Any, tp: Any, *, path: str = "") -> Any:
    """``value`` (parsed JSON) structured into ``tp``, strictly.

    Raises:
        ValidationFailed: with one message per problem, each naming its path.
    """
    if tp is Any or tp is object:
        return value
    try:
        return _CONVERTER.structure(value, tp)
    except (ClassValidationError, IterableValidationError) as e:
        prefix = path or "$"
        raise ValidationFailed(cattrs.transform_error(e, path=prefix)) from None
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise ValidationFailed([f"{e} @ {path or '$'}"]) from None
