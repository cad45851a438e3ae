"""Compaction off the critical path (issue 48 item 6): ``prepare_ahead``.

A fold prepared after a turn (on the history the next turn starts from) is swapped in
when the next run asks for it: the turn makes no summarizing call of its own, and the
history it gets is the strategy's own output. A preparation still running is waited for;
one that does not match runs the strategy as usual. Driven by an ``Agent``.
"""

from __future__ import annotations

import asyncio

import pytest

from golem_core import Message, ModelRequest, compaction_of, is_summary
from golem_shell import (
    Agent,
    FunctionModel,
    PreparedCompaction,
    ScriptedModel,
    UsageError,
    prepare_ahead,
    summarize_history,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Summarizer:
    """A summarizing model whose calls are counted and can be held back."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = asyncio.Event()
        self.release.set()

    async def __call__(self, request: ModelRequest) -> str:
        self.calls += 1
        await self.release.wait()
        return f"summary of {len(request.messages) - 1} messages"


def history(turns: int) -> tuple[Message, ...]:
    out: list[Message] = []
    for i in range(turns):
        out += [Message.user(f"question {i}"), Message.assistant(f"answer {i}")]
    return tuple(out)


def ahead(summarizer: Summarizer) -> PreparedCompaction:
    strategy = summarize_history(FunctionModel(summarizer), keep_last_turns=1, step_turns=0)
    return prepare_ahead(strategy)


async def test_a_prepared_fold_is_swapped_in_without_a_call() -> None:
    summarizer = Summarizer()
    processor = ahead(summarizer)
    messages = history(6)
    await processor.prepare(messages)
    assert summarizer.calls == 1  # done while the user read

    folded = (await processor(messages)).unwrap()
    assert summarizer.calls == 1 and processor.swapped == 1
    assert is_summary(folded[0]) and compaction_of(folded[0]) is not None

    # taken once: the next call with no preparation folds on the spot, to the same
    again = (await processor(messages)).unwrap()
    assert summarizer.calls == 2 and processor.swapped == 1
    assert folded == again  # the strategy's own output


async def test_messages_added_since_follow_the_prepared_fold() -> None:
    summarizer = Summarizer()
    processor = ahead(summarizer)
    messages = history(6)
    await processor.prepare(messages)
    steered = Message.user("actually, the EU account")
    folded = (await processor((*messages, steered))).unwrap()
    assert summarizer.calls == 1 and folded[-1] == steered and is_summary(folded[0])


async def test_a_running_preparation_is_waited_for_and_a_stale_one_ignored() -> None:
    summarizer = Summarizer()
    summarizer.release.clear()
    processor = ahead(summarizer)
    messages = history(6)
    processor.prepare(messages)
    call = asyncio.ensure_future(processor(messages))
    await asyncio.sleep(0.01)
    assert not call.done() and summarizer.calls == 1  # waiting for the one running
    summarizer.release.set()
    assert is_summary((await call).unwrap()[0]) and summarizer.calls == 1

    await processor.prepare(messages)
    other = history(5)  # another history: the preparation does not apply
    assert is_summary((await processor(other)).unwrap()[0]) and summarizer.calls == 3
    assert processor.swapped == 1


async def test_in_runs_the_turn_after_a_preparation_makes_no_summarizing_call() -> None:
    summarizer = Summarizer()
    processor = ahead(summarizer)
    agent = Agent(ScriptedModel(["noted"] * 3), history_processor=processor)
    first = await agent.run_with_history(history(6), "one more")
    calls = summarizer.calls
    assert calls == 1  # the first turn folded on the spot
    await processor.prepare(first.messages)  # while the user reads
    summarizer.release.clear()  # a summarizing call would now hang the turn
    second = await asyncio.wait_for(agent.run_with_history(first.messages, "and then?"), 5)
    assert summarizer.calls == calls + 1 and processor.swapped == 1
    assert second.output == "noted"


def test_prepare_needs_a_running_loop() -> None:
    processor = ahead(Summarizer())
    with pytest.raises(UsageError, match="running event loop"):
        processor.prepare(history(3))
    with pytest.raises(UsageError):
        prepare_ahead("not a processor")  # type: ignore[arg-type]


async def test_the_bench_shows_no_turn_waiting_for_a_summary_with_preparation() -> None:
    from bench.compaction_ahead import measure, render

    plain, prepared = await measure(turns=8, model_s=0.0, summary_s=0.2, read_s=0.3)
    assert plain.waited >= 1 and prepared.waited == 0
    assert plain.max_s >= 0.2  # a turn that folded waited for the summarizing call
    assert "turns that waited" in render([plain, prepared], model_s=0, summary_s=0.2, read_s=0.3)
