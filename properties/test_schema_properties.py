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
import uuid
from decimal import Decimal
from typing import Any, Literal, NotRequired, Optional, TypedDict

import attrs
import jsonschema
import pydantic
from hypothesis import given
from hypothesis import strategies as st

from golem_shell._schema import ValidationFailed, json_schema, to_jsonable, validate
from golem_shell.models.test import example_from_schema


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
