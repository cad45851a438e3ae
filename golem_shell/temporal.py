"""Durable runs on Temporal: the public face of the Temporal engine
(``golem_shell.engines.temporal``).

Owns the public path of ``TemporalAgent``, the workflow ``GolemRun`` and its activities
(``ACTIVITIES``, for a worker assembled by hand), and the names a run is recorded under.
How a run maps onto Temporal (ADR 0083, docs/durable.md): the workflow ``golem.run`` is
the run's driver, replayed from its history; each effect is an activity recorded there
before the run moves on; what a conversation grows into crosses by reference to a blob
store. ``temporalio`` is optional: importing this module without it raises
``UsageError`` naming the extra.
"""

from __future__ import annotations

from golem_shell.engines._blobs import BlobStore, MemoryBlobs, SQLiteBlobs
from golem_shell.engines._collect import Collected, collect, unhold
from golem_shell.engines._engine import WaitingCalls
from golem_shell.engines.temporal._activities import (  # noqa: F401  (the activities by name)
    ACTIVITIES,
    compact_activity,
    instructions_activity,
    processor_activity,
    request_activity,
    tool_activity,
)
from golem_shell.engines.temporal._client import TemporalAgent
from golem_shell.engines.temporal._common import (
    ANSWER_UPDATE,
    STEER_SIGNAL,
    TASK_QUEUE,
    WAITING_QUERY,
    WORKFLOW_NAME,
)
from golem_shell.engines.temporal._workflow import GolemRun

__all__ = [
    "STEER_SIGNAL",
    "ACTIVITIES",
    "ANSWER_UPDATE",
    "BlobStore",
    "Collected",
    "GolemRun",
    "MemoryBlobs",
    "SQLiteBlobs",
    "TASK_QUEUE",
    "TemporalAgent",
    "WAITING_QUERY",
    "WORKFLOW_NAME",
    "WaitingCalls",
    "collect",
    "unhold",
]

from golem_core.public import claim_public_names as _claim_public_names

# the Temporal engine's own names say this path; the blob stores and ``WaitingCalls``,
# shared with golem_shell.durable, keep their room's (neither face needs the other's extra)
_claim_public_names({**globals(), "__all__": ["GolemRun", "TemporalAgent"]})
