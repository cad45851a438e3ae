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
summarizing or compaction call at 1x for what it reads (uncached: its instructions differ)
and ``OUTPUT``x for what it writes. Dollars at $3 per million input tokens. Each request's
history is checked with ``golem_core.check_pairing``. Deterministic: no clock, seeded text.

Over 600 lines because it drives seven libraries' strategies over one conversation, each
with its own message types and its own simulated server, and the measure must stay in one
run (issue 35 item 7): splitting them would only move the shared counting apart.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import httpx
from returns.result import Result, Success

from bench import cache
from golem_core import (
    HistoryError,
    HistoryProcessor,
    Message,
    ModelRequest,
    Role,
    TextPart,
    ToolCallPart,
    approximate_tokens,
    budget_history,
    check_pairing,
)
from golem_core.wire.openai_responses import COMPACTION_CONTENT_KEY, compaction_item
from golem_shell import FunctionModel, OpenAIResponsesModel, summarize_history
from golem_shell.context._native_compaction import native_compaction
from golem_shell.context._summarize import AsyncHistoryProcessor, run_history_processor

TURNS = 500
BUDGET = cache.BUDGET
OUTPUT = 5.0
"""Output tokens at 5x the input price ($15 per million beside $3)."""
SUMMARY_MIN, SUMMARY_MAX = 300, 1_200
KEPT_USER_TOKENS = 2_000
CHECKPOINTS = (100, 250, 500)
SECTION = "## Compaction strategies over a long conversation (`python -m bench.compaction`)"

Turn = cache.Turn
BASELINE = "no compaction (baseline)"
STEP_CUT = "golem budget_history (step cut, cache-stable)"
SLIDING_CUT = "golem budget_history (sliding, low_water=budget)"


def _keep_all(history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
    return Success(tuple(history))


# -- counting ------------------------------------------------------------------------------


def _encrypted(tokens: int, seed: str) -> str:
    """A simulated encrypted compaction: opaque, but it says how many tokens it stands for."""
    return f"gAAAAB{tokens:06d}" + hashlib.sha256(seed.encode()).hexdigest()[:32]


def _tokens_of_encrypted(encrypted: str) -> int:
    return int(encrypted[6:12])


def count(message: Message) -> int:
    """``approximate_tokens``, except a compaction item counts as the summary it holds."""
    for part in message.parts:
        if isinstance(part, TextPart) and (item := compaction_item(part)) is not None:
            return 4 + _tokens_of_encrypted(str(item["encrypted_content"]))
    return approximate_tokens(message)


def summary_tokens(read: int) -> int:
    """The size of a simulated summary of ``read`` tokens."""
    return max(SUMMARY_MIN, min(SUMMARY_MAX, read // 10))


def _words(tokens: int, seed: str) -> str:
    """About ``tokens`` tokens (by ``approximate_tokens``) of deterministic text."""
    digest = hashlib.sha256(seed.encode()).hexdigest()
    word = f"fact-{digest[:10]} "
    return (word * (tokens * 4 // len(word) + 1))[: tokens * 4]


# -- what a strategy did -------------------------------------------------------------------


@dataclass
class Trace:
    """The requests a strategy sent (two per turn, as golem messages) and its side calls."""

    name: str
    requests: list[tuple[Message, ...]] = field(default_factory=list)
    calls: list[tuple[int, int, int]] = field(default_factory=list)  # turn, read, written
    note: str = ""


@dataclass
class Recorder:
    """The side calls (summarizing or compacting) made while ``turn`` is played."""

    turn: int = 0
    calls: list[tuple[int, int, int]] = field(default_factory=list)


def _strings(value: object) -> int:
    """Characters of text in a Responses input item (ids, types and roles left out)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_strings(v) for v in value)
    if isinstance(value, dict):
        return sum(
            _strings(v) for k, v in value.items() if k not in ("id", "type", "role", "status")
        )
    return 0


def _item_tokens(item: dict[str, Any]) -> int:
    if item.get("type") == "compaction":
        return 4 + _tokens_of_encrypted(str(item["encrypted_content"]))
    return 4 + math.ceil(_strings(item) / 4)


def compact_server(recorder: Recorder) -> Callable[[Any], dict[str, Any]]:
    """The simulated ``POST /responses/compact``: the body it answers a request body with."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        items = [i for i in body["input"] if isinstance(i, dict)]
        read = sum(_item_tokens(i) for i in items)
        written = summary_tokens(read)
        kept: list[dict[str, Any]] = []
        budget = KEPT_USER_TOKENS
        for item in reversed(items):
            if item.get("role") != "user" or item.get("type", "message") != "message":
                continue
            budget -= _item_tokens(item)
            if budget < 0:
                break
            content = item["content"]
            text = content if isinstance(content, str) else "".join(c["text"] for c in content)
            kept.insert(0, {"type": "message", "role": "user", "status": "completed",
                            "content": [{"type": "input_text", "text": text}]})  # fmt: skip
        recorder.calls.append((recorder.turn, read, written))
        n = len(recorder.calls)
        return {
            "id": f"resp_cmp_{n}",
            "object": "response.compaction",
            "created_at": 1760000000,
            "output": [
                *kept,
                {
                    "id": f"cmp_{n}",
                    "type": "compaction",
                    "encrypted_content": _encrypted(written, json.dumps(items)[-200:]),
                },
            ],
            "usage": {
                "input_tokens": read,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": written,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": read + written,
            },
        }

    return answer


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
    return trace


def summarizer(recorder: Recorder) -> FunctionModel:
    """A scripted summarizing model: a summary a tenth the size of what it reads."""

    def summarize(request: ModelRequest) -> str:
        read = sum(count(m) for m in request.messages) + math.ceil(
            len(request.instructions or "") / 4
        )
        written = summary_tokens(read)
        recorder.calls.append((recorder.turn, read, written))
        return _words(written, f"summary {len(recorder.calls)}")

    return FunctionModel(summarize, name="summarizer")


def _mock_client(module: Any, answer: Callable[[Any], dict[str, Any]]) -> Any:
    """An ``AsyncClient`` of ``module`` (httpx or httpx2) whose server is ``answer``."""

    def handle(request: Any) -> Any:
        return module.Response(200, json=answer(json.loads(request.content)))

    return module.AsyncClient(transport=module.MockTransport(handle))


async def golem_native_trace(conversation: Sequence[Turn], budget: int) -> Trace:
    recorder = Recorder()
    async with (
        _mock_client(httpx, compact_server(recorder)) as client,
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


# -- langchain-core ------------------------------------------------------------------------


def langchain_trace(conversation: Sequence[Turn], budget: int) -> Trace | None:
    trims = cache.langchain_trims(conversation, budget, count)
    if trims is None:
        return None
    trace = Trace("langchain-core trim_messages (strategy=last)")
    trace.requests += [tuple(m for _, m in kept) for _, kept in trims]
    return trace


# -- pydantic-ai ---------------------------------------------------------------------------


def _recipe_n(conversation: Sequence[Turn], budget: int) -> int:
    """The largest N for which ``messages[-N:]`` keeps every request within the budget
    (pydantic-ai holds a turn as four messages: prompt, calls, returns, answer)."""
    sizes: list[int] = []
    ends: list[int] = []
    for turn in conversation:
        (user,), (calls, *results), (answer,) = cache.turn_messages(turn)
        sizes += [count(user), count(calls), sum(count(r) for r in results), count(answer)]
        ends += [len(sizes) - 3, len(sizes) - 1]
    return cache.recipe_n(sizes, ends, budget)


def _from_pydantic_ai(messages: Sequence[Any]) -> tuple[Message, ...]:
    from pydantic_ai import messages as pm

    out: list[Message] = []
    for message in messages:
        if isinstance(message, pm.ModelRequest):
            for part in message.parts:
                if isinstance(part, pm.UserPromptPart):
                    out.append(Message.user(str(part.content)))
                elif isinstance(part, pm.ToolReturnPart):
                    out.append(
                        Message.tool_result(part.tool_call_id, part.tool_name, str(part.content))
                    )
        else:
            calls = [
                ToolCallPart(p.tool_call_id, p.tool_name, p.args_as_json_str())
                for p in message.parts
                if isinstance(p, pm.ToolCallPart)
            ]
            text = "".join(p.content for p in message.parts if isinstance(p, pm.TextPart))
            out.append(Message.assistant(text or None, tool_calls=calls))
    return tuple(out)


async def pydantic_ai_trace(conversation: Sequence[Turn], budget: int) -> Trace | None:
    try:
        from pydantic_ai import Agent, RunContext
        from pydantic_ai import messages as pm
        from pydantic_ai.capabilities import ProcessHistory
        from pydantic_ai.models.function import AgentInfo, FunctionModel
    except ImportError:
        return None
    n = _recipe_n(conversation, budget)
    trace = Trace(
        f"pydantic-ai Agent, ProcessHistory(keep_recent_messages) (N={n})",
        note=f"messages[-{n}:]",
    )
    current: list[Turn] = []
    results: dict[str, str] = {}

    def model(messages: list[Any], info: AgentInfo) -> Any:
        trace.requests.append(_from_pydantic_ai(messages))
        turn = current[-1]
        if any(isinstance(p, pm.ToolReturnPart) for p in messages[-1].parts):
            return pm.ModelResponse(parts=[pm.TextPart(turn.answer)])
        return pm.ModelResponse(
            parts=[pm.ToolCallPart(name, args, tool_call_id=i) for i, name, args in turn.calls]
        )

    agent = Agent(FunctionModel(model), capabilities=[ProcessHistory(cache.keep_recent(n))])

    async def lookup(ctx: RunContext[None], q: str) -> str:
        return results[ctx.tool_call_id or ""]

    async def search(ctx: RunContext[None], q: str) -> str:
        return results[ctx.tool_call_id or ""]

    for tool in (lookup, search):
        # real types, not this module's postponed strings: pydantic-ai reads them
        tool.__annotations__ = {"ctx": RunContext[None], "q": str, "return": str}
        agent.tool(cast(Any, tool))
    history: list[Any] = []
    for turn in conversation:
        current.append(turn)
        results.update({i: text for (i, _, _), text in zip(turn.calls, turn.results, strict=True)})
        run = await agent.run(turn.prompt, message_history=history)
        history = run.all_messages()
    return trace


# -- the OpenAI Agents SDK -----------------------------------------------------------------


def _from_responses_items(items: Sequence[dict[str, Any]]) -> tuple[Message, ...]:
    out: list[Message] = []
    names: dict[str, str] = {}
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            names[item["call_id"]] = item["name"]
            call = ToolCallPart(item["call_id"], item["name"], item["arguments"])
            if out and out[-1].role is Role.ASSISTANT and out[-1].tool_calls and not out[-1].text:
                out[-1] = Message.assistant(None, tool_calls=(*out[-1].tool_calls, call))
            else:
                out.append(Message.assistant(None, tool_calls=[call]))
        elif kind == "function_call_output":
            call_id = item["call_id"]
            out.append(Message.tool_result(call_id, names.get(call_id, ""), str(item["output"])))
        elif kind == "compaction":
            extra = ((COMPACTION_CONTENT_KEY, json.dumps(item["encrypted_content"])),)
            out.append(Message(Role.ASSISTANT, (TextPart("", extra=extra),)))
        else:
            content = item["content"]
            text = content if isinstance(content, str) else "".join(c["text"] for c in content)
            role = Role.USER if item["role"] == "user" else Role.ASSISTANT
            out.append(Message.user(text) if role is Role.USER else Message.assistant(text))
    return tuple(out)


def _turn_items(turn: Turn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    user = {"role": "user", "content": turn.prompt}
    calls = [
        {"type": "function_call", "call_id": i, "name": name, "arguments": args}
        for i, name, args in turn.calls
    ]
    outputs = [
        {"type": "function_call_output", "call_id": i, "output": text}
        for (i, _, _), text in zip(turn.calls, turn.results, strict=True)
    ]
    return [user], calls + outputs, {"role": "assistant", "content": turn.answer}


async def agents_sdk_trace(
    conversation: Sequence[Turn], budget: int, *, by_tokens: bool
) -> Trace | None:
    try:
        import httpx2
        from agents import SQLiteSession
        from agents.memory import OpenAIResponsesCompactionSession
        from openai import AsyncOpenAI
    except ImportError:
        return None
    recorder = Recorder()

    def over_budget(context: dict[str, Any]) -> bool:
        items = context["session_items"]
        return sum(count(m) for m in _from_responses_items(items)) > budget

    trigger = "tokens over the budget" if by_tokens else "its default, 10 candidate items"
    trace = Trace(f"OpenAI Agents SDK OpenAIResponsesCompactionSession ({trigger})")
    async with _mock_client(httpx2, compact_server(recorder)) as http:
        client = AsyncOpenAI(
            api_key="sk-bench", base_url="http://compact.invalid/v1", http_client=http
        )
        session = OpenAIResponsesCompactionSession(
            "bench",
            SQLiteSession("bench"),
            client=client,
            model="gpt-5",
            compaction_mode="input",
            should_trigger_compaction=over_budget if by_tokens else None,
        )
        for t, turn in enumerate(conversation, 1):
            recorder.turn = t
            stored: list[Any] = list(await session.get_items())
            user, exchange, answer = _turn_items(turn)
            trace.requests.append(_from_responses_items([*stored, *user]))
            trace.requests.append(_from_responses_items([*stored, *user, *exchange]))
            await session.add_items(cast(Any, [*user, *exchange, answer]))
            await session.run_compaction()
        session.underlying_session.close()  # type: ignore[attr-defined]
    trace.calls = list(recorder.calls)
    return trace


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


def measure(trace: Trace, conversation: Sequence[Turn]) -> Outcome:
    requests = [_request(r) for r in trace.requests]
    if len(requests) != 2 * len(conversation):
        raise ValueError(f"{trace.name}: {len(requests)} requests for {len(conversation)} turns")
    written = [
        sum(count(m) for m in (cache.turn_messages(t)[1][0], cache.turn_messages(t)[2][0]))
        for t in conversation
    ]

    def side(upto: int) -> tuple[int, float]:
        calls = [(r, w) for t, r, w in trace.calls if t <= upto]
        return len(calls), sum(r + w * OUTPUT for r, w in calls)

    checkpoints = []
    for turn in (*(c for c in CHECKPOINTS if c < len(conversation)), len(conversation)):
        m = cache.measure(trace.name, requests[: 2 * turn])
        units = m.cost_units + sum(written[:turn]) * OUTPUT + side(turn)[1]
        sent = m.history_tokens + cache.FIXED_PREFIX * m.requests
        checkpoints.append(
            Checkpoint(turn, sent / turn, m.served_share, units * cache.DOLLARS_PER_TOKEN / turn)
        )
    whole = cache.measure(trace.name, requests)
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
            "golem summarize_history (keep_last_turns=2, max_tokens=budget)",
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
    turns: int = TURNS, budget: int = BUDGET, *, peers: bool = True
) -> tuple[list[Outcome], list[str]]:
    conversation = cache.workload(turns)
    found, missing = asyncio.run(traces(turns, budget, peers=peers))
    outcomes = [measure(t, conversation) for t in found]
    _COUNTED.clear()
    return outcomes, missing


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
    lines.append("")
    return "\n".join(lines)


def record(
    outcomes: Sequence[Outcome], missing: Sequence[str], *, command: str, turns: int, budget: int
) -> dict[str, Any]:
    """The section's record in ``bench/results.json``: raw figures, nothing rendered."""
    return {
        "command": command,
        "turns": turns,
        "budget": budget,
        "outcomes": [asdict(o) for o in outcomes],
        "missing": list(missing),
    }


def main(argv: Sequence[str] | None = None) -> int:
    from bench.report import add_write_option, write_section

    parser = argparse.ArgumentParser(prog="python -m bench.compaction", description=__doc__)
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--budget", type=int, default=BUDGET)
    add_write_option(parser)
    args = parser.parse_args(argv)
    outcomes, missing = run(args.turns, args.budget)
    for o in outcomes:
        print(json.dumps({"kind": "compaction", **asdict(o), "dollars": o.dollars}), flush=True)
    command = "python -m bench.compaction"
    command += f" --turns {args.turns}" if args.turns != TURNS else ""
    command += f" --budget {args.budget}" if args.budget != BUDGET else ""
    data = record(outcomes, missing, command=command, turns=args.turns, budget=args.budget)
    print(render(data))
    if args.write is not None:
        write_section(args.write, "compaction", data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
