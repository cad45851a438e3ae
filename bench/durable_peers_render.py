"""The ``durable_peers`` section of the report: ``python -m bench.durable_peers`` as Markdown.

Owns ``render`` (the section from its record in ``bench/results.json``): the short
comparison's table, the long runs' table and the verdict sentences on each engine.
``bench/report.py`` reaches it as ``bench.durable_peers.render``.
"""

from __future__ import annotations

from typing import Any

from bench.durable_peers_long import CONTINUED

__all__ = ["render"]


def render(data: dict[str, Any]) -> str:
    """This benchmark's section of the report, from its record in ``bench/results.json``."""
    machine, versions = data["machine"], data["versions"]
    lines = [
        f"## Durable runs against pydantic-ai (`{data['command']}`)",
        "",
        "golem's durable agents beside pydantic-ai's (`DBOSAgent`, `TemporalAgent`, and on"
        " Temporal its `TemporalDurability` capability continuing as new), offline"
        " `FunctionModel`s (`bench/durable_peers.py`).",
        f"pydantic-ai-slim {versions['pydantic-ai-slim']}, dbos {versions['dbos']},"
        f" temporalio {versions['temporalio']}; machine: nproc {machine['nproc']},"
        f" python {machine['python']}, load average {machine['load_average_end']:.1f} at the end.",
    ]
    if data.get("short"):
        lines += ["", *_short_markdown(data["short"])]
    if data.get("long"):
        lines += ["", *_long_markdown(data["long"])]
    return "\n".join(lines) + "\n"


def _short_markdown(result: dict[str, Any]) -> list[str]:
    lines = [
        "Overhead of durability on DBOS/SQLite (3 model requests and 2 tool calls per run;"
        " durable run minus plain run, CPU; per step: divided by the steps each records,"
        f" golem {result['golem_steps']}, pydantic-ai {result['pydantic_ai_steps']}):",
        "",
        "| library | plain CPU ms/run | durable CPU ms/run | overhead ms/run"
        " | overhead wall ms/run | steps | ms/step |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for lib, key in (("golem", "golem"), ("pydantic-ai", "pydantic_ai")):
        lines.append(
            f"| {lib} | {result[f'{key}_plain_cpu_ms']:.2f}"
            f" | {result[f'{key}_durable_cpu_ms']:.2f}"
            f" | {result[f'{key}_overhead_ms']:.2f} | {result[f'{key}_overhead_wall_ms']:.2f}"
            f" | {result[f'{key}_steps']} | {result[f'{key}_per_step_ms']:.2f} |"
        )
    lines += [
        "",
        f"golem / pydantic-ai overhead: per run {result['per_run_ratio']:.2f},"
        f" per recorded step {result['per_step_ratio']:.2f}.",
    ]
    return lines


def _cell(value: Any, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def _long_markdown(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "Long runs (one run each, a model request calling a tool per step; issue 34; engine"
        " `plain`: `Agent.run`, no durability, each library's own cost): per-step"
        " time at the start (median of steps 6-25) and at the end (last 20); the largest"
        " recorded payload (DBOS: a row of its tables; Temporal: a `Payloads` in the event"
        " history) against the largest message; the system database after the run; on"
        " Temporal the event history and the exponent of its growth over steps 50-500"
        " (1.0: linear).",
        "",
        "| engine | library | steps | seconds | step ms (6-25) | step ms (last 20)"
        " | late / early | largest payload B | largest message B | payload / message"
        " | database MB | history MB | exponent | outcome |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        history = r.get("history_bytes")
        database = r.get("db_bytes")
        payload, message = r.get("largest_payload"), r.get("largest_message")
        ratio = None if payload is None or not message else payload / message
        lines.append(
            f"| {r['engine']} | {_who(r)} | {_cell(r.get('steps'))} of {r['steps_requested']}"
            f" | {_cell(r.get('seconds'), '.1f')} | {_cell(r.get('early_step_ms'), '.2f')}"
            f" | {_cell(r.get('late_step_ms'), '.2f')} | {_cell(r.get('late_over_early'), '.2f')}"
            f" | {_cell(payload)} | {_cell(message)} | {_cell(ratio, '.1f')}"
            f" | {_cell(None if database is None else database / 1e6, '.2f')}"
            f" | {_cell(None if history is None else history / 1e6, '.2f')}"
            f" | {_cell(r.get('history_exponent'), '.2f')}"
            f" | {_outcome(r)} |"
        )
    verdicts = [v for engine in ("plain", "dbos", "temporal") if (v := _verdict(rows, engine))]
    return [*lines, "", *verdicts]


def _outcome(row: dict[str, Any]) -> str:
    text = "completed" if row["completed"] else f"stopped: {row['error']}"
    if row.get("history_error"):
        text += f"; {row['history_error']}"
    return " ".join(text.replace("|", "/").split())  # one table cell


def _who(row: dict[str, Any]) -> str:
    variant = row.get("variant")
    return row["library"] if not variant else f"{row['library']} (`{variant}`)"


def _verdict(rows: list[dict[str, Any]], engine: str) -> str:
    """One generated sentence comparing the two libraries' long runs on ``engine``."""
    pair = {
        r["library"]: r for r in rows if r["engine"] == engine and r.get("variant") != CONTINUED
    }
    if set(pair) != {"golem", "pydantic-ai"}:
        return ""
    g, p = pair["golem"], pair["pydantic-ai"]
    name = {"plain": "`Agent.run`", "dbos": "DBOS", "temporal": "Temporal"}[engine]
    failed = [who for who, r in (("golem", g), ("pydantic-ai", p)) if r.get("steps") is None]
    if failed:  # a child that gave no figures: nothing to compare
        return f"On {name}, no comparison: {' and '.join(failed)} gave no figures."
    if engine == "plain":
        return (
            f"Without durability (`Agent.run`), a step at the end of the run costs"
            f" {g['late_over_early']:.2f}x one at the start in golem and"
            f" {p['late_over_early']:.2f}x in pydantic-ai."
        )

    def late(r: dict[str, Any]) -> str:
        where = "" if r["completed"] else f" (its last steps, before step {r['steps']})"
        return f"{r['late_over_early']:.2f}x{where}"

    sentence = (
        f"On {name}, a step at the end of the run costs {late(g)} one at the"
        f" start in golem and {late(p)} in pydantic-ai; the largest"
        f" payload is {g['largest_payload'] / g['largest_message']:.1f}x the largest message"
        f" in golem and {p['largest_payload'] / p['largest_message']:.1f}x in pydantic-ai"
    )
    if g.get("history_exponent") is not None and p.get("history_exponent") is not None:
        sentence += (
            f"; the event history grows with exponent {g['history_exponent']:.2f} in golem"
            f" and {p['history_exponent']:.2f} in pydantic-ai"
        )
    for who, r in (("golem", g), ("pydantic-ai", p)):
        if not r["completed"]:
            sentence += f"; {who}'s run stopped at step {r['steps']} of {r['steps_requested']}"
    sentence += "."
    for r in rows:
        if r["engine"] == engine and r.get("variant") == CONTINUED:
            outcome = (
                f"completed its {r['steps']} steps"
                if r["completed"]
                else f"stopped at step {r['steps']} of {r['steps_requested']}"
            )
            sentence += (
                f" pydantic-ai continuing as new (`{CONTINUED}`) {outcome} over"
                f" {r['executions']} executions, its largest payload"
                f" {r['largest_payload'] / r['largest_message']:.1f}x its largest message"
            )
            if r.get("history_exponent") is not None:
                sentence += f", its history's exponent {r['history_exponent']:.2f}"
            sentence += "."
    return sentence
