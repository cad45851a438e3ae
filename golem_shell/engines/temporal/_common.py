"""What the Temporal engine's roles share: the names a run is recorded under (the
workflow, its query, signal and update, the default task queue), the registry of the
process's agents by name, and the engine's settings (no retries by Temporal, the failure
type of a run whose records cannot be read, the default blob store).

The names are persisted in every run's history: changing one strands the runs recorded
under it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Protocol, TypeAlias

from temporalio.common import RetryPolicy

from golem_core import make_converter
from golem_shell._agent import Agent
from golem_shell._errors import UsageError
from golem_shell.engines._blobs import BlobStore, MemoryBlobs
from golem_shell.engines._keywords import Keywords
from golem_shell.observe._observe import EventHandler
from golem_shell.store._streams import StreamLog

__all__ = [
    "AGENTS",
    "ANSWER_UPDATE",
    "BROKEN",
    "CONVERTER",
    "JSON",
    "LOST_LIMIT",
    "PROCESS_BLOBS",
    "RETRIES",
    "STEER_SIGNAL",
    "TASK_QUEUE",
    "UNREACHABLE",
    "UNREACHABLE_LIMIT",
    "WAITING_QUERY",
    "WORKFLOW_NAME",
    "Engine",
    "registered",
]

JSON: TypeAlias = Any
"""A plain JSON value (what ``json.loads`` returns)."""

WORKFLOW_NAME = "golem.run"
"""The Temporal workflow type every run is an execution of (its id is the run id)."""
WAITING_QUERY = "golem.waiting"
"""The query that reads a paused run's waiting calls (``null`` when it does not wait)."""
STEER_SIGNAL = "golem.steer"
"""The signal that sends a running run a steering message (``TemporalAgent.steer``)."""
ANSWER_UPDATE = "golem.answer"
"""The update that answers a paused run's waiting calls (refused when they do not fit)."""
TASK_QUEUE = "golem"
"""The default task queue of runs and workers."""
LOST_LIMIT = 5
"""How many times an effect whose worker died is scheduled again."""
CONVERTER = make_converter()
RETRIES = RetryPolicy(maximum_attempts=1)
"""Golem's adapters retry; Temporal never does."""
UNREACHABLE = "GolemBlobsUnreachable"
"""The failure type of an activity that could not reach the blob store (the database
restarting): the workflow performs it again, a second later, up to ``UNREACHABLE_LIMIT``
times, as it does an effect whose worker died."""
UNREACHABLE_LIMIT = 120
BROKEN = "GolemRecord"
"""The failure type of a run whose records cannot be read."""
PROCESS_BLOBS = MemoryBlobs()
"""The default store: client and worker in one process."""


class Engine(Protocol):
    """What the workflow and the activities read of a ``TemporalAgent`` (registered by
    name in every worker)."""

    name: str
    agent: Agent[Any, Any]
    deps: Any
    on_event: EventHandler | None
    event_log: StreamLog | None
    blobs: BlobStore
    activity_timeout: timedelta
    heartbeat_timeout: timedelta
    history_events: int
    keywords: Keywords


AGENTS: dict[str, Engine] = {}
"""The ``TemporalAgent`` of this process, by registration name."""


def registered(name: str) -> Engine:
    """The agent registered as ``name`` in this worker.

    Raises:
        UsageError: none is (a workflow task failure: Temporal retries it, a worker may
            know it).
    """
    durable = AGENTS.get(name)
    if durable is None:
        raise UsageError(
            f"no TemporalAgent named {name!r} is registered in this worker; create it"
            f" before the worker starts (registered: {', '.join(sorted(AGENTS)) or 'none'})"
        )
    return durable
