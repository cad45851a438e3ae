"""OpenTelemetry: the span tree and metrics of a run, checked with the SDK's in-memory exporter.

Each scenario runs a real ``OpenAIModel`` against the fault-injecting loopback server
(``tests/fault_server.py``; it plays a model that calls ``lookup`` twice in each of two
turns, then answers) or an offline model, and checks span names, kinds, parents and
attributes against the GenAI semantic conventions: a tool round trip, a retried 429, a
failed run, a streamed run, a deferred pause. No attribute, event or status ever holds
the API key, and none holds message content unless content capture is opted in.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fault_server import Fault, FaultServer, fault_server_fixture  # noqa: F401 (fixture)
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from golem_core import Message, ModelRequest, RetryPolicy, Role, ToolCallPart
from golem_shell import (
    Agent,
    Approved,
    FunctionModel,
    OpenAIModel,
    RunError,
    Stage,
    UsageError,
    instrument,
    partial_from,
    tool,
    uninstrument,
)

pytestmark = pytest.mark.anyio

KEY = "sk-otel-secret-5f1e9a7c3b"
PROMPT = "secret-prompt-7d41"
FAST = RetryPolicy(max_attempts=3, max_total_seconds=10.0, base=0.005, cap=0.02)
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


async def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: what to look up.
    """
    return f"value of {key}"


class Telemetry:
    """The in-memory span exporter and metric reader of one test."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    @property
    def spans(self) -> list[ReadableSpan]:
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name.startswith(prefix)]

    def tree(self) -> list[tuple[int, str]]:
        """``(depth, name)`` of every span, parents before children, in start order."""
        spans = self.spans
        by_id = {s.context.span_id: s for s in spans if s.context is not None}

        def depth(s: ReadableSpan) -> int:
            d = 0
            while s.parent is not None and s.parent.span_id in by_id:
                s = by_id[s.parent.span_id]
                d += 1
            return d

        return [(depth(s), s.name) for s in spans]

    def points(self, name: str) -> list[HistogramDataPoint]:
        data = self.reader.get_metrics_data()
        out: list[HistogramDataPoint] = []
        if data is None:
            return out
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name == name:
                        out.extend(p for p in metric.data.data_points)  # type: ignore[misc]
        return out

    def every_recorded_text(self) -> list[str]:
        """Every attribute value, event attribute and status description, as text."""
        texts: list[str] = []
        for s in self.spans:
            texts.extend(str(v) for v in (s.attributes or {}).values())
            texts.append(s.name)
            texts.append(s.status.description or "")
            for event in s.events:
                texts.append(event.name)
                texts.extend(str(v) for v in (event.attributes or {}).values())
        for name in ("gen_ai.client.token.usage", "gen_ai.client.operation.duration"):
            for p in self.points(name):
                texts.extend(str(v) for v in (p.attributes or {}).values())
        return texts


@pytest.fixture(name="otel")
def otel_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    telemetry = Telemetry()
    instrument(tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider)
    yield telemetry
    uninstrument()


def openai_agent(server: FaultServer, scenario: str, **kwargs: Any) -> Agent[None, str]:
    model = OpenAIModel("gpt-test", api_key=KEY, base_url=server.openai_base_url, retry=FAST)
    return Agent(model, instructions=f"scenario={scenario}", tools=[lookup], **kwargs)


def attrs_of(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


ROUND_TRIP_TREE = [
    (0, "invoke_agent"),
    (1, "chat gpt-test"),
    (1, "execute_tool lookup"),
    (1, "execute_tool lookup"),
    (1, "chat gpt-test"),
    (1, "execute_tool lookup"),
    (1, "execute_tool lookup"),
    (1, "chat gpt-test"),
]


def assert_no_secrets(otel: Telemetry) -> None:
    texts = otel.every_recorded_text()
    assert texts
    assert not [t for t in texts if KEY in t]
    assert not [t for t in texts if PROMPT in t]  # prompt, tool arguments, results: content


async def test_tool_round_trip_span_tree_and_attributes(
    otel: Telemetry, fault_server: FaultServer
) -> None:
    result = await openai_agent(fault_server, "otel-trip").run(PROMPT)
    assert result.output.startswith("done: ")
    assert otel.tree() == ROUND_TRIP_TREE

    (run,) = otel.named("invoke_agent")
    assert run.kind is SpanKind.INTERNAL
    assert run.status.status_code is StatusCode.OK
    a = attrs_of(run)
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.model"] == "gpt-test"
    assert a["gen_ai.conversation.id"] == result.conversation_id
    assert a["golem.run.id"] == result.run_id
    assert a["gen_ai.output.type"] == "text"
    assert a["gen_ai.usage.input_tokens"] == result.usage.input_tokens
    assert a["gen_ai.usage.output_tokens"] == result.usage.output_tokens
    assert (a["golem.run.requests"], a["golem.run.tool_executions"]) == (3, 4)
    assert a["golem.run.outcome"] == "finished"

    chats = otel.named("chat ")
    answers = [m for m in result.new_messages if m.role is Role.ASSISTANT]
    assert len(chats) == len(answers) == 3
    for chat, answer in zip(chats, answers, strict=True):
        assert chat.kind is SpanKind.CLIENT
        assert chat.parent is not None and chat.parent.span_id == run.context.span_id
        c = attrs_of(chat)
        assert c["gen_ai.operation.name"] == "chat"
        assert c["gen_ai.provider.name"] == "openai"
        assert c["gen_ai.request.model"] == "gpt-test"
        assert c["gen_ai.response.model"] == "gpt-test"
        assert c["gen_ai.conversation.id"] == result.conversation_id
        assert c["golem.run.id"] == result.run_id
        assert c["server.address"] == "127.0.0.1"
        assert c["server.port"] == fault_server.port
        assert "gen_ai.request.stream" not in c
        assert answer.usage is not None
        assert c["gen_ai.usage.input_tokens"] == answer.usage.input_tokens
        assert c["gen_ai.usage.output_tokens"] == answer.usage.output_tokens
        assert list(c["gen_ai.response.finish_reasons"]) == [answer.finish_reason]
        assert chat.status.status_code is StatusCode.UNSET
    reasons = [list(attrs_of(c)["gen_ai.response.finish_reasons"]) for c in chats]
    assert reasons == [["tool_calls"], ["tool_calls"], ["stop"]]

    tools = otel.named("execute_tool")
    call_ids = [p.id for m in answers for p in m.tool_calls]
    assert sorted(attrs_of(t)["gen_ai.tool.call.id"] for t in tools) == sorted(call_ids)
    for t in tools:
        assert t.kind is SpanKind.INTERNAL
        assert t.parent is not None and t.parent.span_id == run.context.span_id
        ta = attrs_of(t)
        assert ta["gen_ai.operation.name"] == "execute_tool"
        assert ta["gen_ai.tool.name"] == "lookup"
        assert ta["gen_ai.tool.type"] == "function"
        assert ta["gen_ai.tool.description"] == "Look a key up."
        assert ta["golem.tool.outcome"] == "returned"
        assert t.status.status_code is not StatusCode.ERROR
    assert_no_secrets(otel)


async def test_token_usage_and_duration_metrics(otel: Telemetry, fault_server: FaultServer) -> None:
    result = await openai_agent(fault_server, "otel-metrics").run(PROMPT)
    tokens = otel.points("gen_ai.client.token.usage")
    by_type = {p.attributes["gen_ai.token.type"]: p for p in tokens if p.attributes}
    assert set(by_type) == {"input", "output"}
    assert by_type["input"].count == by_type["output"].count == 3
    assert by_type["input"].sum == result.usage.input_tokens
    assert by_type["output"].sum == result.usage.output_tokens
    for p in tokens:
        assert p.attributes is not None
        assert p.attributes["gen_ai.operation.name"] == "chat"
        assert p.attributes["gen_ai.provider.name"] == "openai"
        assert p.attributes["gen_ai.request.model"] == "gpt-test"
        assert p.attributes["gen_ai.response.model"] == "gpt-test"
        assert 1 in p.explicit_bounds and 4 in p.explicit_bounds  # the advised buckets
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 3 and duration.sum > 0
    assert duration.attributes is not None and "error.type" not in duration.attributes
    assert 0.01 in duration.explicit_bounds


async def test_a_retried_429_is_an_event_of_its_chat_span(
    otel: Telemetry, fault_server: FaultServer
) -> None:
    fault_server.plan("otel-429", Fault.status_code(429, retry_after="0.01"))
    result = await openai_agent(fault_server, "otel-429").run(PROMPT)
    assert result.requests == 3
    assert otel.tree() == ROUND_TRIP_TREE  # a retry is no extra span
    first = otel.named("chat ")[0]
    (event,) = first.events
    assert event.name == "golem.retry"
    assert dict(event.attributes or {}) == {
        "golem.retry.attempt": 1,
        "golem.retry.delay": 0.01,
        "error.type": "rate_limit",
        "http.response.status_code": 429,
    }
    assert first.status.status_code is StatusCode.UNSET
    assert all(not c.events for c in otel.named("chat ")[1:])
    assert_no_secrets(otel)


async def test_a_failed_run_sets_error_status_with_the_stage(
    otel: Telemetry, fault_server: FaultServer
) -> None:
    fault_server.plan("otel-401", Fault.status_code(401))
    with pytest.raises(RunError) as caught:
        await openai_agent(fault_server, "otel-401").run(PROMPT)
    assert caught.value.stage is Stage.REQUEST
    assert otel.tree() == [(0, "invoke_agent"), (1, "chat gpt-test")]
    run, chat = otel.spans
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == "run failed at stage request"
    assert attrs_of(run)["golem.run.stage"] == "request"
    assert attrs_of(run)["error.type"] == "RunError"
    assert attrs_of(run)["golem.run.outcome"] == "failed"
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.status.description == "authentication error (HTTP 401)"
    assert attrs_of(chat)["error.type"] == "authentication"
    assert attrs_of(chat)["http.response.status_code"] == 401
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.attributes is not None
    assert duration.attributes["error.type"] == "authentication"
    assert otel.points("gen_ai.client.token.usage") == []
    assert_no_secrets(otel)


async def test_a_crashing_tool_marks_its_span_and_the_run(otel: Telemetry) -> None:
    def boom(x: int) -> str:
        """Explode."""
        raise ValueError(f"bad {PROMPT}")

    def model(request: ModelRequest) -> Message:
        return Message.assistant(tool_calls=[ToolCallPart("c1", "boom", '{"x": 1}')])

    with pytest.raises(RunError) as caught:
        await Agent(FunctionModel(model), tools=[boom]).run(PROMPT)
    assert caught.value.stage is Stage.TOOL
    assert otel.tree() == [(0, "invoke_agent"), (1, "chat function"), (1, "execute_tool boom")]
    run, chat, crashed = otel.spans
    assert crashed.status.status_code is StatusCode.ERROR
    assert attrs_of(crashed)["golem.tool.outcome"] == "crashed"
    # the exception's class, as the conventions record it; its message is content
    assert attrs_of(crashed)["error.type"] == "ValueError"
    (event,) = crashed.events
    assert event.name == "exception"
    assert dict(event.attributes or {}) == {"exception.type": "ValueError"}
    assert crashed.status.description == "ValueError"
    assert attrs_of(run)["golem.run.stage"] == "tool"
    assert attrs_of(chat)["gen_ai.provider.name"] == "function"
    assert_no_secrets(otel)  # the tool's exception text is content: not recorded


class QuotaExceeded(Exception):
    """An exception class of the user's own (its module qualifies its name)."""


async def test_a_crashed_tool_records_its_exception_message_only_when_content_is_captured(
    otel: Telemetry,
) -> None:
    def boom(x: int) -> str:
        """Explode."""
        raise QuotaExceeded(f"quota for {PROMPT}")

    def model(request: ModelRequest) -> Message:
        return Message.assistant(tool_calls=[ToolCallPart("c1", "boom", '{"x": 1}')])

    uninstrument()
    instrument(
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        capture_content=True,
    )
    with pytest.raises(RunError):
        await Agent(FunctionModel(model), tools=[boom]).run(PROMPT)
    (crashed,) = otel.named("execute_tool")
    assert attrs_of(crashed)["error.type"] == f"{__name__}.QuotaExceeded"
    (event,) = crashed.events
    attributes = dict(event.attributes or {})
    assert attributes["exception.type"] == f"{__name__}.QuotaExceeded"
    assert f"quota for {PROMPT}" in str(attributes["exception.message"])
    assert f"quota for {PROMPT}" in str(crashed.status.description)


async def test_a_streamed_run(otel: Telemetry, fault_server: FaultServer) -> None:
    deltas: list[object] = []
    result = await openai_agent(fault_server, "otel-stream").run_stream(
        PROMPT, on_delta=deltas.append
    )
    assert deltas and result.requests == 3
    assert otel.tree() == ROUND_TRIP_TREE
    answers = [m for m in result.new_messages if m.role is Role.ASSISTANT]
    for chat, answer in zip(otel.named("chat "), answers, strict=True):
        c = attrs_of(chat)
        assert c["gen_ai.request.stream"] is True
        assert answer.usage is not None
        assert c["gen_ai.usage.input_tokens"] == answer.usage.input_tokens
        assert list(c["gen_ai.response.finish_reasons"]) == [answer.finish_reason]
    assert_no_secrets(otel)


@tool(requires_approval=True)
def transfer(to: str, amount: int) -> str:
    """Move money."""
    return f"sent {amount} to {to}"


async def test_a_deferred_pause_and_its_resume(otel: Telemetry) -> None:
    def model(request: ModelRequest) -> Message | str:
        if request.messages[-1].role is Role.TOOL:
            return "transferred"
        return Message.assistant(
            tool_calls=[ToolCallPart("t1", "transfer", '{"to": "bob", "amount": 5}')]
        )

    agent = Agent(FunctionModel(model), tools=[transfer])
    paused = await agent.run(PROMPT)
    assert paused.paused
    assert otel.tree() == [(0, "invoke_agent"), (1, "chat function")]
    (run,) = otel.named("invoke_agent")
    assert run.status.status_code is StatusCode.OK
    assert attrs_of(run)["golem.run.outcome"] == "paused"
    assert list(attrs_of(run)["golem.run.deferred_call_ids"]) == ["t1"]
    otel.exporter.clear()

    done = await agent.run_with_deferred_results(paused.messages, {"t1": Approved()})
    assert done.output == "transferred"
    assert otel.tree() == [(0, "invoke_agent"), (1, "execute_tool transfer"), (1, "chat function")]
    resumed = otel.named("invoke_agent")[0]
    a = attrs_of(resumed)
    assert a["golem.run.resumed"] is True
    assert a["golem.run.outcome"] == "finished"
    assert a["gen_ai.conversation.id"] == paused.conversation_id
    assert attrs_of(otel.named("execute_tool")[0])["gen_ai.tool.call.id"] == "t1"
    assert_no_secrets(otel)


async def test_content_is_recorded_only_on_opt_in(
    otel: Telemetry, fault_server: FaultServer
) -> None:
    instrument(
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        capture_content=True,
    )
    await openai_agent(fault_server, "otel-content").run(PROMPT)
    first = otel.named("chat ")[0]
    c = attrs_of(first)
    assert json.loads(c["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "scenario=otel-content"}
    ]
    assert json.loads(c["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": PROMPT}]}
    ]
    (output,) = json.loads(c["gen_ai.output.messages"])
    assert output["role"] == "assistant" and output["finish_reason"] == "tool_calls"
    call = output["parts"][0]
    assert call["type"] == "tool_call" and call["arguments"] == {"key": f"{PROMPT}/0/0"}
    second = attrs_of(otel.named("chat ")[1])
    messages = json.loads(second["gen_ai.input.messages"])
    assert messages[-1]["role"] == "tool"
    assert messages[-1]["parts"][0]["type"] == "tool_call_response"
    tool_span = attrs_of(otel.named("execute_tool")[0])
    assert PROMPT in tool_span["gen_ai.tool.call.arguments"]
    assert tool_span["gen_ai.tool.call.result"].startswith(f"value of {PROMPT}")
    assert not [t for t in otel.every_recorded_text() if KEY in t]  # never the key


async def test_the_environment_variable_opts_in(
    otel: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CAPTURE_ENV, "true")
    instrument(tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    await Agent(FunctionModel(lambda r: "ok")).run(PROMPT)
    (chat,) = otel.named("chat ")
    assert PROMPT in attrs_of(chat)["gen_ai.input.messages"]
    monkeypatch.setenv(CAPTURE_ENV, "false")
    instrument(tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    otel.exporter.clear()
    await Agent(FunctionModel(lambda r: "ok")).run(PROMPT)
    assert_no_secrets(otel)


async def test_spans_nest_under_the_callers_span_and_a_tools_own_spans_nest_inside(
    otel: Telemetry,
) -> None:
    tracer = otel.tracer_provider.get_tracer("app")

    def fetch(x: int) -> str:
        """Fetch."""
        with tracer.start_as_current_span("app.fetch"):
            return "fetched"

    def model(request: ModelRequest) -> Message | str:
        if request.messages[-1].role is Role.TOOL:
            return "done"
        return Message.assistant(tool_calls=[ToolCallPart("f1", "fetch", '{"x": 1}')])

    with tracer.start_as_current_span("app.request"):
        await Agent(FunctionModel(model), tools=[fetch]).run("go")
    assert otel.tree() == [
        (0, "app.request"),
        (1, "invoke_agent"),
        (2, "chat function"),
        (2, "execute_tool fetch"),
        (3, "app.fetch"),
        (2, "chat function"),
    ]
    assert trace.get_current_span() is trace.INVALID_SPAN  # every context detached


async def test_the_agents_name_names_the_run_span(otel: Telemetry) -> None:
    agent = Agent(FunctionModel(lambda r: "ok"))
    agent.name = "weather"  # type: ignore[attr-defined]
    await agent.run("hi")
    (run,) = otel.named("invoke_agent")
    assert run.name == "invoke_agent weather"
    assert attrs_of(run)["gen_ai.agent.name"] == "weather"


async def test_a_cancelled_run_ends_every_span(otel: Telemetry) -> None:
    started = asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    task = asyncio.create_task(Agent(FunctionModel(slow)).run("hi"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as caught:
        await task
    assert partial_from(caught.value) is None  # nothing was completed
    assert otel.tree() == [(0, "invoke_agent"), (1, "chat function")]
    run, chat = otel.spans
    assert attrs_of(run)["error.type"] == "CancelledError"
    assert attrs_of(chat)["error.type"] == "CancelledError"
    assert trace.get_current_span() is trace.INVALID_SPAN


async def test_no_span_once_uninstrumented(otel: Telemetry) -> None:
    uninstrument()
    await Agent(FunctionModel(lambda r: "ok")).run("hi")
    assert otel.spans == []


def test_instrument_without_opentelemetry_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.delitem(sys.modules, "golem_shell.observe._otel", raising=False)
    with pytest.raises(UsageError, match=r"golem-agents\[otel\]"):
        instrument()


def test_opentelemetry_is_not_imported_unless_tracing_is_enabled() -> None:
    code = (
        "import asyncio, sys\n"
        "from golem_shell import Agent, FunctionModel\n"
        "asyncio.run(Agent(FunctionModel(lambda r: 'ok')).run('hi', on_event=lambda e: None))\n"
        "assert 'golem_shell.observe._otel' not in sys.modules\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


async def test_a_raising_event_handler_is_the_runs_error_on_the_span(otel: Telemetry) -> None:
    class HandlerBug(Exception):
        pass

    def handler(event: object) -> None:
        if type(event).__name__ == "RunStarted":
            raise HandlerBug

    with pytest.raises(HandlerBug):
        await Agent(FunctionModel(lambda r: "ok")).run("hi", on_event=handler)
    (run,) = otel.spans
    assert run.status.status_code is StatusCode.ERROR
    assert attrs_of(run)["error.type"] == "HandlerBug"
    assert trace.get_current_span() is trace.INVALID_SPAN


# -- the token-usage histogram advises the GenAI conventions' bucket boundaries ---------------
# (correctness round 3, issue 28 item 8; its other half is in tests/test_arguments.py)


def test_token_usage_buckets_are_the_genai_conventions_list() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from golem_shell.observe._otel import Instrumentation

    reader = InMemoryMetricReader()
    inst = Instrumentation(
        tracer_provider=None,
        meter_provider=MeterProvider(metric_readers=[reader]),
        capture_content=False,
    )
    inst.token_usage.record(70_000_000, {"gen_ai.token.type": "input"})
    data = reader.get_metrics_data()
    assert data is not None
    (point,) = [
        p
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "gen_ai.client.token.usage"
        for p in m.data.data_points  # type: ignore[attr-defined]
    ]
    # semantic-conventions docs/gen-ai/gen-ai-metrics.md: [1, 4, 16, ..., 67108864]
    assert list(point.explicit_bounds) == [4**k for k in range(14)]
    assert point.bucket_counts[-1] == 1  # above the last boundary
