"""The turn latency a user sees, with and without a prepared fold (issue 48 item 6).

``python -m bench.compaction_ahead`` plays a chat offline, in one process: each turn is
one ``Agent`` run (its model answers after ``MODEL_S``), the history folded by
``summarize_history(keep_last_turns=2, step_turns=2)`` whose summarizing model answers
after ``SUMMARY_S`` (a real summarizing call takes seconds); between turns the user reads
for ``READ_S``. Without preparation a turn that folds waits for the summarizing call;
with ``prepare_ahead`` the fold is prepared (``prepare(result.messages)``) as soon as a
turn ends, while the user reads, and swapped in at the next turn's start. It prints, per
variant, the median, 95th percentile and largest turn latency and how many turns made a
summarizing call of their own (on the user's critical path). Wall-clock figures: they
depend on the machine; the count of turns that waited does not.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from golem_core import Message, ModelRequest
from golem_shell import Agent, FunctionModel, prepare_ahead, summarize_history

TURNS = 24
MODEL_S = 0.05
SUMMARY_S = 0.6
READ_S = 1.0


@dataclass(frozen=True)
class Latency:
    name: str
    turns: int
    median_s: float
    p95_s: float
    max_s: float
    waited: int  # turns that made a summarizing call of their own


class _Clocked:
    """Counts the summarizing calls made while a turn runs."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.in_turn = False
        self.on_path = 0

    async def __call__(self, request: ModelRequest) -> str:
        if self.in_turn:
            self.on_path += 1
        await asyncio.sleep(self.delay)
        return f"The user asked {len(request.messages) - 1} things about the launch."


async def play(
    name: str, *, ahead: bool, turns: int, model_s: float, summary_s: float, read_s: float
) -> Latency:
    summarizer = _Clocked(summary_s)
    strategy = summarize_history(FunctionModel(summarizer), keep_last_turns=2, step_turns=2)
    prepared = prepare_ahead(strategy) if ahead else None

    async def answer(request: ModelRequest) -> str:
        await asyncio.sleep(model_s)
        return f"answer to: {request.messages[-1].text}"

    agent = Agent(FunctionModel(answer), history_processor=prepared or strategy)
    history: tuple[Message, ...] = ()
    latencies: list[float] = []
    waited = 0
    for t in range(turns):
        summarizer.in_turn, before = True, summarizer.on_path
        started = time.perf_counter()
        result = await agent.run_with_history(history, f"question {t} about the launch")
        latencies.append(time.perf_counter() - started)
        summarizer.in_turn = False
        waited += summarizer.on_path > before
        history = result.messages
        if prepared is not None:
            prepared.prepare(history)  # while the user reads
        await asyncio.sleep(read_s)
    ordered = sorted(latencies)
    return Latency(
        name,
        turns,
        statistics.median(ordered),
        ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        ordered[-1],
        waited,
    )


async def measure(
    turns: int = TURNS,
    model_s: float = MODEL_S,
    summary_s: float = SUMMARY_S,
    read_s: float = READ_S,
) -> list[Latency]:
    """Both variants over the same chat, one after the other."""
    out = []
    for name, ahead in (
        ("summarize_history, folded in the turn", False),
        ("prepare_ahead(summarize_history), folded while the user reads", True),
    ):
        out.append(
            await play(
                name, ahead=ahead, turns=turns, model_s=model_s, summary_s=summary_s, read_s=read_s
            )
        )
    return out


def render(results: Sequence[Latency], *, model_s: float, summary_s: float, read_s: float) -> str:
    lines = [
        f"Turn latency over {results[0].turns} turns (model {model_s * 1000:.0f} ms, summarizing"
        f" call {summary_s * 1000:.0f} ms, the user reads {read_s * 1000:.0f} ms):",
        "",
        "| variant | median | p95 | max | turns that waited for a summary |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r.name} | {r.median_s * 1000:.0f} ms | {r.p95_s * 1000:.0f} ms |"
            f" {r.max_s * 1000:.0f} ms | {r.waited} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compaction_ahead", description=__doc__)
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--summary-ms", type=float, default=SUMMARY_S * 1000)
    args = parser.parse_args(argv)
    summary_s = args.summary_ms / 1000
    results = asyncio.run(measure(args.turns, MODEL_S, summary_s, READ_S))
    print(render(results, model_s=MODEL_S, summary_s=summary_s, read_s=READ_S))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
