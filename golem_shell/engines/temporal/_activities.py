"""The Temporal engine's activities: each effect of a run, recorded in its workflow's
history before the run moves on.

Owns ``golem.instructions`` (dynamic instructions), ``golem.toolsets`` (the tool list
of the agent's toolsets, at the run's start), ``golem.processor`` (the history
processor, once per run), ``golem.compact`` (compact and retry's one compaction),
``golem.request`` (one model request, the adapter's retries inside) and ``golem.tool``
(one tool call). Each finds the run's agent by the name its payload carries, reads the
conversation by its chain's head in the agent's blob store, heartbeats while it works (a
dead worker is noticed and the effect scheduled again) and returns its outcome as
``golem_shell.engines._records`` JSON, stashed in the store (ADR 0152). A failure is an
outcome, never an activity retry; but a blob store that cannot be reached (its database
restarting) is no outcome of the effect: the activity fails with ``UNREACHABLE`` and the
workflow performs it again.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import attrs
from temporalio import activity
from temporalio.exceptions import ApplicationError

from golem_core import Message, ModelRequest, Usage
from golem_core.loop import CompactHistory, CompactionDeclined, RequestModel, RunConfig, RunState
from golem_shell.engines._blobs import (
    MESSAGE_CHAIN,
    hold_in_task,
    is_stashed,
    load_chain,
    messages_chain,
    stash,
    unstash,
)
from golem_shell.engines._engine import recorded_options, resolve_instructions, run_processor
from golem_shell.engines._events import request_streamed
from golem_shell.engines._records import MESSAGES, USAGE, CorruptRecord, encode
from golem_shell.engines._toolsets import TOOLSETS_STEP, list_toolsets, toolset_tool
from golem_shell.engines.temporal._common import CONVERTER, JSON, UNREACHABLE, Engine, registered
from golem_shell.engines.temporal._refs import read_kept, read_tool
from golem_shell.run._asyncio import AgentEffects
from golem_shell.run._setup import RunSpec, compact_once
from golem_shell.tools._tools import RunContext

__all__ = [
    "ACTIVITIES",
    "compact_activity",
    "instructions_activity",
    "processor_activity",
    "request_activity",
    "tool_activity",
    "toolsets_activity",
]


T = TypeVar("T")


def _reaching(step: Callable[[], T]) -> T:
    """``step()`` (it reads or writes the blob store); a store it cannot reach fails the
    activity as ``UNREACHABLE`` (performed again), a record that is not there or not
    readable stays what it is."""
    try:
        return step()
    except CorruptRecord:
        raise
    except Exception as e:
        raise ApplicationError(f"the blob store cannot be reached: {e!r}", type=UNREACHABLE) from e


async def _beating(durable: Engine, work: Awaitable[JSON]) -> JSON:
    """Await ``work``, heartbeating meanwhile (a timer every third of the heartbeat
    timeout, in the activity's context), so a dead worker is noticed in time; its result
    crosses stashed (ADR 0152: the history holds its hash only)."""
    timeout = activity.info().heartbeat_timeout
    timer: list[asyncio.TimerHandle] = []
    if timeout:
        loop, every = asyncio.get_running_loop(), timeout.total_seconds() / 3

        def beat() -> None:
            activity.heartbeat()
            timer[0] = loop.call_later(every, beat)

        timer.append(loop.call_later(every, beat))
    try:
        result = await work
    except CorruptRecord:
        raise
    except Exception as e:  # as ``_reaching``: what the effect stores did not reach it
        raise ApplicationError(f"the blob store cannot be reached: {e!r}", type=UNREACHABLE) from e
    finally:
        if timer:
            timer[0].cancel()
    return _reaching(lambda: stash(durable.blobs, result))


def _arrived(payload: JSON) -> tuple[Engine, JSON]:
    """The agent an activity's payload names, and the payload (read back if stashed);
    what the activity stores, the run's conversation holds (ADR 0152)."""
    durable = registered(payload["agent"])
    hold_in_task(payload.get("conversationId"))  # this activity's own task
    inner = payload.get("payload", payload)  # a request's or tool's payload: inline
    payload = _reaching(lambda: unstash(durable.blobs, inner, "activity input"))
    if is_stashed(payload.get("options")):  # carried by reference (``_refs.Refs``)
        options = payload["options"]
        payload = {
            **payload,
            "options": _reaching(lambda: read_kept(durable.blobs, options, "options")),
        }
    return durable, payload


def _history(durable: Engine, payload: JSON) -> tuple[Message, ...]:
    """The conversation an activity's payload names by its chain's head."""
    head = payload["history"]
    return _reaching(lambda: load_chain(durable.blobs, MESSAGE_CHAIN, head, "history")).values


def _spec(durable: Engine, payload: JSON) -> RunSpec:
    """The run's spec, from the keywords its payload carries as the run recorded them."""
    return durable.keywords.spec(recorded_options(payload))


def _run_of(durable: Engine, payload: JSON) -> tuple[RunSpec, RunContext[Any]]:
    """The run's spec and its tools' context (its deps), from the keywords its payload
    carries as the run recorded them (read once)."""
    recorded = recorded_options(payload)
    deps = durable.keywords.deps(recorded, durable.deps)
    context = RunContext(deps, payload["runId"], payload["conversationId"])
    return durable.keywords.spec(recorded), context


def _seen(payload: JSON, messages: Sequence[Message] = ()) -> RunState:
    """A state holding what an effect reads of the run (its ids, messages, counts)."""
    config = RunConfig(run_id=payload["runId"], conversation_id=payload["conversationId"])
    usage = USAGE[1](payload["usage"], "usage") if "usage" in payload else Usage()
    return RunState(config, tuple(messages), usage=usage, requests=payload.get("requests", 0))


_SET_UPS: OrderedDict[str, ModelRequest] = OrderedDict()
"""Requests without their messages, read back by their blob's key (a key names one
content): a run's steps send the same one, read and structured once per worker."""
_CACHED = 32


def _set_up(durable: Engine, sent: JSON) -> ModelRequest:
    """The request (without messages) a request activity's payload names."""
    key = sent.get("key") if is_stashed(sent) else None
    request = None if key is None else _SET_UPS.get(key)
    if request is None:
        set_up = _reaching(lambda: unstash(durable.blobs, sent, "model request"))
        request = CONVERTER.structure({**set_up, "messages": []}, ModelRequest)
        if key is not None:
            _SET_UPS[key] = request
            while len(_SET_UPS) > _CACHED:
                _SET_UPS.popitem(last=False)
    return request


@activity.defn(name="golem.instructions")
async def instructions_activity(payload: JSON) -> JSON:
    """Resolve the dynamic instructions of the run's agent."""
    durable, payload = _arrived(payload)
    spec, context = _run_of(durable, payload)
    return await _beating(durable, resolve_instructions(spec, context))


@activity.defn(name="golem.processor")
async def processor_activity(payload: JSON) -> JSON:
    """Run the history processor of the run's agent once on the supplied history (named
    by its chain's head); the processed history is stored, the result holds its head."""
    durable, payload = _arrived(payload)
    spec = _spec(durable, payload)
    history = _history(durable, payload)
    return await _beating(durable, run_processor(spec, history, durable.blobs))


@activity.defn(name="golem.request")
async def request_activity(payload: JSON) -> JSON:
    """Send one model request (its messages named by their chain's head); a failure
    comes back as a recorded ``ModelFailed``."""
    durable, payload = _arrived(payload)
    request = _set_up(durable, payload["request"])
    ids = payload.get("requestIds")  # the set-up is the agent's; the ids, the run's
    run_id, conversation_id = (request.run_id, request.conversation_id) if ids is None else ids
    request = attrs.evolve(
        request,
        messages=_history(durable, payload),
        run_id=run_id,
        conversation_id=conversation_id,
    )
    spec, context = _run_of(durable, payload)
    effects = AgentEffects(spec, context, None)
    log = durable.event_log

    async def once() -> JSON:
        if log is not None:  # streamed: its deltas go to the run's event stream, not here
            return encode(await request_streamed(log, spec, RequestModel(request), _seen(payload)))
        return encode(await effects.request(RequestModel(request), _seen(payload)))

    return await _beating(durable, once())


@activity.defn(name="golem.tool")
async def tool_activity(payload: JSON) -> JSON:
    """Execute one tool call (the run's messages named by their chain's head); its
    outcome (a crash included) comes back recorded."""
    durable, payload = _arrived(payload)
    store = durable.blobs
    added, call = _reaching(lambda: read_tool(store, payload))
    system = MESSAGES[1](_reaching(lambda: read_kept(store, payload["system"], "system")), "system")
    toolset = _reaching(lambda: read_kept(store, payload.get("toolset"), "toolset"))
    state = _seen(payload, system + _history(durable, payload) + added)
    spec, context = _run_of(durable, payload)

    async def once() -> JSON:
        # a toolset's tool: made from the run's record, called through this worker's toolset
        await toolset_tool(spec, context, call.name, toolset)
        (work,) = AgentEffects(spec, context, None).tools((call,), state)
        return encode(await work)

    return await _beating(durable, once())


@activity.defn(name=TOOLSETS_STEP)
async def toolsets_activity(payload: JSON) -> JSON:
    """List the tools of the run's agent's toolsets, once at the run's start (the run
    offers the recorded list, and makes every call of one of them from it)."""
    durable, payload = _arrived(payload)
    spec, context = _run_of(durable, payload)
    return await _beating(durable, list_toolsets(spec, context))


@activity.defn(name="golem.compact")
async def compact_activity(payload: JSON) -> JSON:
    """Compact once for compact and retry (ADR 0141), with the run's history processor,
    on the history named by its chain's head."""
    durable, payload = _arrived(payload)
    command = CompactHistory(_history(durable, payload), payload["keep"], payload["reason"])
    return await _beating(durable, _compacted(durable, _spec(durable, payload), command))


async def _compacted(durable: Engine, spec: RunSpec, command: CompactHistory) -> JSON:
    outcome = await compact_once(spec, command)
    if isinstance(outcome, CompactionDeclined):
        return encode(outcome)
    # the history as stored bytes (by its chain's head): Temporal's JSON would reorder
    # the keys of the messages' extra fields on the way
    head = messages_chain(durable.blobs, outcome.history).head
    return {"type": "compactedRef", "history": head, "record": outcome.record.to_json()}


ACTIVITIES = (
    instructions_activity,
    processor_activity,
    toolsets_activity,
    compact_activity,
    request_activity,
    tool_activity,
)
"""The activities a worker of golem runs registers (with ``GolemRun``)."""
