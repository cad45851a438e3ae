"""Pages of long history: scrolling back costs the page, not the branch (issue 47 item 3).

``python -m bench.store_pages`` stores a conversation of 1,000 and one of 100,000
messages on SQLite (a file, WAL) and PostgreSQL (a real server on 127.0.0.1 from
``tests/postgres_server.py``), then times ``load_page(limit=100, before=100)``: the
oldest 100 messages, read and verified against the chain (the page's seals and links,
then the seals and links up to the next signed mark). Target: the page of the
100,000-message branch at most 1.3x the page of the 1,000-message one.
``store_page_newest_<engine>`` (the newest 100) is timed beside it for scale.

``--quick``: SQLite only, 1,000 against 10,000. ``--write PATH`` records the section
``store_pages`` of ``PATH``'s JSON and renders ``PATH`` (``bench/results.md``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any

from bench.report import add_write_option
from bench.store import OWNER, Store, store_engines
from bench.targets import Verdict
from bench.timing import CLOCKS, Op, Record, measure
from golem_core import Message, Role, TextPart

__all__ = ["PAGE", "SIZES", "main", "page_records", "page_verdicts", "render"]

SIZES = (1_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
PAGE = 100
LIMIT = 1.3


def _fill(store: Store, cid: str, n: int) -> None:
    """``n`` messages, appended in turns of 1,000 (as a long conversation grows)."""
    length = 0
    while length < n:
        k = min(1_000, n - length)
        batch = [
            Message(Role.USER if (length + i) % 2 == 0 else Role.ASSISTANT,
                    (TextPart(f"message {length + i}: as long as a chat line usually is"),))
            for i in range(k)
        ]  # fmt: skip
        length = store.append_sync(OWNER, cid, batch, length)


def _page(store: Store, cid: str, before: int | None) -> Callable[[], None]:
    def load() -> None:
        page = store.load_page_sync(OWNER, cid, limit=PAGE, before=before)
        assert len(page.messages) == PAGE

    return load


def page_records(*, quick: bool, repeat: int, postgres: bool) -> list[Record]:
    """The oldest and the newest page of a branch of each size, on every engine."""
    records: list[Record] = []
    with store_engines(postgres and not quick, "store_pages") as engines:
        for engine, open_store in engines:
            store = open_store()
            try:
                ops: list[Op] = []
                for n in QUICK_SIZES if quick else SIZES:
                    cid = f"pages-{n}"
                    _fill(store, cid, n)
                    ops.append(
                        Op("golem", f"store_page_oldest_{engine}", n, _page(store, cid, PAGE))
                    )
                    ops.append(
                        Op("golem", f"store_page_newest_{engine}", n, _page(store, cid, None))
                    )
                records += measure(ops, repeat, 0.0 if quick else 0.02, CLOCKS["wall"])
            finally:
                store.close()
    return records


def page_verdicts(records: Sequence[Record]) -> list[Verdict]:
    """The oldest page of the longest branch against the oldest page of the shortest."""
    by_key = {(r.op, r.n): r for r in records}
    verdicts: list[Verdict] = []
    for engine in ("sqlite", "postgres"):
        op = f"store_page_oldest_{engine}"
        sizes = sorted(n for o, n in by_key if o == op)
        if len(sizes) < 2:
            continue
        small, big = by_key[(op, sizes[0])], by_key[(op, sizes[-1])]
        ratio = big.median_s / small.median_s
        judged = big.n >= SIZES[-1]
        verdicts.append(
            Verdict(
                op, big.n, big.median_s, f"golem {op} n={small.n:,}", small.median_s, ratio,
                f"<= {LIMIT:g}x" if judged else "info (judged at 100,000)",
                ratio <= LIMIT if judged else None,
            )
        )  # fmt: skip
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.store_pages", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="SQLite only, 1,000 and 10,000")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--no-postgres", action="store_true")
    add_write_option(parser)
    args = parser.parse_args(argv)
    records = page_records(quick=args.quick, repeat=args.repeat, postgres=not args.no_postgres)
    verdicts = page_verdicts(records)
    for r in records:
        print(json.dumps({"kind": "time", **r.as_json()}))
    for v in verdicts:
        print(json.dumps(v.as_json()))
    if args.write is not None:
        from bench.report import machine, recorded_command, write_section

        data = {
            "command": recorded_command("python -m bench.store_pages", argv),
            "machine": machine(),
            "records": [r.as_json() for r in records],
            "verdicts": [v.as_json() for v in verdicts],
        }
        write_section(args.write, "store_pages", data)
    return 0


def render(data: dict[str, Any]) -> str:
    """The ``store_pages`` section of ``bench/results.md``."""
    m = data["machine"]
    lines = [
        f"## Scrolling back through a long stored conversation (`{data['command']}`)",
        "",
        f"{m['nproc']} cores, Python {m['python']}, load {m.get('load_average_end', '?')} at"
        f" the end. `load_page(limit={PAGE}, before={PAGE})`: the oldest {PAGE} messages of"
        " the branch, read and verified against the chain (their seals and links, then the"
        " seals and links up to the next signed mark, every 64th row); `newest`: the newest"
        f" {PAGE} (verified against the signed head) for scale (issue 47 item 3).",
        "",
        "| op | messages in the branch | median ms | min ms | max ms | repeats |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in data["records"]:
        lines.append(
            f"| {r['op']} | {r['n']:,} | {r['median_s'] * 1000:.2f} | {r['min_s'] * 1000:.2f}"
            f" | {r['max_s'] * 1000:.2f} | {r['repeats']} x {r['calls_per_repeat']} |"
        )
    lines += ["", "| op | at | against | ratio | target | verdict |", "|---|---:|---|---:|---|---|"]
    for v in data["verdicts"]:
        verdict = {True: "met", False: "MISSED", None: "info"}[v["met"]]
        lines.append(
            f"| {v['op']} | {v['n']:,} | {v['versus']} | {v['ratio']:.2f} | {v['target']}"
            f" | {verdict} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
