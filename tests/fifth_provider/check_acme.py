"""Run by ``tests/test_registry.py`` in a copy of golem to which Acme, a
fictional fifth provider, was added the documented way (a ``Provider`` member and its
profile, a codec, an adapter, one ``ADAPTERS`` line) and nothing else: Acme works end to
end. Its model string, key, endpoint and OpenTelemetry name, a run against it (an
``httpx.MockTransport``), porting its history to and from the other providers, and its
native compaction all come from its profile."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from golem_shell.models.acme import AcmeModel  # type: ignore[import-not-found]

import golem_core
import golem_shell
from golem_core import Message, Role, TextPart, compaction_of, port_history
from golem_core.providers import PROFILES, Provider, Target, profile_of, recorded_provider
from golem_core.wire import acme as acme_wire  # type: ignore[attr-defined]
from golem_core.wire import anthropic as anthropic_wire
from golem_shell import Agent, native_compaction
from golem_shell.models import infer_model
from golem_shell.observe._otel import model_names

SUMMARY = "Earlier: the user ordered one anvil."
ENDPOINT = "api.acme.test"


def test_this_is_the_copy_with_a_fifth_provider() -> None:
    here = Path.cwd().resolve()
    for package in (golem_core, golem_shell):
        assert Path(package.__file__ or "").resolve().is_relative_to(here)
    assert len(Provider) == 5 and set(PROFILES) == set(Provider)
    assert recorded_provider("ACME") is Provider("acme")


def test_its_model_string_key_and_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_API_KEY", "k")
    model = infer_model("acme:anvil-1")
    assert isinstance(model, AcmeModel)
    assert model.name == "acme:anvil-1"
    assert model.url == "https://api.acme.test/v1/chat/completions"
    assert model_names(model) == ("acme", "anvil-1")
    with pytest.raises(golem_shell.UsageError, match="did you mean 'acme:anvil-2'"):
        infer_model("anvil-2")  # its model family


def run_against_acme() -> tuple[tuple[Message, ...], list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = {
            "id": "c1",
            "model": "anvil-1",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "One anvil, shipped."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            "acme_compaction": SUMMARY,
        }
        return httpx.Response(200, json=answer)

    async def main() -> tuple[Message, ...]:
        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        model = AcmeModel(
            "anvil-1", api_key="k", base_url=f"https://{ENDPOINT}/v1", http_client=client
        )
        result = await Agent(model).run("Where is my anvil?")
        await client.aclose()
        assert result.output.endswith("One anvil, shipped.")
        return result.messages

    return asyncio.run(main()), seen


def test_a_run_against_it() -> None:
    messages, seen = run_against_acme()
    (request,) = seen
    assert str(request.url) == f"https://{ENDPOINT}/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer k"
    assert json.loads(request.content)["model"] == "anvil-1"
    answer = messages[-1]
    assert (answer.provider, answer.endpoint) == ("acme", ENDPOINT)
    compaction = answer.parts[0]
    assert isinstance(compaction, TextPart) and compaction.text == SUMMARY
    assert answer.parts[-1] == TextPart("One anvil, shipped.")
    assert dict(compaction.extra)[acme_wire.COMPACTION_KEY] == json.dumps(SUMMARY)


def test_its_history_ports_by_its_profile() -> None:
    history = (*run_against_acme()[0], Message.user("And the hammer?"))
    rule = profile_of("acme").compaction
    assert rule is not None and rule.marker == acme_wire.COMPACTION_KEY
    # to itself: as it came
    home = AcmeModel("anvil-1", api_key="k", base_url=f"https://{ENDPOINT}/v1")
    ported, report = port_history(history, home.target)
    assert ported == history and not report.changed
    # elsewhere: its readable summary travels as text, reported as its rule says
    ported, report = port_history(history, Target("openai", "gpt-4o", "api.openai.com"))
    assert [p.what for p in report.as_text] == ["compaction summary"]
    assert ported[-2].parts[0] == TextPart(SUMMARY)
    # another provider's compaction, sent to Acme: text too
    block = TextPart("Anthropic's summary", extra=((anthropic_wire.COMPACTION_KEY, '"x"'),))
    foreign = Message(
        Role.ASSISTANT, (block,), provider="anthropic", model="claude-sonnet-4-5", endpoint="a"
    )
    ported, report = port_history((Message.user("go"), foreign), home.target)
    assert [p.what for p in report.as_text] == ["compaction summary"]
    assert ported[1].parts == (TextPart("Anthropic's summary"),)


def test_native_compaction_folds_as_its_profile_says() -> None:
    messages = run_against_acme()[0]
    older = (Message.user("Hello"), Message.assistant("Hi, this is Acme."))
    history = (*older, *messages, Message.user("And the hammer?"))
    model = AcmeModel("anvil-1", api_key="k", base_url=f"https://{ENDPOINT}/v1")

    def never(_: object) -> object:
        raise AssertionError("Acme compacts itself: no fallback")

    cut = asyncio.run(native_compaction(model, fallback=never)(history)).unwrap()  # type: ignore[arg-type]
    at = history.index(messages[-1])
    assert cut[1:] == history[at + 1 :]
    record = compaction_of(cut[0])
    assert record is not None and len(record.replaced) == at
