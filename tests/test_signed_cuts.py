"""Issue 33, item 4: a stored conversation + a signing key + a cutting processor stops
verifying. A run signed what it added in its place after the window its processor left,
but a store holds the whole conversation: once the cut bound, ``verify_history`` over the
store marked the new turn tampered and the server's own paused call was not vouched for.

Driven at the level of the core, with the documented store pattern: each run starts from
the stored conversation and its ``state.added`` (``result.new_messages``) is appended.
The client pattern (pass ``state.messages``, the window and what the run added, back as
the next history) must keep verifying too.
"""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Result, Success

from golem_core import (
    Approved,
    HistoryError,
    HistoryProcessor,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    approximate_tokens,
    budget_history,
    compose,
    drop_thinking,
    sanitize_history,
    signed_calls,
    summary_message,
    trim_history,
    verify_history,
)
from golem_core.loop import (
    Answered,
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
    check_resume,
    next_command,
    paused_from,
    process,
    receive,
    start_run,
)

KEY = b"k" * 32
SCHEMA = {"type": "object"}
TOOLS = (
    ToolSpec(ToolDefinition("lookup", "Look a name up.", SCHEMA)),
    ToolSpec(ToolDefinition("transfer", "Move money.", SCHEMA), "approval"),
)


def drive(state: RunState, replies: list[Message]) -> RunState:
    """Run the loop until it ends or pauses: requests take the replies, tools return."""
    while True:
        command = next_command(state)
        match command:
            case RequestModel():
                state = receive(state, ModelResponded(replies.pop(0)))
            case ExecuteTools(calls):
                outcomes = tuple(ToolReturned(str(c.id), (TextPart("ok"),)) for c in calls)
                state = receive(state, ToolsReturned(outcomes))
            case ValidateOutput():
                state = receive(state, OutputValid("ok"))
            case Finish() | Pause() | Fail():
                return command.state


def config(n: int) -> RunConfig:
    return RunConfig(run_id=f"run-{n}", conversation_id="conv", tools=TOOLS, signing_key=KEY)


def call(call_id: str, name: str) -> Message:
    return Message.assistant(tool_calls=[ToolCallPart(call_id, name, '{"name": "x"}')])


def run(
    history: Sequence[Message], n: int, replies: list[Message], processor: HistoryProcessor
) -> RunState:
    state = start_run(
        config(n), tuple(history), (TextPart(f"q{n}"),), processed=process(processor, history)
    )
    return drive(state, replies)


def turns(n: int) -> list[list[Message]]:
    """Replies of ``n`` runs: a tool call now and then, chat otherwise, a pause last."""
    out: list[list[Message]] = []
    for i in range(n - 1):
        if i % 3 == 0:
            out.append([call(f"c{i}", "lookup"), Message.assistant(f"looked {i}")])
        else:
            out.append([Message.assistant(f"chat {i}")])
    out.append([call("pay", "transfer")])
    return out


def test_a_stored_conversation_verifies_after_a_cut_and_its_paused_call_is_vouched_for() -> None:
    stored: list[Message] = []
    states = []
    for n, replies in enumerate(turns(6)):
        state = run(stored, n, replies, trim_history(4))
        stored.extend(state.added)
        states.append(state)
    assert any(s.processed is not None and s.processed.removed for s in states)  # it bound
    report = verify_history(stored, KEY)
    assert report.tampered == () and report.unsigned == () and report.unbound == ()
    assert "pay" in signed_calls(stored, KEY)
    paused = paused_from(config(9), stored)
    assert check_resume(paused, Answered({"pay": Approved()}), signing_keys=KEY) is None
    clean, sanitized = sanitize_history(stored, key=KEY)
    assert sanitized.clean and clean == tuple(stored)


def test_the_window_a_run_returns_verifies_too() -> None:
    history: tuple[Message, ...] = ()
    for n, replies in enumerate(turns(6)):
        state = run(history, n, replies, trim_history(4))
        history = state.messages
        assert verify_history(history, KEY).tampered == ()
    assert "pay" in signed_calls(history, KEY)


def test_every_processor_cut_keeps_the_store_verifying() -> None:
    """Cuts of every shape: a sliding window, a budget, a summary in front, a rewrite."""

    def summarize(history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
        kept = trim_history(3, low_water=3)(history).unwrap()
        if len(kept) == len(history):
            return Success(tuple(history))
        cut = len(history) - len(kept)
        return Success((summary_message("earlier turns", summarized=cut), *kept))

    processors: list[HistoryProcessor] = [
        trim_history(3, low_water=3),
        budget_history(approximate_tokens, 40),
        summarize,
        compose(drop_thinking(keep_last_turns=1), trim_history(5)),
    ]
    for processor in processors:
        stored: list[Message] = []
        for n, replies in enumerate(turns(7)):
            if n % 2:  # thinking for drop_thinking to drop
                replies = [
                    Message.assistant(r.text, thinking=[ThinkingPart("hm")])
                    if not r.tool_calls
                    else r
                    for r in replies
                ]
            stored.extend(run(stored, n, replies, processor).added)
        report = verify_history(stored, KEY)
        assert report.tampered == (), (processor, report.tampered)
        assert "pay" in signed_calls(stored, KEY), processor
