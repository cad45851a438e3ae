"""A worker process of the durable-run tests: ``python tests/durable_worker.py CONFIG.json``.

The configuration (JSON) holds ``db`` (the DBOS system database URL), ``executor`` (the
DBOS executor id: a restarted worker reuses its predecessor's, so it recovers its runs),
``model`` (the loopback model URL), ``log`` (the tools' execution log), ``dir`` (where
markers and results are written), ``runs`` (``[run id, label]`` pairs) and ``mode``:

- ``start``: start every run here, wait for the runs listed in ``wait`` (writing
  ``<dir>/<run id>.done`` for each), then idle until killed. Tools listed in ``block``
  (``[run id, n]``) hang. The ``approval`` runs (``[run id, label]``) are started on
  the approval agent; ``<dir>/<run id>.waiting`` is written once each waits.
- ``resume``: launch (DBOS recovers this executor's pending runs), start the ``fresh``
  runs (``[run id, label]``), approve what every ``approval`` run waits for, wait for
  the result of every run, write them to ``<dir>/results.json`` and exit.

The agent registers the models of ``durable_app.make_models`` and has the one named
``default_model`` (default ``"loopback"``) as its own.
- ``queue``: register the queue ``queue`` (``{"name", "worker_concurrency"}``), write
  ``<dir>/<executor>.ready``, and work on it until killed. The ``producer`` also waits
  for the markers of every worker in ``workers``, enqueues the runs, waits for their
  results and writes them to ``<dir>/results.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSPortableJSONSerializer
from durable_app import (
    AGENT_NAME,
    APPROVAL_AGENT_NAME,
    make_agent,
    make_approval_agent,
    make_models,
)

from golem_core import history_to_jsonable
from golem_shell import Approved
from golem_shell.durable import DurableAgent


def _write(path: Path, value: Any) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(value))
    partial.replace(path)  # readers never see half a file


async def _results(durable: DurableAgent[None, str], run_ids: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for run_id in run_ids:
        result = await durable.result(run_id)
        out[run_id] = {
            "output": result.output,
            "conversationId": result.conversation_id,
            "messages": history_to_jsonable(result.messages),
            "newMessages": len(result.new_messages),
            "requests": result.requests,
            "toolExecutions": result.tool_executions,
        }
    return out


async def main(config: dict[str, Any]) -> None:
    where = Path(config["dir"])
    block = {(run_id, n) for run_id, n in config.get("block", ())}
    models = make_models(config["model"])
    default = models[config.get("default_model", "loopback")]
    agent = make_agent(config["model"], Path(config["log"]), block, default)
    durable = DurableAgent(agent, name=AGENT_NAME, models=models)  # registered before launch
    approval = DurableAgent(make_approval_agent(Path(config["log"])), name=APPROVAL_AGENT_NAME)
    approval_runs: list[tuple[str, str]] = [(r, label) for r, label in config.get("approval", ())]
    DBOS(
        config={
            "name": "golem-durable-test",
            "system_database_url": config["db"],
            "executor_id": config["executor"],
            "serializer": DBOSPortableJSONSerializer(),
            "log_level": "WARNING",
        }
    )
    DBOS.launch()
    runs: list[tuple[str, str]] = [(r, label) for r, label in config["runs"]]
    mode = config["mode"]
    if mode == "start":
        for run_id, label in runs:
            await durable.start(label, run_id=run_id)
        for run_id, label in approval_runs:
            await approval.start(label, run_id=run_id)
            if await approval.waiting(run_id, timeout=30):
                (where / f"{run_id}.waiting").write_text("waiting")
        for run_id in config.get("wait", ()):
            await durable.result(run_id)
            (where / f"{run_id}.done").write_text("done")
    elif mode == "resume":
        fresh: list[tuple[str, str]] = [(r, label) for r, label in config.get("fresh", ())]
        for run_id, label in fresh:
            await durable.start(label, run_id=run_id)
        results = await _results(durable, [r for r, _ in runs + fresh])
        for run_id, _ in approval_runs:
            waiting = await approval.waiting(run_id, timeout=30)
            await approval.answer(run_id, {str(d.call.id): Approved() for d in waiting})
        results.update(await _results(approval, [r for r, _ in approval_runs]))
        _write(where / "results.json", results)
        sys.stdout.flush()
        os._exit(0)  # the results are written; skip DBOS's graceful shutdown
    else:
        assert mode == "queue", mode
        q = config["queue"]
        await DBOS.register_queue_async(
            q["name"], worker_concurrency=q["worker_concurrency"], polling_interval_sec=0.05
        )
        (where / f"{config['executor']}.ready").write_text("ready")
        if config.get("producer"):
            while not all((where / f"{w}.ready").exists() for w in config["workers"]):
                await asyncio.sleep(0.02)
            for run_id, label in runs:
                await durable.start(label, run_id=run_id, queue=q["name"])
            _write(where / "results.json", await _results(durable, [r for r, _ in runs]))
    await asyncio.Event().wait()  # idle until killed


if __name__ == "__main__":
    asyncio.run(main(json.loads(Path(sys.argv[1]).read_text())))
