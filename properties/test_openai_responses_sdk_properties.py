"""The OpenAI Responses codec against the official SDK (test extra only).

1. Every request body ``golem_core.wire.openai_responses`` produces from Hypothesis
   histories (``strategies.histories()``, broken ones included, repaired as a run
   repairs them, with reasoning parts from this API mixed in) validates against the
   SDK's request type ``ResponseCreateParams`` with pydantic, and every input item, tool
   and content part against its own TypedDict with no key the type does not declare;
   and it holds the pairing rule: every ``function_call`` is answered by a
   ``function_call_output`` with its ``call_id`` before the next item that is not a
   tool item, no output answers nothing, call ids are unique and at most 64 characters,
   and a reasoning item is followed by an item of its own turn.
2. The SDK's own parsing is a differential oracle on the recorded-shape fixtures:
   ``Response.model_validate`` for bodies and the SDK's stream accumulator
   (``ResponseStreamState`` over ``ResponseStreamEvent``) for streams; text, calls,
   reasoning, usage and status agree with what golem decodes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples
from pydantic import TypeAdapter
from returns.result import Failure, Success
from strategies import histories, texts
from wire_rules import responses_violations

from golem_core import (
    DataPart,
    Message,
    ModelRequest,
    ModelSettings,
    Part,
    Role,
    ToolDefinition,
    URLPart,
    repair_history,
)
from golem_core.wire import SSEDecoder
from golem_core.wire import openai_responses as wire

openai_types = pytest.importorskip("openai.types.responses")
from openai import omit  # noqa: E402
from openai._models import construct_type  # noqa: E402
from openai.lib.streaming.responses._responses import ResponseStreamState  # noqa: E402
from openai.types.responses import (  # noqa: E402
    EasyInputMessageParam,
    FunctionToolParam,
    Response,
    ResponseCreateParams,
    ResponseFunctionToolCallParam,
    ResponseInputFileContentParam,
    ResponseInputFileParam,
    ResponseInputImageContentParam,
    ResponseInputImageParam,
    ResponseInputTextContentParam,
    ResponseInputTextParam,
    ResponseReasoningItemParam,
    ResponseStreamEvent,
)
from openai.types.responses.response_create_params import (  # noqa: E402
    ResponseCreateParamsNonStreaming,
    ResponseCreateParamsStreaming,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "openai_responses"

CREATE = TypeAdapter(ResponseCreateParams)
EVENT = TypeAdapter(ResponseStreamEvent)
_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}

ITEM_TYPES: dict[str, Any] = {
    "reasoning": ResponseReasoningItemParam,
    "function_call": ResponseFunctionToolCallParam,
    "function_call_output": FunctionCallOutput,
}
CONTENT_TYPES: dict[str, Any] = {
    "input_text": ResponseInputTextParam,
    "input_image": ResponseInputImageParam,
    "input_file": ResponseInputFileParam,
}
OUTPUT_CONTENT_TYPES: dict[str, Any] = {
    "input_text": ResponseInputTextContentParam,
    "input_image": ResponseInputImageContentParam,
    "input_file": ResponseInputFileContentParam,
}


def strict(value: Any, typed_dict: Any, where: str) -> None:
    """``value`` is a ``typed_dict``: validated by pydantic, required keys present, and no
    key the type does not declare (pydantic itself ignores extra keys of a TypedDict)."""
    assert isinstance(value, dict), where
    declared = set(typed_dict.__annotations__)
    assert set(value) <= declared, f"{where}: keys {set(value) - declared} not in {typed_dict}"
    assert typed_dict.__required_keys__ <= set(value), f"{where}: missing required keys"
    adapter = _ADAPTERS.get(typed_dict)
    if adapter is None:
        adapter = _ADAPTERS[typed_dict] = TypeAdapter(typed_dict)
    adapter.validate_python(value)


def validate_body(body: dict[str, Any]) -> None:
    wire_body = json.loads(json.dumps(body))  # the bytes that travel, read back
    CREATE.validate_python(wire_body)
    top = ResponseCreateParamsStreaming if body.get("stream") else ResponseCreateParamsNonStreaming
    declared = set(top.__annotations__)
    assert set(wire_body) <= declared, set(wire_body) - declared
    for k, item in enumerate(wire_body.get("input", [])):
        where = f"input[{k}]"
        kind = item.get("type")
        if kind is None:
            strict(item, EasyInputMessageParam, where)
            assert item["role"] in ("user", "assistant")
            content = item["content"]
            if isinstance(content, list):
                assert content, f"{where}: empty content"
                for j, part in enumerate(content):
                    strict(part, CONTENT_TYPES[part["type"]], f"{where}.content[{j}]")
            else:
                assert content, f"{where}: empty text"
            continue
        strict(item, ITEM_TYPES[kind], where)
        if kind == "function_call_output" and isinstance(item["output"], list):
            for j, part in enumerate(item["output"]):
                strict(part, OUTPUT_CONTENT_TYPES[part["type"]], f"{where}.output[{j}]")
    for k, tool in enumerate(wire_body.get("tools", [])):
        strict(tool, FunctionToolParam, f"tools[{k}]")


# -- the history strategy: broken histories, with this API's reasoning mixed in ---------------

reasoning_parts = st.builds(
    wire.reasoning_part,
    st.one_of(st.none(), st.sampled_from(["rs_68c42d1d0878819d", "rs_x", ""])),
    st.lists(texts, max_size=2),
    st.one_of(st.none(), st.just(""), st.sampled_from(["gAAAAABoyXvynDJ_tG", "gAAAA=="])),
)


@st.composite
def responses_histories(draw: st.DrawFn) -> tuple[Message, ...]:
    out: list[Message] = []
    for message in draw(histories(max_size=8)):  # every shape, at a cost that allows 1,000
        if message.role is Role.ASSISTANT and draw(st.booleans()):
            parts: list[Part] = list(message.parts)
            parts.insert(draw(st.integers(0, len(parts))), draw(reasoning_parts))
            message = attrs.evolve(message, parts=tuple(parts))
        out.append(message)
    return tuple(out)


def supported_only(history: tuple[Message, ...]) -> tuple[Message, ...]:
    """The history without the media the Responses API cannot take (sent as stand-ins,
    tested below)."""

    def keep(part: Part) -> bool:
        if isinstance(part, URLPart):
            return part.kind in ("image", "document")
        if isinstance(part, DataPart):
            return (part.kind == "image" and part.media_type == "image/png") or (
                part.kind == "document" and part.media_type.lower() == "application/pdf"
            )
        return True

    out = []
    for m in history:
        parts = tuple(p for p in m.parts if keep(p))
        if m.role is Role.ASSISTANT:
            parts = tuple(p for p in parts if not isinstance(p, URLPart | DataPart))
        out.append(attrs.evolve(m, parts=parts))
    return tuple(out)


TOOLS = (
    ToolDefinition("get_weather", "Weather.", {"type": "object", "properties": {}}),
    ToolDefinition("search"),
)
requests = st.fixed_dictionaries(
    {
        "tools": st.sampled_from([(), TOOLS]),
        "instructions": st.one_of(st.none(), st.just(""), texts),
        "required": st.booleans(),
        "settings": st.builds(
            ModelSettings,
            max_tokens=st.one_of(st.none(), st.integers(16, 4096)),
            temperature=st.one_of(st.none(), st.floats(0, 2)),
            parallel_tool_calls=st.one_of(st.none(), st.booleans()),
        ),
        "stream": st.booleans(),
        "encrypted": st.booleans(),
        "reasoning": st.sampled_from(
            [None, {"effort": "low"}, {"effort": "high", "summary": "auto"}]
        ),
    }
)


@settings(
    max_examples=examples(1000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(history=responses_histories(), options=requests)
def test_every_body_validates_against_the_sdk_and_holds_the_pairing_rule(
    history: tuple[Message, ...], options: dict[str, Any]
) -> None:
    request = ModelRequest(
        repair_history(supported_only(history)),
        instructions=options["instructions"],
        tools=options["tools"],
        tool_choice_required=options["required"],
        settings=options["settings"],
    )
    result = wire.encode_request(
        request,
        model="gpt-5",
        stream=options["stream"],
        encrypted_reasoning=options["encrypted"],
        reasoning=options["reasoning"],
    )
    assert isinstance(result, Success), result
    body = result.unwrap()
    validate_body(body)
    assert responses_violations(body) == []
    assert body["store"] is False
    assert ("include" in body) is options["encrypted"]
    if not options["encrypted"]:
        assert not any(i.get("type") == "reasoning" for i in body["input"])
    again = wire.encode_request(
        request,
        model="gpt-5",
        stream=options["stream"],
        encrypted_reasoning=options["encrypted"],
        reasoning=options["reasoning"],
    )
    assert json.dumps(again.unwrap()) == json.dumps(body)  # deterministic


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=responses_histories())
def test_raw_histories_always_encode(history: tuple[Message, ...]) -> None:
    """Media the API cannot take travels as a stand-in (ADR 0067): never refused."""
    request = ModelRequest(repair_history(history), tools=TOOLS)
    match wire.encode_request(request, model="gpt-5", stream=False):
        case Success(body):
            validate_body(body)
            assert responses_violations(body) == []
        case Failure(error):
            pytest.fail(f"refused: {error}")


# -- the SDK as a differential oracle on the fixtures ------------------------------------------


def golem_view(message: Message) -> dict[str, Any]:
    return {
        "text": message.text,
        "calls": [(c.id, c.name, c.arguments) for c in message.tool_calls],
        "reasoning": [
            (wire.reasoning_item(p) or {}).get("encrypted_content")
            for p in message.parts
            if p.__class__.__name__ == "ThinkingPart"
        ],
        "usage": None
        if message.usage is None
        else (
            message.usage.input_tokens,
            message.usage.output_tokens,
            message.usage.cache_read_tokens,
            message.usage.reasoning_tokens,
        ),
        "finish_reason": message.finish_reason,
    }


def sdk_view(response: Any) -> dict[str, Any]:
    text = []
    refused = False
    for item in response.output:
        if item.type == "message":
            for content in item.content:
                if content.type == "output_text":
                    text.append(content.text)
                elif content.type == "refusal":
                    text.append(content.refusal)
                    refused = True
    usage = response.usage
    if refused:
        finish = "refusal"
    elif response.status == "incomplete":
        finish = response.incomplete_details.reason
    else:
        finish = response.status
    return {
        "text": "".join(text),
        "calls": [
            (i.call_id, i.name, i.arguments) for i in response.output if i.type == "function_call"
        ],
        "reasoning": [  # golem keeps a reasoning item that has something to show or replay
            i.encrypted_content
            for i in response.output
            if i.type == "reasoning"
            and (
                i.encrypted_content
                or any(s.text for s in i.summary)
                or any(c.text for c in i.content or ())
            )
        ],
        "usage": None
        if usage is None
        else (
            usage.input_tokens,
            usage.output_tokens,
            usage.input_tokens_details.cached_tokens,
            usage.output_tokens_details.reasoning_tokens,
        ),
        "finish_reason": finish,
    }


BODIES = sorted(
    p.name for p in FIXTURES.glob("response_*.json") if p.name != "response_failed.json"
)


@pytest.mark.parametrize("name", BODIES)
def test_bodies_agree_with_the_sdk(name: str) -> None:
    payload = json.loads((FIXTURES / name).read_bytes())
    ours = wire.decode_response(payload).unwrap()
    assert golem_view(ours) == sdk_view(Response.model_validate(payload))


def test_a_failed_body_agrees_with_the_sdk() -> None:
    payload = json.loads((FIXTURES / "response_failed.json").read_bytes())
    theirs = Response.model_validate(payload)
    ours = wire.decode_response(payload)
    assert isinstance(ours, Failure)
    assert theirs.status == "failed" and theirs.error is not None
    assert ours.failure().message == theirs.error.message


def sdk_stream(
    data: bytes, *, validate: bool = True
) -> tuple[Any | None, dict[int, str], list[Any]]:
    """The SDK's accumulation of a stream: the finished response (if any), the text or
    argument snapshot of each output index, and the error events. ``validate=False``
    builds the events as the SDK's own stream reader does (``construct_type``, which
    takes a terminal response that leaves out its ``output``)."""
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=[], text_format=omit)
    sse = SSEDecoder()
    finished = None
    snapshots: dict[int, str] = {}
    errors: list[Any] = []
    for event in [*sse.feed(data), *sse.close()]:
        payload = json.loads(event.data)
        raw = (
            EVENT.validate_python(payload)
            if validate
            else construct_type(type_=ResponseStreamEvent, value=payload)
        )
        if raw.type == "error":
            errors.append(raw)
            break
        for out in state.handle_event(raw):
            snapshot = getattr(out, "snapshot", None)
            if isinstance(snapshot, str):
                snapshots[out.output_index] = snapshot
            if out.type in ("response.completed", "response.incomplete"):
                finished = out.response
            if out.type == "response.failed":
                errors.append(out)
    return finished, snapshots, errors


STREAMS = sorted(p.name for p in FIXTURES.glob("stream_*.sse"))


@pytest.mark.parametrize("name", STREAMS)
def test_streams_agree_with_the_sdk_accumulator(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    finished, snapshots, errors = sdk_stream(data)
    decoder = wire.StreamDecoder()
    sse = SSEDecoder()
    failures = []
    for event in [*sse.feed(data), *sse.close()]:
        result = decoder.feed(event)
        if isinstance(result, Failure):
            failures.append(result.failure())
            break
    if errors:
        assert failures and not decoder.done
        error = errors[0]
        message = error.message if error.type == "error" else error.response.error.message
        assert failures[0].message == message
        return
    assert failures == []
    if finished is None:  # cut: both hold the same partial text and arguments
        assert isinstance(decoder.finish(), Failure)
        ours = decoder.message()
        partial = [p.text if hasattr(p, "text") else p.arguments for p in ours.parts]  # type: ignore[union-attr]
        assert partial == [snapshots[k] for k in sorted(snapshots)]
        return
    assert golem_view(decoder.finish().unwrap()) == sdk_view(finished)


# -- generated streams: the stream, its body and the SDK agree -----------------------------

_BASE = json.loads((FIXTURES / "response_text.json").read_bytes())
_words = st.text(alphabet='ab \n{}":,é', max_size=12)


@st.composite
def output_items(draw: st.DrawFn) -> list[dict[str, Any]]:
    """The ``output`` of a finished response: messages (text, refusals, a phase),
    function calls and reasoning items (summaries, encrypted content), in any order."""
    items: list[dict[str, Any]] = []
    for k in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["message", "function_call", "reasoning"]))
        if kind == "message":
            content: list[dict[str, Any]] = []
            for _ in range(draw(st.integers(0, 2))):
                if draw(st.booleans()):
                    text = draw(_words)
                    content.append(
                        {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
                    )
                else:
                    content.append({"type": "refusal", "refusal": draw(_words)})
            item: dict[str, Any] = {
                "id": f"msg_{k}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": content,
            }
            if draw(st.booleans()):
                item["phase"] = draw(st.sampled_from(["commentary", "final_answer"]))
        elif kind == "function_call":
            item = {
                "id": f"fc_{k}",
                "type": "function_call",
                "status": "completed",
                "arguments": draw(_words),
                "call_id": f"call_{k}",
                "name": draw(st.sampled_from(["get_weather", "lookup"])),
            }
        else:
            summary = [
                {"type": "summary_text", "text": draw(_words)}
                for _ in range(draw(st.integers(0, 2)))
            ]
            item = {"id": f"rs_{k}", "type": "reasoning", "summary": summary}
            if draw(st.booleans()):
                item["encrypted_content"] = draw(
                    st.text(alphabet="abcXYZ=", min_size=1, max_size=8)
                )
        items.append(item)
    return items


def _chunks(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=3)))
    cuts = [c for c in cuts if c < len(text)]
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True) if text[a:b]]


def _opened(item: dict[str, Any]) -> dict[str, Any]:
    """An item as ``response.output_item.added`` announces it: nothing in it yet."""
    if item["type"] == "message":
        return {**item, "status": "in_progress", "content": []}
    if item["type"] == "function_call":
        return {**item, "status": "in_progress", "arguments": ""}
    return {k: v for k, v in item.items() if k != "encrypted_content"} | {"summary": []}


@st.composite
def streamed_responses(
    draw: st.DrawFn,
) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
    """A finished response body and the events a server streams for it, as OpenAI does:
    each item added, its content in delta chunks, each item done, then
    ``response.completed`` (or ``response.incomplete``, where the last item may never
    be done) carrying the response with its ``output``, without it, or with an empty
    list; and whether the SDK's accumulator can be compared (it keeps an empty list as
    it is, and does not add refusal deltas to an item that never finished)."""
    output = draw(output_items())
    incomplete = draw(st.booleans())
    body = {
        **_BASE,
        "output": output,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
    }
    unfinished = incomplete and bool(output) and draw(st.booleans())
    if unfinished and output[-1]["type"] == "reasoning":  # cut before its encrypted content
        output[-1] = {k: v for k, v in output[-1].items() if k != "encrypted_content"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**body, "status": "in_progress", "output": []}}
    ]
    for index, item in enumerate(output):
        ids = {"item_id": item["id"], "output_index": index}
        events.append(
            {"type": "response.output_item.added", "output_index": index, "item": _opened(item)}
        )
        if item["type"] == "message":
            for c, part in enumerate(item["content"]):
                key = "text" if part["type"] == "output_text" else "refusal"
                kind = "output_text" if key == "text" else "refusal"
                extra = {"logprobs": []} if key == "text" else {}
                events.append(
                    {
                        "type": "response.content_part.added",
                        **ids,
                        "content_index": c,
                        "part": {**part, key: ""},
                    }
                )
                for chunk in _chunks(draw, part[key]):
                    events.append(
                        {
                            "type": f"response.{kind}.delta",
                            **ids,
                            "content_index": c,
                            "delta": chunk,
                            **extra,
                        }
                    )
                events.append(
                    {
                        "type": f"response.{kind}.done",
                        **ids,
                        "content_index": c,
                        key: part[key],
                        **extra,
                    }
                )
                events.append(
                    {"type": "response.content_part.done", **ids, "content_index": c, "part": part}
                )
        elif item["type"] == "function_call":
            for chunk in _chunks(draw, item["arguments"]):
                events.append(
                    {"type": "response.function_call_arguments.delta", **ids, "delta": chunk}
                )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    **ids,
                    "arguments": item["arguments"],
                    "name": item["name"],
                }
            )
        else:
            for s, part in enumerate(item["summary"]):
                events.append(
                    {
                        "type": "response.reasoning_summary_part.added",
                        **ids,
                        "summary_index": s,
                        "part": {"type": "summary_text", "text": ""},
                    }
                )
                for chunk in _chunks(draw, part["text"]):
                    events.append(
                        {
                            "type": "response.reasoning_summary_text.delta",
                            **ids,
                            "summary_index": s,
                            "delta": chunk,
                        }
                    )
                events.append(
                    {
                        "type": "response.reasoning_summary_text.done",
                        **ids,
                        "summary_index": s,
                        "text": part["text"],
                    }
                )
                events.append(
                    {
                        "type": "response.reasoning_summary_part.done",
                        **ids,
                        "summary_index": s,
                        "part": part,
                    }
                )
        if unfinished and index == len(output) - 1:
            break
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    final = dict(body)
    listed = draw(st.sampled_from(["all", "left out", "empty"]))
    if listed == "left out":  # the items are in the events only
        del final["output"]
    elif listed == "empty":
        final["output"] = []
    events.append(
        {"type": f"response.{'incomplete' if incomplete else 'completed'}", "response": final}
    )
    for n, event in enumerate(events):
        event["sequence_number"] = n
    return body, events, listed == "all" or (listed == "left out" and not unfinished)


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streamed=streamed_responses())
def test_a_stream_decodes_as_its_body_and_as_the_sdk_accumulates_it(
    streamed: tuple[dict[str, Any], list[dict[str, Any]], bool],
) -> None:
    body, events, comparable = streamed
    data = _sse(events)
    decoder = wire.StreamDecoder()
    sse = SSEDecoder()
    for event in [*sse.feed(data), *sse.close()]:
        assert isinstance(decoder.feed(event), Success)
    streamed_message = decoder.finish().unwrap()
    assert streamed_message == wire.decode_response(body).unwrap()
    if comparable:
        finished, _, errors = sdk_stream(data, validate=False)
        assert errors == [] and finished is not None
        assert golem_view(streamed_message) == sdk_view(finished)
