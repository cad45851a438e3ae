"""Call ids providers refuse are renamed deterministically on the wire; valid ids are not."""

from __future__ import annotations

from typing import Any

from golem_core import Message, ModelRequest, ToolCallPart, ToolDefinition
from golem_core.wire import anthropic, openai

TOOLS = (ToolDefinition("f"),)


def _turns(first_id: str, second_id: str) -> tuple[Message, ...]:
    return (
        Message.user("a"),
        Message.assistant(tool_calls=[ToolCallPart(first_id, "f", "{}")]),
        Message.tool_result(first_id, "f", "one"),
        Message.user("b"),
        Message.assistant(tool_calls=[ToolCallPart(second_id, "f", "{}")]),
        Message.tool_result(second_id, "f", "two"),
    )


def _anthropic(messages: tuple[Message, ...]) -> dict[str, Any]:
    body = anthropic.encode_request(
        ModelRequest(messages=messages, tools=TOOLS), model="m", stream=False
    )
    return body.unwrap()


def _openai(messages: tuple[Message, ...]) -> dict[str, Any]:
    body = openai.encode_request(
        ModelRequest(messages=messages, tools=TOOLS), model="m", stream=False
    )
    return body.unwrap()


def _anthropic_pairs(body: dict[str, Any]) -> list[tuple[str, str]]:
    pairs = []
    for m in body["messages"]:
        for block in m["content"]:
            if block["type"] == "tool_use":
                pairs.append(("use", block["id"]))
            elif block["type"] == "tool_result":
                pairs.append(("result", block["tool_use_id"]))
    return pairs


def test_anthropic_makes_ids_reused_across_turns_unique() -> None:
    body = _anthropic(_turns("call_0", "call_0"))
    assert _anthropic_pairs(body) == [
        ("use", "call_0"),
        ("result", "call_0"),
        ("use", "call_0_2"),
        ("result", "call_0_2"),
    ]


def test_anthropic_renames_ids_outside_its_pattern() -> None:
    body = _anthropic(_turns("functions.f:0", "ok-id_1"))
    assert _anthropic_pairs(body) == [
        ("use", "functions_f_0"),
        ("result", "functions_f_0"),
        ("use", "ok-id_1"),
        ("result", "ok-id_1"),
    ]


def test_openai_shortens_ids_over_40_characters_deterministically() -> None:
    long_id = "ws_" + "x" * 48
    first = _openai(_turns(long_id, "call_ok"))
    again = _openai(_turns(long_id, "call_ok"))
    assert first == again
    call_id = first["messages"][1]["tool_calls"][0]["id"]
    assert len(call_id) <= 40
    assert first["messages"][2]["tool_call_id"] == call_id
    assert first["messages"][4]["tool_calls"][0]["id"] == "call_ok"


def test_valid_ids_are_sent_unchanged() -> None:
    body = _anthropic(_turns("toolu_01A", "toolu_01B"))
    assert [i for _, i in _anthropic_pairs(body)] == [
        "toolu_01A",
        "toolu_01A",
        "toolu_01B",
        "toolu_01B",
    ]
