"""Durable runs: the cost of durability per run, and throughput of one worker against two.

``python -m bench.durable`` measures, on the offline model (``FunctionModel``, no
network, so the figures are golem's and DBOS's own costs):

1. **overhead per run**: a 3-request, 2-tool run through ``Agent.run`` and through
   ``DurableAgent.run`` (a DBOS workflow with 6 recorded steps), in one process, timed in
   interleaved rounds (plain, durable, plain, ...) so both see the same machine; with
   DBOS on SQLite (a file in a temporary directory; SQLite's default rollback journal,
   then the file switched to WAL) and on Postgres (a real server on 127.0.0.1 started by
   ``tests/postgres_server.py``, which runs with ``fsync=off``: its figure leaves out
   the disk flush a production server makes at every commit, while SQLite's include
   it). Each backend runs in a child process of its own (DBOS is one per process).
2. **throughput of workers**: ``--queue-runs`` runs enqueued on one DBOS queue
   (``worker_concurrency=--concurrency``) on Postgres, taken by one worker process, then
   by two; runs per second from the first enqueue to the last result. The model answers
   after ``--latency`` seconds, standing in for a real provider: durable workers are
   bound by how many runs wait on models at once, which is what a second worker adds.

3. **Temporal**: the same overhead (``TemporalAgent.run``: a workflow with 5 recorded
   activities, against a real Temporal dev server on 127.0.0.1 started by
   ``tests/temporal_server.py``, SQLite-backed; the worker runs in the measuring process,
   whose CPU figure leaves out the server's), and the same throughput: ``--queue-runs``
   runs started on one task queue, executed by one worker process, then by two, each
   running at most ``--concurrency`` activities at once (the model waits are activities).

4. **a long run** (issue 34): one run of ``--long-steps`` steps (a model request and a
   tool call each; default 1,000 on DBOS/SQLite-WAL and, ``--temporal-steps``, on
   Temporal), timing each step: the median of steps 6-25 against the last 20 (and, by
   the process's CPU time, steps 6-105 against the last 100; the DBOS run three times,
   its median run recorded) (per-step
   cost at the end against the start: flat when nothing carries the conversation; the
   scripted model reads the step from the newest message, so its own cost is flat too);
   the largest recorded payload (DBOS: any workflow input, output or step output;
   Temporal: the data of any ``Payloads`` in any history event, over every execution:
   what Temporal's payload limits count; the largest whole event is kept beside it)
   against the largest message; on Temporal the event-history bytes of all executions
   so far at steps 50, 100, 200, 300, 400 and 500, with the exponent of a log-log fit
   over them (1.0: linear; the run continues as new every ``history_events``).

Each figure is printed as one JSON line, then a Markdown table; ``--write
bench/results.md`` records them as the ``durable`` section of ``bench/results.json``
and renders the report from it (``bench/report.py``). Options: ``--runs``,
``--rounds``, ``--queue-runs``, ``--concurrency``, ``--latency``, ``--no-postgres``
(SQLite only: no Postgres, no Temporal), ``--no-temporal``, ``--temporal-only``
(``--queue-runs 0``: no Temporal throughput figures), ``--long-only`` (the long runs
alone), ``--long-steps``, ``--temporal-steps``, ``--quick``. Nothing here is asserted:
on a shared machine compare the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from bench.durable_children import (  # noqa: E402
    child_exit,
    long_dbos,
    long_temporal,
    overhead,
    temporal_agent,
    temporal_overhead,
    temporal_worker,
    worker,
)
from bench.durable_render import render  # noqa: E402

__all__ = ["main", "render"]


def _temporal_throughput(
    producer: Any, address: str, workers: int, runs: int, concurrency: int, latency: float
) -> dict[str, Any]:
    from temporalio.client import Client

    queue = f"bench-{workers}-{time.monotonic_ns()}"
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        names = [f"w{i + 1}" for i in range(workers)]
        procs = []
        for name in names:
            config = {
                "address": address,
                "dir": tmp,
                "name": name,
                "queue": queue,
                "concurrency": concurrency,
                "latency": latency,
                "blobs": producer.blobs.path,
            }
            path = where / f"{name}.json"
            path.write_text(json.dumps(config))
            procs.append(_child(["--temporal-worker", str(path)]))

        async def produce() -> float:
            client = await Client.connect(address)
            producer.task_queue = queue
            start = time.perf_counter()
            ids = [await producer.start(client, f"run {i}") for i in range(runs)]
            for run_id in ids:
                await producer.result(client, run_id)
            return time.perf_counter() - start

        try:
            deadline = time.monotonic() + 120
            while not all((where / f"{n}.ready").exists() for n in names):
                if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                    raise RuntimeError("a Temporal benchmark worker died or never started")
                time.sleep(0.05)
            seconds = asyncio.run(produce())
        finally:
            for p in procs:
                p.kill()
                p.wait()
    return {
        "workers": workers,
        "runs": runs,
        "seconds": seconds,
        "runs_per_s": runs / seconds,
        "worker_concurrency": concurrency,
        "model_latency_s": latency,
    }


def _temporal_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    from temporal_server import start_temporal

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, start_temporal(Path(tmp)) as server:
        argv = ["--temporal-overhead", server.address, "--runs", str(args.runs)]
        proc = _child([*argv, "--rounds", str(args.rounds)], capture=True)
        out, _ = proc.communicate(timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"the Temporal overhead child failed ({proc.returncode})")
        figures = json.loads(out.decode().strip().splitlines()[-1])
        rows.append({"kind": "overhead", "backend": "temporal", **figures})
        print(json.dumps(rows[-1]), flush=True)
        blobs = str(Path(tmp) / "blobs.sqlite")
        producer = temporal_agent(args.latency, "unused", blobs)  # starts runs, reads results
        for workers in (1, 2) if args.queue_runs > 0 else ():
            figures = _temporal_throughput(
                producer, server.address, workers, args.queue_runs, args.concurrency, args.latency
            )
            rows.append({"kind": "throughput", "backend": "temporal", **figures})
            print(json.dumps(rows[-1]), flush=True)
    return rows


DBOS_LONG_RUNS = 3
"""The DBOS long run is repeated (a run's 20-step windows move by 2x with the host's
load, both ways); its row is the run of median late/early, the others' ratios beside."""


def _long_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for _ in range(DBOS_LONG_RUNS):  # a DBOS run takes seconds: its median of three
        with tempfile.TemporaryDirectory() as tmp:
            db = f"sqlite:///{tmp}/long.sqlite"
            proc = _child(["--long-dbos", db, "--long-steps", str(args.long_steps)], capture=True)
            out, _ = proc.communicate(timeout=3600)
            if proc.returncode != 0:
                raise RuntimeError(f"the DBOS long-run child failed ({proc.returncode})")
            runs.append(json.loads(out.decode().splitlines()[-1]))
    runs.sort(key=lambda r: r.get("late_over_early_cpu", r["late_over_early"]))
    ratios = [round(r.get("late_over_early_cpu", r["late_over_early"]), 3) for r in runs]
    rows.append({"kind": "long", "backend": "sqlite-wal", **runs[len(runs) // 2], "runs": ratios})
    print(json.dumps(rows[-1]), flush=True)
    if args.no_temporal:
        return rows
    from temporal_server import start_temporal

    with tempfile.TemporaryDirectory() as tmp, start_temporal(Path(tmp)) as server:
        argv = ["--long-temporal", server.address, "--long-steps", str(args.temporal_steps)]
        proc = _child([*argv, "--long-dir", tmp], capture=True)
        out, _ = proc.communicate(timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(f"the Temporal long-run child failed ({proc.returncode})")
        rows.append(
            {"kind": "long", "backend": "temporal", **json.loads(out.decode().splitlines()[-1])}
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def _child(args: Sequence[str], *, capture: bool = False) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.durable", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
    )


def _throughput(
    db: str, workers: int, runs: int, concurrency: int, latency: float
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        names = [f"w{i + 1}" for i in range(workers)]
        procs = []
        for name in reversed(names):  # the producer (w1) last, so the others are up
            config = {
                "db": db,
                "dir": tmp,
                "executor": name,
                "queue": f"bench-{workers}",
                "concurrency": concurrency,
                "latency": latency,
                "producer": name == "w1",
                "workers": names,
                "runs": runs,
            }
            path = where / f"{name}.json"
            path.write_text(json.dumps(config))
            procs.append(_child(["--worker", str(path)]))
        try:
            deadline = time.monotonic() + 600
            while not (where / "result.json").exists():
                if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                    raise RuntimeError("a benchmark worker died or the queue never drained")
                time.sleep(0.05)
            result = json.loads((where / "result.json").read_text())
        finally:
            for p in procs:
                p.kill()
                p.wait()
    return {
        "workers": workers,
        "runs": result["runs"],
        "seconds": result["seconds"],
        "runs_per_s": result["runs"] / result["seconds"],
        "worker_concurrency": concurrency,
        "model_latency_s": latency,
    }


# -- the benchmark ------------------------------------------------------------------------


def _overhead_in_child(db: str, runs: int, rounds: int, *, wal: bool = False) -> dict[str, Any]:
    argv = ["--overhead", db, "--runs", str(runs), "--rounds", str(rounds)]
    proc = _child([*argv, "--wal"] if wal else argv, capture=True)
    out, _ = proc.communicate(timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"the overhead child for {db} failed ({proc.returncode})")
    line = out.decode().strip().splitlines()[-1]
    figures: dict[str, Any] = json.loads(line)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.durable", description=__doc__)
    parser.add_argument("--runs", type=int, default=50, help="runs per timed round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--queue-runs", type=int, default=80, help="runs through the queue")
    parser.add_argument("--concurrency", type=int, default=4, help="worker_concurrency")
    parser.add_argument("--latency", type=float, default=0.05, help="model latency (s)")
    parser.add_argument(
        "--no-postgres", action="store_true", help="SQLite only (no Postgres, no Temporal)"
    )
    parser.add_argument("--no-temporal", action="store_true", help="DBOS only")
    parser.add_argument("--temporal-only", action="store_true", help="Temporal only")
    parser.add_argument("--quick", action="store_true", help="tiny numbers (a smoke run)")
    parser.add_argument(
        "--write", type=Path, help="record the figures in the report's JSON sibling, render it"
    )
    parser.add_argument("--overhead", metavar="DB", help=argparse.SUPPRESS)
    parser.add_argument("--worker", metavar="CONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--wal", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--temporal-overhead", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--temporal-worker", metavar="CONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--long-only", action="store_true", help="the long runs alone")
    parser.add_argument("--long-steps", type=int, default=1000, help="steps of the DBOS long run")
    parser.add_argument(
        "--temporal-steps", type=int, default=1000, help="steps of the Temporal long run"
    )
    parser.add_argument("--long-dbos", metavar="DB", help=argparse.SUPPRESS)
    parser.add_argument("--long-temporal", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--long-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.long_dbos:
        child_exit(asyncio.run(long_dbos(args.long_dbos, args.long_steps)))
    if args.long_temporal:
        child_exit(asyncio.run(long_temporal(args.long_temporal, args.long_steps, args.long_dir)))
    if args.overhead:
        child_exit(asyncio.run(overhead(args.overhead, args.runs, args.rounds, args.wal)))
    if args.worker:
        asyncio.run(worker(json.loads(Path(args.worker).read_text())))
        return 0
    if args.temporal_overhead:
        child_exit(asyncio.run(temporal_overhead(args.temporal_overhead, args.runs, args.rounds)))
    if args.temporal_worker:
        asyncio.run(temporal_worker(json.loads(Path(args.temporal_worker).read_text())))
        sys.stdout.flush()
        os._exit(0)  # as child_exit does, for the same reason
    if args.quick:
        args.runs, args.rounds, args.queue_runs = 5, 2, 8
        args.long_steps, args.temporal_steps = 60, 60
    rows: list[dict[str, Any]] = []
    if args.long_only:
        return _finish(args, argv, _long_rows(args))
    if args.temporal_only:
        return _finish(args, argv, _temporal_rows(args))
    for backend, wal in (("sqlite", False), ("sqlite-wal", True)):
        with tempfile.TemporaryDirectory() as tmp:
            db = f"sqlite:///{tmp}/bench.sqlite"
            figures = _overhead_in_child(db, args.runs, args.rounds, wal=wal)
            rows.append({"kind": "overhead", "backend": backend, **figures})
            print(json.dumps(rows[-1]), flush=True)
    if not args.no_postgres:
        from postgres_server import create_database, start_postgres

        with start_postgres() as server:
            db = create_database(server.url, "bench_overhead")
            rows.append(
                {
                    "kind": "overhead",
                    "backend": "postgres",
                    **_overhead_in_child(db, args.runs, args.rounds),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
            for workers in (1, 2):
                db = create_database(server.url, f"bench_queue_{workers}")
                figures = _throughput(db, workers, args.queue_runs, args.concurrency, args.latency)
                rows.append({"kind": "throughput", "backend": "postgres", **figures})
                print(json.dumps(rows[-1]), flush=True)
    if not args.no_postgres and not args.no_temporal:
        rows += _temporal_rows(args)
    rows += _long_rows(args)
    return _finish(args, argv, rows)


def _finish(
    args: argparse.Namespace, argv: Sequence[str] | None, rows: list[dict[str, Any]]
) -> int:
    """Print the section; with ``--write``, record it and render the report."""
    from bench.report import machine, recorded_command, write_section

    data = {
        "command": recorded_command("python -m bench.durable", argv),
        "machine": machine(),
        "rows": rows,
    }
    print(render(data))
    if args.write is not None:
        write_section(args.write, "durable", data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
