"""Durable runs on DBOS: the public face of the DBOS engine (``golem_shell.engines.dbos``).

Owns the public path of ``DurableAgent`` and its names (the workflow, event and topic
names a run is recorded under, the blob stores). How a run maps onto DBOS (ADR 0042,
docs/durable.md): the workflow ``golem.run`` is the run's driver, each effect a step
recorded before the run moves on, so a run survives a crashed worker. ``dbos`` is an
optional dependency: importing this module without it raises ``UsageError`` naming the
extra.
"""

from __future__ import annotations

from golem_shell.engines._blobs import BlobStore, MemoryBlobs, SQLiteBlobs
from golem_shell.engines._blobs_sql import SQLBlobs
from golem_shell.engines._collect import Collected, collect, unhold
from golem_shell.engines._engine import WaitingCalls
from golem_shell.engines.dbos._client import DurableAgent
from golem_shell.engines.dbos._common import (
    ANSWERS_TOPIC,
    STEER_TOPIC,
    WAITING_EVENT,
    WORKFLOW_NAME,
    system_blobs,
)
from golem_shell.engines.dbos._retention import Forgotten

__all__ = [
    "STEER_TOPIC",
    "ANSWERS_TOPIC",
    "BlobStore",
    "Collected",
    "DurableAgent",
    "Forgotten",
    "MemoryBlobs",
    "SQLBlobs",
    "SQLiteBlobs",
    "WAITING_EVENT",
    "WORKFLOW_NAME",
    "WaitingCalls",
    "collect",
    "system_blobs",
    "unhold",
]

from golem_core.public import claim_public_names as _claim_public_names

# the DBOS engine's own names say this path; the blob stores and ``WaitingCalls``, shared
# with golem_shell.temporal, keep their room's (neither face needs the other's extra)
_claim_public_names({**globals(), "__all__": ["DurableAgent", "Forgotten", "system_blobs"]})
