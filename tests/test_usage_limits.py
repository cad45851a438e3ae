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


async def test_a_cost_exactly_at_the_limit_stops_the_run_and_one_just_below_does_not() -> None:
    """The limit is reached at equality (``>=``): no test had a cost exactly at it, so
    ``>`` passed them all (issue 49 item 8)."""
    usage = Usage(input_tokens=125_000, output_tokens=0)
    price = Price(input=2.0, output=8.0)
    assert price.cost(usage) == 0.25 and price.cost(usage + usage) == 0.5  # exact in binary
    ran: list[str] = []
    with pytest.raises(RunError) as caught:
        await _agent(1, ran, usage).run(
            "find", usage_limits=UsageLimits(cost_limit=0.5, price=price)
        )
    assert "has cost 0.5, its limit is 0.5" in str(caught.value)
    assert caught.value.partial is not None and caught.value.partial.requests == 2
    assert ran == ["k0"]  # the second answer reached the limit: its call never ran
    ran.clear()
    above = UsageLimits(cost_limit=0.5000001, price=price)
    with pytest.raises(RunError) as caught:
        await _agent(1, ran, usage).run("find", usage_limits=above)
    assert caught.value.partial is not None and caught.value.partial.requests == 3


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


# -- correctness round 5 (issue 49): a huge usage count, a cost limit that never stops ---


@pytest.mark.parametrize("field", ["input_tokens", "output_tokens", "cache_read_tokens"])
async def test_a_usage_past_a_floats_range_fires_the_cost_limit_not_an_overflow(
    field: str,
) -> None:
    # an answer may report any integer (a 310-digit `prompt_tokens` decodes); the cost
    # saturates at inf, so the limit fires as exceeded where `int * float` used to raise
    # OverflowError out of `receive`
    ran: list[str] = []
    usage = Usage(**{field: 10**310})
    limits = UsageLimits(cost_limit=0.5, price=Price(input=2.0, output=8.0, cache_read=0.5))
    with pytest.raises(RunError) as caught:
        await _agent(1, ran, usage).run("find", usage_limits=limits)
    error = caught.value
    assert error.stage is Stage.LIMIT
    assert "has cost inf, its limit is 0.5" in str(error)
    assert error.partial is not None and error.partial.requests == 1
    assert ran == []  # the first answer crossed the limit: its call never ran


def test_a_usage_past_a_floats_range_costs_inf_or_nothing_at_a_zero_rate() -> None:
    huge = 10**400
    assert Price(1.0, 1.0).cost(Usage(input_tokens=huge)) == float("inf")
    assert Price(1.0, 0.0).cost(Usage(input_tokens=1_000_000, output_tokens=huge)) == 1.0
    # counts of opposite signs (nonsense an answer may still carry) never make it nan
    assert Price(1.0, 1.0).cost(Usage(input_tokens=huge, output_tokens=-huge)) == float("inf")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), -1, 0, True, "1"])
def test_the_core_refuses_a_cost_limit_that_never_or_always_stops(bad: object) -> None:
    from golem_core.loop import RunConfig

    with pytest.raises(
        ValueError, match=rf"RunConfig: max_cost must be a positive finite .*got {bad!r}"
    ):
        RunConfig("r", "c", max_cost=bad, price=Price(1.0, 1.0))  # type: ignore[arg-type]
    assert RunConfig("r", "c", max_cost=0.01, price=Price(1.0, 1.0)).max_cost == 0.01
