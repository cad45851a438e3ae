"""The side-by-side tables of ``python -m bench.compaction`` (issue 48 items 5-7).

Owns the rendering of the chat with pauses (``render_timed``: per strategy, total cost,
cache-served share, planted facts kept and reachable with ``recall_tool``, compaction
calls and the turns that waited for one) and of the turn latency with and without a
prepared fold (``render_latency``), from the section's record; ``bench/compaction.py``
measures and calls them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from bench import compaction_facts as facts

__all__ = ["render_latency", "render_timed"]


def _facts(o: Any) -> tuple[str, str]:
    kept = f"{o.facts_sent} of {o.facts}" if o.facts_sent >= 0 else "-"
    recall = f"{o.facts_recalled} of {o.facts}" if o.facts_recalled >= 0 else "no such tool"
    return kept, recall


def render_timed(
    timed_data: dict[str, Any], outcomes: Sequence[Any], latency: dict[str, Any] | None = None
) -> list[str]:
    """The side-by-side table, every strategy in a chat with pauses (issue 48 items 5-7),
    and the turn latency measured with and without a prepared fold, from their records."""
    cold = timed_data["cold_turns"]
    planted = outcomes[0].facts
    every = timed_data.get("facts_every", facts.EVERY)
    text = (
        f"Side by side, in time: the same {timed_data['turns']} turns as a chat with pauses"
        f" between turns (seed {timed_data['seed']}: 5 s to 6 h, median"
        f" {timed_data['median_pause_s']:.0f} s) and a cache that lives"
        f" {timed_data['lifetime_s']:.0f} s after a request: {cold} turns start cold and pay"
        " their whole prefix at the write rate. Timed: `compact_when_cold(summarize_history(...,"
        " max_tokens=budget), min_tokens=budget // 2)` folds early only when the prefix is"
        " cold. Prepared: `prepare_ahead(...)`, its `prepare(history)` called as a turn ends"
        " (and, timed, again once the cache has gone cold: a timer), the fold swapped in at"
        f" the next turn's start. Facts: {planted} planted (`bench.compaction_facts`: one every"
        f" {every} turns, alternately a user's instruction and a detail inside a tool result);"
        " kept: in the last request sent (a message, a summary or a compaction item; every"
        " simulated summary or compaction keeps the facts it reads, newest first, in a quarter"
        " of its length); with recall: kept, or read back by `recall_tool` (as made by"
        " default: best match first, cut to 2,000 characters) from a `SQLiteHistoryStore`"
        " holding the conversation, one query per fact; golem's strategies only. Waited: turns"
        " whose user waited for a compaction call (golem folds at a turn's start; the Agents"
        " SDK compacts inside the run, before `Runner.run` returns)."
    )
    lines = [
        "",
        *textwrap.wrap(text, 90, break_on_hyphens=False, break_long_words=False),
        "",
        "| strategy | total $ | served | facts kept | with recall | compaction calls |"
        " turns that waited |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for o in outcomes:
        kept, recall = _facts(o)
        lines.append(
            f"| {o.name} | {o.dollars:.2f} | {o.served_share:.3f} | {kept} | {recall} |"
            f" {o.side_calls} | {o.waited} |"
        )
    if latency:
        lines += render_latency(latency)
    return lines


def render_latency(latency: dict[str, Any]) -> list[str]:
    """The turn latency a user sees, with and without ``prepare_ahead`` (item 6)."""
    rows = latency["results"]
    text = (
        "Turn latency a user sees (`bench.compaction_ahead`, wall clock, both variants in the"
        f" same process, one after the other): {rows[0]['turns']} `Agent` runs of a chat, the"
        f" model answering in {latency['model_s'] * 1000:.0f} ms, the summarizing call in"
        f" {latency['summary_s'] * 1000:.0f} ms, the user reading"
        f" {latency['read_s'] * 1000:.0f} ms between turns;"
        " `summarize_history(keep_last_turns=2, step_turns=2)` folding in the turn, and the"
        " same under `prepare_ahead`, prepared as each turn ends."
    )
    lines = [
        "",
        *textwrap.wrap(text, 90, break_on_hyphens=False, break_long_words=False),
        "",
        "| variant | median | p95 | max | turns that waited for a summary |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['median_s'] * 1000:.0f} ms | {r['p95_s'] * 1000:.0f} ms |"
            f" {r['max_s'] * 1000:.0f} ms | {r['waited']} |"
        )
    if len(rows) == 2:
        before, after = rows
        lines += [
            "",
            f"Prepared / in the turn: median {after['median_s'] / before['median_s']:.2f}x,"
            f" p95 {after['p95_s'] / before['p95_s']:.2f}x, max"
            f" {after['max_s'] / before['max_s']:.2f}x.",
        ]
    return lines
