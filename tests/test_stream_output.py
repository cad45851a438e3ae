"""A streamed partial structured output (issue 37.2): ``stream.stream_output()`` gives the
output as it grows, validated as the output type, over a real OpenAI-compatible event
stream on 127.0.0.1 (the output tool's arguments, and a native JSON answer, in pieces),
and ``parse_partial`` reads any prefix of a JSON document."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    anyio_backend_fixture,
    provider_server_fixture,
    provider_server_instance_fixture,
    sse_reply,
)

from golem_shell import Agent, OpenAIModel, RunError, ScriptedModel, UsageError
from golem_shell.run._event_stream import EventStream
from golem_shell.tools._partial_json import INCOMPLETE, parse_partial

pytestmark = pytest.mark.anyio


@attrs.frozen
class Forecast:
    city: str
    highs: list[int]
    sunny: bool = False


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1745851067,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def _tool_stream(name: str, arguments: str, size: int = 4) -> bytes:
    out = _chunk(
        {
            "role": "assistant",
            "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": name}}
            ],
        }
    )
    for i in range(0, len(arguments), size):
        piece = arguments[i : i + size]
        out += _chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    return out + _chunk({}, "tool_calls") + b"data: [DONE]\n\n"


def _text_stream(text: str, size: int = 5) -> bytes:
    out = _chunk({"role": "assistant", "content": ""})
    for i in range(0, len(text), size):
        out += _chunk({"content": text[i : i + size]})
    return out + _chunk({}, "stop") + b"data: [DONE]\n\n"


def _model(server: ProviderServer) -> OpenAIModel:
    return OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url=f"{server.url}/v1")


ANSWER = {"highs": [21, 23, 19], "city": "Paris", "sunny": True}


async def test_the_output_tools_arguments_stream_as_growing_outputs(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(sse_reply(_tool_stream("final_result", json.dumps(ANSWER))))
    agent = Agent(_model(provider_server), output_type=Forecast)
    async with agent.iter_stream("forecast for Paris") as stream:
        seen = [value async for value in stream.stream_output()]
    assert all(isinstance(v, Forecast) for v in seen)
    assert seen[-1] == Forecast("Paris", [21, 23, 19], True) == stream.result.output
    assert len(seen) >= 3 and all(a != b for a, b in itertools.pairwise(seen))  # it grew
    # a value is shown once every required field has begun: the city as far as it has
    # come (the highs are complete by then), then the default `sunny` is replaced
    cities = [v.city for v in seen]
    assert cities[0] != "Paris" and "Paris".startswith(cities[0])
    assert all(v.highs == [21, 23, 19] for v in seen)
    assert [v.sunny for v in seen].count(True) == 1


async def test_a_native_json_answer_streams_as_growing_outputs(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(sse_reply(_text_stream(json.dumps(ANSWER))))
    agent = Agent(_model(provider_server), output_type=Forecast, output_mode="native")
    async with agent.iter_stream("forecast") as stream:
        seen = [value async for value in stream.stream_output()]
    assert seen[-1] == Forecast("Paris", [21, 23, 19], True)
    assert len(seen) >= 3
    sent = json.loads(provider_server.requests[0].body)
    assert sent["response_format"]["type"] == "json_schema"  # it really was native output


async def test_a_wrapped_output_type_streams_its_response(provider_server: ProviderServer) -> None:
    provider_server.enqueue(sse_reply(_tool_stream("final_result", '{"response": [3, 1, 4, 1]}')))
    agent = Agent(_model(provider_server), output_type=list[int])
    async with agent.iter_stream("digits") as stream:
        seen = [value async for value in stream.stream_output()]
    assert seen[0] == [] or seen[0] == [3]
    assert seen[-1] == [3, 1, 4, 1] == stream.result.output


async def test_the_final_output_is_the_validated_one() -> None:
    agent = Agent(ScriptedModel(["hello brave new world"]))

    @agent.output_validator
    def shout(output: str) -> str:
        return output.upper()

    async with agent.iter_stream("hi") as stream:
        seen = [value async for value in stream.stream_output()]
    assert seen[0] != "hello brave new world" and "hello brave new world".startswith(seen[0])
    assert seen[-2] == "hello brave new world"  # the text as it streamed
    assert seen[-1] == "HELLO BRAVE NEW WORLD" == stream.result.output  # validators: end only


async def test_a_failed_run_raises_from_stream_output(provider_server: ProviderServer) -> None:
    provider_server.enqueue(sse_reply(_text_stream("not json at all")))
    provider_server.enqueue(sse_reply(_text_stream("still not json")))
    agent = Agent(_model(provider_server), output_type=Forecast, output_retries=0)
    with pytest.raises(RunError):
        async with agent.iter_stream("forecast") as stream:
            async for _ in stream.stream_output():
                pass


async def test_stream_output_needs_an_agents_stream() -> None:
    async def start(on_delta: Any, on_event: Any) -> Any:
        raise AssertionError("never started")

    with pytest.raises(UsageError, match=r"Agent\.iter_stream"):
        async for _ in EventStream(start).stream_output():
            pass


# -- parse_partial -------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(value=json_values, ascii_only=st.booleans(), indent=st.sampled_from([None, 1]))
def test_every_prefix_parses_and_the_whole_document_is_json_loads(
    value: Any, ascii_only: bool, indent: int | None
) -> None:
    document = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    for end in range(len(document)):
        parse_partial(document[:end])  # never raises on a prefix of a JSON document
    assert parse_partial(document) == json.loads(document)


@pytest.mark.parametrize(
    ("prefix", "value"),
    [
        ("", INCOMPLETE),
        ("  ", INCOMPLETE),
        ("tru", INCOMPLETE),
        ('{"ci', {}),
        ('{"city"', {}),
        ('{"city": ', {}),
        ('{"city": "Pa', {"city": "Pa"}),
        ('{"city": "Pa\\', {"city": "Pa"}),
        ('{"city": "Pa\\u00', {"city": "Pa"}),
        ('{"city": "Pa\\\\', {"city": "Pa\\"}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a": [1, tr', {"a": [1]}),
        ('{"a": {"b": nul', {"a": {}}),
        ('[1, "x",', [1, "x"]),
    ],
)
def test_a_prefix_reads_as_far_as_it_has_come(prefix: str, value: Any) -> None:
    assert parse_partial(prefix) == value


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("}", "unexpected '}'"),
        ('{"a" 1', "expected ':'"),
        ('{"a": 1 "b": 2}', "expected ',' or '}'"),
        ("[1 2]", "expected ',' or ']'"),
        ("{1: 2}", "expected a key"),
        ("[1] 2", "text after the JSON value"),
        ("[nope]", "not a JSON value"),
    ],
)
def test_what_is_not_a_json_prefix_is_refused_saying_why(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        parse_partial(text)


# -- a long or hostile streamed output -------------------------------------------------------


def test_a_prefix_nested_past_the_recursion_limit_is_refused_not_crashed() -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_partial("[" * 5000)
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_partial('{"a":' * 5000)
    # what the stream asks: no value to show yet, and the run goes on
    output_type_list = Agent(ScriptedModel(["[]"]), output_type=list[int])._output
    assert output_type_list.partial("[" * 5000) is INCOMPLETE


async def test_a_deeply_nested_streamed_answer_shows_no_partial_but_ends_with_its_output(
    provider_server: ProviderServer,
) -> None:
    deep = "[" * 3000 + "]" * 3000
    provider_server.enqueue(sse_reply(_text_stream(deep, size=50)))
    provider_server.enqueue(sse_reply(_text_stream("[[1]]")))
    agent = Agent(_model(provider_server), output_type=list[Any], output_mode="native")
    async with agent.iter_stream("deep") as stream:  # no RecursionError from the stream
        seen = [value async for value in stream.stream_output()]
    assert seen[-1] == stream.result.output


async def test_a_long_output_is_parsed_a_bounded_number_of_times(
    provider_server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each parse reads the whole prefix, so parsing on every piece of a long answer is
    # quadratic in its length; past the first kilobyte the stream parses again only
    # once the prefix has grown by an eighth
    import golem_shell.tools._output as output_module

    calls: list[int] = []
    real = output_module.parse_partial

    def counted(text: str) -> Any:
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(output_module, "parse_partial", counted)
    items = [
        {"name": f"item {i}", "tags": ["a", "b"], "note": "some text " * 3} for i in range(300)
    ]
    answer = json.dumps({"response": items})
    provider_server.enqueue(sse_reply(_tool_stream("final_result", answer, size=5)))
    agent = Agent(_model(provider_server), output_type=list[dict[str, Any]])
    async with agent.iter_stream("items") as stream:
        seen = [value async for value in stream.stream_output()]
    assert len(answer) > 20_000
    assert seen[-1] == items == stream.result.output
    assert len(seen) >= 10 and all(len(a) <= len(b) for a, b in itertools.pairwise(seen))
    pieces = len(answer) // 5
    assert len(calls) < pieces // 10  # every piece parsed: one call per piece
    assert sum(calls) < 20 * len(answer)  # the text parsed, in all: a bounded multiple


async def test_deeply_nested_output_tool_arguments_ask_again_not_crash(
    provider_server: ProviderServer,
) -> None:
    deep = '{"response": ' + "[" * 3000 + "]" * 3000 + "}"
    provider_server.enqueue(sse_reply(_tool_stream("final_result", deep, size=400)))
    provider_server.enqueue(sse_reply(_tool_stream("final_result", '{"response": [[2]]}')))
    agent = Agent(_model(provider_server), output_type=list[Any])
    async with agent.iter_stream("deep") as stream:
        seen = [value async for value in stream.stream_output()]
    assert seen[-1] == [[2]] == stream.result.output
    retry = json.loads(provider_server.requests[1].body)["messages"][-1]
    assert retry["role"] == "tool" and "call the tool again" in retry["content"]
