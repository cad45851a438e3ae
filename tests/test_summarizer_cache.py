"""A summarizer's request is off the conversation's cache (issue 48 item 4).

``summarize_history``'s request has its own prefix (other instructions, the older turns,
a question), so a cache marker pays a write nothing reads back, and the conversation's
``prompt_cache_key`` routes it onto the conversation's cache. By default it carries no
Anthropic ``cache_control`` and no OpenAI ``prompt_cache_key`` (real loopback server,
the adapters' own bodies); asked to cache, it is keyed ``<conversation>/summary``.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    anyio_backend_fixture,
    fixture_json,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
)

from golem_core import Message, ModelSettings, PromptCache, RetryPolicy, Role, TextPart
from golem_shell import AnthropicModel, OpenAIModel, OpenAIResponsesModel, summarize_history
from golem_shell.context._native_compaction import native_compaction

pytestmark = pytest.mark.anyio

FAST = RetryPolicy(max_attempts=1, base=0.01, cap=0.02)
CONVERSATION = "conv-7f3a"


def history() -> tuple[Message, ...]:
    """Six turns of one conversation, stamped as a run stores them."""
    out: list[Message] = []
    for i in range(6):
        out += [
            Message.user(f"question {i} about the Lisbon launch"),
            Message(Role.ASSISTANT, (TextPart(f"answer {i}: noted"),)),
        ]
    return tuple(attrs.evolve(m, conversation_id=CONVERSATION) for m in out)


def markers(value: Any) -> int:
    """How many ``cache_control`` markers a body holds."""
    text = json.dumps(value)
    return text.count('"cache_control"')


def anthropic(server: ProviderServer, **kw: Any) -> AnthropicModel:
    return AnthropicModel(
        "claude-opus-4-6", api_key="sk-ant-test", base_url=server.url, retry=FAST, **kw
    )


def chat(server: ProviderServer, **kw: Any) -> OpenAIModel:
    return OpenAIModel(
        "gpt-4o-mini", api_key="sk-test", base_url=f"{server.url}/v1", retry=FAST, **kw
    )


def responses(server: ProviderServer) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-5", api_key="sk-test", base_url=f"{server.url}/v1", retry=FAST)


async def test_the_anthropic_summarizing_request_writes_no_cache_marker(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(json_reply(fixture_json("anthropic/message_text.json")))
    # the model's own settings ask for the one-hour cache: the summarizer still writes none
    async with anthropic(provider_server, settings=ModelSettings(cache=PromptCache("1h"))) as m:
        summarized = await summarize_history(m, keep_last_turns=1, step_turns=0)(history())
    assert summarized.unwrap()[0].text  # it summarized
    body = provider_server.requests[0].json()
    assert markers(body) == 0
    assert isinstance(body["system"], str)  # not made a marked block


async def test_the_openai_summarizing_requests_carry_no_conversation_key(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(
        json_reply(fixture_json("openai/chat_text.json")),
        json_reply(fixture_json("openai_responses/response_text.json")),
        json_reply(fixture_json("openai/chat_text.json")),
    )
    async with chat(provider_server) as c, responses(provider_server) as r:
        await summarize_history(c, keep_last_turns=1, step_turns=0)(history())
        await summarize_history(r, keep_last_turns=1, step_turns=0)(history())
        # native_compaction's fallback (no native compaction on Chat Completions) too
        await native_compaction(c, keep_last_turns=1, step_turns=0)(history())
    bodies = [q.json() for q in provider_server.requests]
    assert [q.path for q in provider_server.requests] == [
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/chat/completions",
    ]
    for body in bodies:
        assert "prompt_cache_key" not in body and "prompt_cache_retention" not in body
        assert CONVERSATION not in json.dumps(body)


async def test_asked_to_cache_the_summarizer_uses_a_key_of_its_own(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(
        json_reply(fixture_json("openai/chat_text.json")),
        json_reply(fixture_json("anthropic/message_text.json")),
        json_reply(fixture_json("openai/chat_text.json")),
    )
    asked = ModelSettings(cache=PromptCache())
    # the model's own settings name the conversation's key: the summarizer's wins
    conversation = ModelSettings(cache=PromptCache(key=CONVERSATION))
    async with chat(provider_server, settings=conversation) as c, anthropic(provider_server) as a:
        await summarize_history(c, keep_last_turns=1, step_turns=0, settings=asked)(history())
        await summarize_history(a, keep_last_turns=1, step_turns=0, settings=asked)(history())
        keyed = ModelSettings(cache=PromptCache(key="my-summaries"))
        await summarize_history(c, keep_last_turns=1, step_turns=0, settings=keyed)(history())
    chat_body, anthropic_body, keyed_body = (q.json() for q in provider_server.requests)
    assert chat_body["prompt_cache_key"] == f"{CONVERSATION}/summary"
    assert markers(anthropic_body) > 0  # asked for: written
    assert keyed_body["prompt_cache_key"] == "my-summaries"


async def test_the_bench_prices_summarizer_calls_with_the_cache_writes_they_make() -> None:
    """``bench/compaction.py``'s scripted summarizer records what a call marked for the
    cache, and its price counts it at the cache-write rate: nothing for golem's default
    summarizer, everything it read for one asked to cache."""
    from bench import cache
    from bench.compaction import OUTPUT, side_cost, summarizer
    from bench.compaction_trace import Recorder, Trace

    recorder = Recorder()
    model = summarizer(recorder)
    await summarize_history(model, keep_last_turns=1, step_turns=0)(history())
    asked = ModelSettings(cache=PromptCache())
    await summarize_history(model, keep_last_turns=1, step_turns=0, settings=asked)(history())
    (_, read, written), (_, read2, written2) = recorder.calls
    assert recorder.cache_written == [0, read2]

    trace = Trace("t", calls=list(recorder.calls), cache_written=list(recorder.cache_written))
    calls, units = side_cost(trace, upto=10)
    assert calls == 2
    assert units == read + written * OUTPUT + read2 * cache.WRITE + written2 * OUTPUT
    assert side_cost(Trace("old", calls=list(recorder.calls)), upto=10)[1] == (
        read + read2 + (written + written2) * OUTPUT  # no record of markers: 1x, as before
    )
