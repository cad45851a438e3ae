"""Issue 28, item 8: the provider token counters are built on the models' ``ProviderHTTP``
and credential rules: a counter used in one ``asyncio.run`` and then another gets a
client for each loop (never a raw "Event loop is closed"), and a failure is a
``ModelError`` naming it."""

from __future__ import annotations

import asyncio

import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
)
from pytest_httpserver import HTTPServer

from golem_core import Message, ModelErrorKind, RetryPolicy
from golem_shell import ModelError, UsageError
from golem_shell.context._token_counters import anthropic_token_counter, gemini_token_counter

KEY = "sk-count-secret-4b1d"


def test_a_counter_works_across_two_asyncio_runs(provider_server: ProviderServer) -> None:
    """A keep-alive server (uvicorn): the first run's pooled connection belongs to a loop
    that has ended; the second run must not touch it."""
    provider_server.enqueue(*(json_reply({"input_tokens": n}) for n in (12, 10, 15)))
    counter = anthropic_token_counter(
        "claude-x", api_key=KEY, base_url=provider_server.url, cache_size=0
    )
    assert asyncio.run(counter(Message.user("first, in one event loop"))) == 2
    assert asyncio.run(counter(Message.user("then in another"))) == 5  # was: loop is closed
    assert [r.path for r in provider_server.requests] == ["/v1/messages/count_tokens"] * 3


def test_a_failure_in_a_second_run_is_a_model_error(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1beta/models/gemini-x:countTokens").respond_with_json(
        {"totalTokens": 5}
    )
    counter = gemini_token_counter(
        "gemini-x",
        api_key=KEY,
        base_url=httpserver.url_for("/v1beta"),
        retry=RetryPolicy.never(),
        cache_size=0,
    )
    assert asyncio.run(counter(Message.user("one"))) == 0
    httpserver.clear()
    httpserver.expect_request("/v1beta/models/gemini-x:countTokens").respond_with_json(
        {"error": {"code": 429, "message": f"slow down {KEY}", "status": "RESOURCE_EXHAUSTED"}},
        status=429,
    )
    with pytest.raises(ModelError) as caught:
        asyncio.run(counter(Message.user("two")))
    assert caught.value.kind is ModelErrorKind.RATE_LIMIT
    assert "counting tokens failed" in str(caught.value)
    assert KEY not in str(caught.value)


@pytest.mark.anyio
async def test_the_counters_follow_the_models_credential_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GEMINI_BASE_URL", raising=False)
    with pytest.raises(UsageError, match="no Anthropic API key"):  # at the first count
        await anthropic_token_counter("claude-x")(Message.user("hi"))
    with pytest.raises(UsageError, match="header cannot carry"):  # the models' key check
        anthropic_token_counter("claude-x", api_key="sk-with-newline\n")
    with pytest.raises(UsageError, match="needs a model name"):  # GeminiModel's own rule
        gemini_token_counter(" ", api_key=KEY)
