"""User code that must pass ``mypy --strict`` (tests/test_quality.py): output types
(issue 26, item 2). ``assert_type`` pins what a type checker infers."""

from __future__ import annotations

import enum
from typing import Literal, assert_type

from golem_shell import Agent, RunResult, TestModel, UsageError, tool


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


choice = Agent(TestModel(), output_type=Literal["yes", "no"])
assert_type(choice, Agent[None, Literal["yes", "no"]])
answer = choice.run_sync("Yes or no?")
assert_type(answer.output, Literal["yes", "no"])

maybe = Agent(TestModel(), output_type=int | None)
assert_type(maybe.run_sync("A number, if any").output, int | None)

union = Agent(TestModel(), output_type=int | str)
assert_type(union.run_sync("Anything").output, int | str)

sized = Agent(TestModel(), output_type=Size)
assert_type(sized.run_sync("Pick a size").output, Size)

listed = Agent(TestModel(), output_type=list[int])
assert_type(listed.run_sync("Three numbers").output, list[int])

text = Agent(TestModel())
assert_type(text.run_sync("Hello").output, str)


@tool(requires_approval=True)
def transfer(to: str, cents: int) -> str:
    """Send money."""
    return f"sent {cents} to {to}"


def report(result: RunResult[str]) -> str:
    # a paused run has no output: check first (reading it raises UsageError, never None)
    if result.paused:
        return f"waiting for {len(result.deferred)} approvals"
    return result.output.upper()


paying = Agent(TestModel(), tools=[transfer])
print(report(paying.run_sync("Pay the rent")))
try:
    paying.run_sync("Pay the rent").output.upper()
except UsageError as e:  # "this run paused and has no output yet: ..."
    print(e)

# a run of its own output type (the agent's stays str)
counted = text.run_sync("How many?", output_type=int)
assert_type(counted.output, int)
assert isinstance(counted.output, int)
assert_type(text.run_sync("Hello").output, str)
