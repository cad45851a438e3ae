"""A deeply nested body from a provider is read with the cyclic collector paused.

Reading JSON nested as deep as the interpreter allows (a hostile or broken provider's
``[[[[...``) runs at the recursion limit; a collection that starts there runs every
pending finalizer at that depth, where any finalizer that calls a few functions fails
with ``RecursionError`` (reported as "Exception ignored", its resource left open: CI
once saw ten such failures in one test). So golem parses what a provider sends with the
collector paused, as ``decode_history`` builds (ADR 0093). A ``gc`` callback probes the
stack at the start of every collection, with the thresholds set so that one starts at
nearly every allocation.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from golem_core import Message, ModelRequest
from golem_shell import AnthropicModel, GeminiModel, ModelError, OpenAIModel
from golem_shell.models import Model

pytestmark = pytest.mark.anyio

DEEP = b"[" * 100_000


def _recurse(n: int) -> int:
    return 0 if n == 0 else 1 + _recurse(n - 1)


@pytest.fixture
def collections_near_the_limit() -> Iterator[list[int]]:
    """The generations of the collections that started with fewer than 60 frames left."""
    near: list[int] = []

    def probe(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            try:
                _recurse(60)
            except RecursionError:
                near.append(info["generation"])

    threshold = gc.get_threshold()
    gc.collect()
    gc.callbacks.append(probe)
    gc.set_threshold(1, 1, 1)  # a collection at (nearly) every allocation
    try:
        yield near
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(probe)


def _client(status: int, body: bytes) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers={"content-type": "application/json"})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


MODELS: dict[str, Callable[[httpx.AsyncClient], Model]] = {
    "openai": lambda c: OpenAIModel("gpt-4o-mini", api_key="sk-test", http_client=c),
    "anthropic": lambda c: AnthropicModel("claude-sonnet-4-5", api_key="k", http_client=c),
    "gemini": lambda c: GeminiModel("gemini-2.5-flash", api_key="g", http_client=c),
}


@pytest.mark.parametrize("status", [200, 500])
@pytest.mark.parametrize("provider", sorted(MODELS))
async def test_no_collection_starts_inside_a_deep_body(
    provider: str, status: int, collections_near_the_limit: list[int]
) -> None:
    async with _client(status, DEEP) as client:
        model: Any = MODELS[provider](client)
        request = ModelRequest(messages=(Message.user("hi"),))
        with pytest.raises(ModelError):
            await model.request(request)
    assert collections_near_the_limit == []


async def test_no_collection_starts_inside_a_deep_stream_event(
    collections_near_the_limit: list[int],
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = b"data: " + DEEP + b"\n\n"
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        model = OpenAIModel("gpt-4o-mini", api_key="sk-test", http_client=client)
        request = ModelRequest(messages=(Message.user("hi"),))
        with pytest.raises(ModelError):
            async for _ in model.request_stream(request):
                pass
    assert collections_near_the_limit == []
