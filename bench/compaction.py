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

The conversation holds planted facts (``bench.compaction_facts``, issue 48 item 7): each
outcome says how many the last request still holds and, for golem's strategies, how
many more ``recall_tool`` reads back; and how many turns waited for a compaction call.
golem's summarizer also runs under ``prepare_ahead`` (its fold prepared as a turn ends:
the same requests, no turn waiting).

Side by side, in time (``run(..., in_time=True)``, the command's last tables; issue 48
items 5-7): the same conversation as a chat with seeded pauses between turns and a cache
that expires ``bench.compaction_timed.LIFETIME`` seconds after a request
(``bench.compaction_timed``): every strategy, plus golem's summarizer timed to the cache
(``compact_when_cold``), folding in the turn and prepared ahead, each with the turns that
start cold paying their whole prefix; then the turn latency a user sees with and without
a prepared fold, measured on the wall clock in the same command
(``bench.compaction_ahead.measure``: reported as a ratio of one run to the other).

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
from bench import compaction_ahead as turn_latency
from bench import compaction_facts as facts
from bench import compaction_side as side
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
    encode_history,
)
from golem_shell import (
    FunctionModel,
    OpenAIResponsesModel,
    compact_when_cold,
    prepare_ahead,
    summarize_history,
)
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
PREPARED = "golem prepare_ahead(summarize_history(...)), prepared as a turn ends"
PREPARED_TIMED = (
    "golem prepare_ahead(compact_when_cold(...)), prepared as a turn ends and when cold"
)
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
    *,
    ahead: bool = False,
) -> Trace:
    """As ``Agent`` runs it: the processor once per run, on what the previous run returned
    (``ahead``: ``prepare_ahead(processor)``, its fold prepared as each turn ends)."""
    trace = Trace(name)
    kept: tuple[Message, ...] = ()
    prepared = prepare_ahead(processor) if ahead else None
    calls = recorder.calls if recorder is not None else []
    waited = 0
    for t, turn in enumerate(conversation, 1):
        if prepared is not None and kept:
            await prepared.prepare(kept)  # the turn before has ended: the user reads
        if recorder is not None:
            recorder.turn = t
        before = len(calls)
        result = await run_history_processor(prepared or processor, kept)
        waited += len(calls) > before
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
    trace.waited = waited
    return trace


def summarizer(recorder: Recorder, share: float = facts.FACT_SHARE) -> FunctionModel:
    """A scripted summarizing model: a summary a tenth the size of what it reads, which
    keeps the planted facts it reads within ``share`` of its length
    (``bench.compaction_facts.keep_facts``)."""

    def summarize(request: ModelRequest) -> str:
        read = sum(count(m) for m in request.messages) + math.ceil(
            len(request.instructions or "") / 4
        )
        written = summary_tokens(read)
        recorder.calls.append((recorder.turn, read, written))
        # a request with cache markers on writes what it reads to the cache (and nothing
        # reads it back: the next summary's prefix differs)
        recorder.cache_written.append(read if request.settings.cache is not None else 0)
        kept = "; ".join(
            facts.keep_facts(encode_history(request.messages).decode(), written, share)
        )
        rest = max(0, written - math.ceil((len(kept) + 2) / 4)) if kept else written
        return (f"{kept}. " if kept else "") + words(rest, f"summary {len(recorder.calls)}")

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
    facts: int = 0  # planted (bench.compaction_facts)
    facts_sent: int = -1  # of them, in the last request
    facts_recalled: int = -1  # in the last request or read back by recall_tool (golem)
    waited: int = 0  # turns whose user waited for a compaction call

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


def measure(
    trace: Trace,
    conversation: Sequence[Turn],
    cold: Sequence[bool] = (),
    recalled: set[str] | None = None,
) -> Outcome:
    """``trace``'s figures; ``cold`` (per request, ``compaction_timed.cold_flags``): where
    the provider's cache had expired (nothing served); ``recalled``: the planted facts
    ``recall_tool`` reads back, for a strategy that has it."""
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
        len(planted := facts.facts_of(conversation)),
        len(kept := facts.sent(trace.requests[-1], planted)),
        len(kept | recalled) if recalled is not None else -1,
        trace.waited if trace.waited is not None else len({t for t, _, _ in trace.calls}),
    )


def conversation_of(turns: int) -> list[Turn]:
    """``bench.cache``'s workload with the planted facts (``bench.compaction_facts``)."""
    return facts.planted(cache.workload(turns))


async def traces(
    turns: int = TURNS, budget: int = BUDGET, *, peers: bool = True
) -> tuple[list[Trace], list[str]]:
    """Every strategy's trace over one conversation, and why any peer is missing."""
    conversation = conversation_of(turns)
    recorder, ahead = Recorder(), Recorder()

    def summary(recorder: Recorder) -> AsyncHistoryProcessor:
        model = summarizer(recorder)
        return summarize_history(model, keep_last_turns=2, max_tokens=budget, counter=count)

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
        await golem_trace(SUMMARIZER, conversation, summary(recorder), recorder),
        await golem_trace(PREPARED, conversation, summary(ahead), ahead, ahead=True),
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
    conversation = conversation_of(turns)
    found, missing = asyncio.run(traces(turns, budget, peers=peers))
    recalled = asyncio.run(facts.recalled(conversation, facts.facts_of(conversation)))
    outcomes = [measure(t, conversation, recalled=_recall_for(t, recalled)) for t in found]
    timed_outcomes = run_timed(turns, budget, found, recalled) if in_time else []
    _COUNTED.clear()
    return outcomes, missing, timed_outcomes


def _recall_for(trace: Trace, recalled: set[str]) -> set[str] | None:
    """golem's strategies may give the model ``recall_tool``; the peers have no such tool."""
    return recalled if trace.name.startswith("golem") else None


async def timed_summary_trace(
    conversation: Sequence[Turn], budget: int, gaps: Sequence[float], *, ahead: bool = False
) -> Trace:
    """golem's summarizer, timed to the cache (``compact_when_cold``), played in time
    (``ahead``: ``prepare_ahead`` of it, prepared as a turn ends and when the cache goes
    cold)."""
    recorder = Recorder()
    clock = timed.Clock()
    strategy = summarize_history(
        summarizer(recorder), keep_last_turns=2, max_tokens=budget, counter=count
    )
    processor = compact_when_cold(
        strategy, min_tokens=budget // 2, lifetime=timed.LIFETIME, counter=count, clock=clock
    )
    prepared = prepare_ahead(processor) if ahead else None
    name = PREPARED_TIMED if ahead else TIMED
    return await timed.timed_trace(
        name, conversation, processor, gaps, clock, recorder, prepared=prepared
    )


def run_timed(
    turns: int,
    budget: int,
    found: Sequence[Trace],
    recalled: set[str] | None = None,
    *,
    seed: int = SEED,
) -> list[Outcome]:
    """The chat with pauses (``bench.compaction_timed``): every strategy ``found`` holds
    (their requests do not depend on the time) and golem's summarizer timed to the cache,
    folding in the turn and prepared ahead, each measured with the cache expiring between
    turns."""
    conversation = conversation_of(turns)
    gaps = timed.pauses(turns, seed)
    cold = timed.cold_flags(gaps)
    chosen = list(found)
    at = next(i for i, t in enumerate(chosen) if t.name == PREPARED) + 1
    chosen[at:at] = [
        asyncio.run(timed_summary_trace(conversation, budget, gaps)),
        asyncio.run(timed_summary_trace(conversation, budget, gaps, ahead=True)),
    ]
    return [
        measure(t, conversation, cold, recalled=_recall_for(t, recalled or set())) for t in chosen
    ]


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
        timed_data = data["timed"]
        in_time = [_outcome(o) for o in timed_data["outcomes"]]
        lines += side.render_timed(timed_data, in_time, data.get("latency"))
    lines.append("")
    return "\n".join(lines)


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
    latency: Sequence[turn_latency.Latency] = (),
) -> dict[str, Any]:
    """The section's record in ``bench/results.json``: raw figures, nothing rendered
    (``in_time``: the chat with pauses, ``run_timed``'s outcomes; ``latency``:
    ``bench.compaction_ahead.measure``'s)."""
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
            "facts_every": facts.EVERY,
            "outcomes": [asdict(o) for o in in_time],
        }
    if latency:
        data["latency"] = {
            "model_s": turn_latency.MODEL_S,
            "summary_s": turn_latency.SUMMARY_S,
            "read_s": turn_latency.READ_S,
            "results": [asdict(r) for r in latency],
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
    latency = asyncio.run(turn_latency.measure())
    for o in (*outcomes, *in_time):
        print(json.dumps({"kind": "compaction", **asdict(o), "dollars": o.dollars}), flush=True)
    command = "python -m bench.compaction"
    command += f" --turns {args.turns}" if args.turns != TURNS else ""
    command += f" --budget {args.budget}" if args.budget != BUDGET else ""
    data = record(
        outcomes,
        missing,
        command=command,
        turns=args.turns,
        budget=args.budget,
        in_time=in_time,
        latency=latency,
    )
    print(render(data))
    if args.write is not None:
        write_section(args.write, "compaction", data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
