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
from golem_shell import Agent, FunctionModel, RunError, UsageError

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
