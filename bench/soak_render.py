"""The ``soak`` section of ``bench/results.md``, rendered from what ``bench.soak`` recorded.

Owns ``render``: the header states the parameters (users, minutes a phase, kills), then
one table of throughput and latency per configuration and phase, one of kills survived,
one of the invariants, and the RSS of every process (first, highest, last sample).
"""

from __future__ import annotations

from typing import Any

__all__ = ["render"]

INVARIANTS = ("stored_once", "answered", "effects_once", "frames", "isolation", "resume")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def render(data: dict[str, Any], *, title: str = "the soak") -> str:
    runs = data["runs"]
    p = data.get("parameters", {})
    m = data.get("machine", {})
    kills = sum(k["killed"] for r in runs for k in r["kills"].values())
    command = data.get("command", "python -m bench.soak")
    at_least = f" (at least {p['min_kills']} of each kind)" if p.get("min_kills") else ""
    if p.get("every_s"):
        low, high = p["every_s"]
        at_least += f", one every {low:g}-{high:g} s"
    lines = [
        f"## Many users, processes dying: {title} (`{command}`)",
        "",
        f"{p.get('users', '?')} users, {p.get('minutes', '?')} minutes a phase, {kills} kills"
        f" in all{at_least}"
        f"; {m.get('nproc', '?')} cores, Python {m.get('python', '?')}, load"
        f" {m.get('load_average_end', '?')} at the end. Two web-chat processes behind a"
        " round-robin balancer on one PostgreSQL, the scripted model answering with"
        " realistic latency (issue 50, docs/guides/many-users.md). *Added* is a turn's"
        " latency less the scripted model's own time for it: what golem, the store and the"
        " engine add.",
        "",
        "| config | phase | turns | turns/s | p50 ms | p99 ms | added p50 ms | added p99 ms"
        " | resumed | failed |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        phase = "chaos" if r["chaos"] else "calm"
        lines.append(
            f"| {r['config']} | {phase} | {r['turns']} | {r['turns_per_s']:.2f}"
            f" | {_ms(r['latency_p50_s'])} | {_ms(r['latency_p99_s'])}"
            f" | {_ms(r['added_p50_s'])} | {_ms(r['added_p99_s'])}"
            f" | {r['turns_resumed']} | {r['turns_failed']} |"
        )
    lines += ["", "| config | kind | killed | back and serving |", "|---|---|---:|---:|"]
    for r in runs:
        for kind, k in r["kills"].items():
            lines.append(f"| {r['config']} | {kind} | {k['killed']} | {k['survived']} |")
    lines += [
        "",
        "| config | phase | "
        + " | ".join(INVARIANTS)
        + " | acked | unanswered | tool results | tools run again after a kill |",
        "|---|---|" + "---|" * len(INVARIANTS) + "---:|---:|---:|---:|",
    ]
    for r in runs:
        inv = r["invariants"]
        cells = [
            "holds" if inv[name]["ok"] else f"BROKEN ({inv[name]['count']})" for name in INVARIANTS
        ]
        c = inv["counts"]
        lines.append(
            f"| {r['config']} | {'chaos' if r['chaos'] else 'calm'} | {' | '.join(cells)}"
            f" | {c['prompts_acked']} | {c['unanswered']} | {c['tool_results']}"
            f" | {c.get('effects_again_after_a_kill', '-')} |"
        )
    rss = [(r["config"], r["rss_kib"]) for r in runs if "rss_kib" in r]
    if rss:
        lines += [
            "",
            "RSS per process (MiB) at the first sample, the highest, the last, and over"
            " time: the samples nearest 0, 25, 50, 75 and 100 % of the configuration's run"
            " (a killed process starts anew).",
            "",
            "| config | process | RSS first MiB | highest | last | over time |",
            "|---|---|---:|---:|---:|---|",
        ]
        for config, table in rss:
            for name, v in sorted(table.items()):
                over = " / ".join(f"{k / 1024:.0f}" for k in v.get("over_time", ()))
                lines.append(
                    f"| {config} | {name} | {v['first'] / 1024:.0f} | {v['max'] / 1024:.0f}"
                    f" | {v['last'] / 1024:.0f} | {over or '-'} |"
                )
    broken = [
        f"{r['config']} {'chaos' if r['chaos'] else 'calm'} {name}: {fault}"
        for r in runs
        for name in INVARIANTS
        for fault in r["invariants"][name]["faults"][:3]
    ]
    if broken:
        lines += ["", "Faults found (first of each):", ""] + [f"- `{b}`" for b in broken]
    return "\n".join(lines) + "\n"
