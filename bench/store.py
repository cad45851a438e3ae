"""Stored conversations: what a user pays per turn as a conversation grows (issue 29 item 2).

``python -m bench.store`` (and every ``python -m bench``) measures on SQLite (a file in a
temporary directory, WAL, ``synchronous=FULL``: each append is a durable commit) and on
PostgreSQL (a real server on 127.0.0.1 from ``tests/postgres_server.py``, ``fsync=off``):

- ``store_append_<engine>`` at n = 100, 10,000, 100,000: appending one message to a
  stored conversation of n messages (compare-and-set, hash chain link, signed head,
  one commit). Target: flat, the time at 100,000 at most 3x the time at 100;
- ``store_load_<engine>`` at n = 10,000: loading the conversation, against
  ``store_decode_same_bytes_<engine>``: ``decode_history`` of the very JSON bytes the
  load returns (``encode_history`` of it), timed in the same rounds. Target: at most 2x.

- ``store_turn_window_<engine>`` at n = 100 and 100,000 (issue 34 item 4): one chat turn
  on a stored conversation of n messages, end to end: ``load_window(last=60)`` (read and
  verified against the signed head), ``trim_history(60)`` on it, and the OpenAI request
  body encoded to JSON bytes. Target: the turn at 100,000 at most 1.3x the turn at 100.
  Both sizes sit 40 messages past a step point (``(100,000 - 100) / 30`` is whole), so
  the window (70 messages) and what is sent are as long at both: what differs is only
  how long the conversation is. ``store_turn_whole_<engine>`` (``--window`` only, for
  scale) is the same turn with ``load`` of the whole conversation.
- ``store_turn_budget_<engine>``: the same turn under ``budget_history(approximate_tokens,
  1500)`` alone, its window read with ``load_window(processor=..., after=<the last
  window>)`` (from the budget's step point before the cut; the untimed warm-up call
  reads the whole branch once). Same target.

``--quick`` (the smoke test): SQLite only, n = 100 and 1,000. Nothing is asserted.
``--window`` times only the turns; ``--json PATH`` also writes the records, verdicts and
the command as JSON (``bench/results_store_window.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.convert import to_golem
from bench.targets import Verdict
from bench.timing import CLOCKS, Clock, Op, Record, measure
from bench.workload import conversation
from golem_core import (
    Message,
    ModelRequest,
    Role,
    TextPart,
    approximate_tokens,
    budget_history,
    decode_history,
    encode_history,
    trim_history,
)
from golem_core.wire.openai import encode_request
from golem_shell.store import PostgresHistoryStore, SQLiteHistoryStore, Window

__all__ = [
    "KEY",
    "LOAD_N",
    "OWNER",
    "SIZES",
    "Store",
    "store_engines",
    "store_records",
    "store_verdicts",
    "window_records",
]

SIZES = (100, 10_000, 100_000)
QUICK_SIZES = (100, 1_000)
LOAD_N = 10_000
FLAT_LIMIT = 3.0
LOAD_LIMIT = 2.0
WINDOW_SIZES = (100, 100_000)
QUICK_WINDOW_SIZES = (100, 1_000)
WINDOW_LAST = 60
WINDOW_LIMIT = 1.3
WINDOW_BUDGET = 1_500
OWNER = "bench"
KEY = b"bench-signing-key-0123456789abcd"

Store = SQLiteHistoryStore | PostgresHistoryStore


@contextmanager
def store_engines(
    postgres: bool, section: str = "store"
) -> Iterator[list[tuple[str, Callable[[], Store]]]]:
    """The stores a section measures, by engine: SQLite in a temporary folder, and
    PostgreSQL (the server the tests start) when asked and available (else a note naming
    ``section``)."""
    with ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix=f"golem-bench-{section}-"))
        engines: list[tuple[str, Callable[[], Store]]] = [
            ("sqlite", lambda: SQLiteHistoryStore(Path(folder) / "bench.db", signing_keys=KEY))
        ]
        if postgres:
            tests = Path(__file__).resolve().parents[1] / "tests"
            if str(tests) not in sys.path:
                sys.path.insert(0, str(tests))
            from postgres_server import PostgresUnavailable, start_postgres

            try:
                server = stack.enter_context(start_postgres())
            except PostgresUnavailable as e:
                print(json.dumps({"kind": "note", section: f"no PostgreSQL here: {e}"}))
            else:
                url = server.url
                engines.append(("postgres", lambda: PostgresHistoryStore(url, signing_keys=KEY)))
        yield engines


def _appender(store: Store, cid: str, length: int) -> Callable[[], None]:
    state = {"length": length}
    message = Message(Role.USER, (TextPart("one more message, as a user would type it"),))

    def append_one() -> None:
        state["length"] = store.append_sync(OWNER, cid, (message,), state["length"])

    return append_one


def _turn(store: Store, cid: str, *, whole: bool, budget: bool = False) -> Callable[[], None]:
    """One turn's work before the model is called: load, process, encode the request."""
    processor = (
        budget_history(approximate_tokens, WINDOW_BUDGET) if budget else trim_history(WINDOW_LAST)
    )
    last: list[Window] = []  # the window of the turn before, for after=

    def turn() -> None:
        if whole:
            history = store.load_sync(OWNER, cid)
        else:
            after = last.pop() if last else None
            window = store.load_window_sync(OWNER, cid, processor=processor, after=after)
            last.append(window)
            history = window.messages
        kept = processor(history).value_or(())
        assert kept, "the processor kept nothing"
        body = encode_request(ModelRequest(kept), model="gpt-4o-mini", stream=True).value_or({})
        json.dumps(body).encode()

    return turn


def window_records(store: Store, engine: str, *, quick: bool, whole: bool) -> list[Op]:
    """The turn ops on one engine: a conversation of each size (no system message, as a
    run's ``new_messages`` store none), windowed, and with ``whole`` the full load too."""
    ops: list[Op] = []
    for n in QUICK_WINDOW_SIZES if quick else WINDOW_SIZES:
        cid = f"window-{n}"
        messages = [m for m in to_golem(conversation(n + 1)) if m.role is not Role.SYSTEM]
        store.append_sync(OWNER, cid, messages[:n], 0)
        ops.append(Op("golem", f"store_turn_window_{engine}", n, _turn(store, cid, whole=False)))
        budgeted = _turn(store, cid, whole=False, budget=True)
        ops.append(Op("golem", f"store_turn_budget_{engine}", n, budgeted))
        if whole:
            ops.append(Op("golem", f"store_turn_whole_{engine}", n, _turn(store, cid, whole=True)))
    return ops


def store_records(
    *, quick: bool, repeat: int, min_repeat_s: float, clock: Clock, postgres: bool
) -> list[Record]:
    """Time appends at each size and the load at ``LOAD_N`` on every engine available."""
    sizes = QUICK_SIZES if quick else SIZES
    load_n = max(sizes) if quick else LOAD_N
    records: list[Record] = []
    with store_engines(postgres and not quick) as engines:
        for engine, open_store in engines:
            store = open_store()
            try:
                ops: list[Op] = []
                for n in sizes:
                    cid = f"conversation-{n}"
                    store.append_sync(OWNER, cid, to_golem(conversation(n)), 0)
                    ops.append(Op("golem", f"store_append_{engine}", n, _appender(store, cid, n)))
                load_cid = f"load-{load_n}"
                store.append_sync(OWNER, load_cid, to_golem(conversation(load_n)), 0)
                data = encode_history(store.load_sync(OWNER, load_cid))
                ops.append(
                    Op(
                        "golem",
                        f"store_load_{engine}",
                        load_n,
                        lambda s=store, c=load_cid: s.load_sync(OWNER, c),  # type: ignore[misc]
                    )
                )
                decode = f"store_decode_same_bytes_{engine}"
                ops.append(Op("golem", decode, load_n, lambda d=data: decode_history(d)))
                ops += window_records(store, engine, quick=quick, whole=False)
                records += measure(ops, repeat, min_repeat_s, clock)
            finally:
                store.close()
    return records


def store_verdicts(records: Sequence[Record]) -> list[Verdict]:
    """Appends flat (largest size vs 100), loads at most 2x ``decode_history``."""
    by_key = {(r.op, r.n): r for r in records if r.lib == "golem"}
    verdicts: list[Verdict] = []
    for engine in ("sqlite", "postgres"):
        op = f"store_append_{engine}"
        sizes = sorted(n for o, n in by_key if o == op)
        if len(sizes) >= 2:
            small, big = by_key[(op, sizes[0])], by_key[(op, sizes[-1])]
            ratio = big.median_s / small.median_s
            judged = big.n >= SIZES[-1]
            label = f"flat (<= {FLAT_LIMIT:g})" if judged else "flat (info: judged at 100,000)"
            verdicts.append(
                Verdict(
                    op, big.n, big.median_s, f"golem {op} n={small.n:,}", small.median_s, ratio,
                    label, ratio <= FLAT_LIMIT if judged else None,
                )
            )  # fmt: skip
        load = next((r for (o, _), r in by_key.items() if o == f"store_load_{engine}"), None)
        decode = by_key.get((f"store_decode_same_bytes_{engine}", load.n)) if load else None
        if load is not None and decode is not None:
            ratio = load.median_s / decode.median_s
            judged = load.n == LOAD_N
            verdicts.append(
                Verdict(
                    load.op, load.n, load.median_s, "golem decode_history (same bytes)",
                    decode.median_s, ratio,
                    f"<= {LOAD_LIMIT:g}x decode" if judged else "info (judged at 10,000)",
                    ratio <= LOAD_LIMIT if judged else None,
                )
            )  # fmt: skip
        for op in (f"store_turn_window_{engine}", f"store_turn_budget_{engine}"):
            sizes = sorted(n for o, n in by_key if o == op)
            if len(sizes) < 2:
                continue
            small, big = by_key[(op, sizes[0])], by_key[(op, sizes[-1])]
            ratio = big.median_s / small.median_s
            judged = big.n >= WINDOW_SIZES[-1]
            verdicts.append(
                Verdict(
                    op, big.n, big.median_s, f"golem {op} n={small.n:,}", small.median_s, ratio,
                    f"flat (<= {WINDOW_LIMIT:g})" if judged else "info (judged at 100,000)",
                    ratio <= WINDOW_LIMIT if judged else None,
                )
            )  # fmt: skip
    return verdicts


def _window_only(args: argparse.Namespace) -> list[Record]:
    records: list[Record] = []
    with store_engines(not args.no_postgres and not args.quick) as engines:
        for engine, open_store in engines:
            store = open_store()
            try:
                ops = window_records(store, engine, quick=args.quick, whole=not args.quick)
                min_repeat_s = 0.0 if args.quick else 0.02
                records += measure(ops, args.repeat, min_repeat_s, CLOCKS[args.clock])
            finally:
                store.close()
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.store", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="SQLite only, small sizes")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--window", action="store_true", help="only the windowed turns")
    parser.add_argument("--json", type=Path, help="also write records and verdicts here")
    parser.add_argument(
        "--write", type=Path, help="record as the `store` section of this report's JSON"
    )
    args = parser.parse_args(argv)
    if args.window:
        records = _window_only(args)
    else:
        records = store_records(
            quick=args.quick,
            repeat=args.repeat,
            min_repeat_s=0.0 if args.quick else 0.02,
            clock=CLOCKS[args.clock],
            postgres=not args.no_postgres,
        )
    verdicts = store_verdicts(records)
    for r in records:
        print(json.dumps({"kind": "time", **r.as_json()}))
    for v in verdicts:
        print(json.dumps(v.as_json()))
    if args.json is not None or args.write is not None:
        from bench.report import machine, recorded_command, write_section

        data = {
            "command": recorded_command("python -m bench.store", argv),
            "machine": machine(load_average=False),
            "records": [r.as_json() for r in records],
            "verdicts": [v.as_json() for v in verdicts],
        }
        if args.json is not None:
            args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        if args.write is not None:
            write_section(args.write, "store", data)
    return 0


def render(data: dict[str, Any]) -> str:
    """The ``store`` section of ``bench/results.md``: the windowed chat turn at 100 and
    100,000 messages on each engine, the whole load beside it, and each target's verdict."""
    lines = [
        f"## A chat turn on a long stored conversation (`{data['command']}`)",
        "",
        "One turn end to end: `load_window(last=60)` (read and verified against the signed"
        " head), `trim_history(60)`, the OpenAI request body encoded; the same turn with a"
        " `load` of the whole conversation for scale (issue 34 item 4); `budget`: the turn"
        " under `budget_history(approximate_tokens, 1500)` alone, its window read with"
        " `load_window(processor=..., after=<the last window>)`.",
        "",
        "| op | messages | median ms | min ms | max ms | repeats |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in data["records"]:
        lines.append(
            f"| {r['op']} | {r['n']:,} | {r['median_s'] * 1000:.2f} | {r['min_s'] * 1000:.2f}"
            f" | {r['max_s'] * 1000:.2f} | {r['repeats']} x {r['calls_per_repeat']} |"
        )
    lines += ["", "| op | at | against | ratio | target | verdict |", "|---|---:|---|---:|---|---|"]
    for v in data["verdicts"]:
        verdict = "met" if v["met"] else "MISSED"
        lines.append(
            f"| {v['op']} | {v['n']:,} | {v['versus']} | {v['ratio']:.2f} | {v['target']}"
            f" | {verdict} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
