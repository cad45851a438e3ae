"""Every ``_sync`` method works any number of times in a row on one agent with a real
provider model over the loopback server (issue 13.1), and the README tour (and the
conversations guide's whole one) runs twice.

The model is the one a user gets from a model string (``Agent("openai:...")``): it owns
its HTTP client, which must not stay bound to the event loop of an earlier call.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    Reply,
    fixture_bytes,
    fixture_json,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
    sse_reply,
)

from golem_core import Approved
from golem_shell import Agent, RunError, tool

README = Path(__file__).resolve().parent.parent / "README.md"
GUIDE = README.parent / "docs" / "guides" / "conversations.md"
KEY = "sk-sync-repeat-0123456789"


def openai_text(text: str) -> Reply:
    body = fixture_json("openai/chat_text.json")
    body["choices"][0]["message"]["content"] = text
    return json_reply(body)


def openai_call(name: str, arguments: str, call_id: str) -> Reply:
    body = fixture_json("openai/chat_tool_calls.json")
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    ]
    return json_reply(body)


def anthropic_text(text: str) -> Reply:
    body = fixture_json("anthropic/message_text.json")
    body["content"] = [{"type": "text", "text": text}]
    body["stop_reason"] = "end_turn"
    return json_reply(body)


def anthropic_call(name: str, arguments: dict[str, Any], call_id: str) -> Reply:
    body = fixture_json("anthropic/message_text.json")
    body["content"] = [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]
    body["stop_reason"] = "tool_use"
    return json_reply(body)


def text_reply(provider: str, text: str) -> Reply:
    return openai_text(text) if provider == "openai" else anthropic_text(text)


def call_reply(provider: str, name: str, city: str, call_id: str) -> Reply:
    if provider == "openai":
        return openai_call(name, f'{{"city":"{city}"}}', call_id)
    return anthropic_call(name, {"city": city}, call_id)


def stream_text(provider: str) -> Reply:
    name = "openai/stream_text_crlf.sse" if provider == "openai" else "anthropic/stream_text.sse"
    return sse_reply(fixture_bytes(name), chunk_size=7)


@pytest.fixture
def environ(provider_server: ProviderServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", provider_server.url + "/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", provider_server.url)
    yield


MODELS = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-sonnet-4-5"}


@tool
def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city: the city's name.
    """
    return f"18 C in {city}"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_every_sync_method_many_times_on_one_agent(
    provider: str, provider_server: ProviderServer, environ: None
) -> None:
    agent = Agent(MODELS[provider], instructions="Be terse.", tools=[get_weather])
    history: tuple[Any, ...] = ()
    for round_no in range(3):
        provider_server.enqueue(
            call_reply(provider, "get_weather", "Paris", f"call_a{round_no}"),
            text_reply(provider, f"sunny {round_no}"),
        )
        first = agent.run_sync("Weather in Paris?")
        assert first.output == f"sunny {round_no}"
        provider_server.enqueue(text_reply(provider, "and more"))
        follow = agent.run_with_history_sync(first.messages, "And in Oslo?")
        assert follow.conversation_id == first.conversation_id
        provider_server.enqueue(stream_text(provider))
        streamed = agent.run_stream_sync("Say hi", on_delta=lambda _: None)
        assert streamed.output
        provider_server.enqueue(stream_text(provider))
        chained = agent.run_stream_with_history_sync(follow.messages, "again")
        assert chained.output == streamed.output
        history = chained.messages
    assert len(provider_server.requests) == 3 * 5
    assert len(history) > 6


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_deferred_sync_twice_and_mixed_with_asyncio_run(
    provider: str, provider_server: ProviderServer, environ: None
) -> None:
    @tool(requires_approval=True)
    def delete_file(city: str) -> str:
        """Delete a file.

        Args:
            city: which one.
        """
        return f"deleted {city}"

    agent = Agent(MODELS[provider], tools=[delete_file])
    for i in range(2):
        provider_server.enqueue(call_reply(provider, "delete_file", "x", f"call_d{i}"))
        paused = agent.run_sync("delete x")
        assert paused.paused
        provider_server.enqueue(text_reply(provider, "done"))
        resumed = agent.run_with_deferred_results_sync(
            paused.messages, {paused.deferred[0].call.id: Approved()}
        )
        assert resumed.output == "done"
        # a user's own asyncio.run between sync calls: a new loop each time
        provider_server.enqueue(text_reply(provider, "async"))
        assert asyncio.run(agent.run("hi")).output == "async"


def test_an_error_from_a_sync_method_has_no_event_loop_context(
    provider_server: ProviderServer, environ: None
) -> None:
    agent = Agent(MODELS["openai"], max_requests=1)
    provider_server.enqueue(json_reply({"error": {"message": "bad", "type": "x"}}, status=400))
    with pytest.raises(RunError) as caught:
        agent.run_sync("hi")
    chain: list[BaseException] = []
    error: BaseException | None = caught.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert not any("no running event loop" in str(e) for e in chain), chain


def tour_sources() -> list[tuple[Path, str]]:
    """The README's short tour and the whole one of the conversations guide (issue 45
    item 6): they make the same requests, so one script of replies serves both."""
    found = []
    for path in (README, GUIDE):
        text = path.read_text(encoding="utf-8")
        match = re.search(r"## A short tour\s+```python\n(.*?)```", text, re.S)
        assert match is not None, f"{path.name} has no tour"
        found.append((path, match.group(1)))
    return found


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_readme_tour_runs_twice_in_a_row(
    provider: str, provider_server: ProviderServer, environ: None
) -> None:
    for path, source in tour_sources():
        assert '"openai:gpt-4o-mini"' in source
        if provider == "anthropic":
            source = source.replace('"openai:gpt-4o-mini"', '"anthropic:claude-sonnet-4-5"', 1)
        for round_no in range(2):
            provider_server.enqueue(
                call_reply(provider, "get_weather", "Paris", f"call_t{round_no}"),
                text_reply(provider, "18 C in Paris"),
                text_reply(provider, "Oslo: 5 C"),
                text_reply(provider, "Starting over"),
                text_reply(provider, "went"),
            )
            namespace: dict[str, Any] = {"__name__": f"tour_{round_no}"}
            exec(compile(source, str(path), "exec"), namespace)  # the tour as written
            assert namespace["first"].output == "18 C in Paris"
            assert namespace["fork"].conversation_id != namespace["follow"].conversation_id
    assert not provider_server.replies, "the tour made fewer requests than scripted"
