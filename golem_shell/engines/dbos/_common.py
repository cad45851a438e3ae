"""What the DBOS engine's roles share: the names a run is recorded under (the workflow, its
events and topics), the registry of the process's agents by name, the blob store in
DBOS's system database, and the options of a golem step.

The names are persisted with every run: changing one strands the runs recorded under it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, TypeAlias

from dbos import StepOptions, WorkflowSerializationFormat
from dbos._dbos import _get_dbos_instance

from golem_shell._errors import UsageError
from golem_shell.engines._blobs import BlobStore
from golem_shell.engines._blobs_sql import SQLBlobs
from golem_shell.engines._keywords import Keywords
from golem_shell.observe._observe import EventHandler
from golem_shell.store._streams import StreamLog

__all__ = [
    "AGENTS",
    "ANSWERS_TOPIC",
    "JSON",
    "LOOKUP_SECONDS",
    "PORTABLE",
    "REJECTED_EVENT",
    "STEER_CLOSED_EVENT",
    "STEER_TOPIC",
    "WAITING_EVENT",
    "WAIT_SECONDS",
    "WORKFLOW_NAME",
    "Engine",
    "lookup",
    "step",
    "system_blobs",
]

JSON: TypeAlias = Any
"""A plain JSON value (what ``json.loads`` returns)."""

WORKFLOW_NAME = "golem.run"
"""The DBOS workflow every durable run is an instance of (its id is the run id)."""
WAITING_EVENT = "golem.waiting"
"""The DBOS event a paused run sets to the calls it waits for (none once answered)."""
ANSWERS_TOPIC = "golem.answers"
"""The DBOS topic a paused run receives its answers on."""
STEER_TOPIC = "golem.steer"
"""The DBOS topic a running run receives steering messages on (``DurableAgent.steer``)."""
STEER_CLOSED_EVENT = "golem.steer.closed"
"""The DBOS event a steerable run sets at its end, before it drains ``golem.steer``: a
message sent after it was set may not be taken (``steer`` withdraws it)."""
REJECTED_EVENT = "golem.rejected"
"""The DBOS event a paused run sets to why it refused answers that reached it."""
WAIT_SECONDS = 24 * 3600.0
"""One durable ``recv``; a paused run waits in a loop of these."""
LOOKUP_SECONDS = 30.0
"""How long a recovered run waits for its agent to be registered."""
PORTABLE = WorkflowSerializationFormat.PORTABLE


class Engine(Protocol):
    """What the workflow reads of a ``DurableAgent`` (registered by name in every worker)."""

    name: str
    deps: Any
    on_event: EventHandler | None
    event_log: StreamLog | None
    steerable: bool
    keywords: Keywords

    def store(self) -> BlobStore:
        """The blob store the agent's runs keep their conversations in."""
        ...


AGENTS: dict[str, Engine] = {}
"""The ``DurableAgent`` of this process, by registration name."""
SYSTEM_BLOBS_SEEN: list[tuple[Any, SQLBlobs]] = []  # (DBOS's system engine, its blobs)


def system_blobs() -> SQLBlobs:
    """The blobs in the system database of the DBOS instance launched in this process
    (table ``golem_blobs``, created on first use).

    Raises:
        UsageError: DBOS is not launched.
    """
    try:
        engine = _get_dbos_instance()._sys_db.engine
    except Exception as e:
        raise UsageError(
            f"durable runs need DBOS launched (DBOS(config=...); DBOS.launch()): {e}"
        ) from e
    for known, blobs in SYSTEM_BLOBS_SEEN:
        if known is engine:
            return blobs
    blobs = SQLBlobs(engine)
    SYSTEM_BLOBS_SEEN[:] = [(engine, blobs)]
    return blobs


def step(name: str) -> StepOptions:
    """A golem step: recorded, never retried by DBOS (golem's adapters retry requests)."""
    return {"name": name, "retries_allowed": False}


async def lookup(name: str) -> Engine:
    """The agent registered as ``name``, waiting briefly for a worker still starting."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LOOKUP_SECONDS
    while name not in AGENTS and loop.time() < deadline:
        await asyncio.sleep(0.05)  # not recorded: it decides nothing
    durable = AGENTS.get(name)
    if durable is None:
        raise UsageError(
            f"no DurableAgent named {name!r} is registered in this worker; create it"
            f" before DBOS.launch() (registered: {', '.join(sorted(AGENTS)) or 'none'})"
        )
    return durable
