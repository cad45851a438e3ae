"""The JSON codec's fast paths agree with its reference paths, on every input.

The field table (``golem_core/codec/_json_fields.py``) drives four paths: the reference
decoder interprets it; the fast decoder, the dict encoder and the text encoder are
compiled from it. These properties hold the compiled paths to the reference:

- decode: on any JSON value (histories' encodings, and the same mutated field by field
  into hostile values), the fast decoder either builds exactly the value the reference
  builds, or gives up (``Unhandled``, nothing else) where the reference reports an error
  or builds a value; it never accepts what the reference refuses. ``decode_history`` and
  ``decode_message`` give the same ``Success`` value or the same ``DecodeError`` (path
  and reason) as the reference alone, on the whole-parse and on the scanning path,
  and on both parsers: orjson (the optional accelerator, whole or cut into chunks)
  and the stdlib alone (the module's ``parser`` fixture runs every property on each);
- the fast decoder handles every well-formed encoding (it never gives up on one), so
  the reference runs only to explain an error;
- encode: the text encoder writes exactly the bytes of the dict encoder's object
  (``json`` compact, UTF-8, or ASCII escapes for lone surrogates), and handles every
  message without unknown fields itself; on values of unexpected types both paths give
  the same text or raise the same exception.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import attrs
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from returns.result import Failure, Result, Success
from strategies import histories, json_values, messages

import golem_core.codec._json as codec
import golem_core.codec._json_compiled as compiled
from golem_core import (
    DataPart,
    DecodeError,
    Message,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
    Usage,
)
from golem_core.codec._json_compiled import (
    NATIVE_PATHS,
    PYTHON_PATHS,
    Unhandled,
    message_text,
    unstructure_message,
)
from golem_core.codec._json_fields import MESSAGE, PART_RECORDS, USAGE, Field, Kind, Record
from golem_core.codec._json_reference import _Invalid, structure_message

AGREE = settings(deadline=None)


@pytest.fixture(autouse=True, scope="module", params=["orjson", "stdlib"])
def parser(request: pytest.FixtureRequest) -> Any:
    """Every property runs on both parsers: the optional accelerator (orjson, when
    importable) and the stdlib path alone (ADR 0074: the same values and errors)."""
    if request.param == "stdlib":
        with mock.patch.object(codec, "_ORJSON", None):
            yield request.param
    elif codec._ORJSON is None:  # pragma: no cover - the test extra installs it
        pytest.skip("orjson is not installed")
    else:
        yield request.param


@pytest.fixture(autouse=True, scope="module", params=["native", "python"])
def fast_decoder(request: pytest.FixtureRequest) -> Any:
    """Every property runs on both fast decoders: the compiled one (``_speedups``, built
    at install where a C compiler is; ADR 0149) and the generated Python, each standing
    in for ``fast_message`` and ``fast_message_list`` everywhere the codec calls them.
    ``GOLEM_REQUIRE_SPEEDUPS=1`` (``.ci/run``) makes a missing compiled one a failure."""
    paths = NATIVE_PATHS if request.param == "native" else PYTHON_PATHS
    if paths is None:
        if os.environ.get("GOLEM_REQUIRE_SPEEDUPS") == "1":
            pytest.fail("GOLEM_REQUIRE_SPEEDUPS=1 but golem_core._native._speedups is not built")
        pytest.skip("golem_core._native._speedups is not built (no C compiler at install)")
    one, many = paths
    with contextlib.ExitStack() as stack:
        for module in (compiled, codec):
            stack.enter_context(mock.patch.object(module, "fast_message", one))
            stack.enter_context(mock.patch.object(module, "fast_message_list", many))
        yield request.param


# -- the reference alone -----------------------------------------------------------------


def reference_history(value: object) -> Result[tuple[Message, ...], DecodeError]:
    return codec._reference_history(value)


def reference_decode(raw: bytes | str) -> Result[tuple[Message, ...], DecodeError]:
    """``decode_history`` with the fast path taken out."""
    text = codec._text(raw)
    if isinstance(text, DecodeError):
        return Failure(text)
    parsed = codec._parse(text)
    if isinstance(parsed, Failure):
        return parsed
    return reference_history(parsed.unwrap())


def reference_message(raw: bytes | str) -> Result[Message, DecodeError]:
    """``decode_message`` with the fast path taken out."""
    text = codec._text(raw)
    if isinstance(text, DecodeError):
        return Failure(text)
    parsed = codec._parse(text)
    if isinstance(parsed, Failure):
        return parsed
    try:
        return Success(structure_message(parsed.unwrap()))
    except _Invalid as e:
        return Failure(DecodeError(e.path, e.reason))
    except RecursionError:
        return Failure(DecodeError("", "JSON nested too deeply"))


def dict_path_bytes(history: tuple[Message, ...]) -> bytes:
    """The bytes of the dict encoder's objects, as ``encode_history`` promises them."""
    value = [unstructure_message(m) for m in history]
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def fast_or_unhandled(value: list[Any]) -> tuple[Message, ...] | None:
    """The fast decoder's value, or ``None`` when it gives up; anything else it raises
    fails the property."""
    try:
        return compiled.fast_messages(value)
    except Unhandled:
        return None


# -- hostile JSON values -------------------------------------------------------------------

KEYS = sorted(
    {f.key for r in (MESSAGE, USAGE, *PART_RECORDS) for f in r.fields} | {"type", "future", ""}
)
"""Every key the table knows, and some it does not."""

hostile_scalars = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            False,
            0,
            -1,
            2**70,
            1.5,
            -0.0,
            "",
            "user",
            "tool",
            "root",
            "text",
            "tool_call",
            "thinking",
            "url",
            "data",
            "image",
            "smell",
            "AAAA",
            "!!",
            "2026-01-01T00:00:00Z",
            "yesterday",
            "{}",
        ]
    ),
    json_values,
)


def _too_deep(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


hostile_values = st.one_of(
    hostile_scalars,
    st.lists(hostile_scalars, max_size=3),
    st.dictionaries(st.sampled_from(KEYS), hostile_scalars, max_size=3),
    st.sampled_from([_too_deep(40), _too_deep(129), {"x": _too_deep(200)}]),
).map(copy.deepcopy)  # a fresh copy each time: the edits below change values in place


def _containers(value: object, out: list[object]) -> list[object]:
    if type(value) is dict:
        out.append(value)
        for v in value.values():
            _containers(v, out)
    elif type(value) is list:
        out.append(value)
        for v in value:
            _containers(v, out)
    return out


_PARTS_BY_TAG = {r.tag: r for r in PART_RECORDS}


def _record_of(obj: dict[str, Any]) -> Record | None:
    """The record of the table ``obj`` looks like: a message, a known part, a usage."""
    if "role" in obj or "parts" in obj:
        return MESSAGE
    tag = obj.get("type")
    if type(tag) is str:
        return _PARTS_BY_TAG.get(tag)
    return USAGE if obj.keys() <= USAGE.known else None


def _table_keys(obj: dict[str, Any]) -> list[str]:
    record = _record_of(obj)
    return [] if record is None else sorted(record.known)


field_values = st.one_of(st.none(), hostile_scalars, hostile_values)
"""What a field is set to: ``null`` often, a scalar of another kind often, anything."""


@st.composite
def mutated_values(draw: st.DrawFn) -> Any:
    """The JSON value of a drawn history, then one to four edits anywhere in it: a key
    of an object (mostly one of its record's table, else one it has, or any) set to a
    hostile value (``null`` a third of the time) or removed, or an array's item
    replaced, inserted or removed. Objects are edited more often than arrays."""
    value = json.loads(codec.encode_history(draw(histories(max_size=5))))
    for _ in range(draw(st.integers(1, 4))):
        places = _containers(value, [])
        objects = [p for p in places if type(p) is dict]
        pool = objects if objects and draw(st.integers(0, 4)) else places
        place = pool[draw(st.integers(0, len(pool) - 1))]
        if type(place) is dict:
            which = draw(st.integers(0, 4))  # mostly a key of the record's own table
            own = _table_keys(place) or KEYS
            keys = {0: sorted(place) or own, 1: KEYS}.get(which, own)
            key = draw(st.sampled_from(keys))
            if key in place and not draw(st.integers(0, 5)):
                del place[key]
            else:
                place[key] = draw(field_values)
        else:
            assert type(place) is list
            at = draw(st.integers(0, len(place)))
            match draw(st.integers(0, 2)):
                case 0 if at < len(place):
                    place[at] = draw(hostile_values)
                case 1 if at < len(place):
                    del place[at]
                case _:
                    place.insert(at, draw(hostile_values))
    return value


# -- decode ------------------------------------------------------------------------------


def assert_decoders_agree(value: Any) -> None:
    """Fast and reference agree on ``value`` and on its text, on every decode path."""
    expected = reference_history(value)
    if type(value) is list:
        fast = fast_or_unhandled(value)
        if fast is not None:  # accepted: exactly the reference's value
            assert expected == Success(fast)
    assert codec.history_from_jsonable(value) == expected
    for ensure_ascii in (False, True):
        raw = json.dumps(value, ensure_ascii=ensure_ascii)
        assert reference_decode(raw) == expected
        assert codec.decode_history(raw) == expected
        assert codec.decode_history(raw.encode("utf-8", "surrogatepass")) == reference_decode(
            raw.encode("utf-8", "surrogatepass")
        )
        with mock.patch.object(codec, "_WHOLE_PARSE_CHARS", 0):  # the scanning path
            assert codec.decode_history(raw) == expected
        compact = json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"))
        with mock.patch.object(codec, "_CHUNK", 0):  # orjson: cut before every message
            assert codec.decode_history(compact) == expected
            assert codec.decode_history(compact.encode("utf-8", "surrogatepass")) == (
                reference_decode(compact.encode("utf-8", "surrogatepass"))
            )
    if type(value) is list and value:
        one = json.dumps(value[0])
        assert codec.decode_message(one) == reference_message(one)


def _well_formed(history: tuple[Message, ...]) -> bool:
    """Whether no unknown field of ``history`` has the key of a known one (the testing
    kit's strategies draw such keys now and then; they do not round-trip)."""

    def clash(extra: tuple[tuple[str, str], ...], record: Record | None) -> bool:
        known = record.known if record is not None else frozenset({"type"})
        return any(k in known for k, _ in extra)

    for m in history:
        if clash(m.extra, MESSAGE) or (m.usage is not None and clash(m.usage.extra, USAGE)):
            return False
        if any(clash(p.extra, _RECORD_BY_CLASS.get(type(p))) for p in m.parts):
            return False
    return True


_RECORD_BY_CLASS = {r.cls: r for r in PART_RECORDS}


@AGREE
@given(histories())
def test_fast_decoder_handles_every_encoding(history: tuple[Message, ...]) -> None:
    assume(_well_formed(history))
    value = json.loads(codec.encode_history(history))
    assert compiled.fast_messages(value) == history  # never gives up on a well-formed history
    assert reference_history(value) == Success(history)
    assert_decoders_agree(value)


@AGREE
@given(mutated_values())
def test_fast_and_reference_decoders_agree_on_mutated_json(value: Any) -> None:
    assert_decoders_agree(value)


@AGREE
@given(st.lists(st.one_of(hostile_values, mutated_values()), max_size=3))
def test_fast_and_reference_decoders_agree_on_hostile_json(value: Any) -> None:
    assert_decoders_agree(value)


FULL = (
    Message(
        Role.USER,
        (
            TextPart("t"),
            URLPart("https://x/a.png", "image", media_type="image/png"),
            DataPart(b"\x00\xff", "document", "application/pdf"),
        ),
    ),
    Message(
        Role.ASSISTANT,
        (
            ThinkingPart("th", signature="sig", redacted=True),
            ToolCallPart("c1", "f", '{"a":1}'),
            UnknownPart("hologram", (("frames", "3"),)),
        ),
        run_id="r",
        conversation_id="c",
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        model="m",
        usage=Usage(1, 2, 3, 4, 5),
        finish_reason="stop",
    ),
    Message(Role.TOOL, (TextPart("ok"),), tool_call_id="c1", tool_name="f", failed=True),
)
"""A history with every field of every record of the table present."""

WRONG: list[object] = [None, True, False, 0, -1, 1.5, "", "smell", "AAA=", [], {}, [1], {"a": 1}]
"""A value of every JSON type, and near misses (not a kind, not base64, empty)."""


def test_every_field_of_the_table_set_wrong_decodes_alike() -> None:
    """Driven by the table itself: a new field is covered as soon as it has a row."""
    base = json.loads(codec.encode_history(FULL))
    assert compiled.fast_messages(base) == FULL
    covered: set[tuple[str, str]] = set()
    for k, obj in enumerate(_containers(base, [])):
        if type(obj) is not dict:
            continue
        for key in _table_keys(obj):
            for wrong in [*WRONG, _ABSENT]:
                value = copy.deepcopy(base)
                target = _containers(value, [])[k]
                assert type(target) is dict
                if wrong is _ABSENT:
                    target.pop(key, None)
                else:
                    target[key] = copy.deepcopy(wrong)
                assert_decoders_agree(value)
                covered.add((str(obj.get("type", ("role" in obj and "message") or "usage")), key))
    table = {("message", k) for k in MESSAGE.known} | {("usage", k) for k in USAGE.known}
    table |= {(str(r.tag), k) for r in PART_RECORDS for k in r.known}
    assert table <= covered


_ABSENT = object()


@AGREE
@given(
    mutated_values(),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 3), st.binary(max_size=3))),
)
def test_decode_agrees_with_the_reference_on_damaged_bytes(value: Any, edits: list[Any]) -> None:
    data = bytearray(json.dumps(value, separators=(",", ":")).encode())  # orjson's cuts
    for at, cut, insert in edits:
        at %= len(data) + 1
        data[at : at + cut] = insert
    expected = reference_decode(bytes(data))
    assert codec.decode_history(bytes(data)) == expected
    with mock.patch.object(codec, "_WHOLE_PARSE_CHARS", 0):
        assert codec.decode_history(bytes(data)) == expected
    with mock.patch.object(codec, "_CHUNK", 0):
        assert codec.decode_history(bytes(data)) == expected
        assert codec.decode_history(bytes(data).decode("utf-8", "replace")) == (
            reference_decode(bytes(data).decode("utf-8", "replace"))
        )


@AGREE
@given(mutated_values())
def test_a_single_message_decodes_alike(value: Any) -> None:
    for item in value if type(value) is list else [value]:
        try:
            fast = compiled.fast_message(item, {})
        except Unhandled:
            fast = None
        raw = json.dumps(item)
        expected = reference_message(raw)
        if fast is not None:
            assert expected == Success(fast)
        assert codec.decode_message(raw) == expected


class _Text(str):
    """A ``str`` subclass in a JSON value (as code building one by hand may pass to
    ``history_from_jsonable``): never what a parser gives, refused by the reference."""


def _strings(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], bool]]:
    """Where ``value`` holds a string: each as (path, whether it is an object's key)."""
    out: list[tuple[tuple[Any, ...], bool]] = []
    if type(value) is dict:
        for k, v in value.items():
            out.append(((*path, k), True))
            out += _strings(v, (*path, k))
    elif type(value) is list:
        for i, v in enumerate(value):
            out += _strings(v, (*path, i))
    elif type(value) is str:
        out.append((path, False))
    return out


@AGREE
@given(histories(max_size=4), st.data())
def test_fast_and_reference_decoders_agree_on_a_str_subclass_anywhere(
    history: tuple[Message, ...], data: st.DataObject
) -> None:
    value = json.loads(codec.encode_history(history))
    places = _strings(value)
    assume(places)
    path, is_key = data.draw(st.sampled_from(places))
    holder = value
    for step in path[:-1]:
        holder = holder[step]
    last = path[-1]
    if is_key:  # the same key, as a subclass (its place among the keys kept)
        holder.update({(_Text(k) if k == last else k): holder.pop(k) for k in list(holder)})
    else:
        holder[last] = _Text(holder[last])
    expected = reference_history(value)
    fast = fast_or_unhandled(value)
    if fast is not None:  # accepted: exactly the reference's value
        assert expected == Success(fast)
    assert codec.history_from_jsonable(value) == expected


def test_a_part_type_of_a_str_subclass_is_refused_by_both_fast_decoders() -> None:
    # the Python decoder compared the tag with `==` and took it (ADR 0149: an install
    # without a compiler must differ in speed only)
    value = [{"role": "user", "parts": [{"type": _Text("text"), "text": "hi"}]}]
    assert fast_or_unhandled(value) is None
    refused = codec.history_from_jsonable(value)
    assert isinstance(refused, Failure) and refused == reference_history(value)
    assert refused.failure().path == "[0].parts[0].type"


# -- encode ------------------------------------------------------------------------------


def _has_extra(m: Message) -> bool:
    return bool(m.extra) or any(p.extra for p in m.parts) or bool(m.usage and m.usage.extra)


@AGREE
@given(histories())
def test_text_and_dict_encoders_write_the_same_bytes(history: tuple[Message, ...]) -> None:
    assert codec.encode_history(history) == dict_path_bytes(history)
    for m in history:
        assert codec.encode_message(m) == dict_path_bytes((m,))[1:-1]
        if not _has_extra(m):  # the text path writes it itself
            assert message_text(m) == codec._COMPACT.encode(unstructure_message(m))


@AGREE
@given(mutated_values())
def test_encoders_agree_on_whatever_decodes(value: Any) -> None:
    decoded = codec.history_from_jsonable(value)
    if isinstance(decoded, Success):
        history = decoded.unwrap()
        assert codec.encode_history(history) == dict_path_bytes(history)


class _Name(str):
    """A ``str`` subclass: the text path hands it to the dict path."""


odd_values = st.sampled_from([5, True, 1.5, b"x", _Name("n"), ("t",), None, -1])


@st.composite
def oddly_typed_messages(draw: st.DrawFn) -> Message:
    """A drawn message with one field or one part field set to a value of another type
    (as code that ignores the annotations can build)."""
    message = draw(messages())
    if message.parts and draw(st.booleans()):
        j = draw(st.integers(0, len(message.parts) - 1))
        part = message.parts[j]
        fields = [f.name for f in attrs.fields(type(part)) if f.name != "extra"]
        part = attrs.evolve(part, **{draw(st.sampled_from(fields)): draw(odd_values)})
        return attrs.evolve(message, parts=(*message.parts[:j], part, *message.parts[j + 1 :]))
    names = [f.name for f in attrs.fields(Message) if f.name not in ("role", "parts", "extra")]
    return attrs.evolve(message, **{draw(st.sampled_from(names)): draw(odd_values)})


def _outcome(fn: Any, *args: Any) -> tuple[str, object]:
    try:
        return ("value", fn(*args))
    except Exception as e:  # the exception's type is the outcome compared
        return ("raised", type(e))


@AGREE
@given(oddly_typed_messages())
def test_encoders_agree_on_values_of_unexpected_types(message: Message) -> None:
    def dict_path(m: Message) -> str:
        return codec._COMPACT.encode(unstructure_message(m))

    assert _outcome(codec._message_json, message) == _outcome(dict_path, message)


# -- examples the properties rest on ------------------------------------------------------


def test_the_fast_paths_give_up_only_by_unhandled() -> None:
    with_extra = Message(Role.USER, (TextPart("x", extra=(("k", "1"),)),))
    for bad in ([1], [{"role": "user"}], [{"role": "user", "parts": [{"type": 3}]}]):
        try:
            compiled.fast_messages(bad)
        except Unhandled:
            pass
        else:  # pragma: no cover - the property above would fail first
            raise AssertionError(bad)
    try:
        message_text(with_extra)
    except Unhandled:
        pass
    else:  # pragma: no cover
        raise AssertionError("unknown fields are the dict path's")


def test_fast_values_equal_constructed_values() -> None:
    usage = Usage(input_tokens=1, cache_read_tokens=0)
    built = Message(
        Role.ASSISTANT,
        (TextPart("a"), ToolCallPart(None, "f"), URLPart("https://x", "image")),
        usage=usage,
    )
    decoded = compiled.fast_messages(json.loads(codec.encode_history((built,))))
    assert decoded == (built,)
    assert hash(decoded[0]) == hash(built)
    assert repr(decoded[0]) == repr(built)
    call = decoded[0].parts[1]
    assert isinstance(call, ToolCallPart) and call.arguments_object == {}


def test_a_class_attribute_without_a_row_is_refused() -> None:
    """Adding an attribute to a record's class without its row fails at import."""

    @attrs.frozen
    class Extended:
        a: str
        b: str | None = None
        extra: tuple[tuple[str, str], ...] = ()

    Record(Extended, (Field("a", "a", Kind.STR), Field("b", "b", Kind.OPTIONAL_STR)))
    with pytest.raises(TypeError, match=r"Extended: no JSON field for \['b'\]"):
        Record(Extended, (Field("a", "a", Kind.STR),))
