"""The cost of a long conversation under a token budget, with a prompt cache (issue 23).

``python -m bench.cache`` (and ``python -m bench``, which runs it last) plays one
conversation of 200 turns, each a user question, one or two parallel tool calls, their
results and an answer (two model requests per turn), bounded by a token budget, under
each way of bounding it:

- golem, cache-stable: ``budget_history(approximate_tokens, BUDGET)`` (cuts in steps
  down to half the budget, ADR 0078), run once per run as ``Agent`` runs it, on the
  history the previous run returned;
- golem, sliding window: the same with ``low_water=BUDGET``;
- langchain-core: ``trim_messages(strategy="last", start_on="human",
  include_system=True)`` with the same budget and the same token counts, before every
  model call (as a LangGraph ``pre_model_hook`` runs it);
- pydantic-ai: the documented history-processor recipe, "keep recent messages"
  (``messages[-N:]``), before every model request as pydantic-ai runs processors, with
  the largest ``N`` that keeps every request within the same budget on this workload.

For each request it finds the longest prefix of messages identical to the previous
request's (what a prompt cache can serve: Anthropic with a breakpoint on the newest
message caches the whole previous request) and prices the request at Anthropic's
rates: cached input 0.1x, the rest written to the cache at 1.25x (the fixed prefix of
tools and instructions is always served). Reported: the share of history tokens served
once the budget binds (from the first request whose history a processor cut), and the
input cost of the whole conversation in input-token equivalents and in dollars at
$3 per million input tokens. Targets: golem's cache-stable share >= 0.90, and golem at
least 3x cheaper than each peer recipe.

Deterministic: the workload comes from a seeded generator; no clock is read.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from golem_core import (
    HistoryProcessor,
    Message,
    Role,
    ToolCallPart,
    approximate_tokens,
    budget_history,
)

TURNS = 200
BUDGET = 16_000
FIXED_PREFIX = 600
"""Tokens of tool definitions and instructions: identical in every request."""
READ, WRITE = 0.1, 1.25
DOLLARS_PER_TOKEN = 3.0 / 1_000_000
SERVED_TARGET = 0.90
CHEAPER_TARGET = 3.0
SECTION = "## Long conversations and the prompt cache (`python -m bench.cache`)"

_WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "order",
    "invoice",
    "customer",
    "shipment",
    "refund",
    "policy",
    "region",
    "warehouse",
    "ticket",
    "status",
    "account",
    "balance",
    "report",
    "quarter",
    "forecast",
    "metric",
]


@dataclass(frozen=True)
class Turn:
    prompt: str
    calls: tuple[tuple[str, str, str], ...]  # (id, name, arguments)
    results: tuple[str, ...]
    answer: str


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def workload(turns: int = TURNS, seed: int = 23) -> list[Turn]:
    """The conversation: questions of 10-60 words, 1-2 calls, results of 60-500 words."""
    rng = random.Random(seed)
    out = []
    for t in range(turns):
        calls = tuple(
            (f"call_{t}_{k}", rng.choice(["lookup", "search"]), json.dumps({"q": _text(rng, 2, 6)}))
            for k in range(rng.randint(1, 2))
        )
        results = tuple(_text(rng, 60, 500) for _ in calls)
        out.append(Turn(_text(rng, 10, 60), calls, results, _text(rng, 20, 120)))
    return out


# -- the neutral conversation, as golem messages -------------------------------------------


def turn_messages(turn: Turn) -> list[list[Message]]:
    """The messages of one turn, grouped by the request that follows them."""
    call_parts = [ToolCallPart(i, n, a) for i, n, a in turn.calls]
    results = [
        Message.tool_result(i, n, text)
        for (i, n, _), text in zip(turn.calls, turn.results, strict=True)
    ]
    return [
        [Message.user(turn.prompt)],
        [Message.assistant(None, tool_calls=call_parts), *results],
        [Message.assistant(turn.answer)],
    ]


@dataclass(frozen=True)
class Request:
    """One model request: its history items (comparable keys) and their tokens."""

    items: tuple[object, ...]
    tokens: tuple[int, ...]
    bound: bool  # the processor cut this request's history (or an earlier one did)


def _tokens(message: Message) -> int:
    return approximate_tokens(message)


def golem_requests(conversation: Sequence[Turn], processor: HistoryProcessor) -> list[Request]:
    """As ``Agent`` runs it: the processor once per run on what the previous run returned."""
    kept: tuple[Message, ...] = ()
    out: list[Request] = []
    bound = False
    for turn in conversation:
        groups = turn_messages(turn)
        processed = processor(kept).unwrap()
        bound = bound or processed != kept
        sent = list(processed)
        for group in groups[:-1]:
            sent.extend(group)
            out.append(Request(tuple(sent), tuple(_tokens(m) for m in sent), bound))
        sent.extend(groups[-1])
        kept = tuple(sent)
    return out


def langchain_trims(
    conversation: Sequence[Turn], budget: int, count: Callable[[Message], int]
) -> list[tuple[int, tuple[tuple[Any, Message], ...]]] | None:
    """langchain-core's ``trim_messages(strategy="last", start_on="human",
    include_system=True)`` before every model request of ``conversation`` (as a LangGraph
    ``pre_model_hook`` runs it), at ``budget`` tokens by ``count`` of each message.

    Returns:
        Per request, how many langchain messages the conversation held, and those kept,
        each beside the golem message it was made from; ``None`` without langchain-core.
    """
    try:
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, trim_messages
    except ImportError:
        return None
    counts: dict[int, int] = {}
    golem_of: dict[int, Message] = {}
    full: list[Any] = []
    out: list[tuple[int, tuple[tuple[Any, Message], ...]]] = []

    def counter(messages: Sequence[Any]) -> int:
        return sum(counts[id(m)] for m in messages)

    for turn in conversation:
        for k, group in enumerate(turn_messages(turn)):
            for m in group:
                if m.role is Role.USER:
                    lc: Any = HumanMessage(content=m.text)
                elif m.role is Role.TOOL:
                    lc = ToolMessage(content=m.text, tool_call_id=m.tool_call_id, name=m.tool_name)
                else:
                    calls = [
                        {"id": c.id, "name": c.name, "args": json.loads(c.arguments)}
                        for c in m.tool_calls
                    ]
                    lc = AIMessage(content=m.text, tool_calls=calls)
                counts[id(lc)] = count(m)
                golem_of[id(lc)] = m
                full.append(lc)
            if k == 2:
                continue  # the answer: no request follows it within the turn
            trimmed = trim_messages(
                full,
                token_counter=counter,
                max_tokens=budget,
                strategy="last",
                start_on="human",
                include_system=True,
            )
            out.append((len(full), tuple((m, golem_of[id(m)]) for m in trimmed)))
    return out


def langchain_requests(conversation: Sequence[Turn]) -> list[Request] | None:
    trims = langchain_trims(conversation, BUDGET, _tokens)
    if trims is None:
        return None
    out: list[Request] = []
    bound = False
    for sent, kept in trims:
        bound = bound or len(kept) < sent
        items = tuple(id(lc) for lc, _ in kept)
        out.append(Request(items, tuple(_tokens(m) for _, m in kept), bound))
    return out


def recipe_n(sizes: Sequence[int], ends: Sequence[int], budget: int) -> int:
    """The N of pydantic-ai's keep-recent-messages recipe: the largest for which
    ``messages[-N:]`` keeps every request within ``budget``.

    Args:
        sizes: each pydantic-ai message's tokens, in order.
        ends: for each request, how many messages precede it.
        budget: the tokens a request's history may hold.
    """
    n = 1
    while n < len(sizes) and all(sum(sizes[max(0, e - n - 1) : e]) <= budget for e in ends):
        n += 1
    return n


def keep_recent(n: int) -> Callable[[list[Any]], list[Any]]:
    """pydantic-ai's documented history processor, keeping the ``n`` most recent messages."""

    def keep_recent_messages(messages: list[Any]) -> list[Any]:
        """pydantic-ai's documented history processor: keep only the recent messages."""
        return messages[-n:] if len(messages) > n else messages

    return keep_recent_messages


def pydantic_ai_requests(conversation: Sequence[Turn]) -> list[Request] | None:
    try:
        from pydantic_ai import messages as pm
    except ImportError:
        return None
    # one ModelRequest or ModelResponse per group, as pydantic-ai records a run
    full: list[tuple[Any, int]] = []
    per_request: list[int] = []
    for turn in conversation:
        groups = turn_messages(turn)
        user, (call, *results), (answer,) = groups
        full.append((pm.ModelRequest(parts=[pm.UserPromptPart(user[0].text)]), _tokens(user[0])))
        per_request.append(len(full))
        parts = [pm.ToolCallPart(c.name, c.arguments, tool_call_id=c.id) for c in call.tool_calls]
        full.append((pm.ModelResponse(parts=parts), _tokens(call)))
        returns = [
            pm.ToolReturnPart(r.tool_name or "", r.text, tool_call_id=r.tool_call_id or "")
            for r in results
        ]
        full.append((pm.ModelRequest(parts=returns), sum(_tokens(r) for r in results)))
        per_request.append(len(full))
        full.append((pm.ModelResponse(parts=[pm.TextPart(answer.text)]), _tokens(answer)))
    keep_recent_messages = keep_recent(recipe_n([t for _, t in full], per_request, BUDGET))
    out: list[Request] = []
    bound = False
    for end in per_request:
        window = full[:end]
        kept = keep_recent_messages([m for m, _ in window])
        bound = bound or len(kept) < len(window)
        tokens_of = {id(m): t for m, t in window}
        out.append(
            Request(tuple(id(m) for m in kept), tuple(tokens_of[id(m)] for m in kept), bound)
        )
    return out


# -- the measure ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    name: str
    requests: int
    history_tokens: int
    served_share: float  # once the budget binds
    cost_units: float  # input-token equivalents, the whole conversation
    max_history: int

    @property
    def dollars(self) -> float:
        return self.cost_units * DOLLARS_PER_TOKEN


def measure(name: str, requests: Sequence[Request], cold: Sequence[bool] = ()) -> Outcome:
    """The cache-servable share and cost of ``requests``; ``cold[k]`` (when given) says
    the provider's cache had expired before request ``k``: nothing of it is served."""
    served_bound = history_bound = 0
    cost = 0.0
    previous: Request | None = None
    for k, request in enumerate(requests):
        history = sum(request.tokens)
        served = 0
        if k < len(cold) and cold[k]:
            previous = None
        if previous is not None:
            common = 0
            for a, b in zip(previous.items, request.items, strict=False):
                if a != b:
                    break
                common += 1
            served = sum(request.tokens[:common])
            cost += FIXED_PREFIX * READ
        else:
            cost += FIXED_PREFIX * WRITE
        cost += served * READ + (history - served) * WRITE
        if request.bound:
            served_bound += served
            history_bound += history
        previous = request
    return Outcome(
        name,
        len(requests),
        sum(sum(r.tokens) for r in requests),
        served_bound / history_bound if history_bound else 1.0,
        cost,
        max(sum(r.tokens) for r in requests),
    )


def run(turns: int = TURNS) -> list[Outcome]:
    conversation = workload(turns)
    out = [
        measure(
            "golem budget_history (cache-stable, default)",
            golem_requests(conversation, budget_history(approximate_tokens, BUDGET)),
        ),
        measure(
            "golem budget_history (sliding window, low_water=budget)",
            golem_requests(
                conversation, budget_history(approximate_tokens, BUDGET, low_water=BUDGET)
            ),
        ),
    ]
    lc = langchain_requests(conversation)
    if lc is not None:
        out.append(measure("langchain-core trim_messages (strategy=last)", lc))
    pa = pydantic_ai_requests(conversation)
    if pa is not None:
        out.append(measure("pydantic-ai keep_recent_messages recipe", pa))
    return out


def verdicts(outcomes: Sequence[Outcome]) -> list[tuple[str, bool, str]]:
    golem = outcomes[0]
    out = [
        (
            "served_share",
            golem.served_share >= SERVED_TARGET,
            f"golem cache-stable serves {golem.served_share:.3f} of history tokens once the "
            f"budget binds (target >= {SERVED_TARGET})",
        )
    ]
    for peer in outcomes[2:]:
        ratio = peer.cost_units / golem.cost_units
        out.append(
            (
                "cheaper_than_peer",
                ratio >= CHEAPER_TARGET,
                f"{peer.name} costs {ratio:.1f}x golem's (target >= {CHEAPER_TARGET}x)",
            )
        )
    return out


def section(outcomes: Sequence[Outcome], command: str, turns: int = TURNS) -> str:
    golem = outcomes[0]
    lines = [
        SECTION,
        "",
        f"Command: `{command}`. {turns} turns (a question, 1-2 parallel tool calls and their",
        f"results, an answer; two model requests per turn), budget {BUDGET:,} tokens",
        "(`approximate_tokens`), every strategy on the same messages and the same counts.",
        "Served: history tokens in the longest prefix identical to the previous request's,",
        "from the first request whose history was cut. Cost: Anthropic rates, cached input",
        f"0.1x, the rest written at 1.25x, plus {FIXED_PREFIX} tokens of tools and",
        "instructions per request; dollars at $3 per million input tokens.",
        "",
        "| strategy | requests | largest request (tokens) | served once bound |"
        " input cost (token-equivalents) | $ | vs golem |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for o in outcomes:
        lines.append(
            f"| {o.name} | {o.requests} | {o.max_history:,} | {o.served_share:.3f} |"
            f" {o.cost_units:,.0f} | {o.dollars:.2f} | {o.cost_units / golem.cost_units:.1f}x |"
        )
    lines += ["", "Targets:", ""]
    for name, ok, text in verdicts(outcomes):
        lines.append(f"- {'met' if ok else 'MISSED'} ({name}): {text}")
    lines.append("")
    return "\n".join(lines)


def _outcomes(data: dict[str, Any]) -> list[Outcome]:
    return [Outcome(**o) for o in data["outcomes"]]


def render(data: dict[str, Any]) -> str:
    """This benchmark's section of the report, from its record in ``bench/results.json``."""
    return section(_outcomes(data), data["command"], data["turns"])


def guide_paragraph(data: dict[str, Any]) -> str:
    """The history guide's paragraph on the prompt cache, its figures read from the record."""
    outcomes = _outcomes(data)
    golem = outcomes[0]

    def cheaper(prefix: str) -> str:
        peer = next(o for o in outcomes[1:] if o.name.startswith(prefix))
        return f"{peer.cost_units / golem.cost_units:.1f}x"

    peers = [f"{cheaper('golem budget_history (sliding')} less than golem's sliding window"]
    peers[0] += f" (`low_water={BUDGET:_}`)"
    if any(o.name.startswith("langchain") for o in outcomes):
        peers.append(f"{cheaper('langchain')} less than langchain-core's `trim_messages`")
    if any(o.name.startswith("pydantic-ai") for o in outcomes):
        recipe = "pydantic-ai's keep-recent-messages recipe"
        peers.append(f"{cheaper('pydantic-ai')} less than {recipe}")
    listed = ", ".join(peers[:-1]) + " and " + peers[-1] if len(peers) > 1 else peers[0]
    text = (
        f"Over {data['turns']} turns with tool calls under a {BUDGET // 1000}k-token budget"
        f" (`{data['command']}`, at Anthropic's prices: cached input {READ}x, cache writes"
        f" {WRITE}x), {golem.served_share:.3f} of the history is served from the cache once"
        f" the budget binds, and the conversation's input costs {listed} (`bench/results.md`)."
    )
    return _wrap(text)


def _wrap(text: str, width: int = 90) -> str:
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def main(argv: Sequence[str] | None = None) -> int:
    from bench.report import add_write_option, write_section

    parser = argparse.ArgumentParser(prog="python -m bench.cache", description=__doc__)
    parser.add_argument("--turns", type=int, default=TURNS)
    add_write_option(parser)
    args = parser.parse_args(argv)
    outcomes = run(args.turns)
    for o in outcomes:
        print(json.dumps({"kind": "cache", **o.__dict__, "dollars": o.dollars}), flush=True)
    command = "python -m bench.cache" + (f" --turns {args.turns}" if args.turns != TURNS else "")
    data = {"command": command, "turns": args.turns, "outcomes": [asdict(o) for o in outcomes]}
    print(render(data))
    if args.write is not None:
        write_section(args.write, "cache", data)
    return 0 if all(ok for _, ok, _ in verdicts(outcomes)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
