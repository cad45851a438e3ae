"""Durable runs on DBOS: the public face of the DBOS engine (``golem_shell.engines._dbos``).

Owns the public path of ``DurableAgent`` and its names (the workflow, event and topic
names a run is recorded under, the blob stores). See ``golem_shell.engines._dbos`` for
how a run maps onto DBOS, and docs/durable.md. ``dbos`` is an optional dependency:
importing this module without it raises ``UsageError`` naming the extra.
"""

from __future__ import annotations

from golem_shell.engines._dbos import (
    ANSWERS_TOPIC,
    STEER_TOPIC,
    WAITING_EVENT,
    WORKFLOW_NAME,
    BlobStore,
    DurableAgent,
    MemoryBlobs,
    SQLBlobs,
    SQLiteBlobs,
    WaitingCalls,
    system_blobs,
)

__all__ = [
    "STEER_TOPIC",
    "ANSWERS_TOPIC",
    "BlobStore",
    "DurableAgent",
    "MemoryBlobs",
    "SQLBlobs",
    "SQLiteBlobs",
    "WAITING_EVENT",
    "WORKFLOW_NAME",
    "WaitingCalls",
    "system_blobs",
]

from golem_core.public import claim_public_names as _claim_public_names

# the DBOS engine's own names say this path; the blob stores and ``WaitingCalls``, shared
# with golem_shell.temporal, keep their room's (neither face needs the other's extra)
_claim_public_names({**globals(), "__all__": ["DurableAgent", "system_blobs"]})
