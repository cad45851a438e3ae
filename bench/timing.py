"""Timing and memory measurement: seconds per call, repeats interleaved across ops.

A shared, noisy machine drifts within a run, so ops that are compared are timed in
rounds: every round times one repeat of every op of the group, in turn. Each op's
repeats are thus spread over the same stretch of time as its comparator's, and the
ratio of medians compares like with like.

Before the rounds each op is called once to warm up, then once more, timed, to size
its repeat: the calls per repeat are raised until one repeat takes at least
``min_repeat_s`` (``peers.py``'s rule, rounded up; at most ``MAX_CALLS``). An op with
a ``setup`` is timed call by call, each call on a fresh argument that ``setup`` builds
outside the timer (for "cold" inputs).

GC stays on, but everything alive before timing is frozen (``gc.freeze``) so that
collections scan only what the op itself allocates.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CLOCKS",
    "Clock",
    "Memory",
    "Op",
    "Record",
    "measure",
    "measure_async",
    "peak_memory",
]

MAX_CALLS = 10_000

Clock = Callable[[], float]
CLOCKS: dict[str, Clock] = {"wall": time.perf_counter, "cpu": time.process_time}
"""``wall``: elapsed time (what a caller waits). ``cpu``: this process's CPU time, which
a busy shared machine disturbs less (another process's turn on the core is not counted)."""


@dataclass
class Op:
    """One thing to time: ``fn()``, or ``fn(setup())`` with the setup untimed."""

    lib: str
    name: str
    n: int
    fn: Callable[..., Any]
    setup: Callable[[], Any] | None = None
    calls: int = 1
    samples: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Record:
    """Seconds per call of one op: median, min and max over the repeats."""

    lib: str
    op: str
    n: int
    median_s: float
    min_s: float
    max_s: float
    repeats: int
    calls: int

    def as_json(self) -> dict[str, object]:
        return {
            "lib": self.lib,
            "op": self.op,
            "n": self.n,
            "median_s": self.median_s,
            "min_s": self.min_s,
            "max_s": self.max_s,
            "repeats": self.repeats,
            "calls_per_repeat": self.calls,
        }


def _record(op: Op) -> Record:
    s = op.samples
    return Record(op.lib, op.name, op.n, statistics.median(s), min(s), max(s), len(s), op.calls)


def _calls_for(seconds: float, min_repeat_s: float) -> int:
    return max(1, min(MAX_CALLS, math.ceil(min_repeat_s / max(seconds, 1e-9))))


def _warm_up(op: Op, min_repeat_s: float, clock: Clock) -> None:
    for timed in (False, True):
        arg = op.setup() if op.setup is not None else None
        start = clock()
        if op.setup is None:
            op.fn()
        else:
            op.fn(arg)
        if timed:
            op.calls = _calls_for(clock() - start, min_repeat_s)
        del arg


def _one_repeat(op: Op, clock: Clock) -> float:
    fn = op.fn
    if op.setup is None:
        start = clock()
        for _ in range(op.calls):
            fn()
        return (clock() - start) / op.calls
    total = 0.0
    for _ in range(op.calls):
        arg = op.setup()
        gc.freeze()  # the fresh input is not the op's garbage to scan
        start = clock()
        fn(arg)
        total += clock() - start
        del arg
    return total / op.calls


def measure(
    ops: Sequence[Op], repeat: int, min_repeat_s: float, clock: Clock = time.perf_counter
) -> list[Record]:
    """Time ``ops`` in ``repeat`` interleaved rounds after one warm-up call each."""
    gc.collect()
    gc.freeze()
    try:
        for op in ops:
            _warm_up(op, min_repeat_s, clock)
        for _ in range(repeat):
            for op in ops:
                gc.collect()
                op.samples.append(_one_repeat(op, clock))
    finally:
        gc.unfreeze()
    return [_record(op) for op in ops]


AsyncCall = Callable[[], Awaitable[Any]]


async def measure_async(
    ops: Sequence[tuple[str, str, int, AsyncCall]],
    repeat: int,
    min_repeat_s: float,
    clock: Clock = time.perf_counter,
) -> list[Record]:
    """``measure`` for coroutines (agent runs), all on the running event loop."""
    timed = [Op(lib, name, n, call) for lib, name, n, call in ops]
    gc.collect()
    gc.freeze()
    try:
        for op in timed:
            for _ in range(2):
                await op.fn()  # warm-up: imports, caches, first-run paths
            start = clock()
            await op.fn()
            op.calls = _calls_for(clock() - start, min_repeat_s)
        for _ in range(repeat):
            for op in timed:
                gc.collect()
                start = clock()
                for _ in range(op.calls):
                    await op.fn()
                op.samples.append((clock() - start) / op.calls)
    finally:
        gc.unfreeze()
    return [_record(op) for op in timed]


def peak_memory(decode: Callable[[Any], Any], data: Any) -> int:
    """Peak bytes ``tracemalloc`` sees while ``decode(data)`` runs (its result included)."""
    gc.collect()
    tracemalloc.start()
    try:
        result = decode(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak


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
