"""Many users at once, with processes dying: a soak of the whole stack (issue 50).

``python -m bench.soak`` starts a deployment on 127.0.0.1 (``bench/soak_deploy.py``:
PostgreSQL, the scripted model, N web-chat processes behind a round-robin balancer,
turns on DBOS executors or on Temporal workers, or plain), lets simulated users
(``bench/soak_users.py``) chat through it, calm and then with chaos (SIGKILL a server
process, a worker, or restart PostgreSQL at random moments; each is started again), and
checks the invariants against the oracle log the clients kept:

- ``stored_once``: every message a client saw acknowledged is stored exactly once, in
  the order it was sent, on the branch it was sent to (read from the store directly);
  a message sent without an answer is stored at most once;
- ``answered``: every acknowledged prompt of a durable configuration has an answer
  stored after it (plain turns die with their process: documented, counted only);
- ``effects_once``: every tool result stored ran its tool exactly once (the tools log
  each execution, by call id, with its process and wall clock), or more than once where
  each execution but the last was in flight when chaos struck (its process SIGKILLed, or
  PostgreSQL restarted, before the next): the documented at-least-once of an interrupted
  effect (docs/durable.md), counted as ``effects_again_after_a_kill``;
- ``frames``: no stream delivered a frame twice or skipped one (frame numbers);
- ``isolation``: no user could read, list or stream another user's conversation;
- ``resume``: a turn answered and stored before its stream dropped does not keep the
  resuming client waiting (15 s or more) where turns run in the server's own process.

Figures, per configuration and phase: turns per second, p50 / p99 turn latency and the
part of it golem adds (the latency less the scripted model's own time for that turn),
kills survived per kind, RSS per process over time (``/proc/<pid>/status``), and the
invariants. ``--write PATH`` records them as the ``soak`` section of ``PATH``'s JSON
sibling and renders ``PATH`` (``bench/results.md``); the section header states users,
minutes and kills.

    python -m bench.soak --config all --users 20 --minutes 10      # the long soak
    python -m bench.soak --quick                                   # about two minutes
    python -m bench.soak --config durable --chaos --users 12 --minutes 20 --min-kills 100 \
        --every 1 3 --section soak_long --write bench/results.md     # issue 50's long soak
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.report import add_write_option
from bench.soak_deploy import Deployment
from bench.soak_users import Oracle, User

__all__ = ["KINDS", "check", "main", "render", "run_phase", "soak"]

KINDS = {"plain": ("server", "postgres"), "dbos": ("server", "worker", "postgres")}
KINDS["temporal"] = ("server", "worker", "postgres")


def _pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# -- chaos -------------------------------------------------------------------------------


async def _busiest_executor(deploy: Deployment) -> int:
    """The DBOS server with the most workflows in flight (a worker mid-turn)."""
    import psycopg

    try:
        async with await psycopg.AsyncConnection.connect(deploy.db, connect_timeout=3) as conn:
            rows = await (
                await conn.execute(
                    "SELECT executor_id, count(*) FROM dbos.workflow_status"
                    " WHERE status = 'PENDING' GROUP BY executor_id ORDER BY 2 DESC"
                )
            ).fetchall()
    except Exception:
        rows = []
    for executor, _ in rows:
        if isinstance(executor, str) and executor.startswith("s") and executor[1:].isdigit():
            k = int(executor[1:])
            if k < len(deploy.servers):
                return k
    return random.randrange(len(deploy.servers))


async def chaos(
    deploy: Deployment, stop: asyncio.Event, kills: dict[str, list[int]], every: tuple[float, float]
) -> None:
    """Until ``stop``: wait ``every`` seconds (uniform), kill one thing (kinds in turn),
    start it again; ``kills[kind]`` counts ``[killed, back]``."""
    kinds = list(KINDS[deploy.config])
    random.shuffle(kinds)
    n = 0
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), random.uniform(*every))
            return
        except TimeoutError:
            pass
        kind = kinds[n % len(kinds)]
        n += 1
        counts = kills.setdefault(kind, [0, 0])
        counts[0] += 1
        try:
            if kind == "postgres":
                await deploy.restart_postgres()
            elif kind == "worker" and deploy.config == "temporal":
                await deploy.kill_and_restart(random.choice(deploy.workers))
            elif kind == "worker":
                await deploy.kill_and_restart(deploy.servers[await _busiest_executor(deploy)])
            else:
                await deploy.kill_and_restart(random.choice(deploy.servers))
        except Exception as e:  # not back: counted, and the soak goes on with what runs
            print(f"bench.soak: {kind} did not come back: {e!r}", file=sys.stderr)
            continue
        counts[1] += 1


# -- a phase -----------------------------------------------------------------------------


async def run_phase(
    deploy: Deployment,
    *,
    users: int,
    seconds: float,
    with_chaos: bool,
    every: tuple[float, float] = (2.0, 6.0),
    min_kills: int = 0,
    turns: int = 8,
    turn_timeout: float = 90.0,
) -> dict[str, Any]:
    """``users`` users chatting for ``seconds`` (and until ``min_kills`` kills of each
    kind, with chaos); then the invariants. Returns the phase's figures."""
    oracle = Oracle()
    steering = deploy.config == "plain"
    phase = secrets.token_hex(2)  # tags (and so call ids) never repeat across phases
    people = [
        User(f"u{k}{phase}", deploy.url, oracle, steering=steering, turn_timeout=turn_timeout)
        for k in range(users)
    ]
    await asyncio.gather(*(p.open() for p in people))
    stop = asyncio.Event()
    kills: dict[str, list[int]] = {}

    async def chat(person: User, delay: float) -> None:
        await asyncio.sleep(delay)
        while not stop.is_set():
            await person.conversation(turns, stop)

    async def sample() -> None:
        while not stop.is_set():
            deploy.sample_rss()
            await asyncio.sleep(max(1.0, seconds / 30))

    began = time.monotonic()
    # the rate is raised: the users join over the first third of the phase
    ramp = seconds / 3 / max(users, 1)
    talkers = [asyncio.ensure_future(chat(p, k * ramp)) for k, p in enumerate(people)]
    sampler = asyncio.ensure_future(sample())
    chaotic = asyncio.ensure_future(chaos(deploy, stop, kills, every)) if with_chaos else None
    while True:
        await asyncio.sleep(0.5)
        enough = all(kills.get(k, [0])[0] >= min_kills for k in KINDS[deploy.config])
        if time.monotonic() - began >= seconds and (not with_chaos or enough):
            break
    stop.set()
    if chaotic is not None:
        await chaotic
    await asyncio.wait(talkers, timeout=2 * turn_timeout)
    elapsed = time.monotonic() - began
    for t in talkers:
        if not t.done():
            t.cancel()
            oracle.errors.append(f"a user was still in a turn {2 * turn_timeout:g} s after the end")
        elif t.exception() is not None:
            oracle.errors.append(f"a user failed: {t.exception()!r}")
    await sampler
    others = list(oracle.conversations)
    await asyncio.gather(*(p.probe(random.sample(others, min(4, len(others)))) for p in people))
    await asyncio.gather(*(p.close() for p in people))
    invariants = await check(deploy, oracle, durable=deploy.config != "plain")
    return figures(oracle, invariants, kills, users=users, seconds=elapsed, chaos=with_chaos)


def figures(
    oracle: Oracle,
    invariants: dict[str, Any],
    kills: dict[str, list[int]],
    *,
    users: int,
    seconds: float,
    chaos: bool,
) -> dict[str, Any]:
    done = [t for t in oracle.turns if t["done"] or not t["failed"]]
    latency = [t["latency_s"] for t in done]
    added = [t["latency_s"] - t["model_s"] for t in done if t["model_s"] is not None]
    model = [t["model_s"] for t in done if t["model_s"] is not None]
    return {
        "chaos": chaos,
        "users": users,
        "seconds": round(seconds, 1),
        "turns": len(oracle.turns),
        "turns_failed": sum(t["failed"] for t in oracle.turns),
        "turns_resumed": sum(t["resumes"] > 0 for t in oracle.turns),
        "turns_per_s": round(len(oracle.turns) / seconds, 2),
        "latency_p50_s": _round(_pct(latency, 0.5)),
        "latency_p99_s": _round(_pct(latency, 0.99)),
        "added_p50_s": _round(_pct(added, 0.5)),
        "added_p99_s": _round(_pct(added, 0.99)),
        "model_p50_s": _round(_pct(model, 0.5)),
        "kills": {k: {"killed": v[0], "survived": v[1]} for k, v in sorted(kills.items())},
        "invariants": invariants,
        "client_errors": oracle.errors[:20],
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


# -- the invariants ------------------------------------------------------------------------


async def check(deploy: Deployment, oracle: Oracle, *, durable: bool) -> dict[str, Any]:
    """The invariants, against the store (read directly) and the effect log."""
    from golem_core import Role
    from golem_shell.store import MAIN, HistoryNotFound, PostgresHistoryStore, StreamLog

    store = PostgresHistoryStore(deploy.db, signing_keys=deploy.key_file.read_bytes())
    faults: dict[str, list[str]] = {"stored_once": [], "answered": [], "effects_once": []}
    unanswered = 0
    stored_results: set[str] = set()
    try:
        for uid, cid in oracle.conversations:
            try:
                history = await store.load(uid, cid, branch=MAIN)
            except HistoryNotFound:
                history = ()
            texts = [m.text if m.role is Role.USER else None for m in history]
            stored_results |= {
                str(m.tool_call_id) for m in history if m.role is Role.TOOL and m.tool_call_id
            }
            at = -1
            for p in (p for p in oracle.prompts if p["uid"] == uid and p["cid"] == cid):
                where = [i for i, t in enumerate(texts) if t == p["text"]]
                if p["acked"] and len(where) != 1:
                    faults["stored_once"].append(f"{cid}: {p['text']!r} stored {len(where)}x")
                elif len(where) > 1:
                    faults["stored_once"].append(f"{cid}: unacked {p['text']!r} {len(where)}x")
                if not where:
                    continue
                if p["acked"] and where[0] < at:
                    faults["stored_once"].append(f"{cid}: {p['text']!r} out of order")
                at = max(at, where[0])
                i = where[0]  # answered: the turn's answer follows, not a later turn's
                answered = i + 1 < len(history) and history[i + 1].role is Role.ASSISTANT
                if p["acked"] and not answered:
                    unanswered += 1
                    if durable and p["kind"] != "steer":
                        why = await _diagnose(deploy, StreamLog(store), f"{uid}/{cid}/{MAIN}")
                        faults["answered"].append(f"{cid}: no answer to {p['text']!r} ({why})")
    finally:
        await store.aclose()
    runs: dict[str, list[dict[str, Any]]] = {}
    ours = {cid for _, cid in oracle.conversations}
    for line in deploy.effects.read_text().splitlines():
        effect = json.loads(line)
        if effect.get("conversation") in ours:  # this phase's (the log is the deployment's)
            runs.setdefault(effect["call"], []).append(effect)
    again = 0
    for call in sorted(stored_results):
        ran = sorted(runs.get(call, []), key=lambda e: e.get("t", 0.0))
        if len(ran) > 1 and all(
            _interrupted(deploy.chaos_log, a, b) for a, b in itertools.pairwise(ran)
        ):
            again += 1  # in flight when its process died: at least once (docs/durable.md)
        elif len(ran) != 1:
            faults["effects_once"].append(f"{call}: ran {len(ran)}x")
    orphans = sorted(set(runs) - stored_results)
    result: dict[str, Any] = {
        name: {"ok": not found, "faults": found[:10], "count": len(found)}
        for name, found in faults.items()
    }
    result["frames"] = {
        "ok": not oracle.frame_faults,
        "faults": oracle.frame_faults[:10],
        "count": len(oracle.frame_faults),
    }
    result["resume"] = {
        "ok": not oracle.slow_resumes,
        "faults": oracle.slow_resumes[:10],
        "count": len(oracle.slow_resumes),
    }
    result["isolation"] = {
        "ok": not oracle.isolation_faults and oracle.isolation_probes > 0,
        "faults": oracle.isolation_faults[:10],
        "count": len(oracle.isolation_faults),
        "probes": oracle.isolation_probes,
    }
    result["counts"] = {
        "prompts_acked": sum(p["acked"] for p in oracle.prompts),
        "prompts_unacked": sum(not p["acked"] for p in oracle.prompts),
        "unanswered": unanswered,
        "tool_results": len(stored_results),
        "effects_without_result": len(orphans),
        "effects_again_after_a_kill": again,
        "conversations": len(oracle.conversations),
    }
    return result


def _interrupted(
    chaos_log: list[dict[str, Any]], first: dict[str, Any], then: dict[str, Any]
) -> bool:
    """Whether a tool execution ``first`` was in flight when chaos struck before it ran
    again (``then``): its process SIGKILLed, or PostgreSQL restarted, between the two (so
    its outcome was never recorded: the documented at-least-once of an interrupted effect)."""
    t0, t1 = first.get("t"), then.get("t")
    if t0 is None or t1 is None:
        return False
    return any(
        t0 <= c["t"] <= t1 and (c.get("postgres") or c.get("pid") == first["pid"])
        for c in chaos_log
    )


async def _diagnose(deploy: Deployment, log: Any, key: str) -> str:
    """Where an unanswered turn stands: its newest stream and, on DBOS, its workflow."""
    record = await log.latest(key)
    if record is None:
        return "no stream"
    found = f"stream {record.state}, {record.frames} frames, run {record.run_id}"
    if deploy.config == "dbos" and record.run_id:
        import psycopg

        async with await psycopg.AsyncConnection.connect(deploy.db) as conn:
            row = await (
                await conn.execute(
                    "SELECT status, executor_id FROM dbos.workflow_status WHERE workflow_uuid = %s",
                    (record.run_id,),
                )
            ).fetchone()
        found += f"; workflow {row[0]} on {row[1]}" if row else "; no DBOS workflow"
    return found


def rss_summary(samples: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per process name: RSS (KiB) at the first sample, the highest, at the last, and
    ``over_time``: the samples nearest each quarter of the run (0, 25, 50, 75, 100 %),
    to see whether memory grows while the number of live conversations stays flat (a
    process killed and started again begins anew: its later samples are the new one's)."""
    out: dict[str, dict[str, Any]] = {}
    series: dict[str, list[tuple[float, int]]] = {}
    for s in samples:
        entry = out.setdefault(s["name"], {"first": s["kib"], "max": s["kib"], "last": s["kib"]})
        entry["max"] = max(entry["max"], s["kib"])
        entry["last"] = s["kib"]
        series.setdefault(s["name"], []).append((s["t"], s["kib"]))
    if samples:
        begin = min(s["t"] for s in samples)
        end = max(s["t"] for s in samples)
        for name, points in series.items():
            out[name]["over_time"] = [
                min(points, key=lambda p: abs(p[0] - (begin + q * (end - begin) / 4)))[1]
                for q in range(5)
            ]
    return out


# -- the command -----------------------------------------------------------------------


async def soak(
    configs: Sequence[str],
    phases: Sequence[bool],
    *,
    users: int,
    minutes: float,
    servers: int = 2,
    every: tuple[float, float] = (2.0, 6.0),
    min_kills: int = 0,
    where: Path | None = None,
) -> dict[str, Any]:
    """Every configuration, every phase (``False``: calm, ``True``: chaos)."""
    runs: list[dict[str, Any]] = []
    root = Path(where or tempfile.mkdtemp(prefix="golem-soak-"))
    print(f"bench.soak: the deployment's files (logs, effect log) are in {root}", file=sys.stderr)
    for config in configs:
        deploy = Deployment(config, root / config, servers=servers)
        try:
            await deploy.start()
            for with_chaos in phases:
                phase = await run_phase(
                    deploy,
                    users=users,
                    seconds=minutes * 60,
                    with_chaos=with_chaos,
                    every=every,
                    min_kills=min_kills,
                )
                phase["config"] = config
                print(json.dumps(phase), flush=True)
                runs.append(phase)
            deploy.sample_rss()
            runs[-1]["rss_kib"] = rss_summary(deploy.rss)
            runs[-1]["commands"] = deploy.commands()
        finally:
            await deploy.close()
    return {"runs": runs, "where": str(root)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument(
        "--config",
        choices=("dbos", "temporal", "plain", "durable", "all"),
        default="all",
        help="durable: dbos and temporal",
    )
    parser.add_argument("--users", type=int, default=12)
    parser.add_argument("--minutes", type=float, default=3.0, help="per phase")
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--min-kills", type=int, default=0, help="per kind, per chaos phase")
    parser.add_argument(
        "--every",
        type=float,
        nargs=2,
        default=(2.0, 6.0),
        metavar=("MIN", "MAX"),
        help="seconds between kills (uniform), from one being back to the next kill",
    )
    calm = parser.add_mutually_exclusive_group()
    calm.add_argument("--chaos", action="store_true", help="only the phase with kills")
    calm.add_argument("--calm", action="store_true", help="only the phase without kills")
    parser.add_argument("--quick", action="store_true", help="4 users, 1 minute a phase")
    parser.add_argument(
        "--section",
        choices=("soak", "soak_long"),
        default="soak",
        help="the section --write records (soak_long: the 20-minute soak of the issue)",
    )
    add_write_option(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.users, args.minutes = 4, 1.0
    named = {"all": ("plain", "dbos", "temporal"), "durable": ("dbos", "temporal")}
    configs = named.get(args.config, (args.config,))
    phases = (True,) if args.chaos else (False,) if args.calm else (False, True)
    data = asyncio.run(
        soak(configs, phases, users=args.users, minutes=args.minutes, servers=args.servers,
             min_kills=args.min_kills, every=tuple(args.every))
    )  # fmt: skip
    ok = all(v["ok"] for r in data["runs"] for k, v in r["invariants"].items() if k != "counts")
    if ok:  # the logs are kept when an invariant broke
        shutil.rmtree(data.pop("where"), ignore_errors=True)
    else:
        print(f"bench.soak: the logs are in {data.pop('where')}", file=sys.stderr)
    if args.write is not None:
        from bench.report import machine, recorded_command, write_section

        data["command"] = recorded_command("python -m bench.soak", argv)
        data["machine"] = machine()
        data["parameters"] = {
            "users": args.users,
            "minutes": args.minutes,
            "min_kills": args.min_kills,
            "every_s": list(args.every),
        }
        write_section(args.write, args.section, data)
    print("invariants hold" if ok else "INVARIANTS BROKEN", file=sys.stderr)
    return 0 if ok else 1


def render(data: dict[str, Any]) -> str:
    """The ``soak`` section of ``bench/results.md``."""
    from bench.soak_render import render as render_soak

    return render_soak(data)


if __name__ == "__main__":
    raise SystemExit(main())
