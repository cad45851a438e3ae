# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""The interrupted turn, on SQLite and a real PostgreSQL: one call stores the user's prompt
and every step a failed run completed (``RunError.partial``); a reload shows them, and
the next run repairs the unfinished turn and continues.
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
    texts,
    user,
)

from golem_core import Message, ModelRequest, Role, ToolCallPart, check_pairing
from golem_shell import Agent, FunctionModel, RunError, UsageError, partial_from

ran: list[str] = []


def charge(amount: int) -> str:
    """Charge the card."""
    ran.append(f"charged {amount}")
    return f"charged {amount}"


def flaky_model(request: ModelRequest) -> Message | str:
    """Calls the tool, then fails; after the failure (a later run) it answers."""
    last = request.messages[-1]
    if last.role is Role.USER and last.text == "charge 5":
        return Message(Role.ASSISTANT, (ToolCallPart("call_1", "charge", '{"amount": 5}'),))
    if last.role is Role.TOOL and last.text == "charged 5":
        raise ConnectionError("the provider went away mid-turn")
    return "done: " + last.text


def test_a_failed_run_keeps_the_prompt_and_the_completed_steps(store: Store) -> None:
    agent = Agent(FunctionModel(flaky_model), tools=[charge])
    store.append_sync(OWNER, "c", [user("hello"), Message(Role.ASSISTANT, ())], 0)
    history = store.load_sync(OWNER, "c")

    async def turn() -> None:
        with pytest.raises(RunError) as caught:
            await agent.run_with_history(history, "charge 5", conversation_id="c")
        error = caught.value
        assert error.partial is not None
        length = await store.append_interrupted(OWNER, "c", "charge 5", error, len(history))
        assert length == len(error.partial.messages)

    asyncio.run(turn())
    reloaded = store.load_sync(OWNER, "c")
    assert reloaded[2].role is Role.USER and reloaded[2].text == "charge 5"  # the prompt
    assert reloaded[3].tool_calls[0].id == "call_1"  # the completed step
    assert reloaded[4].text == "charged 5"  # and its result: the charge is not repeated
    assert check_pairing(reloaded) == ()
    ran.clear()
    result = agent.run_with_history_sync(reloaded, "and now?", conversation_id="c")
    assert ran == [] and result.output == "done: and now?"
    store.append_sync(OWNER, "c", result.new_messages, len(reloaded))
    assert texts(store.load_sync(OWNER, "c"))[-2:] == ["and now?", "done: and now?"]


def test_a_run_cancelled_before_any_step_keeps_the_prompt(store: Store) -> None:
    cancelled = asyncio.CancelledError()
    assert store.append_interrupted_sync(OWNER, "c", "are you there?", cancelled, 0) == 1
    (prompt,) = store.load_sync(OWNER, "c")
    assert (prompt.role, prompt.text) == (Role.USER, "are you there?")
    assert store.append_interrupted_sync(OWNER, "c", user("a Message works too"), cancelled, 1) == 2
    with pytest.raises(UsageError, match="prompt must be a str or a Message"):
        store.append_interrupted_sync(OWNER, "c", 42, cancelled, 2)  # type: ignore[arg-type]


# -- issue 33 item 8: a cancelled run keeps its completed steps -------------------------------


def test_a_cancelled_run_keeps_its_completed_steps(store: Store) -> None:
    """Cancelled while the model thinks after a finished tool: the partial (attached to the
    ``CancelledError``) holds the prompt, the call and its result, and all of them are
    stored, so the next run does not charge the card again."""
    store.append_sync(OWNER, "c", [user("hello"), Message(Role.ASSISTANT, ())], 0)
    history = store.load_sync(OWNER, "c")
    thinking = asyncio.Event()

    async def slow_after_the_tool(request: ModelRequest) -> Message | str:
        last = request.messages[-1]
        if last.role is Role.USER and last.text == "charge 7":
            return Message(Role.ASSISTANT, (ToolCallPart("call_7", "charge", '{"amount": 7}'),))
        if last.role is Role.TOOL and last.text == "charged 7":
            thinking.set()
            await asyncio.sleep(3600)  # cancelled here
        return "done: " + last.text

    agent = Agent(FunctionModel(slow_after_the_tool), tools=[charge])
    ran.clear()

    async def turn() -> int:
        run = asyncio.ensure_future(
            agent.run_with_history(history, "charge 7", conversation_id="c")
        )
        await thinking.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError) as caught:
            await run
        partial = partial_from(caught.value)
        assert partial is not None and len(partial.messages) == 5
        return await store.append_interrupted(OWNER, "c", "charge 7", caught.value, len(history))

    assert asyncio.run(turn()) == 5
    assert ran == ["charged 7"]
    reloaded = store.load_sync(OWNER, "c")
    assert [m.role for m in reloaded[2:]] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert reloaded[3].tool_calls[0].id == "call_7"  # the completed call
    assert reloaded[4].text == "charged 7"  # and its result
    assert check_pairing(reloaded) == ()
    ran.clear()
    result = agent.run_with_history_sync(reloaded, "and now?", conversation_id="c")
    assert ran == [] and result.output == "done: and now?"  # the card is charged once


def test_a_cancelled_tool_is_closed_as_unfinished(store: Store) -> None:
    """Cancelled while a tool runs: its call is stored with a result saying it did not
    finish (it may have had effects), so the history pairs and the model is told."""
    started = asyncio.Event()

    async def hang(x: int) -> str:
        """Hangs."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    def call_hang(request: ModelRequest) -> Message | str:
        if request.messages[-1].role is Role.USER:
            return Message(Role.ASSISTANT, (ToolCallPart("call_h", "hang", '{"x": 1}'),))
        return "after: " + request.messages[-1].text

    agent = Agent(FunctionModel(call_hang), tools=[hang])

    async def turn() -> int:
        run = asyncio.ensure_future(agent.run_with_history((), "go", conversation_id="c"))
        await started.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError) as caught:
            await run
        return await store.append_interrupted(OWNER, "c", "go", caught.value, 0)

    assert asyncio.run(turn()) == 3
    reloaded = store.load_sync(OWNER, "c")
    assert [m.role for m in reloaded] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert reloaded[2].tool_call_id == "call_h" and check_pairing(reloaded) == ()
