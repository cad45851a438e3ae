"""User code that must pass ``mypy --strict`` (tests/test_quality.py): how a tool fails,
decorators, validators, overrides and limits (issue 26, items 3 and 4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, assert_type

import attrs

from golem_core import ModelSettings
from golem_shell import (
    Agent,
    FunctionModel,
    ModelRetry,
    RunContext,
    RunError,
    Stage,
    TestModel,
    Tool,
    ToolFailure,
    UsageLimits,
    tool,
)


@attrs.frozen
class Deps:
    user: str


agent = Agent(TestModel(), deps_type=Deps, output_type=Literal["ok", "retry"])
assert_type(agent, Agent[Deps, Literal["ok", "retry"]])


@agent.tool
def find_order(context: RunContext[Deps], order_id: str) -> str:
    """Look up one of the user's orders.

    Args:
        order_id: like "A-1234".
    """
    if not order_id.startswith("A-"):
        raise ModelRetry("order ids look like 'A-1234'; try again")
    if order_id == "A-0000":
        raise ToolFailure("that order was deleted")
    return f"{context.deps.user}'s order {order_id}: shipped"


@agent.tool_plain(max_retries=1)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


assert_type(add(1, 2), int)  # the decorated function is still itself
assert_type(find_order(RunContext(Deps("ada"), "r", "c"), "A-1"), str)


@agent.output_validator
def not_retry(output: Literal["ok", "retry"]) -> Literal["ok", "retry"]:
    if output == "retry":
        raise ModelRetry("say ok")
    return output


@agent.output_validator
def with_context(
    context: RunContext[Deps], output: Literal["ok", "retry"]
) -> Literal["ok", "retry"]:
    return output


result = agent.run_sync(
    "Where is my order?",
    deps=Deps("ada"),
    settings=ModelSettings(temperature=0.0),
    usage_limits=UsageLimits(request_limit=5, total_tokens_limit=20_000),
)
assert_type(result.output, Literal["ok", "retry"])

with agent.override(model=FunctionModel(lambda request: '{"response": "ok"}')):
    assert_type(agent.run_sync("again", deps=Deps("ada")).output, Literal["ok", "retry"])

try:
    agent.run_sync("x", deps=Deps("ada"), usage_limits=UsageLimits(request_limit=1))
except RunError as e:
    if e.stage is Stage.LIMIT and e.partial is not None:
        print(f"stopped after {e.partial.requests} requests")


# a standalone tool is typed by the context it takes (issue 37 item 4): Tool[Deps], not Tool[Any]
@tool
def greet(context: RunContext[Deps], greeting: str) -> str:
    """Greet the user."""
    return f"{greeting}, {context.deps.user}"


@tool(requires_approval=True)
def refund(context: RunContext[Deps], order_id: str) -> str:
    """Refund an order."""
    return order_id


@tool
def shout(text: str) -> str:
    """Shout."""
    return text.upper()


assert_type(greet, Tool[Deps])
assert_type(refund, Tool[Deps])
assert_type(shout, Tool[Any])  # no context: any agent may take it
Agent(TestModel(), deps_type=Deps, tools=[greet, refund, shout])


def no_context(a: int) -> int:
    """A plain function."""
    return a


# an agent takes a standalone tool of its own context beside tools of none (plain
# functions, Tool[Any]); one without deps_type takes its DepsT from its tools (issue 49 item 9)
served = Agent(
    TestModel(), deps_type=Deps, tools=[greet, shout, no_context, Tool.from_function(add)]
)
assert_type(served, Agent[Deps, str])
assert_type(Agent(TestModel(), tools=[greet]), Agent[Deps, str])
assert_type(Agent(TestModel(), tools=[no_context]), Agent[None, str])
quiet: Agent[None] = Agent(TestModel(), tools=[shout])  # Tool[Any] alone: Agent[Any] unless told
with served.override(tools=[refund, shout, no_context]):
    pass

if TYPE_CHECKING:  # what mypy refuses (strict: an ignore that is not needed is an error)

    def plain(a: int) -> int:
        return a

    def wrong_output(output: int) -> int:
        return output

    agent.tool(plain)  # type: ignore[arg-type]  # no RunContext first: tool_plain
    agent.output_validator(wrong_output)  # type: ignore[arg-type]  # not the output type
    number: int = result.output  # type: ignore[assignment]  # a Literal of str
    # pydantic-ai's keywords are refused by mypy too, and at run time with golem's name
    # for each (issue 49 item 9)
    Agent(TestModel(), retries=3)  # type: ignore[arg-type]  # golem: max_retries=, per tool
    Agent(TestModel(), defer_model_check=True)  # type: ignore[arg-type]
    agent.tool_plain(retries=2)  # type: ignore[call-overload]  # golem: max_retries=
    tool(retries=2)  # type: ignore[call-overload]

    # a standalone tool of another context: in Agent(tools=...), mixed with a tool of no
    # context, and in override(tools=...) (issue 49 item 9)
    @attrs.frozen
    class Other:
        n: int

    Agent(TestModel(), deps_type=Other, tools=[greet])  # type: ignore[list-item]
    Agent(TestModel(), deps_type=Other, tools=[shout, refund])  # type: ignore[list-item]

    @tool
    def count(context: RunContext[Other]) -> int:
        """Count."""
        return context.deps.n

    agent.override(tools=[count])  # type: ignore[list-item]


# iter_stream takes a run's own output_type=, typed as run's is (issue 49 item 9)
async def stream_a_verdict() -> None:
    async with agent.iter_stream("judge", output_type=int, deps=Deps("ada")) as stream:
        async for _ in stream:
            pass
    assert_type(stream.result.output, int)
