"""The benchmark: golem and its peers on one workload, in one run, in one process.

``python -m bench`` builds the workload (``bench/workload.py``) at each size, converts
it for every library, times every op in interleaved rounds (``bench/timing.py``), and
prints one JSON line per measurement and per ratio, then a table of golem/peer ratios
with each target met or missed. ``--write bench/results.md`` records the measurements,
the machine and the library versions as the ``run`` section of ``bench/results.json``
and renders the report from it (``bench/report.py``: ``render`` here turns the recorded
section into Markdown, verdicts and misses included, so nothing in it is typed).

Ops per size ``n`` (seconds per call):

- baselines: stdlib ``json.loads`` / ``json.dumps`` of the very bytes golem reads and
  writes (orjson's too, for scale); a bare Python pass over the neutral dicts; the
  floor pass (one pass that pairs results with calls by id in a dict and parses every
  call's arguments: the least work a repair can do);
- golem: ``decode_history`` (also ``decode_json_stdlib``: without the optional orjson
  accelerator, as without ``golem-agents[fast]``) / ``encode_history``;
  ``normalize_history`` on the clean and the damaged workload and ``sanitize_history``,
  each both on one history called again and again (the plain name) and ``_cold``: on a
  freshly built history whose tool-call arguments were never parsed (golem parses them
  once per part and caches the result); ``trim_history(n // 2)`` as the sliding window
  (``trim_half``: the window the peers keep) and with its default steps
  (``trim_half_stepped``);
  ``budget_history(approximate_tokens, half)``;
- pydantic-ai: its JSON codec, ``repair_messages``, ``sanitize_messages``; langchain-core:
  ``trim_messages`` by message count and by approximate tokens. Above 10,000 messages
  the peers' encoder and token trim are skipped (seconds per call).

Once per run: recorded streams decoded and accumulated, golem vs each official SDK
(``bench/streaming.py``); start-up in fresh processes vs pydantic-ai
(``bench/startup.py``, left out by ``--quick``); stored conversations: one append at
100 to 100,000 messages and a 10,000-message load, SQLite and PostgreSQL
(``bench/store.py``; ``--quick``: SQLite, small); ``agent.run`` overhead on offline
models (a text answer; one tool round trip; one tool round trip after a 1,000-message
history), golem vs pydantic-ai; and,
per size up to 10,000, the peak memory of one decode (``tracemalloc``) vs input bytes.
Every peer is optional: without one, golem runs against the baselines alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from bench.convert import to_golem
from bench.durable_peers import durable_records
from bench.peers import Peers, load_peers
from bench.report import write_section
from bench.startup import startup_records
from bench.store import store_records, store_verdicts
from bench.streaming import stream_ops
from bench.timing import CLOCKS, Clock, Op, Record, measure, measure_async, peak_memory
from bench.tracing import HISTORY_SIZES, history_ops
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

__all__ = ["main", "render"]

DEFAULT_SIZES = (1_000, 10_000, 100_000)
DEFAULT_REPEAT = 7
MIN_REPEAT_S = 0.02
PEER_MAX_N = 10_000
"""Above this size the peers' encoder and token trim are skipped (seconds per call);
pydantic-ai's decoder runs at every size (the decode target is judged at each)."""
TARGET_N = 10_000
"""The size the spec's "at 10,000" targets are judged at."""
AGENT_HISTORY_N = 1_000
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


@dataclass(frozen=True)
class Memory:
    lib: str
    n: int
    peak_bytes: int
    input_bytes: int

    @property
    def ratio(self) -> float:
        return self.peak_bytes / self.input_bytes

    def as_json(self) -> dict[str, object]:
        return {
            "kind": "memory",
            "lib": self.lib,
            "op": "decode_json_peak_mem",
            "n": self.n,
            "peak_bytes": self.peak_bytes,
            "input_bytes": self.input_bytes,
            "peak_per_input_byte": round(self.ratio, 3),
        }


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


# -- targets -------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """golem's ``op`` against ``versus`` (``(lib, op)``): its ratio, and the most it may be.

    ``limit=None`` is informational. ``at`` restricts the judged size (the others are
    still shown, informational); ``None`` judges every size.
    """

    op: str
    versus: tuple[str, str]
    limit: float | None
    label: str
    at: int | None = None


TARGETS = (
    Target("decode_json", ("stdlib-json", "json_loads"), 1.5, "within 1.5x of json.loads"),
    Target("decode_json", ("pydantic-ai", "decode_json"), 0.25, ">= 4x faster"),
    Target("decode_json", ("orjson", "json_loads"), None, "scale"),
    Target("decode_json_stdlib", ("stdlib-json", "json_loads"), None, "info: without orjson"),
    Target("decode_json_stdlib", ("pydantic-ai", "decode_json"), None, "info: without orjson"),
    Target("encode_json", ("stdlib-json", "json_dumps"), 1.0, "at most json.dumps"),
    Target("encode_json", ("pydantic-ai", "encode_json"), 1 / 3, ">= 3x faster", TARGET_N),
    Target("encode_json", ("orjson", "json_dumps"), None, "scale"),
    Target("normalize_clean_cold", ("python", "floor_pass"), 3.0, "within 3x of the floor"),
    Target("normalize_clean", ("python", "floor_pass"), None, "info: arguments parsed before"),
    Target("normalize_clean", ("pydantic-ai", "repair_messages_clean"), None, "info"),
    Target(
        "normalize_damaged_cold",
        ("python", "floor_pass_damaged"),
        3.0,
        "within 3x of the floor",
    ),
    Target(
        "normalize_damaged",
        ("pydantic-ai", "repair_messages_damaged"),
        0.5,
        ">= 2x faster (neither parses arguments)",
    ),
    Target(
        "normalize_damaged_cold",
        ("pydantic-ai", "repair_messages_damaged"),
        None,
        "info: golem also parses every call's arguments",
    ),
    Target("sanitize_clean_cold", ("python", "floor_pass"), 4.0, "within 4x of the floor"),
    Target("sanitize_clean", ("python", "floor_pass"), None, "info: arguments parsed before"),
    Target("sanitize_clean", ("pydantic-ai", "sanitize_messages_clean"), None, "info"),
    Target("trim_half", ("langchain-core", "trim_messages_count"), None, "info"),
    Target(
        "trim_half_stepped",
        ("langchain-core", "trim_messages_count"),
        0.5,
        "<= 1/2 (the default stepped cut)",
        TARGET_N,
    ),
    Target("trim_half", ("pydantic-ai", "keep_last_half"), None, "a bare slice"),
    Target(
        "budget_half_tokens",
        ("langchain-core", "trim_messages_tokens"),
        0.1,
        ">= 10x faster",
        TARGET_N,
    ),
    Target("agent_run_text", ("pydantic-ai", "agent_run_text"), 0.2, "<= 1/5"),
    Target("agent_run_1tool", ("pydantic-ai", "agent_run_1tool"), 0.2, "<= 1/5"),
    Target("agent_run_1tool_history", ("pydantic-ai", "agent_run_1tool_history"), 0.1, "<= 1/10"),
    Target("stream_openai", ("openai-sdk", "stream_openai"), 1 / 3, ">= 3x faster than the SDK"),
    Target("stream_anthropic", ("anthropic-sdk", "stream_anthropic"), 1 / 3, ">= 3x faster"),
    Target(
        "stream_gemini", ("google-genai-sdk", "stream_gemini"), 1 / 3, ">= 3x faster than the SDK"
    ),
    Target(
        "stream_responses", ("openai-sdk", "stream_responses"), 1 / 3, ">= 3x faster than the SDK"
    ),
    Target("import_golem_core", ("pydantic-ai", "import_golem_core"), 0.5, "<= 1/2 of import"),
    Target("import_golem_shell", ("pydantic-ai", "import_golem_shell"), 0.5, "<= 1/2 of import"),
    Target("cli_help", ("pydantic-ai", "import_golem_shell"), None, "info: vs import pydantic_ai"),
    Target("first_request", ("pydantic-ai", "first_request"), 0.5, "<= 1/2"),
    Target(
        "durable_overhead_per_step",
        ("pydantic-ai", "durable_overhead_per_step"),
        1.0,
        "DBOS on SQLite, per recorded step: at most equal",
    ),
    Target(
        "durable_overhead_per_run",
        ("pydantic-ai", "durable_overhead_per_run"),
        None,
        "info: golem records 5 steps per run, pydantic-ai 3",
    ),
)
LINEAR = (
    ("budget_half_tokens", 13.0),
    ("trim_half", None),
    ("normalize_clean", None),
    ("decode_json", None),
)
"""golem ops whose 100,000/10,000 time ratio is checked (limit: 10x, 30% slack)."""
MEMORY_LIMIT = 3.0


@dataclass(frozen=True)
class Verdict:
    op: str
    n: int
    golem_s: float
    versus: str
    versus_s: float
    ratio: float
    target: str
    met: bool | None

    @property
    def status(self) -> str:
        return {True: "met", False: "MISSED", None: ""}[self.met]

    def as_json(self) -> dict[str, object]:
        return {
            "kind": "ratio",
            "op": self.op,
            "n": self.n,
            "golem_median_s": self.golem_s,
            "versus": self.versus,
            "versus_median_s": self.versus_s,
            "ratio": round(self.ratio, 4),
            "target": self.target,
            "met": self.met,
        }


def judge(records: Sequence[Record], memory: Sequence[Memory]) -> list[Verdict]:
    """Every golem/peer ratio the records allow, each with its target's verdict."""
    by_key = {(r.lib, r.op, r.n): r for r in records}
    sizes = sorted({r.n for r in records if r.lib == "golem"})
    verdicts: list[Verdict] = []
    for t in TARGETS:
        for n in sizes:
            mine = by_key.get(("golem", t.op, n))
            theirs = by_key.get((*t.versus, n))
            if mine is None or theirs is None:
                continue
            ratio = mine.median_s / theirs.median_s
            judged = t.limit is not None and (t.at is None or t.at == n)
            if t.limit is None:
                label = t.label
            elif judged:
                label = f"{t.label} (<= {t.limit:.3g})"
            else:
                label = f"info ({t.label} judged at {t.at:,})"
            verdicts.append(
                Verdict(
                    t.op,
                    n,
                    mine.median_s,
                    f"{t.versus[0]} {t.versus[1]}",
                    theirs.median_s,
                    ratio,
                    label,
                    ratio <= t.limit if judged and t.limit is not None else None,
                )
            )
    for op, limit in LINEAR:
        big = by_key.get(("golem", op, 100_000))
        small = by_key.get(("golem", op, 10_000))
        if big is None or small is None:
            continue
        ratio = big.median_s / small.median_s
        verdicts.append(
            Verdict(
                op,
                100_000,
                big.median_s,
                f"golem {op} n=10,000",
                small.median_s,
                ratio,
                f"linear: ~10x (<= {limit:.3g})" if limit is not None else "linear (info)",
                ratio <= limit if limit is not None else None,
            )
        )
    for m in memory:
        if m.lib != "golem":
            continue
        judged = m.n == TARGET_N
        verdicts.append(
            Verdict(
                "decode_json_peak_mem",
                m.n,
                float(m.peak_bytes),
                "input bytes",
                float(m.input_bytes),
                m.ratio,
                f"peak <= {MEMORY_LIMIT:g}x input" if judged else "info (judged at 10,000)",
                m.ratio <= MEMORY_LIMIT if judged else None,
            )
        )
    return verdicts


TRACING_FLAT = 2.0
"""Tracing with content, per request, at 100 and 1,000 messages: at most this times its
cost at 10 messages (flat: nothing re-serialized per request; the history's text is
still copied into the span attribute, which grows with it)."""


def tracing_verdicts(records: Sequence[Record]) -> list[Verdict]:
    """The tracing cost per request (traced run minus untraced run, over its two
    requests) at each history size against the same at the smallest size."""
    by_key = {(r.op, r.n): r.median_s for r in records if r.lib == "golem"}
    cost: dict[int, float] = {}
    for n in HISTORY_SIZES:
        on = by_key.get(("run_history_otel_content", n))
        off = by_key.get(("run_history_otel_off", n))
        if on is not None and off is not None:
            cost[n] = max(on - off, on / 100) / 2  # noise can put "on" under "off"
    base = HISTORY_SIZES[0]
    if base not in cost:
        return []
    return [
        Verdict(
            "otel_content_per_request",
            n,
            cost[n],
            f"golem otel_content_per_request n={base}",
            cost[base],
            cost[n] / cost[base],
            f"flat: within {TRACING_FLAT:g}x of n={base} (<= {TRACING_FLAT:g})"
            if n != base
            else "info",
            cost[n] / cost[base] <= TRACING_FLAT if n != base else None,
        )
        for n in HISTORY_SIZES
        if n in cost
    ]


# -- output --------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    if ms >= 100:
        return f"{ms:,.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


def verdict_table(verdicts: Sequence[Verdict]) -> str:
    lines = [
        "| golem op | n | golem ms | versus | versus ms | golem/versus | target | status |",
        "|---|---:|---:|---|---:|---:|---|---|",
    ]
    for v in verdicts:
        if v.op == "decode_json_peak_mem":
            mine, theirs = f"{v.golem_s / 1e6:.2f} MB", f"{v.versus_s / 1e6:.2f} MB"
        else:
            mine, theirs = _ms(v.golem_s), _ms(v.versus_s)
        lines.append(
            f"| {v.op} | {v.n:,} | {mine} | {v.versus} | {theirs} | {v.ratio:.3g} "
            f"| {v.target} | {v.status} |"
        )
    return "\n".join(lines)


def records_table(records: Sequence[Record], memory: Sequence[Memory]) -> str:
    lines = [
        "| lib | op | n | median ms | min ms | max ms | repeats x calls |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        lines.append(
            f"| {r.lib} | {r.op} | {r.n:,} | {_ms(r.median_s)} | {_ms(r.min_s)} "
            f"| {_ms(r.max_s)} | {r.repeats} x {r.calls} |"
        )
    if memory:
        lines += [
            "",
            "| lib | decode peak memory | n | peak MB | input MB | peak / input |",
            "|---|---|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {m.lib} | tracemalloc | {m.n:,} | {m.peak_bytes / 1e6:.2f} "
            f"| {m.input_bytes / 1e6:.2f} | {m.ratio:.2f} |"
            for m in memory
        ]
    return "\n".join(lines)


def _distribution_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def environment(peers: Peers) -> dict[str, str]:
    libraries = {
        name: _distribution_version(name) for name in ("golem-agents", "attrs", "cattrs", "returns")
    }
    libraries.update(peers.versions())
    if peers.pydantic_ai is not None:
        libraries["pydantic"] = _distribution_version("pydantic")
    return {
        "nproc": str(os.cpu_count()),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        **libraries,
    }


def report(
    command: str,
    env: dict[str, str],
    verdicts: Sequence[Verdict],
    records: Sequence[Record],
    memory: Sequence[Memory],
) -> str:
    judged = [v for v in verdicts if v.met is not None]
    missed = [v for v in judged if not v.met]
    misses = [
        f"- `{v.op}` at n={v.n:,}: {v.ratio:.3g} against `{v.versus}`, target {v.target}"
        f" (golem {_ms(v.golem_s)} ms, {_ms(v.versus_s)} ms).{MISS_NOTES.get(v.op, '')}"
        for v in missed
    ] or ["No target was missed in this run."]
    machine_keys = ("nproc", "python", "platform")
    machine = ", ".join(f"{k} {env[k]}" for k in machine_keys)
    libraries = ", ".join(f"{k} {v}" for k, v in env.items() if k not in (*machine_keys, "clock"))
    return "\n".join(
        [
            "# golem benchmark results",
            "",
            f"Regenerate with `{command}`.",
            "",
            "Every figure in this file is rendered by `bench/report.py` from",
            "`bench/results.json`, which the command named in each section writes: a",
            "re-measurement is a re-run of that command, never an edit.",
            "",
            "One run, one process, every library on the same workload (`bench/workload.py`).",
            "Figures are milliseconds per call, the median of interleaved repeats after a",
            "warm-up (`bench/timing.py`); on a shared machine compare only the ratios, which",
            "are taken within this run.",
            "",
            "How to read the ops:",
            "",
            "- `floor_pass`: one pass over the neutral dicts that pairs results with calls by",
            "  id in a dict and `json.loads` each call's arguments: the least work a repair",
            "  can do.",
            "- `normalize_*` and `sanitize_*` repeat on one history; the `_cold` variants run",
            "  on a freshly built history whose call arguments were never parsed. golem",
            "  parses each call's arguments once per part (to report truncated calls) and",
            "  caches the result, so the cold variants are the ones compared with the floor",
            "  (both parse every call), and the plain ones with pydantic-ai's",
            "  `repair_messages` (neither parses).",
            "- `stdlib-json json_loads` / `json_dumps` read and write the very bytes",
            "  `decode_history` reads and `encode_history` writes.",
            "- `decode_json` uses the optional orjson accelerator when it is installed (it",
            "  is here); `decode_json_stdlib` is the same decode without it (ADR 0074).",
            "- `stream_*`: a recorded stream (`tests/fixtures`) from bytes to the final",
            "  message, against the official SDK's own SSE decoding, event types and stream",
            "  accumulation on the same bytes (`bench/streaming.py`).",
            "- `import_*`, `cli_help`, `first_request`: wall time in fresh processes after",
            "  interpreter start, against `import pydantic_ai` and pydantic-ai's first",
            "  `FunctionModel` run (`bench/startup.py`); both sides import from bytecode",
            "  written by an untimed first round, as after a pip install.",
            "- `otel_content_per_request`: what tracing costs per request (SDK tracer",
            "  provider, content captured) after a history of n messages: the traced run",
            "  minus the untraced one, over its two requests (`bench/tracing.py`).",
            "- `durable_overhead_*`: CPU time of a durable run minus a plain one, DBOS on",
            "  SQLite, golem `DurableAgent` against pydantic-ai `DBOSAgent`, same workload",
            "  (`bench/durable_peers.py`); per step: divided by the steps each records.",
            "- A target applies at every size unless it names one; other rows are context.",
            "",
            f"- Machine: {machine}",
            f"- Libraries: {libraries}",
            f"- Clock: {env['clock']}",
            f"- Targets judged: {len(judged)}, met: {len(judged) - len(missed)}, missed: "
            f"{len(missed)}",
            "",
            "## Ratios and targets",
            "",
            verdict_table(verdicts),
            "",
            "### Misses",
            "",
            *misses,
            "",
            "## Every measurement",
            "",
            records_table(records, memory),
            "",
        ]
    )


MISS_NOTES = {
    "decode_json": (
        " Building golem's frozen messages and parts is pure Python and costs about as"
        " much as the parse; `python -m bench.profile_decode` splits the time."
    ),
}
"""What is known about a miss of an op, said after its figures (no figures of its own)."""


def render(data: dict[str, Any]) -> str:
    """The report of one recorded run (the ``run`` section of ``bench/results.json``)."""
    records = [
        Record(
            r["lib"],
            r["op"],
            r["n"],
            r["median_s"],
            r["min_s"],
            r["max_s"],
            r["repeats"],
            r["calls_per_repeat"],
        )
        for r in data["records"]
    ]
    memory = [Memory(m["lib"], m["n"], m["peak_bytes"], m["input_bytes"]) for m in data["memory"]]
    verdicts = judge(records, memory) + tracing_verdicts(records) + store_verdicts(records)
    return report(data["command"], data["env"], verdicts, records, memory)


# -- main ----------------------------------------------------------------------------


def _sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(int(s.replace("_", "")) for s in text.split(",") if s.strip())
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected sizes like 1000,10000, got {text!r}")
    return sizes


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Time golem and its peers on the reference workload, in one process.",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        help="history sizes, comma-separated (default 1000,10000,100000; --quick: 200)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help=f"timed repeats per op after warm-up (default {DEFAULT_REPEAT}; --quick: 1)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke mode: one call per repeat, small agent history; figures not meaningful",
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall: elapsed time (default); cpu: process CPU time, steadier on a busy machine",
    )
    parser.add_argument("--no-peers", action="store_true", help="golem and baselines only")
    parser.add_argument("--write", type=Path, help="also write the report (markdown) here")
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = (200,) if args.quick else DEFAULT_SIZES
    if args.repeat is None:
        args.repeat = 1 if args.quick else DEFAULT_REPEAT
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = "python -m bench" + (" " + " ".join(argv) if argv else "")
    if argv is None:
        command = "python -m bench " + " ".join(sys.argv[1:])
    command = command.strip()
    min_repeat_s = 0.0 if args.quick else MIN_REPEAT_S
    clock = CLOCKS[args.clock]
    peers = Peers(None, None, None) if args.no_peers else load_peers()

    def emit(line: dict[str, object]) -> None:
        print(json.dumps(line), flush=True)

    records: list[Record] = []
    memory: list[Memory] = []
    for n in args.sizes:
        ops, mem = size_ops(n, peers)
        for m in mem:
            emit(m.as_json())
        memory += mem
        for r in measure(ops, args.repeat, min_repeat_s, clock):
            emit({"kind": "time", **r.as_json()})
            records.append(r)
        del ops
    history_n = min(AGENT_HISTORY_N, max(args.sizes)) if args.quick else AGENT_HISTORY_N
    for r in asyncio.run(agent_ops(peers, history_n, args.repeat, min_repeat_s, clock)):
        emit({"kind": "time", **r.as_json()})
        records.append(r)
    for r in asyncio.run(history_ops(args.repeat, min_repeat_s, clock)):
        emit({"kind": "time", **r.as_json()})
        records.append(r)
    for r in measure(stream_ops(), args.repeat, min_repeat_s, clock):
        emit({"kind": "time", **r.as_json()})
        records.append(r)
    if not args.quick:  # fresh processes: seconds, not for the smoke run
        for r in startup_records(args.repeat):
            emit({"kind": "time", **r.as_json()})
            records.append(r)
        for r in durable_records(rounds=args.repeat):
            emit({"kind": "time", **r.as_json()})
            records.append(r)
    store_args = {"repeat": args.repeat, "min_repeat_s": min_repeat_s, "clock": clock}
    for r in store_records(quick=args.quick, postgres=not args.quick, **store_args):
        emit({"kind": "time", **r.as_json()})
        records.append(r)

    verdicts = judge(records, memory) + tracing_verdicts(records) + store_verdicts(records)
    for v in verdicts:
        emit(v.as_json())
    env = environment(peers)
    env["clock"] = {"wall": "wall (time.perf_counter)", "cpu": "cpu (time.process_time)"}[
        args.clock
    ]
    data = {
        "command": command,
        "env": env,
        "records": [r.as_json() for r in records],
        "memory": [m.as_json() for m in memory],
    }
    print()
    print(render(data))
    if args.write is not None:
        write_section(args.write, "run", data)
    return 0
