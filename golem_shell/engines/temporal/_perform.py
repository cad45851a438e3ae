"""How the Temporal workflow performs one activity (``perform``): its payload crosses by
reference (ADR 0152), and it is performed again when its worker died or when it could not
reach the blob store (its database restarting), up to a limit each.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
from temporalio.exceptions import TimeoutError as TemporalTimeout

from golem_shell.engines._blobs import stash, unstash
from golem_shell.engines.temporal._common import (
    JSON,
    LOST_LIMIT,
    RETRIES,
    UNREACHABLE,
    UNREACHABLE_LIMIT,
    Engine,
)

__all__ = ["perform", "performed"]


async def perform(durable: Engine, name: str, payload: JSON, inline: bool = False) -> JSON:
    """The result of the activity ``name`` performed (``performed``), read back.

    Raises:
        ActivityError: it failed otherwise (timed out, or golem's activity broke).
        MissingBlob: its stashed result is not in this worker's store.
    """
    return unstash(durable.blobs, await performed(durable, name, payload, inline), name)


async def performed(durable: Engine, name: str, payload: JSON, inline: bool = False) -> JSON:
    """Perform the activity ``name``; again when its worker died (up to a limit), and
    when it could not reach the blob store (a second later, up to a limit). The payload
    crosses stashed (ADR 0152), or as it is when ``inline`` (it was built of references
    only: ``_refs.Refs``); the result is returned as the activity returned it (a
    reference: the journal keeps it so, not encoded again).

    Raises:
        ActivityError: it failed otherwise (timed out, or golem's activity broke).
    """

    if not inline:  # by reference (ADR 0152); the agent names the store to read it from
        payload = {
            "agent": payload["agent"],
            "conversationId": payload["conversationId"],
            "payload": stash(durable.blobs, payload),
        }
    lost = away = 0
    while True:
        try:
            result: JSON = await workflow.execute_activity(
                name,
                payload,
                start_to_close_timeout=durable.activity_timeout,
                heartbeat_timeout=durable.heartbeat_timeout,
                retry_policy=RETRIES,
            )
            return result
        except ActivityError as e:
            cause = e.cause
            unreachable = isinstance(cause, ApplicationError) and cause.type == UNREACHABLE
            if unreachable and away < UNREACHABLE_LIMIT:  # the blob store's database restarts
                away += 1
                await workflow.sleep(1)
                continue
            died = isinstance(cause, TemporalTimeout) and cause.type is TimeoutType.HEARTBEAT
            if not died or lost >= LOST_LIMIT:
                raise
            lost += 1
