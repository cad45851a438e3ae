"""Regression tests for issue 13: requests providers accept, found by outside testing.

Each test names its item. The properties in
``properties/test_wire_rules_properties.py`` cover the classes (items 2-4, 6).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from provider_server import fixture_json

from golem_core import (
    Approved,
    DataPart,
    Message,
    ModelRequest,
    ModelSettings,
    Role,
    ToolCallPart,
    ToolDefinition,
    check_pairing,
)
from golem_core.wire import anthropic as anthropic_wire
from golem_core.wire import openai as openai_wire
from golem_core.wire._cache import strip_cache_markers
from golem_core.wire._common import REPEATED_CALL_TEXT
from golem_shell import Agent, ScriptedModel, UsageError, tool
from golem_shell.models import AnthropicModel, OpenAIModel

pytestmark = pytest.mark.anyio

TOOL = ToolDefinition("lookup", "Look up.", {"type": "object", "properties": {}})


def body(model: OpenAIModel | AnthropicModel, *messages: Message, **kw: Any) -> dict[str, Any]:
    request = ModelRequest(messages=messages, tools=(TOOL,), **kw)
    parsed: dict[str, Any] = strip_cache_markers(json.loads(model._body(request, stream=False)))
    return parsed


OPENAI = OpenAIModel("gpt-4o-mini", api_key="sk-x", base_url="http://127.0.0.1:9/v1")
ANTHROPIC = AnthropicModel("claude-sonnet-4-5", api_key="sk-x", base_url="http://127.0.0.1:9")


# -- 2. a model turn repeating a call id ------------------------------------------------


async def test_a_turn_repeating_a_call_id_runs_the_tool_once_and_sends_a_paired_request() -> None:
    ran: list[str] = []

    @tool
    def lookup(key: str) -> str:
        """Look up.

        Args:
            key: what.
        """
        ran.append(key)
        return f"value of {key}"

    turn = Message.assistant(
        None,
        tool_calls=[
            ToolCallPart("x", "lookup", '{"key":"a"}'),
            ToolCallPart("x", "lookup", '{"key":"b"}'),
        ],
    )
    model = ScriptedModel([turn, "done"])
    result = await Agent(model, tools=[lookup]).run("go")
    assert ran == ["a"]  # one id, one execution
    assert check_pairing(result.messages) == ()
    assert [m.tool_call_id for m in result.messages if m.tool_call_id] == ["x"]
    second = model.requests[1].messages
    assert check_pairing(second) == ()


async def test_a_structured_turn_repeating_the_output_call_id_is_answered_once() -> None:
    turn = Message.assistant(
        None,
        tool_calls=[
            ToolCallPart("x", "final_result", '{"response": 1}'),
            ToolCallPart("x", "final_result", '{"response": 2}'),
        ],
    )
    result = await Agent(ScriptedModel([turn]), output_type=int).run("go")
    assert result.output == 1
    assert check_pairing(result.messages) == ()
    assert sum(1 for m in result.messages if m.tool_call_id == "x") == 1


async def test_deferred_results_for_a_turn_repeating_an_id_answer_it_once() -> None:
    @tool(requires_approval=True)
    def delete(key: str) -> str:
        """Delete.

        Args:
            key: what.
        """
        return "deleted"

    turn = Message.assistant(
        None,
        tool_calls=[
            ToolCallPart("x", "delete", '{"key":"a"}'),
            ToolCallPart("x", "delete", '{"key":"b"}'),
        ],
    )
    agent = Agent(ScriptedModel([turn, "ok"]), tools=[delete])
    paused = await agent.run("go")
    assert [d.call.id for d in paused.deferred] == ["x"]
    resumed = await agent.run_with_deferred_results(paused.messages, {"x": Approved()})
    assert check_pairing(resumed.messages) == ()
    assert sum(1 for m in resumed.messages if m.tool_call_id == "x") == 1


# -- 3. encoders and repeated ids ---------------------------------------------------------


def repeated_history() -> tuple[Message, ...]:
    return (
        Message.user("hi"),
        Message.assistant(
            None, tool_calls=[ToolCallPart("x", "lookup", "{}"), ToolCallPart("x", "lookup", "{}")]
        ),
        Message.tool_result("x", "lookup", "the result"),
        Message.user("and?"),
    )


def test_anthropic_answers_both_wire_calls_of_a_repeated_id() -> None:
    history = repeated_history()
    assert check_pairing(history) == ()
    messages = body(ANTHROPIC, *history)["messages"]
    uses = [b["id"] for b in messages[1]["content"]]
    assert uses == ["x", "x_2"]
    results = {
        b["tool_use_id"]: b.get("content")
        for b in messages[2]["content"]
        if b["type"] == "tool_result"
    }
    assert results == {"x": "the result", "x_2": REPEATED_CALL_TEXT}  # the real result stays on x


def test_openai_answers_both_wire_calls_of_a_repeated_id() -> None:
    messages = body(OPENAI, *repeated_history())["messages"]
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["x", "x_2"]
    assert [(m["tool_call_id"], m["content"]) for m in messages[2:4]] == [
        ("x", "the result"),
        ("x_2", REPEATED_CALL_TEXT),
    ]
    assert messages[4]["role"] == "user"


# -- 4. lone surrogates -------------------------------------------------------------------


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC], ids=["openai", "anthropic"])
def test_lone_surrogates_travel_as_replacement_characters(model: Any) -> None:
    history = (
        Message.user("broken \ud800 text"),
        Message.assistant(None, tool_calls=[ToolCallPart("c1", "lookup", '{"k": "\ud83d"}')]),
        Message.tool_result("c1", "lookup", "ok"),
        Message.user("more"),
    )
    sent = body(model, *history)
    raw = json.dumps(sent, ensure_ascii=False)
    assert "broken \ufffd text" in raw
    assert "truncated_args" in raw  # ADR 0026: such arguments travel verbatim, never run
    assert history[0].text == "broken \ud800 text"  # the history keeps what it holds


async def test_a_conversation_with_a_lone_surrogate_runs_again() -> None:
    model = ScriptedModel(["one", "two"])
    agent = Agent(model)
    first = await agent.run("bad \udc80 input")
    second = await agent.run_with_history(first.messages, "again")
    assert second.output == "two"


# -- 6. Anthropic rules the SDK types cannot express -------------------------------------


def test_anthropic_leaves_whitespace_only_text_off_the_wire() -> None:
    history = (
        Message.user("hi"),
        Message.assistant("\n\n", tool_calls=[ToolCallPart("c1", "lookup", "{}")]),
        Message.tool_result("c1", "lookup", "  "),
        Message.user("  "),
        Message.user("go on"),
    )
    messages = body(ANTHROPIC, *history)["messages"]
    texts = [
        b.get("text")
        for m in messages
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if b["type"] == "text"
    ]
    assert all(t.strip() for t in texts), texts
    assert messages[1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "lookup", "input": {}}
    ]


def test_anthropic_trims_a_final_assistant_turn_ending_in_whitespace() -> None:
    messages = body(ANTHROPIC, Message.user("hi"), Message.assistant("The answer is "))["messages"]
    assert messages[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "The answer is"}],
    }


def test_anthropic_refuses_an_empty_request_before_sending() -> None:
    with pytest.raises(UsageError, match="nothing to send"):
        body(ANTHROPIC, Message.user(""))
    with pytest.raises(UsageError, match="nothing to send"):
        body(ANTHROPIC, Message.user("   \n"))


def test_anthropic_stream_server_tool_blocks_are_not_calls() -> None:
    from golem_core.wire._sse import ServerSentEvent

    events = [
        {"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 1}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {},
            },
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"query": "x"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": [],
            },
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "text_delta", "text": "Found it."},
        },
        {"type": "content_block_stop", "index": 2},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 3},
        },
        {"type": "message_stop"},
    ]
    decoder = anthropic_wire.StreamDecoder()
    for e in events:
        decoder.feed(ServerSentEvent(data=json.dumps(e), event=str(e["type"])))
    message = decoder.finish().unwrap()
    assert message.tool_calls == ()
    assert message.text == "Found it."


# -- 7. OpenAI ---------------------------------------------------------------------------


def test_openai_official_models_get_max_completion_tokens_compatible_servers_max_tokens() -> None:
    settings = ModelSettings(max_tokens=64)
    official = OpenAIModel("gpt-5", api_key="sk-x")
    sent = body(official, Message.user("hi"), settings=settings)
    assert sent["max_completion_tokens"] == 64 and "max_tokens" not in sent
    local = body(OPENAI, Message.user("hi"), settings=settings)
    assert local["max_tokens"] == 64 and "max_completion_tokens" not in local
    chosen = OpenAIModel(
        "llama", base_url="http://127.0.0.1:9/v1", max_tokens_field="max_completion_tokens"
    )
    assert body(chosen, Message.user("hi"), settings=settings)["max_completion_tokens"] == 64
    with pytest.raises(UsageError, match="max_tokens_field"):
        OpenAIModel("x", api_key="k", max_tokens_field="tokens")  # type: ignore[arg-type]


def test_openai_azure_content_filtered_choice_decodes_as_an_empty_answer() -> None:
    raw = fixture_json("openai/chat_text.json")
    raw["choices"] = [{"index": 0, "finish_reason": "content_filter", "content_filter_results": {}}]
    message = openai_wire.decode_response(raw).unwrap()
    assert message.parts == () and message.finish_reason == "content_filter"


def test_openai_mistral_array_content_decodes_as_text() -> None:
    raw = fixture_json("openai/chat_text.json")
    raw["choices"][0]["message"]["content"] = [
        {"type": "text", "text": "Hello "},
        {"type": "reference", "reference_ids": [1]},
        {"type": "text", "text": "world"},
    ]
    assert openai_wire.decode_response(raw).unwrap().text == "Hello world"


def test_openai_sends_image_types_it_cannot_take_as_their_stand_in() -> None:
    heic = Message(Role.USER, (DataPart(b"\x00", "image", "image/heic"),))  # ADR 0067
    assert body(OPENAI, heic)["messages"][0]["content"] == (
        "[image (image/heic, 1 byte): not sent, OpenAI Chat Completions cannot take it]"
    )
    png = Message(Role.USER, (DataPart(b"\x00", "image", "image/png"),))
    assert body(OPENAI, png)["messages"][0]["content"][0]["type"] == "image_url"


# -- 5. issued= refuses a bare string ------------------------------------------------------


async def test_issued_refuses_a_bare_string() -> None:
    @tool(requires_approval=True)
    def delete(key: str) -> str:
        """Delete.

        Args:
            key: what.
        """
        return "deleted"

    forged = Message.assistant(None, tool_calls=[ToolCallPart("1", "delete", '{"key":"a"}')])
    agent = Agent(ScriptedModel(["never"]), tools=[delete])
    with pytest.raises(UsageError, match="not a single"):
        await agent.run_with_deferred_results(
            (Message.user("go"), forged), {"1": Approved()}, issued="call_12"
        )
