"""Prompt-cache markers and keys on every provider's wire, and cache usage read back
(issue 23, ADR 0079)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from returns.result import Success

from golem_core import (
    Message,
    ModelRequest,
    ModelSettings,
    PromptCache,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    Usage,
)
from golem_core.wire import anthropic, gemini, openai, openai_responses
from golem_core.wire._cache import strip_cache_markers

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "properties"))
from wire_rules import anthropic_cache_violations, openai_cache_violations

TOOLS = (ToolDefinition("lookup", "Look up."), ToolDefinition("compute", "Compute."))
EPHEMERAL = {"type": "ephemeral"}


def stamped(message: Message, conversation: str = "conv-7") -> Message:
    import attrs

    return attrs.evolve(message, conversation_id=conversation, run_id="run-1")


def conversation() -> tuple[Message, ...]:
    call = ToolCallPart("toolu_1", "lookup", '{"q": 1}')
    return (
        Message.user("first question"),
        Message.assistant("first answer"),
        stamped(Message.user("second question")),
        stamped(Message.assistant(None, tool_calls=[call])),
        stamped(Message.tool_result("toolu_1", "lookup", "found it")),
    )


def body_of(encoder: str, request: ModelRequest) -> dict[str, Any]:
    match encoder:
        case "anthropic":
            result = anthropic.encode_request(request, model="claude-x", stream=False)
        case "openai":
            result = openai.encode_request(request, model="gpt-x", stream=False)
        case "openai_responses":
            result = openai_responses.encode_request(request, model="gpt-x", stream=False)
        case _:
            result = gemini.encode_request(request)
    assert isinstance(result, Success), result
    body: dict[str, Any] = result.unwrap()
    return body


def request(**settings: Any) -> ModelRequest:
    return ModelRequest(
        conversation(), instructions="Be brief.", tools=TOOLS, settings=ModelSettings(**settings)
    )


# -- Anthropic ---------------------------------------------------------------------------


def test_anthropic_marks_tools_system_the_stable_prefix_and_the_newest_message() -> None:
    body = body_of("anthropic", request())
    assert body["tools"][-1]["cache_control"] == EPHEMERAL
    assert "cache_control" not in body["tools"][0]
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}]
    messages = body["messages"]
    # user, assistant, user (second question), assistant (call), user (result)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"][-1]["cache_control"] == EPHEMERAL  # before the newest turn
    assert messages[-1]["content"][-1]["cache_control"] == EPHEMERAL  # the newest message
    marked = json.dumps(body).count("cache_control")
    assert marked == 4
    assert anthropic_cache_violations(body) == []


def test_anthropic_one_hour_ttl_and_markers_never_on_thinking() -> None:
    thinking = Message.assistant("done", thinking=[ThinkingPart("hmm", signature="sig")])
    history = (Message.user("q"), thinking, Message.user("again"))
    body = body_of(
        "anthropic", ModelRequest(history, settings=ModelSettings(cache=PromptCache(ttl="1h")))
    )
    assistant = body["messages"][1]["content"]
    assert "cache_control" not in assistant[0]  # the thinking block
    assert assistant[1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert anthropic_cache_violations(body) == []


def test_cache_none_sends_no_marker_and_no_key() -> None:
    for encoder in ("anthropic", "openai", "openai_responses", "gemini"):
        body = body_of(encoder, request(cache=None))
        assert "cache_control" not in json.dumps(body)
        assert "prompt_cache" not in json.dumps(body)
    assert body_of("anthropic", request(cache=None))["system"] == "Be brief."


def test_markers_do_not_change_what_the_cache_compares() -> None:
    on, off = body_of("anthropic", request()), body_of("anthropic", request(cache=None))
    assert strip_cache_markers(on) == off


# -- OpenAI ------------------------------------------------------------------------------


@pytest.mark.parametrize("encoder", ["openai", "openai_responses"])
def test_openai_key_is_the_conversation_id_by_default(encoder: str) -> None:
    body = body_of(encoder, request())
    assert body["prompt_cache_key"] == "conv-7"  # the newest stamped message's
    assert "prompt_cache_retention" not in body
    explicit = ModelRequest(conversation(), conversation_id="conv-9")
    assert body_of(encoder, explicit)["prompt_cache_key"] == "conv-9"
    assert openai_cache_violations(body) == []


@pytest.mark.parametrize("encoder", ["openai", "openai_responses"])
def test_openai_explicit_key_and_retention(encoder: str) -> None:
    body = body_of(encoder, request(cache=PromptCache(key="tenant-4", retention="24h")))
    assert (body["prompt_cache_key"], body["prompt_cache_retention"]) == ("tenant-4", "24h")
    assert openai_cache_violations(body) == []


def test_openai_sends_no_key_when_no_conversation_is_known() -> None:
    body = body_of("openai", ModelRequest((Message.user("hi"),)))
    assert "prompt_cache_key" not in body


def test_gemini_needs_no_marker() -> None:
    assert strip_cache_markers(body_of("gemini", request())) == body_of("gemini", request())


def test_bad_cache_settings_are_refused_with_their_name() -> None:
    with pytest.raises(ValueError, match=r"PromptCache\(ttl\)"):
        PromptCache(ttl="10m")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"PromptCache\(retention\)"):
        PromptCache(retention="forever")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"PromptCache\(key\)"):
        PromptCache(key="")


def test_wire_rules_catch_too_many_markers_and_bad_ttl_order() -> None:
    marker = {"type": "ephemeral"}
    long = {"type": "ephemeral", "ttl": "1h"}
    body = {
        "tools": [{"name": "a", "cache_control": marker}],
        "system": [{"type": "text", "text": "s", "cache_control": long}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": t, "cache_control": marker}]}
            for t in "xyz"
        ],
    }
    problems = anthropic_cache_violations(body)
    assert any("at most 4" in p for p in problems)
    assert any("1h cache entry after a 5m" in p for p in problems)
    assert openai_cache_violations({"prompt_cache_retention": "1w"})


# -- usage -------------------------------------------------------------------------------


def test_cache_usage_is_read_from_every_provider() -> None:
    text = {"type": "text", "text": "ok"}
    anth = anthropic.decode_response(
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [text],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_read_input_tokens": 900,
                "cache_creation_input_tokens": 90,
            },
        }
    ).unwrap()
    assert anth.usage == Usage(1000, 5, cache_read_tokens=900, cache_write_tokens=90)
    chat = openai.decode_response(
        {
            "id": "c",
            "model": "gpt-x",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "ok"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 1000,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 896},
            },
        }
    ).unwrap()
    assert chat.usage is not None and chat.usage.cache_read_tokens == 896
    assert chat.usage.input_tokens == 1000
    gem = gemini.decode_response(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {
                "promptTokenCount": 1000,
                "candidatesTokenCount": 5,
                "cachedContentTokenCount": 700,
            },
        }
    ).unwrap()
    assert gem.usage is not None and gem.usage.cache_read_tokens == 700
    fixture = (
        Path(__file__).parent / "fixtures/openai_responses/response_reasoning_function_calls.json"
    )
    responses = openai_responses.decode_response(json.loads(fixture.read_text())).unwrap()
    assert responses.usage is not None and responses.usage.cache_read_tokens == 1152
    # a run's usage is the sum over its requests, cache figures included
    total = anth.usage + chat.usage + gem.usage + responses.usage
    assert total.cache_read_tokens == 900 + 896 + 700 + 1152
    assert total.cache_write_tokens == 90 + (responses.usage.cache_write_tokens or 0)
