"""Issue 33, item 5: minted call ids repeat in a stored conversation once a processor cut
the window. The loop saw only the window, so ``golem_<n>`` started over at 1. A minted id
is now derived from the run id, so it is unique in the conversation without seeing all
of it.

Driven at the level of the core: ``start_run`` with ``trim_history(4)``, a model that
sends no call ids, and a store-like list that each run's ``state.added`` is appended to
(the documented store pattern: append ``result.new_messages``).
"""

from __future__ import annotations

from collections.abc import Sequence

from golem_core import Message, TextPart, ToolCallPart, ToolDefinition, trim_history
from golem_core.loop import (
    ExecuteTools,
    Fail,
    Finish,
    ModelResponded,
    OutputValid,
    Pause,
    RequestModel,
    RunConfig,
    RunState,
    ToolReturned,
    ToolSpec,
    ToolsReturned,
    ValidateOutput,
    next_command,
    process,
    receive,
    start_run,
)

LOOKUP = ToolSpec(ToolDefinition("lookup", "Look a name up.", {"type": "object"}))


def call_without_id() -> Message:
    """A model turn like Gemini 2.x: one function call, no id."""
    return Message.assistant(tool_calls=[ToolCallPart(None, "lookup", '{"name": "x"}')])


def drive(state: RunState, replies: list[Message]) -> RunState:
    """Run the loop to its end: each request takes the next reply, each tool returns."""
    while True:
        command = next_command(state)
        match command:
            case RequestModel():
                state = receive(state, ModelResponded(replies.pop(0)))
            case ExecuteTools(calls):
                outcomes = tuple(ToolReturned(str(c.id), (TextPart("known"),)) for c in calls)
                state = receive(state, ToolsReturned(outcomes))
            case ValidateOutput():
                state = receive(state, OutputValid("ok"))
            case Finish() | Pause() | Fail():
                return command.state


def run(stored: list[Message], n: int, reply: Sequence[Message], **config: object) -> RunState:
    """One run over the stored conversation; what it added is appended to the store."""
    state = start_run(
        RunConfig(run_id=f"run-{n}", conversation_id="conv", tools=(LOOKUP,), **config),  # type: ignore[arg-type]
        tuple(stored),
        (TextPart(f"question {n}"),),
        processed=process(trim_history(4), tuple(stored)),
    )
    state = drive(state, list(reply))
    stored.extend(state.added)
    return state


def minted_ids(messages: Sequence[Message]) -> list[str | None]:
    return [c.id for m in messages for c in m.tool_calls]


def test_minted_ids_stay_unique_in_a_stored_conversation_after_a_cut() -> None:
    stored: list[Message] = []
    run(stored, 1, [call_without_id(), Message.assistant("done")])  # call
    for n in (2, 3, 4):
        run(stored, n, [Message.assistant("chat")])  # chat, chat, chat
    last = run(stored, 5, [call_without_id(), Message.assistant("done")])  # call
    assert last.processed is not None and last.processed.removed  # the cut bound
    ids = minted_ids(stored)
    assert len(ids) == 2 and len(set(ids)) == 2, ids
    results = [m.tool_call_id for m in stored if m.tool_call_id is not None]
    assert results == ids  # each result still answers its own call


def test_minted_ids_are_deterministic_in_the_run_id_and_never_repeat_within_a_run() -> None:
    def once(run_id: str) -> list[str | None]:
        replies = [call_without_id(), call_without_id(), Message.assistant("done")]
        state = start_run(
            RunConfig(run_id=run_id, conversation_id="conv", tools=(LOOKUP,)),
            (),
            (TextPart("q"),),
        )
        return minted_ids(drive(state, replies).added)

    first = once("run-a")
    assert first == once("run-a")  # the same run id, the same ids: no randomness
    assert len(set(first)) == 2
    assert set(first).isdisjoint(once("run-b"))  # another run, other ids
    assert all(i is not None and len(i) <= 40 for i in first)  # OpenAI's limit on call ids
