"""The prompt-cache proof (issue 23, ADR 0078): a conversation bounded by golem's
processors keeps a cacheable prefix on every provider's wire.

A conversation grows turn by turn (text answers, tool calls, parallel calls, failed
results, thinking), each turn a run of the sans-IO loop exactly as an Agent drives it:
the processor runs once on the history the caller kept, then the run's requests follow.
The caller keeps either what each run returns (``result.messages``, "fed back") or the
whole conversation, appending each run's new messages ("stored", as a history store
does). Every request is encoded with every wire encoder (OpenAI Chat, Responses,
Anthropic, Gemini) and each body's message list must extend the previous body's, except
at the first request of a run whose processor reported a change; cuts are rare
(amortized, at most one per step of the budget); tools, instructions and everything
before the history never move; nothing run- or time-dependent reaches a body.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from attrs import frozen
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples
from returns.result import Success
from wire_rules import anthropic_cache_violations, openai_cache_violations

from golem_core import (
    HistoryProcessor,
    Message,
    ModelRequest,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    approximate_tokens,
    budget_history,
    clear_tool_results,
    compose,
    describe_cut,
    describe_processing,
    drop_thinking,
    plan_summary,
    summary_message,
    trim_history,
)
from golem_core.loop import (
    ExecuteTools,
    Fail,
    Finish,
    ModelResponded,
    OutputValid,
    RequestModel,
    RunConfig,
    ToolReturned,
    ToolSpec,
    ToolsReturned,
    ValidateOutput,
    next_command,
    process,
    receive,
    start_run,
)
from golem_core.wire import anthropic, gemini, openai, openai_responses
from golem_core.wire._cache import MAX_ANTHROPIC_BREAKPOINTS, strip_cache_markers

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
TOOLS = (
    ToolSpec(ToolDefinition("lookup", "Look a thing up.", {"type": "object", "properties": {}})),
    ToolSpec(ToolDefinition("compute", "Compute.", {"type": "object", "properties": {}})),
)
INSTRUCTIONS = "You are a careful assistant."
CONVERSATION = "conv-1"


# -- a conversation, turn by turn ----------------------------------------------------------


@frozen
class Step:
    """One model answer: tool calls (with their results), or a final text."""

    calls: tuple[tuple[str, int, bool], ...]  # (tool, result size, failed)
    text: str
    thinking: bool


@frozen
class Turn:
    prompt: str
    steps: tuple[Step, ...]


words = st.text(alphabet="abcdefgh ", min_size=1, max_size=40).map(lambda s: s.strip() or "x")
sizes = st.integers(1, 400)


@st.composite
def step(draw: st.DrawFn, final: bool) -> Step:
    calls: tuple[tuple[str, int, bool], ...] = ()
    if not final:
        calls = tuple(
            draw(
                st.lists(
                    st.tuples(st.sampled_from(["lookup", "compute"]), sizes, st.booleans()),
                    min_size=1,
                    max_size=3,
                )
            )
        )
    return Step(calls, draw(words), draw(st.booleans()))


@st.composite
def turns(draw: st.DrawFn) -> tuple[Turn, ...]:
    out = []
    for _ in range(draw(st.integers(3, 14))):
        tool_steps = draw(st.lists(step(False), max_size=2))
        out.append(Turn(draw(words), (*tool_steps, draw(step(True)))))
    return tuple(out)


def _answer(s: Step, run: int, request: int) -> Message:
    thinking = (
        [ThinkingPart(f"thinking {run}.{request}", signature="c2lnbmF0dXJl")] if s.thinking else []
    )
    calls = [
        ToolCallPart(f"call_{run}_{request}_{k}", tool, '{"q": 1}')
        for k, (tool, _, _) in enumerate(s.calls)
    ]
    return Message.assistant(s.text, tool_calls=calls, thinking=thinking)


def run_turn(
    history: Sequence[Message], turn: Turn, run: int, processor: HistoryProcessor | None
) -> tuple[list[ModelRequest], tuple[Message, ...], tuple[Message, ...]]:
    """One run as an Agent drives it: (requests, result.messages, new messages)."""
    config = RunConfig(
        run_id=f"run-{run:04d}",
        conversation_id=CONVERSATION,
        instructions=INSTRUCTIONS,
        tools=TOOLS,
    )
    state = start_run(
        config, history, (TextPart(turn.prompt),), processed=process(processor, history), now=NOW
    )
    requests: list[ModelRequest] = []
    results = {
        f"call_{run}_{r}_{k}": (size, failed)
        for r, s in enumerate(turn.steps)
        for k, (_, size, failed) in enumerate(s.calls)
    }
    while True:
        command = next_command(state)
        match command:
            case RequestModel(request):
                answer = _answer(turn.steps[len(requests)], run, len(requests))
                requests.append(request)
                state = receive(state, ModelResponded(answer))
            case ExecuteTools(calls):
                outcomes = []
                for call in calls:
                    size, failed = results[call.id or ""]
                    text = ("r" * size) if not failed else f"error {size}"
                    outcomes.append(ToolReturned(call.id or "", (TextPart(text),), failed))
                state = receive(state, ToolsReturned(tuple(outcomes)))
            case ValidateOutput(candidate):
                state = receive(state, OutputValid(candidate))
            case Finish(_, final):
                return requests, final.messages, final.added
            case Fail(stage, reason, _):
                raise AssertionError(f"run {run} failed at {stage}: {reason}")
            case _:
                raise AssertionError(f"unexpected command {command!r}")


# -- the wire ------------------------------------------------------------------------------


def _ok(result: Any) -> dict[str, Any]:
    assert isinstance(result, Success), result
    body: dict[str, Any] = result.unwrap()
    return body


def _flatten(messages: list[dict[str, Any]], content: str) -> list[Any]:
    """A body's message list as the sequence a cache compares: (role, block) pairs, since
    providers that merge consecutive turns extend the last turn in place."""
    out: list[Any] = []
    for m in messages:
        blocks = m[content]
        role = m.get("role")
        if isinstance(blocks, list):
            out.extend((role, json.dumps(b, sort_keys=True)) for b in blocks)
        else:
            out.append((role, json.dumps(blocks)))
    return out


@frozen
class Encoded:
    before: Any  # everything a provider reads before the history
    items: list[Any]
    body: dict[str, Any]


def encode_all(request: ModelRequest) -> dict[str, Encoded]:
    bodies = {
        "anthropic": _ok(anthropic.encode_request(request, model="claude-x", stream=False)),
        "openai": _ok(openai.encode_request(request, model="gpt-x", stream=False)),
        "openai_responses": _ok(
            openai_responses.encode_request(request, model="gpt-x", stream=False)
        ),
        "gemini": _ok(gemini.encode_request(request)),
    }
    out: dict[str, Encoded] = {}
    for name, body in bodies.items():
        plain = strip_cache_markers(body)
        if name == "anthropic":
            before = (plain.get("tools"), plain.get("system"))
            items = _flatten(plain["messages"], "content")
        elif name == "openai":
            assert plain["messages"][0] == {"role": "system", "content": INSTRUCTIONS}
            before = plain.get("tools")
            items = [json.dumps(m, sort_keys=True) for m in plain["messages"]]
        elif name == "openai_responses":
            before = (plain.get("tools"), plain.get("instructions"))
            items = [json.dumps(i, sort_keys=True) for i in plain["input"]]
        else:
            before = (plain.get("tools"), plain.get("systemInstruction"))
            items = _flatten(plain["contents"], "parts")
        out[name] = Encoded(before, items, body)
    return out


def check_markers(encoded: dict[str, Encoded]) -> None:
    """Markers and keys are ones the providers accept (``wire_rules``)."""
    body = encoded["anthropic"].body
    assert json.dumps(body).count('"cache_control"') <= MAX_ANTHROPIC_BREAKPOINTS
    assert anthropic_cache_violations(body) == []
    for name in ("openai", "openai_responses"):
        assert openai_cache_violations(encoded[name].body) == []
        assert encoded[name].body["prompt_cache_key"] == CONVERSATION


# -- the property --------------------------------------------------------------------------


ADDED: list[Message] = []


def grow(
    conversation: tuple[Turn, ...], processor: HistoryProcessor | None, *, fed_back: bool
) -> list[tuple[int, ModelRequest, bool]]:
    """Every request of the conversation: (run, request, the processor changed the history
    this run received and this is the run's first request). ``ADDED`` holds every message
    the runs added."""
    ADDED.clear()
    kept: tuple[Message, ...] = ()
    out: list[tuple[int, ModelRequest, bool]] = []
    for run, turn in enumerate(conversation):
        changed = False
        if processor is not None:
            processed = processor(kept)
            assert isinstance(processed, Success), processed
            changed = describe_processing(kept, processed.unwrap()) is not None
        requests, messages, added = run_turn(kept, turn, run, processor)
        for k, request in enumerate(requests):
            out.append((run, request, changed and k == 0))
        kept = messages if fed_back else kept + added
        ADDED.extend(added)
    return out


def assert_cache_stable(requests: list[tuple[int, ModelRequest, bool]]) -> int:
    """The property; returns how many requests broke the prefix (planned cuts)."""
    return len(broken_runs(requests))


def broken_runs(requests: list[tuple[int, ModelRequest, bool]]) -> list[int]:
    """The property; returns the run of each request that broke the prefix on some wire
    (each a planned cut)."""
    cuts: list[int] = []
    previous: dict[str, Encoded] | None = None
    previous_request: ModelRequest | None = None
    for run, request, planned in requests:
        assert request.instructions == INSTRUCTIONS
        encoded = encode_all(request)
        check_markers(encoded)
        for body in (e.body for e in encoded.values()):
            text = json.dumps(strip_cache_markers(body))
            assert "run-" not in text and "2026-01-02" not in text  # nothing run/time-bound
        if previous is not None and previous_request is not None:
            gap = describe_cut(previous_request, request)
            broke = False
            for name, now in encoded.items():
                before = previous[name]
                assert now.before == before.before, f"{name}: tools or instructions moved"
                extends = now.items[: len(before.items)] == before.items
                if not extends:
                    broke = True
                    assert planned, (
                        f"{name}: run {run} broke the prefix without a planned cut ({gap})"
                    )
            if broke:
                cuts.append(run)
                assert gap is not None and gap.cause in ("cut", "summary", "cleared", "thinking")
            elif gap is not None:  # a break no encoder sees: a part no provider is sent
                assert planned
        previous, previous_request = encoded, request
    return cuts


def _tokens(messages: Sequence[Message]) -> int:
    return sum(approximate_tokens(m) for m in messages)


BUDGET = 900


def _summarizer(max_tokens: int) -> HistoryProcessor:
    """A pure stand-in for summarize_history: the plan, and a text that depends only on
    what it summarizes (a model's answer, once placed, is kept as it is)."""

    def summarize(history: Sequence[Message]) -> Any:
        plan = plan_summary(history, keep_last_turns=1, max_tokens=max_tokens)
        if plan is None:
            return Success(tuple(history))
        text = f"summary of {len(plan.to_summarize)} messages"
        return Success(plan.apply(summary_message(text, summarized=len(plan.to_summarize))))

    return summarize


PROCESSORS: dict[str, Callable[[], HistoryProcessor]] = {
    "budget": lambda: budget_history(approximate_tokens, BUDGET),
    "trim": lambda: trim_history(16),
    "lean": lambda: compose(
        clear_tool_results(keep_last=2),
        drop_thinking(keep_last_turns=1),
        budget_history(approximate_tokens, BUDGET),
    ),
}


@settings(max_examples=examples(40))
@given(turns(), st.sampled_from(sorted(PROCESSORS)), st.booleans())
def test_each_request_extends_the_previous_except_at_planned_cuts(
    conversation: tuple[Turn, ...], name: str, fed_back: bool
) -> None:
    requests = grow(conversation, PROCESSORS[name](), fed_back=fed_back)
    cuts = assert_cache_stable(requests)
    # amortized: each kind of cut waits for a whole step (half the bound, 8 results,
    # 4 turns) of new material, so cuts are rare
    allowed = 2 + (len(ADDED) // 8 if name == "trim" else _tokens(ADDED) // (BUDGET // 2))
    if name == "lean":
        results = sum(m.role == "tool" for m in ADDED)
        allowed += 1 + results // 8 + 1 + len(conversation) // 4
    assert cuts <= allowed


@settings(max_examples=examples(25))
@given(turns(), st.booleans())
def test_without_a_processor_every_request_extends_the_previous(
    conversation: tuple[Turn, ...], fed_back: bool
) -> None:
    assert assert_cache_stable(grow(conversation, None, fed_back=fed_back)) == 0


@settings(max_examples=examples(25))
@given(turns())
def test_a_placed_summary_stays_byte_identical_until_the_next_compaction(
    conversation: tuple[Turn, ...],
) -> None:
    requests = grow(conversation, _summarizer(BUDGET), fed_back=True)
    assert_cache_stable(requests)
    placed: dict[str, int] = {}
    for _, request, _ in requests:
        summaries = [m for m in request.messages if m.text.startswith("summary of")]
        assert len(summaries) <= 1
        for summary in summaries:
            if summary.text not in placed:
                placed[summary.text] = 0
            placed[summary.text] += 1
    # a new summary text appears only at a planned cut
    assert len(placed) <= 1 + sum(planned for _, _, planned in requests)


# -- stepped cuts against the sliding window, on a steady conversation ------------------------


def steady(turn_tokens: int) -> tuple[Turn, ...]:
    """A conversation of equal text turns (a prompt and an answer of ``turn_tokens``
    tokens together, by ``approximate_tokens``) long enough to fill ``BUDGET`` three times."""
    chars = max(1, (turn_tokens * 4) // 2 - 12)
    return tuple(
        Turn(f"{k:03d}" + "p" * chars, (Step((), f"{k:03d}" + "a" * chars, False),))
        for k in range(3 * BUDGET // turn_tokens + 4)
    )


@settings(max_examples=examples(12), deadline=None)
@given(st.integers(20, 100), st.booleans())
def test_a_stepped_cut_keeps_the_placed_prefix_for_a_whole_step_the_sliding_window_never(
    turn_tokens: int, fed_back: bool
) -> None:
    """Not luck but construction: on turns of equal size the default (stepped) cut keeps
    the placed prefix byte-identical on every wire for at least a step's worth of turns
    (half the budget, less two turns for the cut's rounding) between two breaks, and it
    does break (the budget fills three times); the sliding window
    (``low_water=max_tokens``) breaks on every run once full."""
    conversation = steady(turn_tokens)
    per_turn = max(_tokens(run_turn((), t, 0, None)[2]) for t in conversation)
    stepped = broken_runs(
        grow(conversation, budget_history(approximate_tokens, BUDGET), fed_back=fed_back)
    )
    sliding = broken_runs(
        grow(
            conversation,
            budget_history(approximate_tokens, BUDGET, low_water=BUDGET),
            fed_back=fed_back,
        )
    )
    step_turns = (BUDGET // 2 - 2 * per_turn) // per_turn
    assert len(stepped) >= 2, stepped
    gaps = [b - a for a, b in itertools.pairwise(stepped)]
    assert min(gaps) >= max(2, step_turns), (per_turn, stepped)
    assert sliding == list(range(sliding[0], len(conversation))), sliding
    assert len(stepped) * 2 <= len(sliding)


@settings(max_examples=examples(25))
@given(turns(), st.booleans())
def test_the_sliding_window_is_cache_correct_too(
    conversation: tuple[Turn, ...], fed_back: bool
) -> None:
    """The explicit sliding window breaks the prefix only where it cuts (how much more
    often than the stepped default: the steady conversation above)."""
    assert_cache_stable(
        grow(
            conversation,
            budget_history(approximate_tokens, BUDGET, low_water=BUDGET),
            fed_back=fed_back,
        )
    )
