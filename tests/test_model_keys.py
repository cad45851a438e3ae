"""Tests without a key (issue 37 item 1): an agent made at import time needs no key until
its first request, and ``ALLOW_MODEL_REQUESTS = False`` stops a test that forgot its
override from calling a real provider, loudly, naming the model."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

import golem_shell.models
from golem_shell import Agent, ModelRequestsNotAllowed, RunError, TestModel
from golem_shell.models import AnthropicModel, GeminiModel, OpenAIModel, OpenAIResponsesModel

pytestmark = pytest.mark.anyio

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")
BASES = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GEMINI_BASE_URL")

CHAT_ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4.1",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "hello"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in KEYS + BASES:
        monkeypatch.delenv(name, raising=False)
    yield


class Recorder:
    """An httpx transport that answers every request with a chat completion."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json=CHAT_ANSWER)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))


def test_agents_are_made_at_import_time_without_a_key() -> None:
    for spec in (
        "openai:gpt-4.1",
        "openai-responses:gpt-5",
        "anthropic:claude-sonnet-4-5",
        "google:gemini-2.5-flash",
    ):
        agent = Agent(spec)  # the usual module-level agent: no key needed yet
        with agent.override(model=TestModel()):
            assert agent.run_sync("hi").output  # the override's model answers


@pytest.mark.parametrize("cls", [OpenAIModel, OpenAIResponsesModel, AnthropicModel, GeminiModel])
def test_the_first_request_without_a_key_names_the_variables(cls: type) -> None:
    agent = Agent(cls("some-model"))
    with pytest.raises(RunError, match="API key: pass api_key= or set") as caught:
        agent.run_sync("hi")
    assert any(name in str(caught.value) for name in KEYS)


async def test_a_key_set_after_the_model_was_made_is_read_at_the_first_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = Recorder()
    model = OpenAIModel("gpt-4.1", http_client=seen.client())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-late")
    result = await Agent(model).run("hi")
    assert result.output == "hello"
    assert seen.requests[0].headers["authorization"] == "Bearer sk-late"
    assert seen.requests[0].url.host == "api.openai.com"  # the default endpoint


def test_agent_test_is_the_offline_test_model() -> None:
    agent = Agent("test")
    assert isinstance(agent.model, TestModel)
    assert agent.run_sync("hi").output


@pytest.fixture
def no_model_requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(golem_shell.models, "ALLOW_MODEL_REQUESTS", False)
    yield


@pytest.mark.usefixtures("no_model_requests")
async def test_a_forgotten_override_fails_loudly_naming_the_model() -> None:
    seen = Recorder()
    agent = Agent(OpenAIModel("gpt-4.1", api_key="sk-real", http_client=seen.client()))
    with pytest.raises(ModelRequestsNotAllowed, match=r"openai:gpt-4\.1"):
        await agent.run("hi")  # raised out of the run, not a failed RunError
    with pytest.raises(ModelRequestsNotAllowed, match=r"openai:gpt-4\.1"):
        await agent.run_stream("hi", on_delta=lambda event: None)
    assert seen.requests == []  # nothing reached the provider
    with agent.override(model=TestModel()):
        assert (await agent.run("hi")).output  # the offline models still answer


@pytest.mark.usefixtures("no_model_requests")
def test_the_guard_is_the_module_attribute_users_set() -> None:
    assert golem_shell.models.ALLOW_MODEL_REQUESTS is False
    golem_shell.models.ALLOW_MODEL_REQUESTS = True  # monkeypatch restores it after
    seen = Recorder()
    agent = Agent(OpenAIModel("gpt-4.1", api_key="sk-real", http_client=seen.client()))
    assert agent.run_sync("hi").output == "hello"
    assert json.loads(seen.requests[0].content)["model"] == "gpt-4.1"
