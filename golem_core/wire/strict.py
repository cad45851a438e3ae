"""Strict schemas: a tool's or an output's JSON Schema made to qualify for OpenAI's strict
mode, and arguments written against it read back as the original schema means them.

OpenAI's strict mode (``strict: true`` on a tool or a ``json_schema`` response format)
constrains the model to the schema, but takes only a documented subset of JSON Schema
(platform.openai.com/docs/guides/structured-outputs, "Supported schemas"): the root an
object; every object ``additionalProperties: false`` with every property ``required``;
the types string, number, integer, boolean, object, array, null, ``enum``, ``const`` and
``anyOf``; ``$defs``/``$ref`` (recursion included); string ``pattern`` and nine
``format``\\ s, number ``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum``/
``multipleOf``, array ``minItems``/``maxItems``; not ``allOf``, ``not``, ``if``/``then``/
``else``, ``dependentRequired``, ``dependentSchemas``; at most 5000 properties, 10 levels
of nesting, 1000 enum values and 120,000 characters of names and values.

``openai_strict_schema`` rewrites a schema into that subset where it can without changing
which answers golem accepts (ADR 0130):

- every object with ``properties`` is closed (``additionalProperties: false``) and lists
  every property as required; a property that was optional becomes nullable (``anyOf``
  with ``{"type": "null"}``) unless it already takes ``null``: the model writes ``null``
  for "not given";
- ``oneOf`` becomes ``anyOf``, an ``allOf`` of one schema becomes an ``anyOf`` of it, a
  ``$ref`` with other keywords beside it moves into an ``anyOf`` of one;
- keywords outside the subset that only narrow a value (``default``, ``minLength``,
  ``maxLength``, ``uniqueItems``, ``minProperties``, ``maxProperties``, ``examples``,
  undocumented ``format``\\ s, a ``pattern`` with a lookaround, ...) move into the
  description, and a tuple's ``prefixItems`` becomes ``items`` of the union of its
  positions (its length stays in ``minItems``/``maxItems``);
- anything else (an open map, an object of any keys, a value of any type, an array of
  untyped items, ``allOf``, ``not``, a keyword it does not know, a limit exceeded) cannot
  be made to qualify: the schema is returned unchanged with the reason, and the request
  says ``strict: false``.

The rewritten schema is looser than the original, never stricter: the run still
validates every answer against the full Python type (or, for a schema of its own, its
owner does). ``absent_nulls_dropped`` undoes the one change the model sees: a ``null``
for an optional property whose schema does not take ``null`` means "not given".

Every function is pure, total and deterministic; none changes its argument.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "OPENAI_FORMATS",
    "OPENAI_MAX_DEPTH",
    "OPENAI_MAX_ENUM_VALUES",
    "OPENAI_MAX_PROPERTIES",
    "OPENAI_MAX_STRING_CHARS",
    "absent_nulls_dropped",
    "accepts_null",
    "openai_strict_schema",
]

OPENAI_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
"""The string formats OpenAI's strict mode documents."""
OPENAI_MAX_PROPERTIES = 5000
"""Object properties in one strict schema, at most."""
OPENAI_MAX_DEPTH = 10
"""Levels of object nesting in one strict schema, at most."""
OPENAI_MAX_ENUM_VALUES = 1000
"""Enum values across one strict schema, at most."""
OPENAI_MAX_STRING_CHARS = 120_000
"""Characters of property names, definition names, enum and const values, at most."""

_KEPT = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "const"}
    | {"anyOf", "$defs", "$ref", "description", "title", "format", "pattern"}
    | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
    | {"minItems", "maxItems"}
)
"""The keywords strict mode documents (``format`` and ``pattern`` with conditions)."""
_MOVED = frozenset(
    {"default", "minLength", "maxLength", "uniqueItems", "minProperties", "maxProperties"}
    | {"examples", "example", "deprecated", "readOnly", "writeOnly", "contentEncoding"}
    | {"contentMediaType", "$comment"}
)
"""Keywords that only narrow a value or annotate it: moved into the description."""
_DROPPED = frozenset({"$schema", "$id", "discriminator"})
"""Keywords with no meaning for the answer (pydantic's ``discriminator`` is OpenAPI's)."""
_LOOKAROUND = re.compile(r"\(\?<?[=!]")


class _NotStrict(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


def openai_strict_schema(schema: Any) -> tuple[dict[str, Any], str | None]:
    """``(schema rewritten for strict mode, None)``, or ``(schema unchanged, why it cannot
    qualify)``. See the module header for the rewrite. Total, deterministic; a new value
    (the argument is never changed)."""
    if not isinstance(schema, dict):
        return {}, "the schema is not an object"
    walker = _Walker(schema)
    try:
        out = walker.node(schema, "$", 0)
        if out.get("type") != "object" or "anyOf" in out:
            raise _NotStrict("$: the root is not an object")
        walker.check_limits()
    except _NotStrict as e:
        return schema, e.reason
    return out, None


class _Walker:
    def __init__(self, root: dict[str, Any]) -> None:
        defs = root.get("$defs")
        self.defs: dict[str, Any] = defs if isinstance(defs, dict) else {}
        self.properties = 0
        self.enum_values = 0
        self.chars = sum(len(name) for name in self.defs)

    def check_limits(self) -> None:
        if self.properties > OPENAI_MAX_PROPERTIES:
            raise _NotStrict(
                f"{self.properties} object properties (at most {OPENAI_MAX_PROPERTIES})"
            )
        if self.enum_values > OPENAI_MAX_ENUM_VALUES:
            raise _NotStrict(f"{self.enum_values} enum values (at most {OPENAI_MAX_ENUM_VALUES})")
        if self.chars > OPENAI_MAX_STRING_CHARS:
            raise _NotStrict(
                f"{self.chars} characters of names and values (at most {OPENAI_MAX_STRING_CHARS})"
            )

    def node(self, schema: Any, path: str, depth: int) -> dict[str, Any]:
        if not isinstance(schema, dict):
            raise _NotStrict(f"{path}: {json.dumps(schema)} is not a schema strict mode takes")
        out: dict[str, Any] = {}
        notes: list[str] = []
        for key, value in schema.items():
            if key in _DROPPED:
                continue
            if key in _MOVED:
                notes.append(f"{key}: {_compact(value)}")
            elif key == "format" and value not in OPENAI_FORMATS:
                notes.append(f"format: {_compact(value)}")
            elif key == "pattern" and (not isinstance(value, str) or _LOOKAROUND.search(value)):
                notes.append(f"pattern: {_compact(value)}")
            elif key == "oneOf" or (key == "allOf" and isinstance(value, list) and len(value) == 1):
                out["anyOf"] = value
            elif key == "prefixItems" and isinstance(value, list):
                out["prefixItems"] = value  # rewritten below, once items are known
            elif key in _KEPT:
                out[key] = value
            else:
                raise _NotStrict(f"{path}: strict mode does not take {key!r}")
        if "anyOf" in schema and ("oneOf" in schema or "allOf" in schema):
            raise _NotStrict(f"{path}: anyOf beside oneOf or allOf")
        ref = out.get("$ref")
        if isinstance(ref, str) and any(k not in ("$ref", "$defs") for k in out):
            out = {k: v for k, v in out.items() if k != "$ref"}
            out["anyOf"] = [{"$ref": ref}, *out.get("anyOf", [])]
        elif "$ref" in out:
            self._check_ref(out["$ref"], path)
        self._count(out)
        if "prefixItems" in out:
            self._tuple(out, notes, path)
        kinds = {"type", "anyOf", "enum", "const", "$ref"} & set(out)
        if not kinds:
            raise _NotStrict(f"{path} takes any JSON value (strict mode needs a type)")
        if isinstance(out.get("anyOf"), list):
            if not out["anyOf"]:
                raise _NotStrict(f"{path}: an empty anyOf")
            out["anyOf"] = [
                self.node(o, f"{path}.anyOf[{k}]", depth) for k, o in enumerate(out["anyOf"])
            ]
        elif "anyOf" in out:
            raise _NotStrict(f"{path}: anyOf is not a list")
        types = out.get("type")
        type_set = set(types) if isinstance(types, list) else {types}
        if "object" in type_set or "properties" in out:
            self._object(out, path, depth + 1)
        elif "additionalProperties" in out:
            raise _NotStrict(f"{path}: additionalProperties on a schema that is not an object")
        if "array" in type_set or "items" in out:
            items = out.get("items")
            if not isinstance(items, dict) or not items:
                raise _NotStrict(f"{path} is an array of untyped items")
            out["items"] = self.node(items, f"{path}[]", depth)
        if "$defs" in out:
            if path != "$" or not isinstance(out["$defs"], dict):
                raise _NotStrict(f"{path}: $defs below the root")
            out["$defs"] = {
                name: self.node(d, f"$.$defs.{name}", 0) for name, d in out["$defs"].items()
            }
        if notes:
            note = "; ".join(notes)
            description = out.get("description")
            out["description"] = f"{description} ({note})" if description else note
        return out

    def _check_ref(self, ref: object, path: str) -> None:
        if ref == "#":
            return
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            raise _NotStrict(f"{path}: $ref {ref!r} is not a local definition")
        if ref.removeprefix("#/$defs/") not in self.defs:
            raise _NotStrict(f"{path}: $ref {ref!r} names no definition")

    def _count(self, out: dict[str, Any]) -> None:
        enum = out.get("enum")
        if isinstance(enum, list):
            self.enum_values += len(enum)
            self.chars += sum(len(v) for v in enum if isinstance(v, str))
            strings = [v for v in enum if isinstance(v, str)]
            if len(enum) > 250 and sum(len(v) for v in strings) > 15_000:
                raise _NotStrict("an enum of more than 250 values and 15,000 characters")
        if isinstance(out.get("const"), str):
            self.chars += len(out["const"])

    def _tuple(self, out: dict[str, Any], notes: list[str], path: str) -> None:
        positions = out.pop("prefixItems")
        if "items" in out and out["items"] is not False:
            raise _NotStrict(f"{path}: prefixItems with items beside them")
        out.pop("items", None)
        if not positions:
            out["maxItems"] = 0
            out["items"] = {"type": "null"}  # never used: the array is empty
            return
        distinct: list[Any] = []
        for p in positions:
            if p not in distinct:
                distinct.append(p)
        out["items"] = distinct[0] if len(distinct) == 1 else {"anyOf": distinct}
        out.setdefault("minItems", len(positions))
        out.setdefault("maxItems", len(positions))
        notes.append(f"prefixItems: {_compact(positions)}")

    def _object(self, out: dict[str, Any], path: str, depth: int) -> None:
        if depth > OPENAI_MAX_DEPTH:
            raise _NotStrict(f"{path}: objects nested more than {OPENAI_MAX_DEPTH} levels")
        properties = out.get("properties")
        extra = out.get("additionalProperties", False)
        if not isinstance(properties, dict):
            raise _NotStrict(f"{path} is an object of any keys (strict mode closes every object)")
        if extra is not False:
            raise _NotStrict(f"{path} is an open map (additionalProperties is not false)")
        required = out.get("required", [])
        if not isinstance(required, list) or not set(required) <= set(properties):
            raise _NotStrict(f"{path}: required names a property it does not describe")
        self.properties += len(properties)
        self.chars += sum(len(name) for name in properties)
        props: dict[str, Any] = {}
        for name, sub in properties.items():
            prop = self.node(sub, f"{path}.{name}", depth)
            if name not in required and not accepts_null(sub, self.defs):
                prop = _nullable(prop)
            props[name] = prop
        out["properties"] = props
        out["required"] = list(properties)
        out["additionalProperties"] = False


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or ``null`` (its description kept outside the union)."""
    outer: dict[str, Any] = {k: schema[k] for k in ("description", "title") if k in schema}
    inner = {k: v for k, v in schema.items() if k not in outer}
    if list(inner) == ["anyOf"]:
        return {**outer, "anyOf": [*inner["anyOf"], {"type": "null"}]}
    return {**outer, "anyOf": [inner, {"type": "null"}]}


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def accepts_null(schema: Any, defs: dict[str, Any] | None = None) -> bool:
    """Whether ``schema`` takes ``null`` (``type`` null or a list holding it, an ``enum`` or
    ``const`` of ``null``, a branch of ``anyOf``/``oneOf`` that does, a schema of any
    value, a local ``$ref`` to one that does). Total; a cycle of references is no."""
    return _accepts_null(schema, defs or {}, frozenset())


def _accepts_null(schema: Any, defs: dict[str, Any], seen: frozenset[str]) -> bool:
    if schema is True or schema == {}:
        return True
    if not isinstance(schema, dict):
        return False
    kinds = {"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"} & set(schema)
    if not kinds:
        return True  # annotations only: any value
    types = schema.get("type")
    if types == "null" or (isinstance(types, list) and "null" in types):
        return True
    if "enum" in schema and isinstance(schema["enum"], list) and None in schema["enum"]:
        return True
    if "const" in schema and schema["const"] is None:
        return True
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and any(_accepts_null(o, defs, seen) for o in options):
            return True
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in seen:
        target = defs.get(ref.removeprefix("#/$defs/"))
        if target is not None and not {"type", "enum", "const", "anyOf", "oneOf"} & set(schema):
            return _accepts_null(target, defs, seen | {ref})
    return False


def absent_nulls_dropped(value: Any, schema: Any) -> Any:
    """``value`` (parsed JSON written against ``schema`` or its strict rewrite) with every
    ``null`` given for an optional property whose schema does not take ``null`` left out:
    what strict mode's "nullable for optional" means. Follows ``properties``, ``items``,
    ``prefixItems``, ``additionalProperties`` maps, local ``$ref``\\ s and, for an object,
    the first ``anyOf``/``oneOf`` branch that describes all its keys. Anything else is
    returned as it is. Total, deterministic; a new value where something was left out."""
    root = schema if isinstance(schema, dict) else {}
    defs = root.get("$defs")
    return _dropped(value, schema, defs if isinstance(defs, dict) else {}, root, 0)


def _resolve(schema: Any, defs: dict[str, Any], root: dict[str, Any]) -> Any:
    for _ in range(32):  # a chain of references, never a cycle
        if not isinstance(schema, dict):
            return schema
        ref = schema.get("$ref")
        if ref == "#":
            schema = {**root, **{k: v for k, v in schema.items() if k != "$ref"}}
        elif isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs.get(ref.removeprefix("#/$defs/"))
            if not isinstance(target, dict):
                return schema
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        else:
            return schema
    return schema


def _dropped(
    value: Any, schema: Any, defs: dict[str, Any], root: dict[str, Any], depth: int
) -> Any:
    if depth > 200:
        return value
    schema = _resolve(schema, defs, root)
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            required = schema.get("required", ())
            extra = schema.get("additionalProperties")
            out: dict[str, Any] = {}
            for key, item in value.items():
                sub = properties.get(key, extra if isinstance(extra, dict) else None)
                if (
                    item is None
                    and key in properties
                    and key not in required
                    and not accepts_null(sub, defs)
                ):
                    continue
                out[key] = item if sub is None else _dropped(item, sub, defs, root, depth + 1)
            return out
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            return {k: _dropped(v, extra, defs, root, depth + 1) for k, v in value.items()}
        for key in ("anyOf", "oneOf", "allOf"):
            for option in schema.get(key) or ():
                branch = _resolve(option, defs, root)
                props = branch.get("properties") if isinstance(branch, dict) else None
                if isinstance(props, dict) and set(value) <= set(props):
                    return _dropped(value, branch, defs, root, depth + 1)
        return value
    if isinstance(value, list):
        positions = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(positions, list):
            return [
                _dropped(v, positions[k], defs, root, depth + 1) if k < len(positions) else v
                for k, v in enumerate(value)
            ]
        if isinstance(items, dict):
            return [_dropped(v, items, defs, root, depth + 1) for v in value]
        for key in ("anyOf", "oneOf"):
            for option in schema.get(key) or ():
                branch = _resolve(option, defs, root)
                if isinstance(branch, dict) and ("items" in branch or "prefixItems" in branch):
                    return _dropped(value, branch, defs, root, depth + 1)
    return value
