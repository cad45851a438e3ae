"""An HTTP model is freed as soon as its last reference goes, never left to the cyclic
garbage collector.

``HTTPModel.__init__`` once stored closures over ``self`` (the decoders recording the
model asked for), so every model, and the ``ProviderHTTP`` it owns, was cyclic garbage.
The ``weakref.finalize`` that closes an owned client then ran whenever the collector
happened to run: in CI that was inside ``json.loads`` of a hostile, deeply nested error
body (``tests/test_faults.py``, ``500-deep-json-body``) at the interpreter's recursion
limit, where ten such finalizers raised ``RecursionError`` and pytest's unraisable-
exception check failed an unrelated test.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
)

from golem_core.retry import RetryPolicy
from golem_shell import Agent, RunError
from golem_shell.models.anthropic import AnthropicModel
from golem_shell.models.gemini import GeminiModel
from golem_shell.models.openai import OpenAIModel
from golem_shell.models.openai_responses import OpenAIResponsesModel

ADAPTERS: dict[str, Any] = {
    "openai": lambda url: OpenAIModel("gpt-4o-mini", api_key="k", base_url=f"{url}/v1"),
    "openai-responses": lambda url: OpenAIResponsesModel(
        "gpt-4o-mini", api_key="k", base_url=f"{url}/v1"
    ),
    "anthropic": lambda url: AnthropicModel("claude-sonnet-4-5", api_key="k", base_url=url),
    "gemini": lambda url: GeminiModel("gemini-2.5-flash", api_key="k", base_url=url),
}
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hi."}, "finish_reason": "stop"}
    ],
}


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic collector off for the test: only reference counting frees anything."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_a_dropped_model_is_freed_by_reference_counting(no_collector: None, adapter: str) -> None:
    model = ADAPTERS[adapter]("http://127.0.0.1:9")
    model_ref = weakref.ref(model)
    http_ref = weakref.ref(model._http)
    del model
    assert model_ref() is None, f"{adapter}: the model is kept alive by a reference cycle"
    assert http_ref() is None, f"{adapter}: its ProviderHTTP outlives it"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_model_after_runs_and_aclose_is_freed_by_reference_counting(
    no_collector: None, provider_server: ProviderServer, stream: bool
) -> None:
    """The ``tests/test_faults.py`` shape: an owned client, a run that answers, a run that
    fails (its ``ModelError`` once stayed on the run's effects, a cycle through its
    traceback's frames), ``aclose``; then dropping the model frees it."""
    provider_server.enqueue(json_reply(ANSWER))
    provider_server.enqueue(json_reply({"error": {"message": "no"}}, status=400))
    model = OpenAIModel(
        "gpt-4o-mini",
        api_key="k",
        base_url=f"{provider_server.url}/v1",
        retry=RetryPolicy(max_attempts=1),
    )
    model_ref = weakref.ref(model)
    http_ref = weakref.ref(model._http)

    async def runs(model: OpenAIModel) -> None:
        agent = Agent(model)
        assert (await agent.run("hi")).output == "Hi."
        with pytest.raises(RunError, match="HTTP 400"):
            if stream:
                await agent.run_stream("again")
            else:
                await agent.run("again")
        await model.aclose()

    asyncio.run(runs(model))
    del model
    assert model_ref() is None, "the model is kept alive by a reference cycle"
    assert http_ref() is None, "its ProviderHTTP outlives it"


def test_a_dropped_models_finalizer_never_runs_at_the_recursion_limit(
    no_collector: None,
) -> None:
    """The CI failure itself: models dropped earlier, then the collector run from deep in
    the stack (as an allocation deep in ``json.loads`` of a nested body does) reports no
    finalizer that failed there."""
    unraisable: list[Any] = []
    hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        for make in ADAPTERS.values():
            make("http://127.0.0.1:9")

        def down(frames: int) -> None:
            if frames > 0:
                down(frames - 1)
            else:
                gc.collect()

        def room(frames: int) -> int:
            try:
                return room(frames + 1)
            except RecursionError:
                return frames

        # ``gc.collect`` a few frames short of the limit: a finalizer that calls
        # anything there raises RecursionError
        down(room(0) - 4)
    finally:
        sys.unraisablehook = hook
    failed = [f"{u.err_msg}: {type(u.exc_value).__name__}: {u.exc_value}" for u in unraisable]
    assert failed == []
