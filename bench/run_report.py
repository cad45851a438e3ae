"""The ``run`` section of the report: ``python -m bench``'s records as Markdown.

Owns ``render`` (the section from its recorded JSON: the verdicts are judged again from
the records, ``bench/targets.py`` and ``bench/store.py``), the tables of ratios and of
every measurement, and the notes said after a known miss. ``bench/report.py`` reaches it
as ``bench.run.render``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.store import store_verdicts
from bench.targets import Verdict, judge, tracing_verdicts
from bench.timing import Memory, Record

__all__ = ["MISS_NOTES", "records_table", "render", "report", "verdict_table"]


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
