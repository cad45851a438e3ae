"""The soak's web-chat process: ``examples/web_chat/app.py`` as it is, with tools that
log their effects, and a Temporal configuration beside its DBOS one.

Owns the launcher ``bench.soak`` starts its server (and Temporal worker) processes
with. It loads the example from its file and runs the example's own ``main`` (every
option of the example works: ``--db``, ``--durable``, ``--worker``, ``--key-file``,
``--port``); the model is the scripted server (``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``
in the environment, ``bench/soak_model.py``). Two things are added, neither in the
example's functions:

- the example's two tools, ``get_weather`` and ``send_money``, same names, arguments and
  approval rule, also append one line per execution to the file ``--effects`` names
  (``{"call": <call id>, "tool": ..., "pid": ..., "t": <wall clock>}``): the effect log the soak's
  exactly-once check reads (a line is one ``write`` on an ``O_APPEND`` file: whole);
- ``--temporal ADDRESS``: the turns run as Temporal workflows (``TemporalAgent``, the
  dev server at ``ADDRESS``) instead of DBOS: the server starts and finishes them
  through the example's durable path (``ChatServer.durable`` is an adapter with
  ``DurableAgent``'s methods), the workers are separate processes (``--temporal-worker``)
  that run them, the conversation blobs live in the PostgreSQL database (``SQLBlobs``).

    python -m bench.soak_app --effects effects.log --db postgresql://... --durable --worker a
    python -m bench.soak_app --effects e.log --temporal 127.0.0.1:7233 --db postgresql://...
    python -m bench.soak_app --effects e.log --temporal 127.0.0.1:7233 --temporal-worker ...
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from bench.web_chat_example import APP_PATH, load_example
from golem_shell import RunContext, tool

__all__ = ["TemporalTurns", "main"]

AGENT_NAME = "web-chat"


def _log_effect(path: str, call: str | None, tool: str, **what: Any) -> None:
    line = json.dumps({"call": call, "tool": tool, "pid": os.getpid(), "t": time.time(), **what})
    line += "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def logging_tools(example: Any, effects: str) -> None:
    """Give the example tools that log each execution to ``effects`` (same contract)."""

    @tool
    def get_weather(ctx: RunContext[None], city: str) -> str:
        """The weather of a city.

        Args:
            city: the city's name.
        """
        _log_effect(effects, ctx.tool_call_id, "get_weather", conversation=ctx.conversation_id)
        return f"sunny, 21 C in {city}"

    @tool(requires_approval=True)
    def send_money(ctx: RunContext[None], to: str, cents: int) -> str:
        """Send money (a person must approve each transfer).

        Args:
            to: who receives it.
            cents: how much, in cents.
        """
        _log_effect(effects, ctx.tool_call_id, "send_money", conversation=ctx.conversation_id)
        return f"sent {cents} cents to {to}"

    example.get_weather, example.send_money = get_weather, send_money


# -- Temporal ------------------------------------------------------------------------------


class TemporalTurns:
    """``DurableAgent``'s methods the example calls (``start``, ``result``, ``waiting``,
    ``answer``, ``steer``), on a ``TemporalAgent`` and its client.

    ``result`` rides out what a worker restart does to it (asks again); ``waiting``
    raises what the query raised, as ``DurableAgent.waiting`` raises what the database
    does: the example's ``ChatServer.finish`` waits such errors out, and must not take
    "no answer now" for "not waiting" (it would think a paused run's answers arrived).
    """

    def __init__(self, agent: Any, client: Any) -> None:
        self.agent, self.client = agent, client

    async def start(self, prompt: Any, **options: Any) -> str:
        return str(await self.agent.start(self.client, prompt, **options))

    async def result(self, run_id: str) -> Any:
        while True:
            try:
                return await self.agent.result(self.client, run_id)
            except Exception as e:
                if not _transient(e):
                    raise
                await asyncio.sleep(0.5)

    async def waiting(self, run_id: str, *, timeout: float = 0.0) -> Any:
        return await self.agent.waiting(self.client, run_id, timeout=timeout)

    async def answer(self, run_id: str, answers: Mapping[str, Any], *, pause: Any = None) -> None:
        await self.agent.answer(self.client, run_id, answers, pause=pause)

    async def steer(self, run_id: str, prompt: Any) -> None:
        await self.agent.steer(self.client, run_id, prompt)

    async def status(self, run_id: str) -> Any:
        """The workflow ``run_id``'s description, ``None`` if it was never started (the
        example's ``ChatServer._status`` asks DBOS: ``with_temporal`` makes it ask this)."""
        from temporalio.service import RPCError, RPCStatusCode

        try:
            return await self.client.get_workflow_handle(run_id).describe()
        except RPCError as e:
            if e.status is RPCStatusCode.NOT_FOUND:
                return None
            raise


def _transient(error: BaseException | None) -> bool:
    """Whether ``error`` (or what caused it) is Temporal or the database not answering
    for a moment."""
    import sqlalchemy.exc
    from temporalio.client import WorkflowQueryFailedError
    from temporalio.service import RPCError

    from golem_shell.store import HistoryStoreError

    kinds = (RPCError, WorkflowQueryFailedError, sqlalchemy.exc.DBAPIError, HistoryStoreError)
    while error is not None:
        if isinstance(error, kinds):
            return not (isinstance(error, RPCError) and "not found" in str(error).lower())
        error = error.__cause__ or error.__context__
    return False


def temporal_agent(example: Any, db: str, key: bytes, delay: float, runs: Any) -> Any:
    """The example's agent as a ``TemporalAgent`` whose model writes the turn's stream
    (``StreamTap``), its blobs in the PostgreSQL database."""
    import sqlalchemy as sa

    from golem_shell.durable import SQLBlobs
    from golem_shell.temporal import TemporalAgent
    from golem_shell.ui import StreamTap

    agent = example.make_agent(delay, key, lambda model: StreamTap(model, runs))
    url = db.replace("postgresql://", "postgresql+psycopg://", 1)
    blobs = SQLBlobs(sa.create_engine(url, pool_pre_ping=True))
    return TemporalAgent(agent, name=AGENT_NAME, blobs=blobs)


def _key(path: str | None) -> bytes:
    if not path:
        raise SystemExit("--temporal needs --key-file (every process shares the key)")
    return Path(path).read_bytes()


def with_temporal(example: Any, address: str) -> None:
    """Make the example's ``make_app`` serve durable turns on Temporal at ``address``."""
    original = example.make_app

    def make_app(db: str, *, delay: float, key: bytes | None, durable: bool, worker: str) -> Any:
        app = original(db, delay=delay, key=key, durable=False, worker=worker)
        server = app.state.server
        agent = temporal_agent(example, db, server.key, delay, server.runs)
        inner = app.router.lifespan_context

        @contextlib.asynccontextmanager
        async def lifespan(app_: Any) -> AsyncIterator[None]:
            from temporalio.client import Client

            async with inner(app_):
                client = await Client.connect(address)
                server.durable = TemporalTurns(agent, client)
                await server.recover()  # finishes the streams left open
                yield

        app.router.lifespan_context = lifespan
        return app

    example.make_app = make_app

    async def status(self: Any, run_id: str) -> Any:
        return await self.durable.status(run_id)

    example.ChatServer._status = status  # the turns' workflows are Temporal's, not DBOS's


async def run_worker(example: Any, address: str, db: str, key: bytes, delay: float) -> None:
    """A Temporal worker of the example's agent, until killed."""
    from temporalio.client import Client

    from golem_shell.store import PostgresHistoryStore, StreamLog
    from golem_shell.ui import StoredRuns

    runs = StoredRuns(StreamLog(PostgresHistoryStore(db, signing_keys=key)))
    agent = temporal_agent(example, db, key, delay, runs)
    client = await Client.connect(address)
    print(f"temporal worker {os.getpid()} on {address}", flush=True)
    await agent.worker(client).run()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--effects", required=True)
    parser.add_argument("--temporal", default=None)
    parser.add_argument("--temporal-worker", action="store_true")
    ours, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    example = load_example()
    logging_tools(example, ours.effects)
    if ours.temporal and ours.temporal_worker:
        options = argparse.ArgumentParser()
        options.add_argument("--db", required=True)
        options.add_argument("--key-file")
        options.add_argument("--delay", type=float, default=0.05)
        args, _ = options.parse_known_args(rest)
        key = _key(args.key_file)
        asyncio.run(run_worker(example, ours.temporal, args.db, key, args.delay))
        return
    if ours.temporal:
        with_temporal(example, ours.temporal)
    sys.argv = [str(APP_PATH), *rest]
    example.main()


if __name__ == "__main__":
    main()
