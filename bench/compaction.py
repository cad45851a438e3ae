"""Compaction strategies over one long tool-heavy conversation (issue 35 item 7).

``python -m bench.compaction --write bench/results.md`` plays ``bench.cache``'s workload
(a question, one or two parallel tool calls with results of 60-500 words, an answer: two
model requests per turn) for 500 turns, offline, under each way of keeping the history
within ``bench.cache.BUDGET`` tokens, all in one process:

- golem, step cut: ``budget_history(BUDGET)`` (cache-stable, cuts in steps, ADR 0078);
- golem, sliding cut: ``budget_history(BUDGET, low_water=BUDGET)`` (keep-last at the budget);
- golem's summarizer: ``summarize_history(keep_last_turns=2, max_tokens=BUDGET)`` with a
  scripted summarizing model (``FunctionModel``) whose summary is a tenth of what it
  reads, between ``SUMMARY_MIN`` and ``SUMMARY_MAX`` tokens;
- provider-native: ``native_compaction(OpenAIResponsesModel, keep_last_turns=2,
  max_tokens=BUDGET)``, its ``POST /responses/compact`` answered by a simulated server
  (``httpx.MockTransport``) in the documented shape: the newest user messages it was sent
  (up to ``KEPT_USER_TOKENS``), then one ``compaction`` item whose size is the summary's;
- pydantic-ai: its ``Agent`` run per turn with a ``FunctionModel`` and the documented
  keep-recent-messages history processor (``capabilities=[ProcessHistory(...)]``, what
  ``history_processors=[...]`` became in pydantic-ai 2) (``messages[-N:]``, the largest
  ``N`` that keeps every request here within the budget), what its model receives recorded;
- the OpenAI Agents SDK: ``OpenAIResponsesCompactionSession`` over an in-memory
  ``SQLiteSession``, its ``responses.compact`` answered by the same simulated server;
  ``run_compaction()`` after each turn, as its ``Runner`` calls it (here in its manual form,
  ``compaction_mode="input"``: the whole stored history is compacted and replaced), with
  a token trigger at the budget (the documented ``should_trigger_compaction`` hook) and
  with its default (10 candidate items);
- langchain-core: ``trim_messages(strategy="last", start_on="human", include_system=True)``
  before every request, with the same budget and counts.

Every request of every strategy is counted as golem messages with one counter,
``approximate_tokens`` (tiktoken's encodings cannot be loaded offline); a compaction item
counts as its summary's tokens. The cache-servable share and the input cost come from
``bench.cache.measure`` (the longest prefix equal to the previous request's; Anthropic's
rates: cached input 0.1x, the rest written at 1.25x, plus ``bench.cache.FIXED_PREFIX``
tokens of tools and instructions per request). Output is priced at ``OUTPUT``x input; a
summarizing or compaction call at 1x for what it reads (never served from the cache: its
instructions differ), at the cache-write rate for what it read with cache markers on (a
summarizer asked to cache; ``summarize_history`` asks for none by default, issue 48),
and ``OUTPUT``x for what it writes. Dollars at $3 per million input tokens. Each request's
history is checked with ``golem_core.check_pairing``. Deterministic: no clock, seeded text.

In time (``run(..., in_time=True)``, the command's second table; issue 48 item 5): the
same conversation as a chat with seeded pauses between turns and a cache that expires
``bench.compaction_timed.LIFETIME`` seconds after a request (``bench.compaction_timed``):
golem's summarizer untimed and timed to the cache (``compact_when_cold``), and the peers,
each with the turns that start cold paying their whole prefix.

This module owns golem's strategies, the measure, the section's ``render`` and the
command; the counting every strategy shares and the simulated compaction server are
``bench/compaction_trace.py``'s, the peers' strategies ``bench/compaction_peers.py``'s. All
run in one process, one after another, on the same conversation (issue 35 item 7).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import httpx
from returns.result import Result, Success

from bench import cache
from bench import compaction_timed as timed
from bench.compaction_peers import agents_sdk_trace, langchain_trace, pydantic_ai_trace
from bench.compaction_trace import (
    KEPT_USER_TOKENS,
    SUMMARY_MAX,
    SUMMARY_MIN,
    Recorder,
    Trace,
    compact_server,
    count,
    mock_client,
    summary_tokens,
    words,
)
from golem_core import (
    HistoryError,
    HistoryProcessor,
    Message,
    ModelRequest,
    budget_history,
    check_pairing,
)
from golem_shell import FunctionModel, OpenAIResponsesModel, compact_when_cold, summarize_history
from golem_shell.context._native_compaction import native_compaction
from golem_shell.context._summarize import AsyncHistoryProcessor, run_history_processor

TURNS = 500
BUDGET = cache.BUDGET
OUTPUT = 5.0
"""Output tokens at 5x the input price ($15 per million beside $3)."""
CHECKPOINTS = (100, 250, 500)
SECTION = "## Compaction strategies over a long conversation (`python -m bench.compaction`)"

Turn = cache.Turn
BASELINE = "no compaction (baseline)"
STEP_CUT = "golem budget_history (step cut, cache-stable)"
SLIDING_CUT = "golem budget_history (sliding, low_water=budget)"
SUMMARIZER = "golem summarize_history (keep_last_turns=2, max_tokens=budget)"
TIMED = "golem compact_when_cold(summarize_history(...), min_tokens=budget/2)"
TIMED_PEERS = ("pydantic-ai", "OpenAI Agents SDK", "langchain")
"""The peers measured in time (their requests do not depend on the time)."""
SEED = 48
"""The seed of the pauses between turns (``bench.compaction_timed.pauses``)."""


def _keep_all(history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
    return Success(tuple(history))


# -- golem ---------------------------------------------------------------------------------


async def golem_trace(
    name: str,
    conversation: Sequence[Turn],
    processor: HistoryProcessor | AsyncHistoryProcessor,
    recorder: Recorder | None = None,
) -> Trace:
    """As ``Agent`` runs it: the processor once per run, on what the previous run returned."""
    trace = Trace(name)
    kept: tuple[Message, ...] = ()
    for t, turn in enumerate(conversation, 1):
        if recorder is not None:
            recorder.turn = t
        result = await run_history_processor(processor, kept)
        sent = list(result.unwrap())
        groups = cache.turn_messages(turn)
        for group in groups[:-1]:
            sent.extend(group)
            trace.requests.append(tuple(sent))
        sent.extend(groups[-1])
        kept = tuple(sent)
    if recorder is not None:
        trace.calls = list(recorder.calls)
        trace.cache_written = list(recorder.cache_written)
    return trace


def summarizer(recorder: Recorder) -> FunctionModel:
    """A scripted summarizing model: a summary a tenth the size of what it reads."""

    def summarize(request: ModelRequest) -> str:
        read = sum(count(m) for m in request.messages) + math.ceil(
            len(request.instructions or "") / 4
        )
        written = summary_tokens(read)
        recorder.calls.append((recorder.turn, read, written))
        # a request with cache markers on writes what it reads to the cache (and nothing
        # reads it back: the next summary's prefix differs)
        recorder.cache_written.append(read if request.settings.cache is not None else 0)
        return words(written, f"summary {len(recorder.calls)}")

    return FunctionModel(summarize, name="summarizer")


async def golem_native_trace(conversation: Sequence[Turn], budget: int) -> Trace:
    recorder = Recorder()
    async with (
        mock_client(httpx, compact_server(recorder)) as client,
        OpenAIResponsesModel(
            "gpt-5", api_key="sk-bench", base_url="http://compact.invalid/v1", http_client=client
        ) as model,
    ):
        fold = native_compaction(model, keep_last_turns=2, max_tokens=budget, counter=count)
        return await golem_trace(
            "golem native_compaction (OpenAI /responses/compact, simulated)",
            conversation,
            fold,
            recorder,
        )


# -- the measure ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    turn: int
    tokens_sent: float  # per turn, over turns 1..turn
    served_share: float
    dollars: float  # per turn, over turns 1..turn


@dataclass(frozen=True)
class Outcome:
    name: str
    requests: int
    tokens_sent: int  # history plus the fixed prefix, every request
    largest_request: int
    served_share: float  # of the history tokens, the whole conversation
    input_units: float  # input-token equivalents (bench.cache.measure)
    output_units: float
    side_calls: int
    side_units: float  # the summarizing or compaction calls
    invalid_requests: int  # check_pairing found a problem
    checkpoints: tuple[Checkpoint, ...]

    @property
    def dollars(self) -> float:
        return (self.input_units + self.output_units + self.side_units) * cache.DOLLARS_PER_TOKEN


_COUNTED: dict[int, tuple[Message, int]] = {}


def _count_once(message: Message) -> int:
    """``count``, remembered per message object (the baseline resends each one ~1,000 times)."""
    seen = _COUNTED.get(id(message))
    if seen is None or seen[0] is not message:
        seen = _COUNTED[id(message)] = (message, count(message))
    return seen[1]


def _request(messages: tuple[Message, ...]) -> cache.Request:
    return cache.Request(messages, tuple(_count_once(m) for m in messages), True)


def side_cost(trace: Trace, upto: int) -> tuple[int, float]:
    """The side calls made by turn ``upto`` and their price in input-token units: what
    each read at 1x, or at ``cache.WRITE`` where it asked for the cache, and what it
    wrote at ``OUTPUT``x."""
    units = 0.0
    calls = 0
    for k, (t, read, written) in enumerate(trace.calls):
        if t > upto:
            continue
        cached = trace.cache_written[k] if k < len(trace.cache_written) else 0
        units += (read - cached) + cached * cache.WRITE + written * OUTPUT
        calls += 1
    return calls, units


def measure(trace: Trace, conversation: Sequence[Turn], cold: Sequence[bool] = ()) -> Outcome:
    """``trace``'s figures; ``cold`` (per request, ``compaction_timed.cold_flags``): where
    the provider's cache had expired (nothing served)."""
    requests = [_request(r) for r in trace.requests]
    if len(requests) != 2 * len(conversation):
        raise ValueError(f"{trace.name}: {len(requests)} requests for {len(conversation)} turns")
    written = [
        sum(count(m) for m in (cache.turn_messages(t)[1][0], cache.turn_messages(t)[2][0]))
        for t in conversation
    ]

    def side(upto: int) -> tuple[int, float]:
        return side_cost(trace, upto)

    checkpoints = []
    for turn in (*(c for c in CHECKPOINTS if c < len(conversation)), len(conversation)):
        m = cache.measure(trace.name, requests[: 2 * turn], cold[: 2 * turn])
        units = m.cost_units + sum(written[:turn]) * OUTPUT + side(turn)[1]
        sent = m.history_tokens + cache.FIXED_PREFIX * m.requests
        checkpoints.append(
            Checkpoint(turn, sent / turn, m.served_share, units * cache.DOLLARS_PER_TOKEN / turn)
        )
    whole = cache.measure(trace.name, requests, cold)
    calls, side_units = side(len(conversation))
    return Outcome(
        trace.name,
        whole.requests,
        whole.history_tokens + cache.FIXED_PREFIX * whole.requests,
        whole.max_history,
        whole.served_share,
        whole.cost_units,
        sum(written) * OUTPUT,
        calls,
        side_units,
        sum(1 for r in trace.requests if check_pairing(r)),
        tuple(checkpoints),
    )


async def traces(
    turns: int = TURNS, budget: int = BUDGET, *, peers: bool = True
) -> tuple[list[Trace], list[str]]:
    """Every strategy's trace over one conversation, and why any peer is missing."""
    conversation = cache.workload(turns)
    recorder = Recorder()
    out = [
        await golem_trace(BASELINE, conversation, _keep_all),
        await golem_trace(
            STEP_CUT,
            conversation,
            budget_history(count, budget),
        ),
        await golem_trace(
            SLIDING_CUT,
            conversation,
            budget_history(count, budget, low_water=budget),
        ),
        await golem_trace(
            SUMMARIZER,
            conversation,
            summarize_history(
                summarizer(recorder), keep_last_turns=2, max_tokens=budget, counter=count
            ),
            recorder,
        ),
        await golem_native_trace(conversation, budget),
    ]
    missing: list[str] = []
    if not peers:
        return out, missing
    found = [
        await pydantic_ai_trace(conversation, budget),
        await agents_sdk_trace(conversation, budget, by_tokens=True),
        await agents_sdk_trace(conversation, budget, by_tokens=False),
        langchain_trace(conversation, budget),
    ]
    names = ["pydantic-ai", "openai-agents", "openai-agents", "langchain-core"]
    for name, trace in zip(names, found, strict=True):
        if trace is None:
            if f"{name} is not installed" not in missing:
                missing.append(f"{name} is not installed")
        else:
            out.append(trace)
    return out, missing


def run(
    turns: int = TURNS, budget: int = BUDGET, *, peers: bool = True, in_time: bool = False
) -> tuple[list[Outcome], list[str], list[Outcome]]:
    """Every strategy measured, why any peer is missing, and (``in_time``) the chat with
    pauses (``run_timed``) on the same traces."""
    conversation = cache.workload(turns)
    found, missing = asyncio.run(traces(turns, budget, peers=peers))
    outcomes = [measure(t, conversation) for t in found]
    timed_outcomes = run_timed(turns, budget, found) if in_time else []
    _COUNTED.clear()
    return outcomes, missing, timed_outcomes


async def timed_summary_trace(
    conversation: Sequence[Turn], budget: int, gaps: Sequence[float]
) -> Trace:
    """golem's summarizer, timed to the cache (``compact_when_cold``), played in time."""
    recorder = Recorder()
    clock = timed.Clock()
    strategy = summarize_history(
        summarizer(recorder), keep_last_turns=2, max_tokens=budget, counter=count
    )
    processor = compact_when_cold(
        strategy, min_tokens=budget // 2, lifetime=timed.LIFETIME, counter=count, clock=clock
    )
    return await timed.timed_trace(TIMED, conversation, processor, gaps, clock, recorder)


def run_timed(
    turns: int, budget: int, found: Sequence[Trace], *, seed: int = SEED
) -> list[Outcome]:
    """The chat with pauses (``bench.compaction_timed``): golem's summarizer untimed (from
    ``found``), timed to the cache, and the peers ``found`` holds, each measured with the
    cache expiring between turns."""
    conversation = cache.workload(turns)
    gaps = timed.pauses(turns, seed)
    cold = timed.cold_flags(gaps)
    chosen = [t for t in found if t.name == SUMMARIZER or t.name.startswith(TIMED_PEERS)]
    chosen.insert(1, asyncio.run(timed_summary_trace(conversation, budget, gaps)))
    return [measure(t, conversation, cold) for t in chosen]


# -- the report ----------------------------------------------------------------------------


def verdict(outcomes: Sequence[Outcome]) -> str:
    """One sentence from the figures: the cheapest bounded strategy against the baseline,
    the step cut's served share against the best other's, what folding strategies spend on
    their own calls, and any broken pairing."""
    baseline = next((o for o in outcomes if o.name == BASELINE), None)
    bounded = [o for o in outcomes if o is not baseline]
    step = next(o for o in bounded if o.name == STEP_CUT)
    cheapest = min(bounded, key=lambda o: o.dollars)
    text = f"Cheapest bounded: {cheapest.name} (${cheapest.dollars:.2f}"
    if baseline is not None:
        text += (
            f", {cheapest.dollars / baseline.dollars:.2f}x no compaction's ${baseline.dollars:.2f}"
        )
    text += f"); golem's step cut serves {step.served_share:.3f} of its history from the cache"
    others = [o for o in bounded if o is not step]
    if others:
        best = max(others, key=lambda o: o.served_share)
        text += f" (best other: {best.name}, {best.served_share:.3f})"
    for o in (o for o in bounded if o.side_calls):
        total = o.input_units + o.output_units + o.side_units
        text += (
            f"; {o.name} spends {o.side_units / total:.0%} of its ${o.dollars:.2f} on its own calls"
        )
    for o in (o for o in outcomes if o.invalid_requests):
        text += f"; {o.name} sent {o.invalid_requests} requests with a broken tool pairing"
    return text + "."


def render(data: dict[str, Any]) -> str:
    """This benchmark's section of the report, from its record in ``bench/results.json``."""
    outcomes = [
        Outcome(
            **{
                **o,
                "checkpoints": tuple(Checkpoint(**c) for c in o["checkpoints"]),
            }
        )
        for o in data["outcomes"]
    ]
    lines = [
        SECTION,
        "",
        f"Command: `{data['command']}`. {data['turns']} turns of `bench.cache`'s workload",
        "(a question, 1-2 parallel tool calls with results of 60-500 words, an answer; two",
        "model requests per turn); each strategy but the baseline is bounded at"
        f" {data['budget']:,} tokens; all run offline in one process. Tokens by"
        " `approximate_tokens` for every",
        "strategy (tiktoken's encodings cannot be loaded offline); a compaction item counts",
        "as its summary. Served: the share of history tokens in the longest prefix equal to",
        "the previous request's (`bench.cache.measure`). Price: input $3/M, cached input",
        f"{cache.READ}x, cache writes {cache.WRITE}x, {cache.FIXED_PREFIX} tokens of tools and"
        f" instructions per request, output {OUTPUT:g}x;",
        f"summarizing and compaction calls at 1x read and {OUTPUT:g}x written. Simulated",
        f"summaries and compaction items: a tenth of what they read, {SUMMARY_MIN}-{SUMMARY_MAX}",
        "tokens; the simulated `/responses/compact` keeps the newest user messages up to",
        f"{KEPT_USER_TOKENS:,} tokens. Invalid: requests in whose history `check_pairing`",
        "finds a broken tool pairing.",
        "",
        "| strategy | tokens sent | largest request | served | input $ | output $ |"
        " compaction calls | their $ | total $ | invalid |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    usd = cache.DOLLARS_PER_TOKEN
    for o in outcomes:
        lines.append(
            f"| {o.name} | {o.tokens_sent:,} | {o.largest_request:,} | {o.served_share:.3f} |"
            f" {o.input_units * usd:.2f} | {o.output_units * usd:.2f} | {o.side_calls} |"
            f" {o.side_units * usd:.2f} | {o.dollars:.2f} | {o.invalid_requests} |"
        )
    turns = [c.turn for c in outcomes[0].checkpoints]
    lines += [
        "",
        "Per turn, over the turns up to each checkpoint: tokens sent / served share / $.",
        "",
        "| strategy | " + " | ".join(f"turn {t}" for t in turns) + " |",
        "| --- |" + " ---: |" * len(turns),
    ]
    for o in outcomes:
        cells = [
            f"{c.tokens_sent:,.0f} / {c.served_share:.3f} / {c.dollars:.4f}" for c in o.checkpoints
        ]
        lines.append(f"| {o.name} | " + " | ".join(cells) + " |")
    lines += ["", f"Verdict: {verdict(outcomes)}"]
    for reason in data.get("missing", []):
        lines.append(f"Not measured: {reason}.")
    if data.get("timed"):
        lines += render_timed(data["timed"])
    lines.append("")
    return "\n".join(lines)


def render_timed(timed_data: dict[str, Any]) -> list[str]:
    """The chat-with-pauses table (issue 48 item 5), from its record."""
    outcomes = [_outcome(o) for o in timed_data["outcomes"]]
    cold = timed_data["cold_turns"]
    lines = [
        "",
        f"In time: the same {timed_data['turns']} turns as a chat with pauses between turns"
        f" (seed {timed_data['seed']}: 5 s to 6 h, median {timed_data['median_pause_s']:.0f} s),"
        f" a cache that lives {timed_data['lifetime_s']:.0f} s after a request: {cold} turns",
        "start cold and pay their whole prefix at the write rate. golem's timed strategy is",
        "`compact_when_cold(summarize_history(..., max_tokens=budget), min_tokens=budget // 2)`:",
        "it folds early only when the prefix is cold.",
        "",
        "| strategy | served | compaction calls | their $ | total $ |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    usd = cache.DOLLARS_PER_TOKEN
    for o in outcomes:
        lines.append(
            f"| {o.name} | {o.served_share:.3f} | {o.side_calls} | {o.side_units * usd:.2f} |"
            f" {o.dollars:.2f} |"
        )
    return lines


def _outcome(raw: dict[str, Any]) -> Outcome:
    checkpoints = tuple(Checkpoint(**c) for c in raw["checkpoints"])
    return Outcome(**{**raw, "checkpoints": checkpoints})


def record(
    outcomes: Sequence[Outcome],
    missing: Sequence[str],
    *,
    command: str,
    turns: int,
    budget: int,
    in_time: Sequence[Outcome] = (),
) -> dict[str, Any]:
    """The section's record in ``bench/results.json``: raw figures, nothing rendered
    (``in_time``: the chat with pauses, ``run_timed``'s outcomes)."""
    data: dict[str, Any] = {
        "command": command,
        "turns": turns,
        "budget": budget,
        "outcomes": [asdict(o) for o in outcomes],
        "missing": list(missing),
    }
    if in_time:
        gaps = timed.pauses(turns, SEED)
        data["timed"] = {
            "turns": turns,
            "seed": SEED,
            "lifetime_s": timed.LIFETIME,
            "median_pause_s": sorted(gaps)[len(gaps) // 2],
            "cold_turns": sum(timed.cold_flags(gaps)),
            "outcomes": [asdict(o) for o in in_time],
        }
    return data


def main(argv: Sequence[str] | None = None) -> int:
    from bench.report import add_write_option, write_section

    parser = argparse.ArgumentParser(prog="python -m bench.compaction", description=__doc__)
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--budget", type=int, default=BUDGET)
    add_write_option(parser)
    args = parser.parse_args(argv)
    outcomes, missing, in_time = run(args.turns, args.budget, in_time=True)
    for o in (*outcomes, *in_time):
        print(json.dumps({"kind": "compaction", **asdict(o), "dollars": o.dollars}), flush=True)
    command = "python -m bench.compaction"
    command += f" --turns {args.turns}" if args.turns != TURNS else ""
    command += f" --budget {args.budget}" if args.budget != BUDGET else ""
    data = record(
        outcomes, missing, command=command, turns=args.turns, budget=args.budget, in_time=in_time
    )
    print(render(data))
    if args.write is not None:
        write_section(args.write, "compaction", data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
