"""Issue 28 on the wires: Gemini's first turn and empty requests (item 2), Responses
``phase`` kept and sent back (item 3), parts a provider cannot take as stand-ins in tool
results (item 5), and call ids that only a lone surrogate tells apart (item 7).

The classes of inputs are covered by ``properties/test_wire_rules_properties.py``; these
are the examples the issue reported, each failing before its fix.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from returns.result import Failure, Success

from golem_core import (
    DataPart,
    Message,
    ModelErrorKind,
    ModelRequest,
    Role,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    URLPart,
    check_pairing,
    decode_history,
    encode_history,
    trim_history,
)
from golem_core.wire import SSEDecoder, gemini, openai_responses
from golem_shell import UsageError
from golem_shell.models import AnthropicModel, GeminiModel, OpenAIModel, OpenAIResponsesModel

pytestmark = pytest.mark.anyio

TOOL = ToolDefinition("render", "Render a chart.", {"type": "object", "properties": {}})


def gemini_body(request: ModelRequest) -> dict[str, Any]:
    match gemini.encode_request(request):
        case Success(value):
            body: dict[str, Any] = value
            return body
        case Failure(error):
            raise AssertionError(error)
    raise AssertionError("unreachable")


# -- item 2: Gemini ----------------------------------------------------------------------


def conversation() -> tuple[Message, ...]:
    return (
        Message.user("chart the sales"),
        Message.assistant(None, tool_calls=[ToolCallPart("c1", "render", "{}")]),
        Message.tool_result("c1", "render", "rendered"),
        Message.assistant("Here it is."),
        Message.user("and the costs?"),
        Message.assistant(None, tool_calls=[ToolCallPart("c2", "render", '{"what":"costs"}')]),
        Message.tool_result("c2", "render", "rendered"),
        Message.user("thanks"),
    )


def test_a_history_trimmed_to_open_with_a_function_call_gets_a_user_turn_first() -> None:
    trimmed = trim_history(3)(conversation()).unwrap()
    assert trimmed[0].role.value == "assistant" and trimmed[0].tool_calls  # what Gemini 400s
    assert check_pairing(trimmed) == ()
    contents = gemini_body(ModelRequest(trimmed, tools=(TOOL,)))["contents"]
    assert contents[0] == {"role": "user", "parts": [{"text": gemini.OPENING_TEXT}]}
    assert contents[1]["role"] == "model" and "functionCall" in contents[1]["parts"][0]
    assert [c["role"] for c in contents] == ["user", "model", "user"]


def test_a_history_opening_with_model_text_also_opens_with_a_user_turn() -> None:
    history = (Message.assistant("Hello! How can I help?"), Message.user("hi"))
    contents = gemini_body(ModelRequest(history))["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"] == [{"text": "Hello! How can I help?"}]  # nothing lost


@pytest.mark.parametrize(
    "history",
    [(), (Message.system("be nice"),), (Message.user(""),), (Message.assistant(""),)],
    ids=["nothing", "only-system", "empty-user", "empty-assistant"],
)
def test_an_empty_gemini_request_is_refused_locally(history: tuple[Message, ...]) -> None:
    match gemini.encode_request(ModelRequest(history, instructions="Be brief.")):
        case Failure(error):
            assert error.kind is ModelErrorKind.UNSUPPORTED_CONTENT
            assert error.message.startswith("nothing to send")
        case other:
            pytest.fail(f"sent {other}")


async def test_the_gemini_model_refuses_an_empty_request_before_any_request() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(400, json={"error": {"message": "contents is not specified"}})

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with GeminiModel("gemini-2.5-flash", api_key="g-test", http_client=client) as m:
        with pytest.raises(UsageError, match="nothing to send"):
            await m.request(ModelRequest((), instructions="Be brief."))
    assert sent == []


# -- item 3: Responses phase ---------------------------------------------------------------

PHASED_OUTPUT = [
    {
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "phase": "commentary",
        "content": [{"type": "output_text", "annotations": [], "text": "Checking the data."}],
    },
    {
        "id": "msg_2",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "phase": "final_answer",
        "content": [{"type": "output_text", "annotations": [], "text": "Sales rose 4%."}],
    },
]


def phased_response() -> dict[str, Any]:
    return {"id": "resp_1", "status": "completed", "model": "gpt-5.3", "output": PHASED_OUTPUT}


def test_phase_is_kept_stored_and_sent_back_as_received() -> None:
    message = openai_responses.decode_response(phased_response()).unwrap()
    assert [p.text for p in message.parts] == ["Checking the data.", "Sales rose 4%."]
    stored = encode_history((Message.user("sales?"), message))
    assert b'"openaiPhase":"commentary"' in stored and b'"openaiPhase":"final_answer"' in stored
    history = decode_history(stored).unwrap()
    request = ModelRequest((*history, Message.user("why?")))
    items = openai_responses.encode_request(request, model="gpt-5.3", stream=False).unwrap()
    assert items["input"][1:3] == [  # two items, not one glued together
        {"role": "assistant", "content": "Checking the data.", "phase": "commentary"},
        {"role": "assistant", "content": "Sales rose 4%.", "phase": "final_answer"},
    ]


def test_phase_is_kept_from_a_stream() -> None:
    done = {"type": "response.completed", "response": phased_response()}
    text = f"event: response.completed\ndata: {json.dumps(done)}\n\n"
    decoder = openai_responses.StreamDecoder()
    for event in SSEDecoder().feed(text.encode()):
        assert isinstance(decoder.feed(event), Success)
    streamed = decoder.finish().unwrap()
    assert streamed == openai_responses.decode_response(phased_response()).unwrap()


def test_text_without_phase_is_sent_as_before() -> None:
    message = Message(Role.ASSISTANT, (TextPart("a"), TextPart("b")))
    request = ModelRequest((Message.user("q"), message, Message.user("r")))
    items = openai_responses.encode_request(request, model="gpt-5", stream=False).unwrap()
    assert items["input"][1] == {"role": "assistant", "content": "a\nb"}


# -- item 5: a tool result a provider cannot take -----------------------------------------


SVG = DataPart(b"<svg xmlns='http://www.w3.org/2000/svg'><rect/></svg>", "image", "image/svg+xml")
OCTETS = DataPart(bytes(range(16)), "document", "application/octet-stream")
VIDEO = URLPart("https://example.com/clip.mp4", "video", media_type="video/mp4")
AUDIO = DataPart(b"RIFF\x00\x00\x00\x00WAVE", "audio", "audio/wav")
MODELS = (
    OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url="http://127.0.0.1:9/v1"),
    OpenAIResponsesModel("gpt-5", api_key="sk-test", base_url="http://127.0.0.1:9/v1"),
    AnthropicModel("claude-sonnet-4-5", api_key="sk-test", base_url="http://127.0.0.1:9"),
    GeminiModel("gemini-2.5-flash", api_key="g-test", base_url="http://127.0.0.1:9/v1beta"),
)


TAKES = {  # which of these each provider takes as it is (the others get a stand-in)
    "OpenAIModel": {"audio"},
    "OpenAIResponsesModel": set(),
    "AnthropicModel": set(),
    "GeminiModel": {"video", "audio"},
}
PARTS = {"svg": SVG, "octets": OCTETS, "video": VIDEO, "audio": AUDIO}


def stand_in_text(part: DataPart | URLPart) -> str:
    if isinstance(part, DataPart):
        return f"{part.kind} ({part.media_type}, {len(part.data)} bytes)"
    return f"{part.kind} by URL ({part.url}, {part.media_type})"


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("name", list(PARTS))
def test_a_tool_result_a_provider_cannot_take_never_bricks_the_conversation(
    model: Any, name: str
) -> None:
    """An MCP tool returned it; every later request of the conversation still goes, and
    the model reads what was there: what it was, its type and its size."""
    part = PARTS[name]
    history = (
        Message.user("draw it"),
        Message.assistant(None, tool_calls=[ToolCallPart("c1", "render", "{}")]),
        Message.tool_result("c1", "render", [TextPart("done"), part]),
        Message.user("thanks"),
    )
    body = json.loads(model._body(ModelRequest(history, tools=(TOOL,)), stream=False))
    text = json.dumps(body, ensure_ascii=False)
    if name in TAKES[type(model).__name__]:
        assert "not sent" not in text
    else:
        assert f"[{stand_in_text(part)}: not sent, " in text


# -- item 7: call ids that only a lone surrogate tells apart -------------------------------


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_two_ids_differing_in_a_lone_surrogate_stay_two_on_the_wire(model: Any) -> None:
    a, b = "call_\ud800", "call_\udc00"
    history = (
        Message.user("go"),
        Message.assistant(
            None, tool_calls=[ToolCallPart(a, "render", "{}"), ToolCallPart(b, "render", "{}")]
        ),
        Message.tool_result(a, "render", "first"),
        Message.tool_result(b, "render", "second"),
    )
    body = json.loads(model._body(ModelRequest(history, tools=(TOOL,)), stream=False))
    text = json.dumps(body, ensure_ascii=False)
    assert "\ufffd" not in text  # no id was turned into a replacement character
    ids = {
        v
        for key in ("id", "call_id", "tool_call_id", "tool_use_id")
        for v in _values(body, key)
        if isinstance(v, str) and v.startswith("call_")
    }
    assert len(ids) == 2, ids


def _values(value: Any, key: str) -> list[Any]:
    if isinstance(value, dict):
        found = [value[key]] if key in value else []
        return found + [x for v in value.values() for x in _values(v, key)]
    if isinstance(value, list):
        return [x for v in value for x in _values(v, key)]
    return []
