"""A prepared fold on a durable run is a recorded step (issue 48 item 6).

A ``DurableAgent`` whose agent's history processor is ``prepare_ahead(summarize_history(
...))``: the fold prepared after one run (in the worker's process, while the user reads)
is swapped in by the next run's ``golem.processor`` step, which records the folded
history. A recovery of that run (``DBOS.fork_workflow`` from the step after it, the
recorded steps before it read back, as a restarted worker reads them) gets the same
folded history from the record: the summarizing model is not called again, the prepared
strategy is not run again, and the model sees the summary. Forked from the processor
step itself, the step runs anew: no preparation matches any more, the strategy folds on
the spot (one summarizing call), to the same summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from dbos_launch import dbos_fixture

from golem_core import Message, ModelRequest, is_summary
from golem_shell import Agent, FunctionModel, prepare_ahead, summarize_history

dbos = pytest.importorskip("dbos", reason="the dbos extra is not installed")

from golem_shell.durable import DurableAgent  # noqa: E402

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Summarizer:
    """The summarizing model: counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: ModelRequest) -> str:
        self.calls += 1
        return f"summary {self.calls}: the user asked about the launch"


SUMMARIZER = Summarizer()
SEEN: list[tuple[Message, ...]] = []


def _answer(request: ModelRequest) -> str:
    SEEN.append(request.messages)
    return f"answer to {request.messages[-1].text}"


PREPARED = prepare_ahead(
    summarize_history(FunctionModel(SUMMARIZER), keep_last_turns=1, step_turns=0)
)
DURABLE = DurableAgent(
    Agent(FunctionModel(_answer), history_processor=PREPARED), name="prepared-fold"
)


launched = dbos_fixture("golem-durable-prepared")
"""One DBOS on a fresh SQLite file for this module's tests; yields the file."""


def _plain(messages: tuple[Message, ...]) -> list[Message]:
    return [attrs.evolve(m, created_at=None) for m in messages]


async def _steps(run_id: str) -> list[dict[str, Any]]:
    return list(await dbos.DBOS.list_workflow_steps_async(run_id))


async def test_a_prepared_fold_is_recorded_and_replayed_without_a_call(launched: Path) -> None:
    history: tuple[Message, ...] = ()
    for t in range(3):  # three turns: the third run has two older turns to fold
        result = await DURABLE.run(f"question {t}", history=history, run_id=f"prep-{t}")
        history = result.messages
    calls, swapped = SUMMARIZER.calls, PREPARED.swapped

    await PREPARED.prepare(history)  # after the turn, in the worker's process
    assert SUMMARIZER.calls == calls + 1  # the fold was made here, off the run
    SEEN.clear()
    result = await DURABLE.run("question 3", history=history, run_id="prep-3")
    assert PREPARED.swapped == swapped + 1  # the run took the prepared fold
    assert SUMMARIZER.calls == calls + 1  # and made no summarizing call of its own
    (sent,) = SEEN
    assert is_summary(sent[0]) and f"summary {calls + 1}:" in sent[0].text
    steps = await _steps("prep-3")
    names = [s["function_name"] for s in steps]
    assert names == ["golem.processor", "golem.request"]

    # recovery: the run again from the step after the processor's, the steps before it
    # read from the record
    request_step = steps[names.index("golem.request")]["function_id"]
    SEEN.clear()
    handle = await dbos.DBOS.fork_workflow_async("prep-3", request_step)
    await handle.get_result()
    replayed = await DURABLE.result(handle.workflow_id)
    assert SUMMARIZER.calls == calls + 1 and PREPARED.swapped == swapped + 1
    (again,) = SEEN
    assert _plain(again) == _plain(sent)
    assert replayed.output == result.output

    # forked at the processor's own step, it runs anew: nothing prepared matches now
    SEEN.clear()
    processor_step = steps[names.index("golem.processor")]["function_id"]
    handle = await dbos.DBOS.fork_workflow_async("prep-3", processor_step)
    await handle.get_result()
    assert SUMMARIZER.calls == calls + 2 and PREPARED.swapped == swapped + 1
    (fresh,) = SEEN
    assert is_summary(fresh[0]) and f"summary {calls + 2}:" in fresh[0].text
