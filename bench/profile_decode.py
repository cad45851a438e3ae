"""Where ``decode_history`` spends its time: ``python -m bench.profile_decode``.

Two tables and a profile, Markdown for issues and ADRs (``bench/decode.py`` owns the
report's figures):

1. The collector (ADR 0093): on both workloads of ``bench/decode.py`` at 1,000, 10,000
   and 100,000 messages, microseconds per message of the decode with the cyclic
   collector left on throughout (``_decode_history``, the body as it was before ADR
   0093) and of ``decode_history`` (collector paused), the collections of each
   generation that the decode's own allocations triggered, the one young collection
   that scans a kept history after a paused decode, and ``json.loads`` for scale.
   Medians of a few interleaved calls on the CPU clock, after ``gc.freeze`` of
   everything alive before (as ``bench/timing.py`` does).
2. The parts at 1,000 and 10,000 messages (``bench/timing.py``, interleaved): stdlib
   ``json.loads``; orjson's parse alone; golem's build alone on the parsed value
   (``history_from_jsonable``); and ``decode_history``.
3. A ``cProfile`` of ``decode_history`` on the agentic workload at 10,000 messages.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from bench.decode import _inputs
from bench.timing import CLOCKS, Op, measure
from golem_core import decode_history, history_from_jsonable
from golem_core.codec import _json as codec

__all__ = ["main"]


def _collections(fn: Callable[[], Any]) -> tuple[float, list[int]]:
    """CPU seconds of one ``fn()`` and the collections of each generation it triggered."""
    counts = [0, 0, 0]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            counts[info["generation"]] += 1

    gc.collect()
    gc.freeze()
    gc.callbacks.append(count)
    try:
        start = time.process_time()
        result = fn()
        seconds = time.process_time() - start
    finally:
        gc.callbacks.remove(count)
        gc.unfreeze()
    del result
    return seconds, counts


def _young_pass(data: bytes) -> float:
    """CPU seconds of the young collection that scans a kept history once, after the
    decode (which the benchmark, dropping each result, never pays)."""
    gc.collect()
    gc.freeze()
    try:
        history = decode_history(data)
        start = time.process_time()
        gc.collect(0)
        seconds = time.process_time() - start
    finally:
        gc.unfreeze()
    del history
    return seconds


def collector_table(sizes: list[int], rounds: int) -> list[str]:
    lines = [
        "| workload | messages | collector on µs/msg | collections (gen 0/1/2) "
        "| paused µs/msg | young pass after µs/msg | json.loads µs/msg |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for name in ("chat", "agentic"):
        for n in sizes:
            data, _ = _inputs(name, n, None)
            on: list[float] = []
            paused: list[float] = []
            loads: list[float] = []
            young: list[float] = []
            counts: list[int] = []
            for _ in range(rounds):
                young.append(_young_pass(data))
                seconds, counts = _collections(partial(codec._decode_history, data))
                on.append(seconds)
                paused.append(_collections(partial(decode_history, data))[0])
                loads.append(_collections(partial(json.loads, data))[0])
            per = 1e6 / n
            lines.append(
                f"| {name} | {n:,} | {statistics.median(on) * per:.2f} "
                f"| {'/'.join(str(c) for c in counts)} | {statistics.median(paused) * per:.2f} "
                f"| {statistics.median(young) * per:.2f} | {statistics.median(loads) * per:.2f} |"
            )
    return lines


def parts_table() -> list[str]:
    import orjson

    lines = [
        "| workload | n | json.loads ms | orjson parse ms | build ms | decode_history ms "
        "| decode / json.loads |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in ("chat", "agentic"):
        for n in (1_000, 10_000):
            data, _ = _inputs(name, n, None)
            value = orjson.loads(data)
            ops = [
                Op("stdlib", "loads", n, lambda d=data: json.loads(d)),
                Op("orjson", "parse", n, lambda d=data: orjson.loads(d)),
                Op("golem", "build", n, lambda v=value: history_from_jsonable(v)),
                Op("golem", "decode", n, lambda d=data: decode_history(d)),
            ]
            r = {x.op: x.median_s * 1e3 for x in measure(ops, 7, 0.02, CLOCKS["cpu"])}
            share = r["decode"] / r["loads"]
            lines.append(
                f"| {name} | {n:,} | {r['loads']:.2f} | {r['parse']:.2f} | {r['build']:.2f} "
                f"| {r['decode']:.2f} | {share:.2f} |"
            )
    return lines


def profile_lines() -> list[str]:
    data, _ = _inputs("agentic", 10_000, None)
    gc.collect()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(5):
        decode_history(data)
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(8)
    text = out.getvalue()
    rows = text[text.index("ncalls") :].splitlines()
    return ["```", *(row for row in rows if row.strip()), "```"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_decode", description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print("\n".join(collector_table(sizes, args.rounds)))
    print()
    print("\n".join(parts_table()))
    print()
    print("\n".join(profile_lines()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
