"""Drive golem's loop yourself: golem_core alone, a synchronous driver, the stdlib's HTTP client.

    python tests/fake_openai_server.py                   # prints a base URL; leave it running
    python examples/drive_the_loop.py --base-url http://127.0.0.1:<port>/v1

Any OpenAI-compatible Chat Completions server works (``--model``; a key in
``OPENAI_API_KEY`` is sent when set). No asyncio, no httpx, no golem_shell: the driver
below asks the core what to do (``next_command``), does it (an HTTP request encoded and
decoded by golem's OpenAI codec, a Python function), and folds what happened back in
(``receive``). The run reads a balance, then asks to pay the rent with a tool that needs
approval: the run pauses, its conversation is stored as JSON, and a resume approves the
call and finishes the run. docs/guides/embedding.md walks through it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping

from golem_core import (
    Approved,
    DeferredAnswer,
    DeferredCall,
    Message,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    decode_history_or_raise,
    encode_history,
)
from golem_core.loop import (
    Answered,
    CompactHistory,
    CompactionDeclined,
    ExecuteTools,
    Fail,
    Finish,
    LoopOutcome,
    ModelFailed,
    ModelResponded,
    OutputValid,
    Pause,
    RequestModel,
    RunConfig,
    RunState,
    ToolOutcome,
    ToolReturned,
    ToolSpec,
    ToolsReturned,
    ValidateOutput,
    next_command,
    receive,
    resume_run,
    start_run,
)
from golem_core.wire import openai

# --8<-- [start:driver]
Tools = Mapping[str, Callable[..., str]]
Approve = Callable[[tuple[DeferredCall, ...]], Mapping[str, DeferredAnswer] | None]


def request_model(base_url: str, model: str, command: RequestModel) -> ModelResponded | ModelFailed:
    """Perform ``RequestModel``: golem's codec builds the body and reads the answer."""
    body = openai.encode_request(command.request, model=model, stream=False).unwrap()
    headers = {"content-type": "application/json"}
    if key := os.environ.get("OPENAI_API_KEY"):
        headers["authorization"] = f"Bearer {key}"
    url = f"{base_url}/chat/completions"
    http = urllib.request.Request(url, json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(http, timeout=120) as response:
            decoded = openai.decode_response(json.load(response))
    except urllib.error.HTTPError as e:  # the provider's own words, kind and retry-after
        error = openai.decode_error(e.code, dict(e.headers), e.read())
        return ModelFailed(str(error), error.kind)
    except OSError as e:  # no connection, a timeout
        return ModelFailed(f"{type(e).__name__}: {e}")
    message = decoded.value_or(None)
    if message is None:  # a body of the wrong shape: the codec names the path
        return ModelFailed(str(decoded.failure()), decoded.failure().kind)
    return ModelResponded(message)


def run_tool(tools: Tools, call: ToolCallPart) -> ToolOutcome:
    """Perform one call of ``ExecuteTools``: what the function returns is the result."""
    try:
        text = tools[call.name](**(call.arguments_object or {}))
    except Exception as e:  # the model reads the failure and may try again
        return ToolReturned(call.id or "", (TextPart(f"{type(e).__name__}: {e}"),), failed=True)
    return ToolReturned(call.id or "", (TextPart(text),))


def drive(
    state: RunState, base_url: str, model: str, tools: Tools, approve: Approve
) -> Finish | Pause | Fail:
    """Drive a run to its end: ``Finish``, ``Fail``, or ``Pause`` when ``approve`` gives
    no answers (the run ends paused; ``resume_run`` continues it from its messages)."""
    while True:
        command = next_command(state)
        if isinstance(command, RequestModel):
            outcome: LoopOutcome = request_model(base_url, model, command)
        elif isinstance(command, ExecuteTools):  # one by one; a driver may run them at once
            outcome = ToolsReturned(tuple(run_tool(tools, call) for call in command.calls))
        elif isinstance(command, ValidateOutput):  # check the output here; this takes it as is
            candidate = command.candidate  # a text answer, or a call of the output tool
            value = candidate.text if isinstance(candidate, Message) else candidate.arguments_object
            outcome = OutputValid(value)
        elif isinstance(command, CompactHistory):  # only with RunConfig(compact_on_overflow=True)
            outcome = CompactionDeclined("declined: this driver does not compact")
        elif isinstance(command, Pause):  # calls wait for approval (or an external result)
            answers = approve(command.deferred)
            if answers is None:
                return command  # the run ends paused: store command.state.messages
            outcome = Answered(answers, pause=state.pauses)
        else:
            return command  # Finish or Fail
        state = receive(state, outcome)


# --8<-- [end:driver]


def balance(account: str) -> str:
    return f"1200.00 EUR in {account}"


def transfer(to: str, amount: float) -> str:
    return f"sent {amount:.2f} EUR to {to}"


TOOLS: Tools = {"balance": balance, "transfer": transfer}

SPECS = (
    ToolSpec(
        ToolDefinition(
            "balance",
            "The balance of an account.",
            {
                "type": "object",
                "properties": {"account": {"type": "string"}},
                "required": ["account"],
            },
        )
    ),
    ToolSpec(
        ToolDefinition(
            "transfer",
            "Send money; a person approves each transfer.",
            {
                "type": "object",
                "properties": {"to": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["to", "amount"],
            },
        ),
        kind="approval",  # the run pauses on each call of it
    ),
)


def config(conversation_id: str) -> RunConfig:
    """A run's fixed configuration: each run (a resume too) gets a fresh run id."""
    return RunConfig(
        run_id=str(uuid.uuid4()),
        conversation_id=conversation_id,
        instructions="You are a careful banking assistant.",
        tools=SPECS,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", default="gpt-4.1-mini")
    args = parser.parse_args()
    conversation = str(uuid.uuid4())

    def wait_for_a_person(deferred: tuple[DeferredCall, ...]) -> None:
        for d in deferred:
            print(f"paused: {d.call.name} {d.call.arguments} waits for approval ({d.call.id})")
        return None  # no answer now: the run ends paused

    first = start_run(config(conversation), (), [TextPart("Pay my rent if my balance covers it.")])
    paused = drive(first, args.base_url, args.model, TOOLS, wait_for_a_person)
    if not isinstance(paused, Pause):
        sys.exit(f"expected the run to pause, it ended with {paused!r:.200}")
    stored = encode_history(paused.state.messages)  # a paused run is data: a file, a row, a job

    # Later, in any process: a person approved. Resume from the stored conversation.
    history = decode_history_or_raise(stored)
    answers = {str(d.call.id): Approved() for d in paused.deferred}
    resumed = resume_run(config(conversation), history, answers)
    state = resumed.value_or(None)
    if state is None:
        sys.exit(f"the answers were refused: {resumed.failure()}")
    print(f"resumed: approved {', '.join(answers)} ({len(history)} stored messages)")
    end = drive(state, args.base_url, args.model, TOOLS, wait_for_a_person)
    if isinstance(end, Fail):
        sys.exit(f"the run failed at {end.stage}: {end.reason}")
    if not isinstance(end, Finish):
        sys.exit(f"expected the run to finish, it ended with {end!r:.200}")
    for m in end.state.messages:
        if m.role.value == "tool":
            print(f"tool {m.tool_name}: {m.text}")
    print(f"answer: {end.output}")
    print(f"requests: {paused.state.requests} before the pause, {end.state.requests} after")


if __name__ == "__main__":
    main()
