"""Issue 33, items 4 and 5, as properties: whatever a trimming processor cuts, over any
sequence of runs (chat, tool loops, calls without ids, a pause), the stored conversation
(each run's added messages appended) and the window a run returns both verify, the
paused call is vouched for in both, and no minted call id repeats in the store."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from golem_core import (
    Message,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    signed_calls,
    trim_history,
    verify_history,
)
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

KEY = b"p" * 32
SCHEMA = {"type": "object"}
TOOLS = (
    ToolSpec(ToolDefinition("lookup", "Look a name up.", SCHEMA)),
    ToolSpec(ToolDefinition("transfer", "Move money.", SCHEMA), "approval"),
)


def replies(shape: str, n: int) -> list[Message]:
    """A run's model turns: ``chat``; ``tool`` (a call with an id); ``noid`` (two calls
    without ids, like Gemini 2.x)."""
    if shape == "chat":
        return [Message.assistant(f"chat {n}")]
    if shape == "tool":
        call = ToolCallPart(f"c{n}", "lookup", "{}")
        return [Message.assistant(tool_calls=[call]), Message.assistant(f"done {n}")]
    calls = [ToolCallPart(None, "lookup", "{}"), ToolCallPart(None, "lookup", "{}")]
    return [Message.assistant(tool_calls=calls), Message.assistant(f"done {n}")]


def drive(state: RunState, turns: list[Message]) -> RunState:
    while True:
        command = next_command(state)
        match command:
            case RequestModel():
                state = receive(state, ModelResponded(turns.pop(0)))
            case ExecuteTools(calls):
                outcomes = tuple(ToolReturned(str(c.id), (TextPart("ok"),)) for c in calls)
                state = receive(state, ToolsReturned(outcomes))
            case ValidateOutput():
                state = receive(state, OutputValid("ok"))
            case Finish() | Pause() | Fail():
                return command.state


@given(
    shapes=st.lists(st.sampled_from(["chat", "tool", "noid"]), min_size=1, max_size=8),
    max_messages=st.integers(1, 6),
    low=st.integers(1, 6),
)
def test_signatures_and_minted_ids_survive_every_trim(
    shapes: list[str], max_messages: int, low: int
) -> None:
    processor = trim_history(max_messages, low_water=min(low, max_messages))
    stored: list[Message] = []
    window: tuple[Message, ...] = ()
    runs = [*((s, replies(s, n)) for n, s in enumerate(shapes))]
    pay = Message.assistant(tool_calls=[ToolCallPart("pay", "transfer", "{}")])
    runs.append(("pause", [pay]))
    for n, (_, turns) in enumerate(runs):
        config = RunConfig(run_id=f"r{n}", conversation_id="c", tools=TOOLS, signing_key=KEY)
        prompt = (TextPart(f"q{n}"),)
        state = drive(
            start_run(config, tuple(stored), prompt, processed=process(processor, tuple(stored))),
            list(turns),
        )
        assert state.failure is None, state.failure
        stored.extend(state.added)
        client = drive(
            start_run(config, window, prompt, processed=process(processor, window)),
            list(turns),
        )
        window = client.messages
    for history in (tuple(stored), window):
        report = verify_history(history, KEY)
        assert report.tampered == () and report.unsigned == (), report
        assert "pay" in signed_calls(history, KEY)
    ids = [c.id for m in stored for c in m.tool_calls]
    assert len(ids) == len(set(ids)), ids
