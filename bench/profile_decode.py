"""Where ``decode_history`` spends its time: ``python -m bench.profile_decode``.

In one process, interleaved (``bench/timing.py``, CPU clock), on the benchmark's bytes at
1,000 and 10,000 messages: stdlib ``json.loads``; orjson's parse alone; golem's fast
decoder alone on the parsed value (building the frozen messages and parts); and
``decode_history`` (orjson parse + build, in 64 KiB chunks). Then a ``cProfile`` of
``decode_history`` at 10,000 messages, by function. Prints Markdown for
``bench/results.md``.
"""

from __future__ import annotations

import cProfile
import gc
import io
import json
import pstats

from bench.convert import to_golem
from bench.timing import CLOCKS, Op, measure
from bench.workload import conversation
from golem_core import decode_history, encode_history
from golem_core._json_compiled import fast_messages

__all__ = ["main"]


def main() -> int:
    import orjson

    print(
        "| n | json.loads ms | orjson parse ms | build ms | decode_history ms "
        "| decode / json.loads |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (1_000, 10_000):
        data = encode_history(to_golem(conversation(n)))
        value = orjson.loads(data)
        ops = [
            Op("stdlib", "loads", n, lambda d=data: json.loads(d)),
            Op("orjson", "parse", n, lambda d=data: orjson.loads(d)),
            Op("golem", "build", n, lambda v=value: fast_messages(v)),
            Op("golem", "decode", n, lambda d=data: decode_history(d)),
        ]
        r = {x.op: x.median_s * 1e3 for x in measure(ops, 7, 0.02, CLOCKS["cpu"])}
        share = r["decode"] / r["loads"]
        print(
            f"| {n:,} | {r['loads']:.2f} | {r['parse']:.2f} | {r['build']:.2f} "
            f"| {r['decode']:.2f} | {share:.2f} |"
        )
    data = encode_history(to_golem(conversation(10_000)))
    gc.collect()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(5):
        decode_history(data)
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(6)
    print()
    print("```")
    text = out.getvalue()
    rows = text[text.index("ncalls") :].splitlines()
    print("\n".join(row for row in rows if row.strip()))
    print("```")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
