# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""The recall tool (issue 35 item 5, ADR 0144), on SQLite and a real PostgreSQL.

An agent whose history is summarized (the summary keeps no detail) calls ``recall`` and
reads the original turn back from the store, with its position; another owner's
conversation holding the same keyword is never returned; an erased message is not
found again; a bad query goes back to the model as a retry.
"""

from __future__ import annotations

import asyncio

import pytest
from store_backends import (  # noqa: F401 (fixtures)
    OWNER,
    Backend,
    Store,
    backend,
    postgres_backend,
    sqlite_backend,
    store,
    store_database,
    user,
)

from golem_core import Message, Role, TextPart, ToolCallPart, is_summary
from golem_shell import Agent, FunctionModel, ScriptedModel, UsageError, summarize_history
from golem_shell.context._recall import RECALL_HINT, recall_tool
from golem_shell.store._recall import search_messages

SECRET = "ZEBRA-42"


def conversation(code: str) -> tuple[Message, ...]:
    out: list[Message] = []
    for i, text in enumerate(("hello there", f"the launch code is {code}", "nice weather")):
        out += [user(text), Message(Role.ASSISTANT, (TextPart(f"noted {i}"),))]
    return tuple(out)


def recall_call(query: str, call_id: str = "k1") -> Message:
    args = '{"query": "' + query + '"}'
    return Message.assistant(None, tool_calls=[ToolCallPart(call_id, "recall", args)])


def tool_results(messages: tuple[Message, ...]) -> list[str]:
    return [m.text for m in messages if m.role is Role.TOOL]


def agent_with_recall(store: Store, script: list[object]) -> tuple[Agent[None, str], ScriptedModel]:
    model = ScriptedModel(script)
    summarizer = FunctionModel(lambda request: "Small talk happened.")  # keeps no detail
    agent: Agent[None, str] = Agent(
        model,
        tools=[recall_tool(store, OWNER, "c1")],
        history_processor=summarize_history(
            summarizer, keep_last_turns=1, step_turns=0, recall_hint=RECALL_HINT
        ),
    )
    return agent, model


def test_the_agent_reads_a_summarized_turn_back(store: Store) -> None:
    history = conversation(SECRET)
    store.append_sync(OWNER, "c1", history, 0)
    store.append_sync("bob", "c1", conversation("bob-only-code"), 0)  # same id, same keyword
    agent, model = agent_with_recall(store, [recall_call("launch code"), "It was ZEBRA-42."])
    result = asyncio.run(agent.run_with_history(history, "what was the launch code?"))
    first = model.requests[0].messages
    assert is_summary(first[0]) and RECALL_HINT in first[0].text
    assert not any(SECRET in m.text for m in first)  # compaction took it out of the window
    (answer,) = tool_results(result.messages)
    assert f"[message 2, user] the launch code is {SECRET}" in answer
    assert "bob-only-code" not in answer
    assert result.output == "It was ZEBRA-42."


def test_an_erased_message_is_not_recalled(store: Store) -> None:
    history = conversation(SECRET)
    store.append_sync(OWNER, "c1", history, 0)
    store.erase_sync(OWNER, "c1", 2)
    agent, _ = agent_with_recall(store, [recall_call("launch code"), "Gone."])
    result = asyncio.run(agent.run_with_history(history[-2:], "what was the launch code?"))
    (answer,) = tool_results(result.messages)
    assert SECRET not in answer and "No stored message" in answer


def test_a_query_without_words_goes_back_as_a_retry(store: Store) -> None:
    store.append_sync(OWNER, "c1", conversation(SECRET), 0)
    agent, _ = agent_with_recall(store, [recall_call("  "), recall_call("launch", "k2"), "ok"])
    result = asyncio.run(agent.run_with_history((), "recall?"))
    first, second = tool_results(result.messages)
    assert "at least one word" in first
    assert SECRET in second


def test_search_ranks_by_words_found_and_skips_summaries_and_tombstones() -> None:
    from golem_core import summary_message

    messages = (
        summary_message("launch code ZEBRA", summarized=2),
        user("launch"),
        user("launch code"),
        Message(Role.USER, (TextPart("[erased]"),), extra=(("erased", "true"),)),
    )
    found = search_messages(messages, "Launch CODE", limit=5)
    assert [r.position for r in found] == [2, 1]
    assert search_messages(messages, "erased") == ()
    assert len(search_messages(messages, "launch", limit=1)) == 1
    with pytest.raises(ValueError, match="limit must be an int from 1 to 50"):
        search_messages(messages, "launch", limit=0)


def test_recall_tool_refuses_bad_arguments(store: Store) -> None:
    with pytest.raises(UsageError, match="owner"):
        recall_tool(store, "", "c1")
    with pytest.raises(UsageError, match="max_chars"):
        recall_tool(store, OWNER, "c1", max_chars=0)
