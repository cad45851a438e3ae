"""The run keywords of a durable run (golem_shell.engines._keywords, issue 45 item 2):
recorded when the run starts, read back as JSON, and the run's spec built from the record
and the agent, never from the agent's defaults of the day. Engine-neutral: the engines'
own tests (test_durable.py, test_temporal.py, the conformance suites) run them end to end.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from golem_core import ModelSettings, Price
from golem_shell import Agent, FunctionModel, Steering, UsageError, UsageLimits
from golem_shell.engines._engine import recorded_options, run_input
from golem_shell.engines._keywords import RECORDED, REFUSED, Keywords
from golem_shell.engines._records import NO_DEPS, RecordedOptions, decode, encode
from golem_shell.engines.temporal._common import PROCESS_BLOBS
from golem_shell.run._options import RunOptions


@attrs.frozen
class Verdict:
    label: str
    score: int


OWN = FunctionModel(lambda r: "own")
FAST = FunctionModel(lambda r: "fast")


def _keywords(agent: Agent[Any, Any] | None = None) -> Keywords:
    agent = agent if agent is not None else Agent(OWN)
    return Keywords("DurableAgent", agent, {"own": OWN, "fast": FAST}, {"verdict": Verdict})


def test_the_recordable_keywords_round_trip_through_the_runs_input() -> None:
    keywords = _keywords()
    settings = ModelSettings(temperature=0.25, stop=("END",))
    limits = UsageLimits(request_limit=3, cost_limit=1.5, price=Price(input=1.0, output=2.0))
    recorded = keywords.record(
        "run",
        {"model": FAST, "settings": settings, "usage_limits": limits, "deps": {"user": "ada"}},
        Verdict,
    )
    assert recorded == RecordedOptions(
        model="fast",
        settings=settings,
        usage_limits=limits,
        output_type="verdict",
        deps={"user": "ada"},
    )
    started = run_input("hi", (), "run-1", None, PROCESS_BLOBS, recorded)
    wire = json.loads(json.dumps(started))  # what an engine stores
    assert recorded_options(wire) == recorded
    spec = keywords.spec(recorded_options(wire))
    assert spec.model is FAST
    assert spec.settings.temperature == 0.25 and spec.settings.stop == ("END",)
    assert (spec.usage_limits, spec.max_requests) == (limits, 3)
    assert spec.output.type is Verdict
    assert keywords.deps(recorded, "worker's") == {"user": "ada"}
    assert keywords.deps(RecordedOptions(), "worker's") == "worker's"


def test_a_run_started_before_keywords_were_recorded_reads_as_none() -> None:
    assert recorded_options({"runId": "r", "conversationId": "c"}) == RecordedOptions()
    assert decode(encode(RecordedOptions())) == RecordedOptions()
    assert RecordedOptions().deps is NO_DEPS
    assert decode(encode(RecordedOptions(deps=None))).deps is None  # None is a value


def test_the_agents_own_model_is_pinned_when_the_run_starts() -> None:
    agent = Agent(OWN)
    keywords = _keywords(agent)
    recorded = keywords.record("run", {}, None)
    assert recorded.model == "own"  # registered: recorded by its name
    agent.model = FAST  # the worker's agent changes meanwhile
    assert keywords.spec(recorded).model is OWN

    unregistered = FunctionModel(lambda r: "x", name="unregistered")
    agent = Agent(unregistered)
    keywords = _keywords(agent)
    recorded = keywords.record("run", {}, None)
    assert (recorded.model, recorded.agent_model) == (None, "unregistered")
    assert keywords.spec(recorded).model is unregistered
    agent.model = FAST
    with pytest.raises(UsageError, match="started on the agent's model 'unregistered'"):
        keywords.spec(recorded)


def test_a_model_string_is_recorded_as_given_and_checked_now() -> None:
    keywords = _keywords()
    assert keywords.record("run", {"model": "fast"}, None).model == "fast"
    assert keywords.record("run", {"model": "test"}, None).model == "test"
    assert keywords.spec(RecordedOptions(model="test")).model.name == "test"
    with pytest.raises(UsageError, match="unknown model 'opnai:gpt-4o'"):
        keywords.record("run", {"model": "opnai:gpt-4o"}, None)


def test_what_cannot_be_recorded_is_refused_saying_what_to_do() -> None:
    keywords = _keywords()
    with pytest.raises(UsageError, match=r"DurableAgent.start\(on_event=...\): a function"):
        keywords.record("start", {"on_event": print}, None)
    with pytest.raises(UsageError, match=r"steering=.*DurableAgent.steer\(run_id"):
        keywords.record("start", {"steering": Steering()}, None)
    with pytest.raises(UsageError, match=r"models=\{'name': model\}"):
        keywords.record("start", {"model": FunctionModel(lambda r: "x")}, None)
    for deps in (object(), {"when": (1, 2)}, {1: "non-string key"}, float("nan")):
        with pytest.raises(UsageError, match="records its deps as JSON"):
            keywords.record("start", {"deps": deps}, None)
    with pytest.raises(UsageError, match=r"output_types=\{'name': type\}"):
        keywords.record("start", {}, int)
    with pytest.raises(TypeError, match="unexpected keyword argument 'temperature'"):
        keywords.record("start", {"temperature": 0.2}, None)
    with pytest.raises(UsageError, match="does not register"):
        keywords.spec(RecordedOptions(output_type="gone"))
    with pytest.raises(UsageError, match="is not a Model"):
        Keywords("DurableAgent", Agent(OWN), {"m": "openai:gpt-4o"}, None)  # type: ignore[dict-item]
    with pytest.raises(UsageError, match="keys are non-empty strings"):
        Keywords("DurableAgent", Agent(OWN), {"": OWN}, None)


def test_every_run_keyword_is_recorded_or_refused_by_name() -> None:
    """A keyword added to ``RunOptions`` is decided for durable runs (recorded, or refused
    with what to do); until then it is refused, never silently ignored."""
    assert set(RunOptions.__optional_keys__) == RECORDED | REFUSED
    assert not RECORDED & REFUSED
