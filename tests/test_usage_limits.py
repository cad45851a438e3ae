"""A tool-call count limit and a cost limit beside the token limits (issue 37.2), as a
pydantic-ai user reaches for them: ``UsageLimits(tool_calls_limit=...)`` and
``UsageLimits(cost_limit=..., price=Price(...))``."""

from __future__ import annotations

import attrs
import pytest

from golem_core import Message, ModelRequest, Price, Role, ToolCallPart, Usage
from golem_shell import Agent, FunctionModel, RunError, Stage, UsageError, UsageLimits

pytestmark = pytest.mark.anyio


def _agent(calls_per_turn: int, ran: list[str], usage: Usage | None = None) -> Agent[None, str]:
    """A model asking for ``calls_per_turn`` lookups each turn until it has four results."""

    def model(request: ModelRequest) -> Message | str:
        results = sum(1 for m in request.messages if m.role is Role.TOOL)
        if results >= 4:
            answer = Message.assistant("found it")
        else:
            answer = Message.assistant(
                tool_calls=[
                    ToolCallPart(f"c{results}-{i}", "lookup", f'{{"key": "k{results + i}"}}')
                    for i in range(calls_per_turn)
                ]
            )
        return attrs.evolve(answer, usage=usage) if usage is not None else answer

    agent: Agent[None, str] = Agent(FunctionModel(model))

    @agent.tool_plain
    def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return f"value of {key}"

    return agent


async def test_a_batch_that_would_pass_the_tool_call_limit_is_not_run() -> None:
    ran: list[str] = []
    with pytest.raises(RunError) as caught:
        await _agent(3, ran).run("find", usage_limits=UsageLimits(tool_calls_limit=2))
    error = caught.value
    assert error.stage is Stage.LIMIT
    assert "limit is 2 tool calls" in str(error) and "3 more tool calls" in str(error)
    assert ran == []  # none of the batch ran: the limit is checked before the batch
    assert error.partial is not None and error.partial.tool_executions == 0
    asked = [c.id for m in error.partial.messages for c in m.tool_calls]
    assert asked == ["c0-0", "c0-1", "c0-2"]  # the turn that asked is kept


async def test_the_tool_call_limit_counts_across_the_runs_batches() -> None:
    ran: list[str] = []
    with pytest.raises(RunError) as caught:
        await _agent(1, ran).run("find", usage_limits=UsageLimits(tool_calls_limit=3))
    assert ran == ["k0", "k1", "k2"]
    assert caught.value.partial is not None and caught.value.partial.tool_executions == 3
    # at the limit exactly, the run ends normally
    ran.clear()
    result = await _agent(1, ran).run("find", usage_limits=UsageLimits(tool_calls_limit=4))
    assert result.output == "found it" and result.tool_executions == 4


def test_a_tool_call_limit_of_zero_allows_no_tool() -> None:
    ran: list[str] = []
    with pytest.raises(RunError, match="limit is 0 tool calls"):
        _agent(1, ran).run_sync("find", usage_limits=UsageLimits(tool_calls_limit=0))
    assert ran == []


async def test_a_cost_limit_stops_the_run_before_the_next_request() -> None:
    ran: list[str] = []
    usage = Usage(input_tokens=100_000, output_tokens=10_000, cache_read_tokens=50_000)
    price = Price(input=2.0, output=8.0, cache_read=0.5)
    per_turn = price.cost(usage)  # 50k*2 + 50k*0.5 + 10k*8, per million: 0.205
    assert per_turn == pytest.approx(0.205)
    limits = UsageLimits(cost_limit=0.5, price=price)
    with pytest.raises(RunError) as caught:
        await _agent(1, ran, usage).run("find", usage_limits=limits)
    error = caught.value
    assert error.stage is Stage.LIMIT
    assert "has cost 0.615, its limit is 0.5" in str(error)
    assert error.partial is not None and error.partial.requests == 3
    assert ran == ["k0", "k1"]  # the third answer crossed the limit: its call never ran


@pytest.mark.parametrize(
    ("limits", "says"),
    [
        (lambda: UsageLimits(cost_limit=1.0), "cost_limit needs a price"),
        (lambda: UsageLimits(cost_limit=0, price=Price(1, 1)), "positive number"),
        (lambda: UsageLimits(cost_limit="1", price=Price(1, 1)), "positive number"),
        (lambda: UsageLimits(price={"input": 1}), "must be a golem_core.Price"),
        (lambda: UsageLimits(tool_calls_limit=-1), "non-negative int"),
        (lambda: UsageLimits(tool_calls_limit=True), "non-negative int"),
    ],
)
def test_bad_limits_are_usage_errors_that_say_what_is_wrong(limits: object, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        limits()  # type: ignore[operator]


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "2", True])
def test_a_price_refuses_what_is_not_a_rate(bad: object) -> None:
    with pytest.raises(ValueError, match=r"Price\.input must be a finite number"):
        Price(input=bad, output=1.0)  # type: ignore[arg-type]


def test_a_price_charges_cached_tokens_at_their_own_rates() -> None:
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_read_tokens=600_000,
        cache_write_tokens=200_000,
    )
    # 200k plain * 3 + 600k * 0.3 + 200k * 3.75 + 100k * 15, per million
    assert price.cost(usage) == pytest.approx(0.6 + 0.18 + 0.75 + 1.5)
    assert Price(input=3.0, output=15.0).cost(usage) == pytest.approx(3.0 + 1.5)
