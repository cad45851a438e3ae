"""Retention by age of DBOS's records of finished runs, and of the blobs only they held.

Owns ``DurableAgent.forget`` (ADR 0154): DBOS keeps every workflow's status, input,
steps and result until deleted. ``forget`` lists the runs of one agent that finished
(``SUCCESS``, ``ERROR``, ``CANCELLED``, ``MAX_RECOVERY_ATTEMPTS_EXCEEDED``) before a
time, deletes their records (``DBOS.delete_workflows``), takes away the hold of each of
their conversations none of whose runs is still recorded (``unhold``: a conversation a
recorded run of any agent names keeps its blobs, which that run's records point at),
then collects the store (``collect``: blobs unheld for ``grace`` seconds go).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from attrs import frozen
from dbos import DBOS

from golem_shell._errors import UsageError
from golem_shell.engines._blobs import BlobStore
from golem_shell.engines._collect import GRACE, KEEP_NOTES, Collected, collect, unhold
from golem_shell.engines.dbos._common import WORKFLOW_NAME

__all__ = ["Forgotten", "forget_runs"]

_FINISHED = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]


@frozen
class Forgotten:
    """What ``DurableAgent.forget`` did: the run ids whose records it deleted, the
    conversations it stopped holding blobs for, and what the collection deleted."""

    runs: tuple[str, ...]
    conversations: tuple[str, ...]
    collected: Collected


def _conversation(status: Any) -> tuple[str | None, str | None]:
    """(agent name, conversation id) of a ``golem.run`` workflow's recorded input."""
    args = (status.input or {}).get("args", ())
    if len(args) < 2 or not isinstance(args[1], dict):
        return None, None
    return args[0], args[1].get("conversationId")


async def forget_runs(
    agent: str,
    store: BlobStore,
    older_than: timedelta | float,
    grace: float = GRACE,
    keep_notes: float = KEEP_NOTES,
) -> Forgotten:
    """``DurableAgent.forget`` (see there)."""
    age = older_than if isinstance(older_than, timedelta) else timedelta(seconds=older_than)
    if age < timedelta(0) or grace < 0:
        raise UsageError(f"forget needs a non-negative age and grace, not {age} and {grace}")
    cutoff = (datetime.now(UTC) - age).isoformat()
    done = await DBOS.list_workflows_async(
        name=WORKFLOW_NAME, status=_FINISHED, completed_before=cutoff, load_output=False
    )
    runs: list[str] = []
    conversations: set[str] = set()
    for status in done:
        name, conversation = _conversation(status)
        if name == agent:
            runs.append(status.workflow_id)
            if conversation is not None:
                conversations.add(conversation)
    for i in range(0, len(runs), 500):
        await DBOS.delete_workflows_async(runs[i : i + 500])
    # listed after the deletion: a run started meanwhile is recorded, so its
    # conversation keeps its hold (and a run starting later writes its history again)
    kept = await _recorded_conversations(conversations)
    released = sorted(conversations - kept)
    unhold(store, released)
    return Forgotten(
        tuple(sorted(runs)), tuple(released), collect(store, grace=grace, keep_notes=keep_notes)
    )


async def _recorded_conversations(wanted: set[str]) -> set[str]:
    if not wanted:
        return set()
    recorded = await DBOS.list_workflows_async(name=WORKFLOW_NAME, load_output=False)
    found = {_conversation(s)[1] for s in recorded}
    return {c for c in wanted if c in found}
