"""Provider token counters (Anthropic count_tokens, Gemini countTokens) and the async budget.

The provider is a MockTransport that counts like a tokenizer would (a fixed cost per
request plus one token per four characters of the messages it was sent), and once a
real loopback HTTP server (pytest-httpserver) for the counter's own client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
)
from pytest_httpserver import HTTPServer
from returns.result import Failure, Success

from golem_core import (
    HistoryError,
    Message,
    ModelErrorKind,
    RetryPolicy,
    TextPart,
    ToolCallPart,
    URLPart,
    budget_history,
    token_counter,
)
from golem_shell._errors import ModelError, UsageError
from golem_shell.context._summarize import run_history_processor
from golem_shell.context._token_counters import (
    ProviderTokenCounter,
    anthropic_token_counter,
    async_budget_history,
    gemini_token_counter,
)

pytestmark = pytest.mark.anyio

KEY = "sk-test-secret-key-123"
HI = {"type": "text", "text": "Hi"}
OVERHEAD = 7


@pytest.fixture(autouse=True)
def _no_google_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    yield


class Provider:
    """A fake counting endpoint: records requests, answers a deterministic count."""

    def __init__(self, field: str, status: int = 200, answer: Any = None) -> None:
        self.field = field
        self.status = status
        self.answer = answer
        self.requests: list[httpx.Request] = []

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.status != 200 or self.answer is not None:
            return httpx.Response(self.status, json=self.answer)
        body = json.loads(request.content)
        payload = body.get("messages", body.get("contents"))
        tokens = OVERHEAD + len(json.dumps(payload)) // 4
        return httpx.Response(200, json={self.field: tokens})

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))


def expected(provider: Provider, counter: ProviderTokenCounter, message: Message) -> int:
    """What the fake gives for ``message``: the request with it minus the request without."""
    with_it = counter._body((Message.user("Hi"), message))
    without = counter._body((Message.user("Hi"),))
    key = "messages" if "messages" in with_it else "contents"
    return len(json.dumps(with_it[key])) // 4 - len(json.dumps(without[key])) // 4


LONG = Message.user("The quick brown fox jumps over the lazy dog. " * 20)
TURN = Message.assistant(
    "checking", tool_calls=[ToolCallPart("c1", "get_weather", '{"city":"Oslo"}')]
)
RESULT = Message.tool_result("c1", "get_weather", "sunny, 21 degrees")


# -- Anthropic ------------------------------------------------------------------------------


async def test_anthropic_counts_a_message_as_the_difference_it_makes() -> None:
    provider = Provider("input_tokens")
    counter = anthropic_token_counter("claude-x", api_key=KEY, http_client=provider.client())
    count = await counter(LONG)
    assert count == expected(provider, counter, LONG) > 100
    counted, baseline = provider.requests  # the baseline is asked once, after the first
    for request in (counted, baseline):
        assert request.url == "https://api.anthropic.com/v1/messages/count_tokens"
        assert request.headers["x-api-key"] == KEY
        assert request.headers["anthropic-version"] == "2023-06-01"
    assert provider.bodies() == [
        {
            "model": "claude-x",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        HI,
                        {"type": "text", "text": LONG.text},
                    ],
                }
            ],
        },
        {"model": "claude-x", "messages": [{"role": "user", "content": [HI]}]},
    ]


async def test_anthropic_counts_tool_calls_and_results_as_the_text_sent_without_tools() -> None:
    provider = Provider("input_tokens")
    counter = anthropic_token_counter("claude-x", api_key=KEY, http_client=provider.client())
    assert await counter(TURN) == expected(provider, counter, TURN)
    assert await counter(RESULT) == expected(provider, counter, RESULT)
    sent = json.dumps(provider.bodies(), ensure_ascii=False)
    assert "[tool call get_weather (id c1)]" in sent
    assert "[tool result get_weather (id c1)] sunny, 21 degrees" in sent
    assert "tool_use" not in sent


async def test_counts_are_cached_by_what_is_sent() -> None:
    provider = Provider("input_tokens")
    counter = anthropic_token_counter("claude-x", api_key=KEY, http_client=provider.client())
    first = await counter(LONG)
    stamped = LONG.with_ids("run-1", "conv-1")  # stamps never reach the provider
    assert await counter(stamped) == first
    assert await counter(LONG) == first
    assert len(provider.requests) == 2  # the baseline and the message, once
    assert (counter.hits, counter.misses) == (2, 1)


async def test_the_cache_forgets_the_least_recently_used() -> None:
    provider = Provider("input_tokens")
    counter = anthropic_token_counter(
        "claude-x", api_key=KEY, http_client=provider.client(), cache_size=1
    )
    await counter(Message.user("a"))
    await counter(Message.user("b"))
    await counter(Message.user("a"))
    assert len(provider.requests) == 4  # baseline, a, b, a again


async def test_what_is_never_sent_counts_zero_without_a_request() -> None:
    provider = Provider("input_tokens")
    counter = anthropic_token_counter("claude-x", api_key=KEY, http_client=provider.client())
    assert await counter(Message.system("you are helpful")) == 0
    assert await counter(Message.user("")) == 0
    assert provider.requests == []


async def test_content_anthropic_cannot_take_counts_as_its_stand_in() -> None:
    provider = Provider("input_tokens")
    counter = anthropic_token_counter("claude-x", api_key=KEY, http_client=provider.client())
    audio = Message.user("listen", URLPart("https://example.com/a.mp3", "audio"))
    assert await counter(audio) == expected(provider, counter, audio)  # ADR 0067
    assert "not sent, Anthropic cannot take it" in json.dumps(provider.bodies())


async def test_an_error_answer_is_a_model_error_without_the_key() -> None:
    answer = {"type": "error", "error": {"type": "rate_limit_error", "message": f"slow {KEY}"}}
    provider = Provider("input_tokens", status=429, answer=answer)
    counter = anthropic_token_counter(
        "claude-x", api_key=KEY, http_client=provider.client(), retry=RetryPolicy.never()
    )
    with pytest.raises(ModelError) as caught:
        await counter(LONG)
    assert caught.value.kind is ModelErrorKind.RATE_LIMIT
    assert caught.value.status == 429
    assert KEY not in str(caught.value)
    assert "counting tokens failed" in str(caught.value)


async def test_an_answer_without_a_count_is_a_bad_response() -> None:
    provider = Provider("input_tokens", answer={"tokens": 3})
    counter = anthropic_token_counter("claude-x", api_key=KEY, http_client=provider.client())
    with pytest.raises(ModelError) as caught:
        await counter(LONG)
    assert caught.value.kind is ModelErrorKind.BAD_RESPONSE


async def test_a_connection_failure_is_a_model_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(refuse))
    counter = anthropic_token_counter(
        "claude-x", api_key=KEY, http_client=client, retry=RetryPolicy.never()
    )
    with pytest.raises(ModelError) as caught:
        await counter(LONG)
    assert caught.value.kind is ModelErrorKind.CONNECTION


async def test_keys_and_base_urls_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # made without a key (at import time, say): the key is read at the first count
    with pytest.raises(UsageError, match="no Anthropic API key"):
        await anthropic_token_counter("claude-x")(LONG)
    with pytest.raises(UsageError, match="no Gemini API key"):
        await gemini_token_counter("gemini-x")(LONG)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert repr(anthropic_token_counter("claude-x")) == "anthropic_token_counter('claude-x')"
    monkeypatch.setenv("GEMINI_BASE_URL", "http://127.0.0.1:1/v1beta")
    assert repr(gemini_token_counter("gemini-x")) == "gemini_token_counter('gemini-x')"
    with pytest.raises(UsageError, match="must start with http"):
        anthropic_token_counter("claude-x", base_url="ftp://x")


# -- Gemini ---------------------------------------------------------------------------------


async def test_gemini_counts_with_count_tokens() -> None:
    provider = Provider("totalTokens")
    counter = gemini_token_counter("gemini-2.5-flash", api_key=KEY, http_client=provider.client())
    assert await counter(LONG) == expected(provider, counter, LONG)
    assert await counter(TURN) == expected(provider, counter, TURN)
    request = provider.requests[-1]
    assert request.url == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:countTokens"
    )
    assert request.headers["x-goog-api-key"] == KEY
    assert KEY not in str(request.url)
    body = provider.bodies()[-1]
    assert list(body) == ["contents"]
    assert [c["role"] for c in body["contents"]] == ["user", "model"]


async def test_gemini_error_answer() -> None:
    answer = {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}
    provider = Provider("totalTokens", status=400, answer=answer)
    counter = gemini_token_counter("gemini-x", api_key=KEY, http_client=provider.client())
    with pytest.raises(ModelError) as caught:
        await counter(LONG)
    assert caught.value.kind is ModelErrorKind.INVALID_REQUEST


async def test_a_counter_with_its_own_client_over_real_http(httpserver: HTTPServer) -> None:
    httpserver.expect_request(
        "/v1/messages/count_tokens", method="POST", headers={"x-api-key": KEY}
    ).respond_with_json({"input_tokens": 10})
    async with anthropic_token_counter(
        "claude-x", api_key=KEY, base_url=httpserver.url_for("/")
    ) as counter:
        assert await counter(LONG) == 0  # the fake server answers 10 for every request
    assert len(httpserver.log) == 2


# -- the async budget -----------------------------------------------------------------------


def history() -> tuple[Message, ...]:
    return (
        Message.system("be brief"),
        Message.user("first question, quite long " * 10),
        TURN,
        RESULT,
        Message.assistant("an answer"),
        Message.user("second question"),
        Message.assistant("another answer"),
    )


async def test_the_async_budget_cuts_as_the_core_does() -> None:
    provider = Provider("input_tokens")
    counter = anthropic_token_counter("claude-x", api_key=KEY, http_client=provider.client())
    exact = {m: await counter(m) for m in history()}
    for budget in (1, 10, 30, 60, 100, 1000):
        processor = async_budget_history(counter, budget, concurrency=2)
        expected_result = budget_history(lambda m: exact[m], budget)(history())
        got = await run_history_processor(processor, history())
        assert type(got) is type(expected_result)
        if isinstance(got, Success):
            assert got == expected_result


async def test_the_async_budget_counts_only_what_it_needs() -> None:
    asked: list[str] = []

    async def count(message: Message) -> int:
        asked.append(message.text)
        return 10

    long = tuple(Message.user(str(i)) for i in range(50))
    processor = async_budget_history(count, 25, concurrency=4, low_water=25)  # sliding
    assert await processor(long) == Success(long[-2:])
    assert asked == [str(i) for i in range(49, 45, -1)]  # one window of four
    asked.clear()
    stepped = async_budget_history(count, 25, concurrency=4)  # counts all once it cuts
    assert await stepped(long) == Success(long[-2:])
    assert sorted(asked, key=int) == [str(i) for i in range(50)]


async def test_the_async_budget_takes_a_sync_counter_and_explains_failures() -> None:
    counter = token_counter(len)
    processor = async_budget_history(counter, 3)
    result = await processor((Message.user("far too long for three"),))
    assert isinstance(result, Failure)
    assert "kept no message" in str(result.failure())
    assert "async_budget_history" in repr(processor)


async def test_a_bad_count_is_named_by_the_core() -> None:
    async def count(message: Message) -> int:
        return -1

    with pytest.raises(ValueError, match="returned -1 for message 0"):
        await async_budget_history(count, 5)((Message.user("x"),))


def test_the_async_budget_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        async_budget_history(token_counter(len), 0)
    with pytest.raises(ValueError, match="concurrency"):
        async_budget_history(token_counter(len), 5, concurrency=0)
    with pytest.raises(TypeError, match="expected a callable"):
        async_budget_history(3, 5)  # type: ignore[arg-type]


# -- running any processor ------------------------------------------------------------------


async def test_run_history_processor_runs_sync_and_async_and_never_raises() -> None:
    h = (Message.user("a"), Message.assistant("b"))

    def sync(history: Any) -> Any:
        return Success(tuple(history[1:]))

    async def asynchronous(history: Any) -> Any:
        return Success(tuple(history[:1]))

    def broken(history: Any) -> Any:
        raise RuntimeError("boom")

    def not_a_result(history: Any) -> Any:
        return list(history)

    assert await run_history_processor(sync, h) == Success(h[1:])
    assert await run_history_processor(asynchronous, h) == Success(h[:1])
    assert await run_history_processor(broken, h) == Failure(
        HistoryError(
            "test_run_history_processor_runs_sync_and_async_and_never_raises."
            "<locals>.broken raised RuntimeError: boom"
        )
    )
    failed = await run_history_processor(not_a_result, h)
    assert isinstance(failed, Failure)
    assert "returned list" in str(failed.failure())


def test_media_parts_are_sent_to_be_counted() -> None:
    counter = anthropic_token_counter("claude-x", api_key=KEY)
    image = Message.user("see", URLPart("https://example.com/cat.png", "image"))
    body = counter._body((Message.user("Hi"), image))
    blocks = body["messages"][0]["content"]
    assert blocks[-1]["type"] == "image"
    assert TextPart("see") in image.parts


# -- counters across event loops, and the models' credential rules (correctness round 3) ---
# Issue 28, item 8: the provider token counters are built on the models' ``ProviderHTTP``
# and credential rules: a counter used in one ``asyncio.run`` and then another gets a
# client for each loop (never a raw "Event loop is closed"), and a failure is a
# ``ModelError`` naming it.


COUNT_KEY = "sk-count-secret-4b1d"


def test_a_counter_works_across_two_asyncio_runs(provider_server: ProviderServer) -> None:
    """A keep-alive server (uvicorn): the first run's pooled connection belongs to a loop
    that has ended; the second run must not touch it."""
    provider_server.enqueue(*(json_reply({"input_tokens": n}) for n in (12, 10, 15)))
    counter = anthropic_token_counter(
        "claude-x", api_key=COUNT_KEY, base_url=provider_server.url, cache_size=0
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
        api_key=COUNT_KEY,
        base_url=httpserver.url_for("/v1beta"),
        retry=RetryPolicy.never(),
        cache_size=0,
    )
    assert asyncio.run(counter(Message.user("one"))) == 0
    httpserver.clear()
    httpserver.expect_request("/v1beta/models/gemini-x:countTokens").respond_with_json(
        {
            "error": {
                "code": 429,
                "message": f"slow down {COUNT_KEY}",
                "status": "RESOURCE_EXHAUSTED",
            }
        },
        status=429,
    )
    with pytest.raises(ModelError) as caught:
        asyncio.run(counter(Message.user("two")))
    assert caught.value.kind is ModelErrorKind.RATE_LIMIT
    assert "counting tokens failed" in str(caught.value)
    assert COUNT_KEY not in str(caught.value)


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
        gemini_token_counter(" ", api_key=COUNT_KEY)
