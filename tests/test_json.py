from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from golden_values import GOLDEN
from returns.result import Failure, Success

from golem_core import (
    DataPart,
    DecodeError,
    Message,
    Role,
    TextPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
    Usage,
    decode_history,
    decode_message,
    encode_history,
    encode_message,
    history_to_jsonable,
    make_converter,
)

GOLDEN_DIR = Path(__file__).parent / "golden"


def _golden_files() -> list[Path]:
    return sorted(GOLDEN_DIR.glob("v*/*.json"))


def test_every_golden_file_has_a_value_in_code() -> None:
    names = {p.stem for p in _golden_files()}
    assert names == set(GOLDEN)


@pytest.mark.parametrize("path", _golden_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_file_decodes_to_its_value(path: Path) -> None:
    assert decode_history(path.read_bytes()) == Success(GOLDEN[path.stem])


@pytest.mark.parametrize("path", _golden_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_file_reencodes_to_the_same_json(path: Path) -> None:
    decoded = decode_history(path.read_bytes()).unwrap()
    assert json.loads(encode_history(decoded)) == json.loads(path.read_bytes())


def test_golden_covers_every_role_and_part_kind() -> None:
    messages = [m for h in GOLDEN.values() for m in h]
    assert {m.role for m in messages} == set(Role)
    part_types = {type(p) for m in messages for p in m.parts}
    assert {TextPart, URLPart, DataPart, ToolCallPart, UnknownPart} <= part_types
    assert {p.kind for m in messages for p in m.parts if isinstance(p, URLPart)} == {
        "image",
        "audio",
        "video",
        "document",
    }


def test_encoding_is_camel_case_and_omits_defaults() -> None:
    m = Message.tool_result("c1", "f", "x")
    assert json.loads(encode_message(m)) == {
        "role": "tool",
        "parts": [{"type": "text", "text": "x"}],
        "toolCallId": "c1",
        "toolName": "f",
    }
    stamped = Message(
        Role.ASSISTANT,
        (TextPart("a"),),
        run_id="r",
        conversation_id="c",
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        finish_reason="stop",
        usage=Usage(input_tokens=1, output_tokens=2, cache_read_tokens=0),
    )
    assert json.loads(encode_message(stamped)) == {
        "role": "assistant",
        "parts": [{"type": "text", "text": "a"}],
        "runId": "r",
        "conversationId": "c",
        "createdAt": "2026-01-02T03:04:05+00:00",
        "finishReason": "stop",
        "usage": {"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 0},
    }


def test_failed_appears_only_when_true() -> None:
    assert b'"failed":true' in encode_message(Message.tool_result("c", "f", "x", failed=True))
    assert b"failed" not in encode_message(Message.tool_result("c", "f", "x"))


def test_encoding_is_deterministic_and_compact() -> None:
    h = GOLDEN["tool_round_trip"]
    assert encode_history(h) == encode_history(tuple(h))
    assert encode_history(h) == json.dumps(
        json.loads(encode_history(h)), separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


def test_data_is_standard_base64() -> None:
    m = Message.user("x", DataPart(b"\xfb\xff\xfe", "image", "image/png"))
    assert json.loads(encode_message(m))["parts"][1]["data"] == "+//+"


def test_lone_surrogates_are_escaped_as_standard_json() -> None:
    m = Message.user("bad \ud800 text")
    raw = encode_message(m)
    raw.decode("utf-8")  # valid UTF-8
    assert decode_message(raw) == Success(m)


def test_unknown_fields_survive_decode_then_encode() -> None:
    raw = {
        "role": "user",
        "parts": [
            {"type": "text", "text": "hi", "future": {"nested": [1, 2.5, None]}},
            {"type": "hologram", "frames": 3},
        ],
        "newField": "kept",
        "usage": {"inputTokens": 1, "futureTokens": 9},
    }
    decoded = decode_message(json.dumps(raw).encode()).unwrap()
    assert json.loads(encode_message(decoded)) == raw
    assert decoded.parts[1] == UnknownPart("hologram", (("frames", "3"),))


def test_converter_is_public_and_uses_the_same_rules() -> None:
    converter = make_converter()
    h = GOLDEN["tool_round_trip"]
    assert [converter.unstructure(m) for m in h] == history_to_jsonable(h)
    assert converter.structure(history_to_jsonable(h)[1], Message) == h[1]
    with pytest.raises(ValueError, match=r"parts\[0\]\.text"):
        converter.structure({"role": "user", "parts": [{"type": "text"}]}, Message)


@pytest.mark.parametrize(
    ("raw", "path", "reason"),
    [
        (b"\xff\xfe[]", "", "not UTF-8"),
        (b"[{", "", "not JSON"),
        (b"[NaN]", "", "NaN is not standard JSON"),
        (b"[Infinity]", "", "Infinity"),
        (b"{}", "", "expected an array of messages, got an object"),
        (b"[3]", "[0]", "expected an object, got a number"),
        (b'[{"parts":[]}]', "[0].role", "required field is missing"),
        (b'[{"role":"bot","parts":[]}]', "[0].role", "unknown role 'bot'"),
        (b'[{"role":"user"}]', "[0].parts", "required field is missing"),
        (b'[{"role":"user","parts":{}}]', "[0].parts", "expected an array, got an object"),
        (
            b'[{"role":"user","parts":[]},{"role":"user","parts":[{"type":"text","text":"a"},'
            b'{"type":"url","url":7,"kind":"image"}]}]',
            "[1].parts[1].url",
            "expected a string, got a number",
        ),
        (b'[{"role":"user","parts":[{"type":"url","url":"x"}]}]', "[0].parts[0].kind", "missing"),
        (
            b'[{"role":"user","parts":[{"type":"url","url":"x","kind":"smell"}]}]',
            "[0].parts[0].kind",
            "expected one of",
        ),
        (
            b'[{"role":"user","parts":[{"type":"data","data":"!!","kind":"image","mediaType":"a"}]}]',
            "[0].parts[0].data",
            "base64",
        ),
        (b'[{"role":"user","parts":[{"text":"x"}]}]', "[0].parts[0].type", "missing"),
        (b'[{"role":"user","parts":[{"type":"tool_call","id":"c"}]}]', "[0].parts[0].name", ""),
        (b'[{"role":"tool","parts":[],"failed":"yes"}]', "[0].failed", "expected a boolean"),
        (b'[{"role":"tool","parts":[],"toolCallId":5}]', "[0].toolCallId", "a string"),
        (
            b'[{"role":"assistant","parts":[],"usage":{"inputTokens":-1}}]',
            "[0].usage.inputTokens",
            "non-negative integer",
        ),
        (
            b'[{"role":"assistant","parts":[],"usage":{"inputTokens":true}}]',
            "[0].usage.inputTokens",
            "got a boolean",
        ),
        (b'[{"role":"user","parts":[],"createdAt":"yesterday"}]', "[0].createdAt", "ISO 8601"),
        (b"[" * 100_000 + b"]" * 100_000, "", "nested too deeply"),
        (b"[" + b"9" * 5000 + b"]", "", "not standard JSON"),
    ],
)
def test_bad_input_is_a_failure_naming_the_path(raw: bytes, path: str, reason: str) -> None:
    result = decode_history(raw)
    assert isinstance(result, Failure)
    error = result.failure()
    assert isinstance(error, DecodeError)
    assert error.path == path
    assert reason in error.reason
    assert (path or "the top level") in str(error)


def test_decode_accepts_str_and_a_byte_order_mark() -> None:
    h = GOLDEN["roles_and_text"]
    text = encode_history(h).decode()
    assert decode_history(text) == Success(h)
    assert decode_history(b"\xef\xbb\xbf" + text.encode()) == Success(h)


def test_single_message_twins() -> None:
    m = GOLDEN["tool_round_trip"][1]
    assert decode_message(encode_message(m)) == Success(m)
    assert isinstance(decode_message(b"[]"), Failure)


# -- the optional accelerator (ADR 0074) ----------------------------------------------------

_ACCELERATED_CASES = [
    # integers beyond 64 bits in unknown fields: orjson would read a float; json an int
    b'[{"role":"user","parts":[{"type":"text","text":"a","n":123456789012345678901234567890}]}]',
    b'[{"role":"user","parts":[],"future":[-9223372036854775809,{"x":1.5}]}]',
    b'[{"role":"assistant","parts":[],"usage":{"inputTokens":18446744073709551616}}]',
    # what orjson refuses and json reads (or refuses with its own words)
    b'[{"role":"user","parts":[{"type":"text","text":"\\ud800"}]}]',
    b'[{"role":"user","parts":[],"x":1e400}]',
    b'[{"role":"user","parts":[],"x":NaN}]',
    b"\xef\xbb\xbf[]",
    b'[{"role":"user","parts":[{"type":"text","text":"\xff"}]}]',
    # the cut pattern inside a string and inside a nested unknown array
    b'[{"role":"user","parts":[{"type":"text","text":"},{\\"role\\":"}]},{"role":"tool","parts":[]}]',
    b'[{"role":"user","parts":[],"x":[{},{"role":"user","parts":[]}]},{"role":"user","parts":[]}]',
    b'[{"role":"user","parts":[]},{"role":"user","parts":[]} ]',
    b'[{"role":"user","parts":[]},{"role":"user","parts":[]}',
    b'[{"role":"user","parts":[]},{"role":"user","parts":[]}],',
    b'{"role":"user","parts":[]},{"role":"user","parts":[]}',
    b"[]",
    b"",
]


@pytest.mark.parametrize("raw", _ACCELERATED_CASES)
@pytest.mark.parametrize("chunk", [0, 1 << 16])
def test_the_accelerator_changes_no_value_and_no_error(raw: bytes, chunk: int) -> None:
    import golem_core.codec._json as codec

    pytest.importorskip("orjson")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codec, "_ORJSON", None)
        expected = decode_history(raw)
        expected_text = decode_history(raw.decode("utf-8", "replace"))
        expected_one = [decode_message(raw[1:-1]), decode_message(raw)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codec, "_CHUNK", chunk)
        assert decode_history(raw) == expected
        assert decode_history(memoryview(raw)) == expected
        assert decode_history(raw.decode("utf-8", "replace")) == expected_text
        assert [decode_message(raw[1:-1]), decode_message(raw)] == expected_one
        if isinstance(expected, Success):
            assert encode_history(decode_history(raw).unwrap()) == encode_history(expected.unwrap())


def test_a_large_history_decodes_alike_in_chunks() -> None:
    import golem_core.codec._json as codec

    pytest.importorskip("orjson")
    history = tuple(
        Message(Role.USER, (TextPart(f"message {i} " + "x" * (i % 50)),), run_id=f"r{i % 3}")
        for i in range(3000)
    )
    data = encode_history(history)
    assert len(data) > 2 * codec._CHUNK  # several chunks
    assert decode_history(data) == Success(history)
    assert decode_history(data.decode()) == Success(history)


def test_the_accelerator_takes_subclasses_and_odd_inputs_like_the_stdlib_path() -> None:
    import golem_core.codec._json as codec

    class Text(str):
        pass

    class Raw(bytes):
        pass

    inputs: list[object] = [Text('[{"role":"user","parts":[]}]'), Raw(b"[]"), bytearray(b"[]"), 12]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codec, "_ORJSON", None)
        expected = [decode_history(x) for x in inputs]  # type: ignore[arg-type]
    assert [decode_history(x) for x in inputs] == expected  # type: ignore[arg-type]
    assert isinstance(expected[0], Success) and isinstance(expected[-1], Failure)


def test_the_codec_decodes_with_the_fast_decoder_the_run_asked_for() -> None:
    # `GOLEM_PURE_DECODER=1` (the root conftest.py; `.ci/run` runs the codec tests again
    # so): the Python fast decoder, the one an install without a C compiler has
    import os

    import golem_core.codec._json as codec
    import golem_core.codec._json_compiled as compiled

    pure = os.environ.get("GOLEM_PURE_DECODER") == "1" or compiled.NATIVE_PATHS is None
    paths = compiled.PYTHON_PATHS if pure else compiled.NATIVE_PATHS
    assert paths is not None
    assert codec.fast_message is compiled.fast_message is paths[0]
    assert codec.fast_message_list is compiled.fast_message_list is paths[1]
