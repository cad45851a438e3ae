"""Compact and retry (issue 35 item 3, ADR 0141): a request a provider refuses as too long
makes the run compact its history once and send the request again; a second refusal fails
the run at stage ``request`` naming the limit. Driven by the one driver against the
loopback provider server with each provider's documented error body."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from provider_server import (  # noqa: F401 (fixtures)
    ProviderServer,
    anyio_backend_fixture,
    fixture_json,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
)

from golem_core import (
    CompactionFinished,
    CompactionStarted,
    Message,
    ToolCallPart,
    Usage,
    compaction_of,
    message_ref,
)
from golem_core.loop import (
    CompactHistory,
    CompactionDeclined,
    Fail,
    Finish,
    HistoryCompacted,
    ModelFailed,
    ModelResponded,
    OutputValid,
    Phase,
    RunConfig,
    RunState,
    Stage,
    receive,
    start_run,
)
from golem_shell import (
    AnthropicModel,
    FunctionModel,
    GeminiModel,
    ModelError,
    OpenAIModel,
    OpenAIResponsesModel,
    RetryPolicy,
)
from golem_shell.context._summarize import compact_history, summarize_history
from golem_shell.observe._observe import RunObserver
from golem_shell.run._driver import Progress, drive

pytestmark = pytest.mark.anyio

FAST = RetryPolicy(max_attempts=1)
KEY = "sk-test-not-a-real-key-000000000000"

PROVIDERS: dict[str, tuple[Callable[[str], Any], str, str]] = {
    "openai": (
        lambda url: OpenAIModel("gpt-4o-mini", api_key=KEY, base_url=f"{url}/v1", retry=FAST),
        "openai/error_400_context_length.json",
        "openai/chat_text.json",
    ),
    "anthropic": (
        lambda url: AnthropicModel("claude-sonnet-4-5", api_key=KEY, base_url=url, retry=FAST),
        "anthropic/error_400_prompt_too_long.json",
        "anthropic/message_text.json",
    ),
    "gemini": (
        lambda url: GeminiModel(
            "gemini-2.5-flash", api_key=KEY, base_url=f"{url}/v1beta", retry=FAST
        ),
        "gemini/error_400_context_too_long.json",
        "gemini/generate_text.json",
    ),
    "openai-responses": (
        lambda url: OpenAIResponsesModel("gpt-5", api_key=KEY, base_url=f"{url}/v1", retry=FAST),
        "openai_responses/error_400_context_length.json",
        "openai_responses/response_text.json",
    ),
}
LIMIT_WORDS = {
    "openai": "maximum context length is 128000 tokens",
    "anthropic": "200000 maximum",
    "gemini": "exceeds the maximum number of tokens allowed",
    "openai-responses": "context",
}


class Effects:
    """A runtime's effects: a real HTTP model, and compaction by ``compact_history``."""

    tool_batch = "cancel_siblings"
    streaming = False

    def __init__(self, model: Any, strategy: Any) -> None:
        self.model = model
        self.strategy = strategy
        self.cause: BaseException | None = None
        self.compacted: list[CompactHistory] = []

    async def request(self, command: Any, state: RunState) -> ModelResponded | ModelFailed:
        try:
            return ModelResponded(await self.model.request(command.request))
        except ModelError as e:
            self.cause = e
            return ModelFailed(str(e), e.kind)

    def tools(self, calls: Sequence[ToolCallPart], state: RunState) -> list[Any]:
        raise AssertionError("no tools in these runs")

    async def validate(self, candidate: Any) -> OutputValid:
        return OutputValid(candidate.text)

    async def wait(self, paused: RunState) -> None:
        return None

    async def compact(
        self, command: CompactHistory, state: RunState
    ) -> HistoryCompacted | CompactionDeclined:
        self.compacted.append(command)
        return await compact_history(self.strategy, command)


def long_history() -> tuple[Message, ...]:
    return tuple(
        m
        for i in range(6)
        for m in (Message.user(f"question {i} " + "x" * 200), Message.assistant(f"answer {i}"))
    )


def summarizer() -> Any:
    def answer(request: Any) -> Message:
        reply = Message.assistant("The user asked six questions.")
        return Message(reply.role, reply.parts, usage=Usage(input_tokens=300, output_tokens=7))

    return summarize_history(FunctionModel(answer), keep_last_turns=1, max_tokens=100_000)


class Recorder:
    """The observer's handler: every lifecycle event, in order."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)


def observed(state: RunState, recorder: Recorder, model: Any) -> Progress:
    # a namespace, not a class made per call: a class is always in a reference cycle, and
    # it would keep the model (and its HTTP clients' finalizer) for the cyclic collector
    agent = SimpleNamespace(model=model, name="t")
    return Progress(state, RunObserver(agent, state, recorder, None, resumed=False))


def first(config: RunConfig) -> RunState:
    return start_run(config, long_history(), (Message.user("and now?").parts))


@pytest.mark.parametrize("provider", list(PROVIDERS))
async def test_a_refused_request_is_compacted_once_and_sent_again(
    provider: str, provider_server: ProviderServer
) -> None:
    make, refusal, answer = PROVIDERS[provider]
    provider_server.enqueue(
        json_reply(fixture_json(refusal), 400), json_reply(fixture_json(answer), 200)
    )
    model = make(provider_server.url)
    config = RunConfig(run_id="r1", conversation_id="c1", compact_on_overflow=True)
    recorder = Recorder()
    state = first(config)
    progress = observed(state, recorder, model)
    effects = Effects(model, summarizer())
    end = await drive(progress, effects)
    assert isinstance(end, Finish), end
    final = end.state
    (record,) = final.compactions
    assert record.outcome == "compacted" and record.kind == "summary"
    assert record.replaced == tuple(message_ref(m) for m in long_history()[:10])
    assert compaction_of(final.history[0]) == record
    assert final.history[1:] == long_history()[10:]
    assert final.requests == 1  # the refused request was not answered: one answer
    assert final.usage.input_tokens >= 300  # the summarizing request joins the usage
    sent = [r.json() for r in provider_server.requests]
    assert len(sent) == 2 and len(str(sent[1])) < len(str(sent[0]))
    names = [type(e).__name__ for e in recorder.events]
    assert names == [
        "RequestStarted",
        "RequestFailed",
        "CompactionStarted",
        "CompactionFinished",
        "RequestStarted",
        "RequestFinished",
    ]
    started, finished = recorder.events[2], recorder.events[3]
    assert isinstance(started, CompactionStarted) and started.trigger == "context_too_long"
    assert started.request == 1 and started.messages == len(long_history())
    assert isinstance(finished, CompactionFinished) and finished.record == record
    assert recorder.events[1].kind == "context_too_long"


@pytest.mark.parametrize("provider", list(PROVIDERS))
async def test_still_too_long_after_compacting_fails_naming_the_limit(
    provider: str, provider_server: ProviderServer
) -> None:
    make, refusal, _ = PROVIDERS[provider]
    provider_server.enqueue(
        json_reply(fixture_json(refusal), 400), json_reply(fixture_json(refusal), 400)
    )
    model = make(provider_server.url)
    config = RunConfig(run_id="r1", conversation_id="c1", compact_on_overflow=True)
    effects = Effects(model, summarizer())
    end = await drive(Progress(first(config)), effects)
    assert isinstance(end, Fail)
    assert end.stage is Stage.REQUEST
    assert end.reason.startswith("the request was still too long after the run compacted")
    assert LIMIT_WORDS[provider] in end.reason.lower() or LIMIT_WORDS[provider] in end.reason
    assert len(effects.compacted) == 1  # never more than one compaction per request
    assert len(provider_server.requests) == 2


async def test_without_the_option_the_refusal_fails_as_before(
    provider_server: ProviderServer,
) -> None:
    make, refusal, _ = PROVIDERS["openai"]
    provider_server.enqueue(json_reply(fixture_json(refusal), 400))
    effects = Effects(make(provider_server.url), summarizer())
    end = await drive(Progress(first(RunConfig(run_id="r", conversation_id="c"))), effects)
    assert isinstance(end, Fail) and end.stage is Stage.REQUEST
    assert "maximum context length" in end.reason and effects.compacted == []


def test_nothing_to_fold_fails_with_the_refusal_and_the_outcome() -> None:
    config = RunConfig(run_id="r", conversation_id="c", compact_on_overflow=True)
    state = start_run(config, (), Message.user("hi").parts)
    state = receive(state, ModelFailed("prompt is too long: 9 > 8 maximum", _too_long()))
    assert state.phase is Phase.COMPACT
    state = receive(state, CompactionDeclined("declined: nothing to fold"))
    assert state.phase is Phase.FAILED
    assert state.failure == (
        Stage.REQUEST,
        "the provider refused the request as too long (prompt is too long: 9 > 8 maximum);"
        " compacting the history once did not help: declined: nothing to fold",
    )


def _too_long() -> Any:
    from golem_core import ModelErrorKind

    return ModelErrorKind.CONTEXT_TOO_LONG


def test_a_strategy_that_touches_a_pending_call_or_splits_a_pair_is_refused() -> None:
    pending = (
        Message.user("old"),
        Message.assistant("old answer"),
        Message.user("delete it"),
        Message.assistant(None, tool_calls=[ToolCallPart("k1", "delete", "{}")]),
    )
    config = RunConfig(run_id="r", conversation_id="c", compact_on_overflow=True)
    state = RunState(config=config, history=pending)
    state = receive(state, ModelFailed("too long", _too_long()))
    command_keep = 2  # the pending turn starts at the user message "delete it"
    from golem_core.loop import next_command

    command = next_command(state)
    assert isinstance(command, CompactHistory) and command.keep == command_keep
    record = _record()
    dropped = receive(state, HistoryCompacted((Message.user("summary"),), record))
    assert dropped.phase is Phase.FAILED
    assert "changed the turn of a pending call" in dropped.failure[1]  # type: ignore[index]
    paired = (
        Message.user("q"),
        Message.assistant(None, tool_calls=[ToolCallPart("k0", "look", "{}")]),
        Message.tool_result("k0", "look", "r"),
        Message.assistant("a"),
    )
    state = RunState(config=config, history=paired)
    state = receive(state, ModelFailed("too long", _too_long()))
    split = receive(state, HistoryCompacted((Message.user("s"), *paired[2:]), record))
    assert "split a call from its result" in split.failure[1]  # type: ignore[index]


def _record() -> Any:
    from golem_core import CompactionRecord

    return CompactionRecord("p", "summary", replaced=("m:0",))


@pytest.mark.parametrize(
    "body",
    [
        {  # vLLM
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you"
            " requested 5000 tokens (4900 in the messages, 100 in the completion).",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        {  # llama.cpp's server
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 5000,
                "n_ctx": 4096,
            }
        },
    ],
)
def test_openai_compatible_servers_refusals_are_too_long(body: dict[str, Any]) -> None:
    import json

    from golem_core import ModelErrorKind
    from golem_core.wire import openai

    error = openai.decode_error(400, {}, json.dumps(body).encode())
    assert error.kind is ModelErrorKind.CONTEXT_TOO_LONG
