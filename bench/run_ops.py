"""The ops ``python -m bench`` times, built per size and for the agent runs.

Owns the baselines (the bare Python pass, the floor pass, stdlib ``json`` writing golem's
bytes), the ops at each history size (golem's codec, repair, trim and budget; the peers'
where they are installed) with the peak memory of one decode, and the ``agent.run``
overhead on offline models, golem vs pydantic-ai (``bench/run.py``'s docstring lists
them). ``bench/run.py`` measures them; ``bench/targets.py`` judges the records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from bench.convert import to_golem
from bench.peers import Peers
from bench.timing import Clock, Memory, Op, Record, measure_async, peak_memory
from bench.workload import NeutralMessage, conversation, damaged
from golem_core import (
    Message,
    ModelRequest,
    Role,
    ToolCallPart,
    approximate_tokens,
    budget_history,
    decode_history,
    encode_history,
    normalize_history,
    sanitize_history,
    trim_history,
)
from golem_core.codec import _json as codec
from golem_shell import Agent, FunctionModel

__all__ = ["MEMORY_MAX_N", "PEER_MAX_N", "agent_ops", "floor_pass", "python_pass", "size_ops"]

PEER_MAX_N = 10_000
"""Above this size the peers' encoder and token trim are skipped (seconds per call);
pydantic-ai's decoder runs at every size (the decode target is judged at each)."""
MEMORY_MAX_N = 10_000


# -- baselines -------------------------------------------------------------------------


def python_pass(messages: Sequence[NeutralMessage]) -> int:
    """A bare Python pass over the dicts: the cost of looking at every message once."""
    tools = 0
    for m in messages:
        if m["role"] == "tool":
            tools += 1
    return tools


def floor_pass(messages: Sequence[NeutralMessage]) -> dict[str, object]:
    """The least work a repair can do: one pass over the neutral dicts that pairs each
    result with its call by id in a dict and parses each call's arguments."""
    open_calls: dict[str, object] = {}
    for m in messages:
        role = m["role"]
        if role == "assistant":
            for c in m["tool_calls"]:
                open_calls[c["id"]] = json.loads(c["arguments"])
        elif role == "tool":
            open_calls.pop(m["tool_call_id"], None)
    return open_calls


def _stdlib_decode(data: bytes) -> object:
    """``decode_history`` without its optional accelerator (as without ``golem-agents[fast]``)."""
    accelerator, codec._ORJSON = codec._ORJSON, None
    try:
        return decode_history(data)
    finally:
        codec._ORJSON = accelerator


def _stdlib_dumps(value: object) -> bytes:
    """stdlib ``json.dumps`` writing the same bytes as ``encode_history``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# -- ops per size ------------------------------------------------------------------------


def _fresh(messages: Sequence[NeutralMessage]) -> Callable[[], tuple[Message, ...]]:
    return lambda: to_golem(messages)


def size_ops(n: int, peers: Peers) -> tuple[list[Op], list[Memory]]:
    """The timed ops at size ``n`` and the peak memory of one decode (``n <= 10,000``)."""
    clean = conversation(n)
    broken = damaged(n)
    history = to_golem(clean)
    history_damaged = to_golem(broken)
    data = encode_history(history)
    value = json.loads(data)
    assert _stdlib_dumps(value) == data
    keep = max(1, n // 2)
    budget = max(1, sum(approximate_tokens(m) for m in history) // 2)
    trim = trim_history(keep, low_water=keep)  # the window the peers' ops keep (ADR 0078)
    trim_stepped = trim_history(keep)  # the default: cuts in steps down to keep // 2
    fit = budget_history(approximate_tokens, budget, low_water=budget)

    ops = [
        Op("stdlib-json", "json_loads", n, lambda: json.loads(data)),
        Op("stdlib-json", "json_dumps", n, lambda: _stdlib_dumps(value)),
        Op("python", "python_pass", n, lambda: python_pass(clean)),
        Op("python", "floor_pass", n, lambda: floor_pass(clean)),
        Op("python", "floor_pass_damaged", n, lambda: floor_pass(broken)),
        Op("golem", "decode_json", n, lambda: decode_history(data)),
        Op("golem", "decode_json_stdlib", n, lambda: _stdlib_decode(data)),
        Op("golem", "encode_json", n, lambda: encode_history(history)),
        Op("golem", "normalize_clean", n, lambda: normalize_history(history)),
        Op("golem", "normalize_clean_cold", n, normalize_history, _fresh(clean)),
        Op("golem", "normalize_damaged", n, lambda: normalize_history(history_damaged)),
        Op("golem", "normalize_damaged_cold", n, normalize_history, _fresh(broken)),
        Op("golem", "sanitize_clean", n, lambda: sanitize_history(history)),
        Op("golem", "sanitize_clean_cold", n, sanitize_history, _fresh(clean)),
        Op("golem", "trim_half", n, lambda: trim(history)),
        Op("golem", "trim_half_stepped", n, lambda: trim_stepped(history)),
        Op("golem", "budget_half_tokens", n, lambda: fit(history)),
    ]
    memory: list[Memory] = []
    if n <= MEMORY_MAX_N:
        memory.append(Memory("golem", n, peak_memory(decode_history, data), len(data)))
        memory.append(Memory("stdlib-json", n, peak_memory(json.loads, data), len(data)))

    if peers.orjson is not None:
        oj = peers.orjson
        ops += [
            Op("orjson", "json_loads", n, lambda: oj.loads(data)),
            Op("orjson", "json_dumps", n, lambda: oj.dumps(value)),
        ]
        if n <= MEMORY_MAX_N:
            memory.append(Memory("orjson", n, peak_memory(oj.loads, data), len(data)))

    if peers.pydantic_ai is not None:
        pa = peers.pydantic_ai
        pm = pa.convert(clean)
        pd = pa.convert(broken)
        ops += [
            Op("pydantic-ai", "repair_messages_clean", n, lambda: pa.repair(pm)),
            Op("pydantic-ai", "repair_messages_damaged", n, lambda: pa.repair(pd)),
            Op("pydantic-ai", "sanitize_messages_clean", n, lambda: pa.sanitize(pm)),
            Op("pydantic-ai", "keep_last_half", n, lambda: pm[-(len(pm) // 2) :]),
        ]
        pb = pa.encode(pm)
        ops.append(Op("pydantic-ai", "decode_json", n, lambda: pa.decode(pb)))
        if n <= PEER_MAX_N:
            ops.append(Op("pydantic-ai", "encode_json", n, lambda: pa.encode(pm)))
            if n <= MEMORY_MAX_N:
                memory.append(Memory("pydantic-ai", n, peak_memory(pa.decode, pb), len(pb)))

    if peers.langchain is not None:
        lc = peers.langchain
        lm = lc.convert(clean)
        ops.append(Op("langchain-core", "trim_messages_count", n, lambda: lc.trim_count(lm, keep)))
        if n <= PEER_MAX_N:
            lc_budget = max(1, lc.count_tokens(lm) // 2)
            ops.append(
                Op(
                    "langchain-core",
                    "trim_messages_tokens",
                    n,
                    lambda: lc.trim_tokens(lm, lc_budget),
                )
            )
    return ops, memory


# -- agent runs ----------------------------------------------------------------------


def _golem_agents() -> tuple[Agent[None, str], Agent[None, str]]:
    def text_model(request: ModelRequest) -> str:
        return "done"

    def tool_model(request: ModelRequest) -> Message | str:
        last = request.messages[-1]
        if last.role is Role.TOOL and last.tool_name == "ping":
            return "done"
        return Message.assistant(tool_calls=[ToolCallPart("ping_1", "ping", '{"x": 1}')])

    def ping(x: int) -> str:
        """Trivial tool."""
        return f"pong {x}"

    return Agent(FunctionModel(text_model)), Agent(FunctionModel(tool_model), tools=[ping])


async def agent_ops(
    peers: Peers, history_n: int, repeat: int, min_repeat_s: float, clock: Clock
) -> list[Record]:
    neutral = conversation(history_n)
    text_agent, tool_agent = _golem_agents()
    history = to_golem(neutral)
    shape = await tool_agent.run("hi")  # the run measured: 2 requests around 1 tool call
    assert (shape.requests, shape.tool_executions, shape.output) == (2, 1, "done")
    ops: list[tuple[str, str, int, Any]] = [
        ("golem", "agent_run_text", 0, lambda: text_agent.run("hi")),
        ("golem", "agent_run_1tool", 0, lambda: tool_agent.run("hi")),
        (
            "golem",
            "agent_run_1tool_history",
            history_n,
            lambda: tool_agent.run_with_history(history, "hi"),
        ),
    ]
    if peers.pydantic_ai is not None:
        pa = peers.pydantic_ai
        pa_text, pa_tool = pa.agents()
        pa_history = pa.convert(neutral)
        assert len((await pa_tool.run("hi")).all_messages()) == 4  # the same shape
        ops += [
            ("pydantic-ai", "agent_run_text", 0, lambda: pa_text.run("hi")),
            ("pydantic-ai", "agent_run_1tool", 0, lambda: pa_tool.run("hi")),
            (
                "pydantic-ai",
                "agent_run_1tool_history",
                history_n,
                lambda: pa_tool.run("hi", message_history=pa_history),
            ),
        ]
    return await measure_async(ops, repeat, min_repeat_s, clock)
