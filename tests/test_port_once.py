"""A request's history is ported once, and settings are merged by one rule (issue 32,
item 9): the run's ``HistoryPorted`` report and the body sent come from the same port."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
)

import golem_shell.models._adapter as adapter_module
from golem_core import HistoryPorted, Message, ModelRequest, ModelSettings, ThinkingPart
from golem_core.providers import PortReport, Target
from golem_core.retry import RetryPolicy
from golem_shell import Agent
from golem_shell.models import OpenAIModel
from golem_shell.run._limits import merge_settings

ROOT = Path(__file__).resolve().parents[1]
FAST = RetryPolicy(max_attempts=2, base=0.01, cap=0.02)


def answer(text: str) -> Any:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4.1",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }


def from_anthropic() -> tuple[Message, ...]:
    """A closed turn from Claude: its signed thinking cannot go to OpenAI."""
    step = Message.assistant("Sunny.", thinking=[ThinkingPart("Plan.", signature="sig")])
    step = attrs.evolve(step, provider="anthropic", model="claude-sonnet-4-5", endpoint="a")
    return (Message.user("Weather?"), step)


@pytest.fixture
def ports(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the calls of ``port_history`` the adapters make."""
    calls: list[int] = []
    real = adapter_module.port_history

    def counting(history: Any, target: Target, **kw: Any) -> tuple[Any, PortReport]:
        calls.append(len(history))
        return real(history, target, **kw)

    monkeypatch.setattr(adapter_module, "port_history", counting)
    return calls


def test_an_observed_request_is_ported_once(
    provider_server: ProviderServer, ports: list[int]
) -> None:
    provider_server.enqueue(json_reply(answer("Rome too.")))
    model = OpenAIModel("gpt-4.1", api_key="k", base_url=f"{provider_server.url}/v1", retry=FAST)
    events: list[object] = []
    result = Agent(model).run_with_history_sync(
        from_anthropic(), "And Rome?", on_event=events.append
    )
    assert result.output == "Rome too."
    (ported,) = [e for e in events if isinstance(e, HistoryPorted)]
    assert [p.what for p in ported.report.left_off] == ["signed thinking"]
    assert len(ports) == 1  # the event's report and the body: one port
    assert "Plan." not in json.dumps(provider_server.requests[0].json())


def test_concurrent_requests_keep_their_own_port(ports: list[int]) -> None:
    model = OpenAIModel("gpt-4.1", api_key="k", base_url="http://127.0.0.1:9/v1")
    one = ModelRequest((*from_anthropic(), Message.user("One?")))
    two = ModelRequest((*from_anthropic(), Message.user("Two?")))
    assert model.port_report(one).changed and model.port_report(two).changed
    sent_one, _ = model.ported(one)
    sent_two, _ = model.ported(two)
    assert len(ports) == 2
    assert sent_one.messages[-1].text == "One?" and sent_two.messages[-1].text == "Two?"
    model.ported(one)  # a request sent again without a report is ported anew
    assert len(ports) == 3


def test_an_unobserved_request_is_ported_once_too(
    provider_server: ProviderServer, ports: list[int]
) -> None:
    provider_server.enqueue(json_reply(answer("Yes.")))
    model = OpenAIModel("gpt-4.1", api_key="k", base_url=f"{provider_server.url}/v1", retry=FAST)
    asyncio.run(model.request(ModelRequest((*from_anthropic(), Message.user("Ok?")))))
    assert len(ports) == 1


def test_settings_are_merged_by_one_rule(provider_server: ProviderServer) -> None:
    """An adapter's defaults under a request's settings, as an agent's under a run's."""
    defaults = ModelSettings(max_tokens=50, temperature=0.5, stop=("END",))
    run = ModelSettings(temperature=0.1)
    merged = merge_settings(defaults, run)
    assert merged == ModelSettings(max_tokens=50, temperature=0.1, stop=("END",))
    provider_server.enqueue(json_reply(answer("Hi.")))
    model = OpenAIModel(
        "gpt-4.1", api_key="k", base_url=f"{provider_server.url}/v1", settings=defaults
    )
    asyncio.run(model.request(ModelRequest((Message.user("Hi"),), settings=run)))
    body = provider_server.requests[0].json()
    assert (body["max_tokens"], body["temperature"], body["stop"]) == (50, 0.1, ["END"])
    sources = [p.read_text(encoding="utf-8") for p in (ROOT / "golem_shell").rglob("*.py")]
    assert sum(s.count("def merge_settings(") for s in sources) == 1
