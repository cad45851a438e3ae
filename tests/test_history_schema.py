"""Issue 28, item 8 (and issue 32, item 8): the history JSON Schema is generated from the
codec's field table (``golem_core.contract``), so it accepts exactly what
``decode_history`` accepts (``"summary"`` values included) wherever a schema can say it,
and neither the shipped file nor the generator can drift from the table."""

from __future__ import annotations

import ast
import json
from importlib import resources
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples  # properties/profiles.py: the loaded profile's count
from returns.result import Success

from golem_core import Message, decode_history, encode_history
from golem_core.contract import MESSAGE, PART_RECORDS, USAGE, Field, Kind, Record
from golem_core.testing import histories
from golem_shell.cli import history_schema
from golem_shell.context import _history_schema
from golem_shell.context._history_schema import build_history_schema, render_history_schema

VALIDATOR = jsonschema.Draft202012Validator(build_history_schema())


def agree(document: object) -> tuple[bool, bool]:
    """(the schema accepts it, ``decode_history`` accepts it)."""
    decoded = decode_history(json.dumps(document, ensure_ascii=False))
    return VALIDATOR.is_valid(document), isinstance(decoded, Success)


def test_the_shipped_schema_is_the_generated_one() -> None:
    text = resources.files("golem_shell").joinpath("history.schema.json").read_text("utf-8")
    assert text == render_history_schema()  # python -m golem_shell.context._history_schema
    assert history_schema() == build_history_schema()
    jsonschema.Draft202012Validator.check_schema(build_history_schema())


def _properties(schema: dict[str, Any], name: str) -> list[str]:
    return list(schema["$defs"][name]["properties"])


def test_every_field_of_the_table_is_a_property_of_the_schema() -> None:
    """Issue 32, item 8: walked from the table, in the table's order."""
    schema = build_history_schema()
    assert _properties(schema, "message") == [f.key for f in MESSAGE.fields] + ["summary"]
    assert _properties(schema, "usage") == [f.key for f in USAGE.fields]
    dispatch = {
        rule["if"]["properties"]["type"]["const"]: rule["then"]["$ref"].removeprefix("#/$defs/")
        for rule in schema["$defs"]["part"]["allOf"]
    }
    assert list(dispatch) == [r.tag for r in PART_RECORDS]
    for record in PART_RECORDS:
        assert _properties(schema, dispatch[record.tag]) == [f.key for f in record.fields]
    required = schema["$defs"]["message"]["required"]
    assert required == ["role", "parts"]


@attrs.frozen(repr=False)
class MoodyMessage(Message):
    mood: str | None = attrs.field(default=None, kw_only=True)


@attrs.frozen
class StickerPart:
    emoji: str
    size: int | None = None
    extra: tuple[tuple[str, str], ...] = attrs.field(default=(), kw_only=True)


def test_a_field_added_to_a_copy_of_the_table_is_in_the_schema_without_an_edit() -> None:
    moody = Record(MoodyMessage, (*MESSAGE.fields, Field("mood", "mood", Kind.OPTIONAL_STR)))
    sticker = Record(
        StickerPart,
        (Field("emoji", "emoji", Kind.STR), Field("size", "size", Kind.COUNT)),
        "sticker",
    )
    schema = build_history_schema(message_record=moody, part_records=(*PART_RECORDS, sticker))
    assert schema["$defs"]["message"]["properties"]["mood"] == {"$ref": "#/$defs/optionalString"}
    assert schema["$defs"]["stickerPart"] == {
        "required": ["emoji"],
        "properties": {"emoji": {"type": "string"}, "size": {"$ref": "#/$defs/count"}},
    }
    validator = jsonschema.Draft202012Validator(schema)
    sticker_message = {"role": "user", "parts": [{"type": "sticker", "size": 2}]}
    assert not validator.is_valid([sticker_message])  # the emoji is required
    assert not validator.is_valid([{"role": "user", "parts": [], "mood": 3}])
    assert validator.is_valid([{"role": "user", "parts": [], "mood": None}])


def test_the_schema_module_imports_only_public_golem_core_modules() -> None:
    source = Path(_history_schema.__file__).read_text(encoding="utf-8")
    imported = [
        node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module
    ]
    assert "golem_core.contract" in imported
    assert [m for m in imported if m.startswith("golem_core._")] == []


@pytest.mark.parametrize(
    "summary", [True, "yes", None, 3, {"messages": -1}, {"messages": "two"}, [1, 2]]
)
def test_every_summary_value_decode_accepts_the_schema_accepts(summary: object) -> None:
    document = [{"role": "user", "parts": [{"type": "text", "text": "s"}], "summary": summary}]
    assert agree(document) == (True, True)


@pytest.mark.parametrize("data", ["AAA", "AA=", "A===", "AAAAA", "AA==AA==", "AAAA\n"])
def test_base64_the_decoder_refuses_the_schema_refuses(data: str) -> None:
    part = {"type": "data", "data": data, "kind": "image", "mediaType": "image/png"}
    assert agree([{"role": "user", "parts": [part]}]) == (False, False)


# -- the property: the two agree on histories with any field set to any value ------------

KEYS: dict[str, list[str]] = {
    "message": [f.key for f in MESSAGE.fields] + ["summary", "mood"],
    "usage": [f.key for f in USAGE.fields] + ["future"],
    **{str(r.tag): [f.key for f in r.fields] + ["type", "extra"] for r in PART_RECORDS},
}
values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-2, 3),
        st.sampled_from(["", "user", "tool", "image", "x", "AAAA", "AA==", "AAA", "text", "url"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["a", "type"]), inner)
    ),
    max_leaves=4,
)


@st.composite
def mutated(draw: st.DrawFn) -> list[Any]:
    """A history's JSON with one field of a message, usage or part set to any value, or
    removed (timestamps keep a value ``fromisoformat`` reads: beyond any schema)."""
    document: list[Any] = json.loads(encode_history(draw(histories(max_size=4))))
    if not document:
        return document
    message = draw(st.sampled_from(document))
    targets: list[tuple[dict[str, Any], str]] = [(message, "message")]
    if isinstance(message.get("usage"), dict):
        targets.append((message["usage"], "usage"))
    targets += [(p, p["type"]) for p in message["parts"] if p["type"] in KEYS]
    target, what = draw(st.sampled_from(targets))
    key = draw(st.sampled_from(KEYS[what]))
    if key == "createdAt":
        return document
    if draw(st.booleans()):
        target.pop(key, None)
    else:
        target[key] = draw(values)
    return document


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_the_schema_accepts_exactly_what_decode_history_accepts(document: list[Any]) -> None:
    schema_ok, decode_ok = agree(document)
    assert schema_ok == decode_ok, (schema_ok, decode_ok, document)
