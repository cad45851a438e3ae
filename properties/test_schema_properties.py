"""Validation is total and agrees with the schema the model is shown (issue 14, item 2).

For a set of types (Literal, unions, Optional, enums, attrs classes, dataclasses,
TypedDicts, a recursive class, pydantic models, lists, tuples, sets, dicts, datetime,
date, time, UUID, Decimal) and any JSON value:

- ``validate`` returns a value or raises ``ValidationFailed`` whose every message names
  a path; never another exception;
- it accepts exactly what ``json_schema`` accepts (checked by ``jsonschema``), where the
  schema can say everything (no ``format``, no pydantic constraint); else whatever it
  accepts, the schema accepts;
- what it returns, written back by ``to_jsonable``, validates to the same value;
- ``TestModel``'s generator gives values it accepts, for any seed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import uuid
from decimal import Decimal
from typing import Any, Literal, NotRequired, Optional, TypedDict

import attrs
import jsonschema
import pydantic
import typing_extensions as te
from hypothesis import assume, given
from hypothesis import strategies as st
from wire_rules import (
    anthropic_strict_violations,
    gemini_schema_violations,
    openai_strict_body_violations,
)

from golem_core import ToolDefinition
from golem_shell.models.test import example_from_schema
from golem_shell.tools._schema import (
    NO_DEFAULT,
    ValidationFailed,
    json_schema,
    to_jsonable,
    validate,
)


class Color(enum.Enum):
    RED = "red"
    ONE = 1


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Point:
    x: int
    y: float = 0.0
    _label: str = "p"


@dataclasses.dataclass
class Item:
    name: str
    tags: list[str]
    color: Color | None = None


class Options(TypedDict):
    name: str
    size: NotRequired[Literal["s", "m"]]


@attrs.frozen
class Tree:
    name: str
    children: tuple[Tree, ...] = ()


class Person(pydantic.BaseModel):
    name: str
    age: int = pydantic.Field(ge=0)


EXACT: list[Any] = [
    str,
    int,
    float,
    bool,
    type(None),
    Any,
    Literal["a", "b"],
    Literal[1, True, None],
    int | str,
    Optional[list[int]],  # noqa: UP045 - the spelling users write
    list[Literal["a", "name"]] | None,
    tuple[int, str],
    tuple[int, ...],
    set[str],
    dict[str, float],
    dict[str, Item],
    Color,
    Level,
    Point,
    Item,
    Options,
    Tree,
    Decimal,
    list[Point | Options],
]
FORMATTED: list[Any] = [dt.datetime, dt.date, dt.time, uuid.UUID, Person, dict[str, dt.date]]
TYPES = EXACT + FORMATTED

KEYS = st.sampled_from(["name", "x", "y", "label", "tags", "color", "size", "children", "age"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(
        [
            "a",
            "b",
            "s",
            "red",
            "1.5",
            "-2e3",
            "2024-01-02",
            "2024-01-02T03:04:05Z",
            "03:04",
            "12345678-1234-4678-9234-567812345678",
            1,
            2,
            1.0,
        ]
    ),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(KEYS, st.text(max_size=3)), inner, max_size=4),
    ),
    max_leaves=12,
)


def _accepts(value: Any, tp: Any) -> tuple[bool, Any]:
    try:
        result = validate(value, tp)
    except ValidationFailed as e:
        assert e.errors, "a failure names at least one problem"
        for message in e.errors:
            assert message.startswith("$"), message
        return False, None
    return True, result


@given(tp=st.sampled_from(TYPES), value=JSON)
def test_validation_is_total_and_agrees_with_the_schema(tp: Any, value: Any) -> None:
    ok, _ = _accepts(value, tp)
    schema_ok = jsonschema.Draft202012Validator(json_schema(tp)).is_valid(value)
    if ok:
        assert schema_ok, f"validate accepted {value!r} that the schema of {tp!r} refuses"
    if tp in EXACT:
        assert ok == schema_ok, f"{tp!r}: validate {ok}, schema {schema_ok} for {value!r}"


@given(tp=st.sampled_from(TYPES), value=JSON)
def test_what_validates_writes_back_to_the_same_value(tp: Any, value: Any) -> None:
    ok, result = _accepts(value, tp)
    if ok:
        assert validate(to_jsonable(result), tp) == result


@given(tp=st.sampled_from(TYPES), seed=st.integers(min_value=0, max_value=2**16))
def test_the_test_models_generated_values_validate(tp: Any, seed: int) -> None:
    value = example_from_schema(json_schema(tp), seed=seed)
    validate(value, tp)


# -- strict schemas (issue 37, item 5; ADR 0130) ---------------------------------------------


class Extras(te.TypedDict):
    """A TypedDict as pydantic takes it on Python 3.11 (typing_extensions)."""

    name: str
    size: te.NotRequired[Literal["s", "m"]]


_SCALARS: list[Any] = [
    str,
    int,
    float,
    bool,
    Literal["a", "b"],
    Color,
    Level,
    dt.date,
    dt.datetime,
    uuid.UUID,
    Decimal,
    Person,
    Extras,
    Tree,
]


@st.composite
def _classes(draw: st.DrawFn, inner: st.SearchStrategy[Any]) -> Any:
    """An attrs class, a TypedDict or a pydantic model of drawn fields, some optional."""
    count = draw(st.integers(min_value=0, max_value=3))
    fields = [(f"f{k}", draw(inner), draw(st.booleans())) for k in range(count)]
    fields.sort(key=lambda f: f[2])  # attrs: fields with a default come last
    kind = draw(st.sampled_from(["attrs", "typeddict", "pydantic"]))
    if kind == "pydantic":
        try:
            return pydantic.create_model(
                "DrawnModel",
                **{n: ((tp | None, None) if opt else (tp, ...)) for n, tp, opt in fields},  # type: ignore[call-overload]
            )
        except pydantic.PydanticSchemaGenerationError:  # attrs classes inside: pydantic refuses
            kind = "attrs"
    if kind == "attrs":
        return attrs.make_class(
            "Drawn",
            {
                name: attrs.field(type=tp | None if optional else tp, default=None)
                if optional
                else attrs.field(type=tp)
                for name, tp, optional in fields
            },
        )
    return te.TypedDict(  # type: ignore[operator]
        "DrawnDict", {name: te.NotRequired[tp] if opt else tp for name, tp, opt in fields}
    )


python_types = st.recursive(
    st.sampled_from(_SCALARS),
    lambda inner: st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        inner.map(lambda t: t | None),
        st.tuples(inner, inner).map(lambda p: tuple[p[0], p[1]]),  # type: ignore[misc]
        st.tuples(inner, inner).map(lambda p: p[0] | p[1]),
        inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        _classes(inner),
    ),
    max_leaves=6,
).filter(lambda tp: tp is not str)  # str output is the text itself: no schema


def _has_open_map(tp: Any) -> bool:
    return '"additionalProperties": {' in json.dumps(json_schema(tp)) or (
        '"additionalProperties": true' in json.dumps(json_schema(tp))
    )


def _bodies(tp: Any) -> dict[str, dict[str, Any]]:
    """The native-output and output-tool bodies every provider gets for ``tp``, with a
    tool taking ``tp`` as a parameter beside them."""
    from golem_core import Message, ModelRequest
    from golem_core.wire import anthropic, gemini, openai, openai_responses
    from golem_shell.models import OpenAIModel
    from golem_shell.tools._output import Output
    from golem_shell.tools._schema import object_schema

    tool = ToolDefinition("use", "", object_schema([("value", tp, None, NO_DEFAULT)]))
    out = Output(tp, "native", OpenAIModel("gpt-4o-mini", api_key="k"))
    native = ModelRequest((Message.user("go"),), tools=(tool,), output_schema=out.native)
    assert out.definition is None and out.native is not None
    as_tool = ModelRequest(
        (Message.user("go"),), tools=(tool, ToolDefinition("final_result", "", out.schema))
    )
    bodies: dict[str, dict[str, Any]] = {}
    for name, request in (("native", native), ("tool", as_tool)):
        bodies[f"openai {name}"] = openai.encode_request(
            request, model="gpt-4o-mini", stream=False
        ).unwrap()
        bodies[f"responses {name}"] = openai_responses.encode_request(
            request, model="gpt-4.1", stream=False
        ).unwrap()
        bodies[f"gemini {name}"] = gemini.encode_request(request, model="gemini-3-pro").unwrap()
        if name == "tool" or anthropic.structured_output_problem(out.schema) is None:
            bodies[f"anthropic {name}"] = anthropic.encode_request(
                request, model="claude-sonnet-4-5", stream=False
            ).unwrap()
    return bodies


@given(tp=python_types)
def test_every_schema_golem_generates_meets_each_providers_strict_rules(tp: Any) -> None:
    """What golem sends for a Python type, as a tool and as native output, meets every
    provider's documented strict-mode rules; OpenAI gets ``strict: true`` for every type
    without an open map."""
    for name, body in _bodies(tp).items():
        if name.startswith(("openai", "responses")):
            assert openai_strict_body_violations(body) == [], (name, body)
            tools = [t.get("function", t) for t in body["tools"]]
            if not _has_open_map(tp):
                assert all(t.get("strict") is True for t in tools), (name, tools)
        elif name.startswith("anthropic"):
            assert anthropic_strict_violations(body) == [], (name, body)
        else:
            assert gemini_schema_violations(body) == [], (name, body)


def _fill_nulls(value: Any, schema: Any, root: dict[str, Any]) -> Any:
    """``value`` as a model in strict mode writes it: every property present, ``null``
    for one not given (following the strict schema)."""
    if isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        schema = root if ref == "#" else root["$defs"][ref.removeprefix("#/$defs/")]
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        return {
            k: _fill_nulls(value[k], sub, root) if k in value else None
            for k, sub in schema["properties"].items()
        }
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        options = schema["items"].get("anyOf") or ()
        note = schema.get("description") or ""
        positions = (
            json.loads(note.removeprefix("prefixItems: "))
            if note.startswith("prefixItems: ")
            else None
        )
        if positions is not None and len(options) == len(positions) == len(value):
            # a tuple the strict rewrite made an array of the union of its positions (the
            # description names each position): the model writes each as its position's
            return [_fill_nulls(v, o, root) for v, o in zip(value, options, strict=True)]
        return [_fill_nulls(v, schema["items"], root) for v in value]
    for option in schema.get("anyOf") or ():
        # the option alone, its references resolved against the root's definitions (not
        # merged with the root's own keywords, which would ask the value for the root's
        # properties too)
        alone = {"$defs": root.get("$defs", {}), **option}
        filled = _fill_nulls(value, option, root)
        kept = not isinstance(value, dict) or set(value) <= set(filled)  # an option that
        # has no place for one of the value's properties is another type's
        if kept and jsonschema.Draft202012Validator(alone).is_valid(filled):
            return filled
    return value


def _pruned(value: Any, schema: Any, root: dict[str, Any]) -> Any:
    """``value`` without its optional properties (following the original schema)."""
    if isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        schema = root if ref == "#" else root["$defs"][ref.removeprefix("#/$defs/")]
    if not isinstance(schema, dict):
        return value
    props = schema.get("properties")
    if isinstance(value, dict) and isinstance(props, dict):
        kept = schema.get("required", ())
        return {k: _pruned(v, props.get(k), root) for k, v in value.items() if k in kept}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_pruned(v, schema["items"], root) for v in value]
    return value


def _takes_null(schema: Any, root: dict[str, Any]) -> bool:
    if isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        schema = root if ref == "#" else root["$defs"][ref.removeprefix("#/$defs/")]
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_takes_null(o, root) for o in schema.get("anyOf") or ())


def _optional_nullable(
    schema: Any, root: dict[str, Any], seen: frozenset[str] = frozenset()
) -> bool:
    """Whether some object property is both optional and nullable: under strict mode
    (every property required) its ``null`` cannot say "absent" (ADR 0130)."""
    if isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        if ref in seen:
            return False
        seen = seen | {ref}
        schema = root if ref == "#" else root["$defs"][ref.removeprefix("#/$defs/")]
    if not isinstance(schema, dict):
        return False
    props = schema.get("properties")
    if isinstance(props, dict):
        required = set(schema.get("required", ()))
        if any(k not in required and _takes_null(v, root) for k, v in props.items()):
            return True
        if any(_optional_nullable(v, root, seen) for v in props.values()):
            return True
    subs = [schema.get("items"), *(schema.get("anyOf") or ())]
    return any(_optional_nullable(v, root, seen) for v in subs if v is not None)


@given(tp=python_types, seed=st.integers(min_value=0, max_value=2**16), prune=st.booleans())
def test_strict_mode_loses_no_value_of_the_type(tp: Any, seed: int, prune: bool) -> None:
    """Every value of the type can be written under the strict schema (optional
    properties as ``null``), and reads back as the same value."""
    from golem_core.wire.strict import absent_nulls_dropped, openai_strict_schema
    from golem_shell.tools._output import Output

    output = Output(tp, "tool")
    strict, why_not = openai_strict_schema(output.schema)
    if why_not is not None:
        assert _has_open_map(tp), why_not
        return
    try:  # the generator does not honour every pattern pydantic writes
        value = validate(example_from_schema(json_schema(tp), seed=seed), tp)
    except ValidationFailed:
        assume(False)
    if prune and _optional_nullable(json_schema(tp), json_schema(tp)):
        # left out or None: the one thing strict mode cannot tell apart (ADR 0130)
        assume(False)
    if prune:  # optional properties left out: the model writes null for each
        try:
            value = validate(_pruned(to_jsonable(value), json_schema(tp), json_schema(tp)), tp)
        except ValidationFailed:
            assume(False)
    written = _fill_nulls({"response": to_jsonable(value)}, strict, strict)
    if not output.wrapped:
        written = _fill_nulls(to_jsonable(value), strict, strict)
    assert jsonschema.Draft202012Validator(strict).is_valid(written), (written, strict)
    read = absent_nulls_dropped(written, output.schema)
    assert output._validate(read) == value
