"""The event stream of a tool round trip (offline, no key).

python examples/events.py          # every event of the run, as it happens
python examples/events.py --trace  # and the run's OpenTelemetry spans on the console

``Agent.iter_stream`` yields the run's lifecycle events (run, requests, retries, tools)
and the model's streamed deltas, in order; the result comes at the end. The same events
reach an ``on_event=`` handler of ``run`` / ``run_stream``.
"""

from __future__ import annotations

import argparse
import asyncio

import attrs

from golem_core import Message, ModelRequest, Role, ToolCallPart, Usage
from golem_shell import (
    Agent,
    DeltaEvent,
    FunctionModel,
    RequestFinished,
    RequestStarted,
    RunEvent,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolResultEvent,
    ToolStarted,
)


def weather_model(request: ModelRequest) -> Message:
    """Calls the weather tool, then answers with what it returned."""
    last = request.messages[-1]
    if last.role is Role.TOOL:
        answer = Message.assistant(f"In Paris: {last.text}.")
        return attrs.evolve(answer, usage=Usage(48, 9), finish_reason="stop")
    call = ToolCallPart("call_1", "get_weather", '{"city": "Paris"}')
    return attrs.evolve(
        Message.assistant(tool_calls=[call]), usage=Usage(31, 12), finish_reason="tool_calls"
    )


def get_weather(city: str) -> str:
    """The weather of a city.

    Args:
        city: the city.
    """
    return "sunny, 21 C" if city == "Paris" else "unknown city"


def describe(event: RunEvent) -> str | None:
    """One line per event (text deltas are counted by the caller)."""
    match event:
        case RunStarted(model=model):
            return f"run started        model={model}"
        case RequestStarted(request=n, stream=stream):
            return f"request {n} started  {'streamed' if stream else ''}".rstrip()
        case RequestFinished(request=n, finish_reason=reason, usage=usage):
            tokens = f" tokens={usage.input_tokens}+{usage.output_tokens}" if usage else ""
            return f"request {n} finished finish={reason}{tokens}"
        case ToolStarted(name=name, call_id=call_id):
            return f"tool started       {name} ({call_id})"
        case ToolFinished(name=name, call_id=call_id, outcome=outcome):
            return f"tool finished      {name} ({call_id}) {outcome}"
        case ToolResultEvent(call_id=call_id, parts=parts):
            shown = " ".join(getattr(p, "text", type(p).__name__) for p in parts)
            return f"tool result        ({call_id}) {shown!r}"
        case RunFinished(requests=requests, tool_executions=tools, usage=usage):
            return (
                f"run finished       {requests} requests, {tools} tool execution,"
                f" {usage.input_tokens}+{usage.output_tokens} tokens"
            )
        case DeltaEvent():
            return None
    return f"{type(event).__name__}"  # retries, failures, pauses


async def main(trace: bool) -> None:
    if trace:  # the README's five lines: spans on the console
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

        from golem_shell import instrument

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
        instrument(tracer_provider=provider)

    agent = Agent(FunctionModel(weather_model), tools=[get_weather])
    deltas: list[str] = []  # the text deltas of the answer streaming in
    async with agent.iter_stream("What's the weather in Paris?") as stream:
        async for event in stream:
            if isinstance(event, DeltaEvent):
                if event.text:
                    deltas.append(event.text)
                continue
            if deltas:  # counted where they came: the text itself is the output below
                chars = sum(map(len, deltas))
                print(f"  text deltas        {len(deltas)} ({chars} characters)")
                deltas.clear()
            line = describe(event)
            if line:
                print(line)
    print(f"output: {stream.result.output}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", action="store_true", help="print OpenTelemetry spans")
    asyncio.run(main(parser.parse_args().trace))
