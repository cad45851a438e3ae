"""The Temporal runtime of the conformance suite: run any ``Agent`` as a Temporal workflow.

``TemporalRuntime(address)`` is an async context manager (a client and an in-process
worker on a task queue of its own). ``await runtime.run(agent, prompt, ...)`` wraps the
agent in a ``TemporalAgent`` (once per agent object), runs it durably and returns its
``RunResult``, as ``agent.run_with_history`` would. A run that pauses is answered with
``answers``, one mapping per pause, in order (an ``Agent`` run instead ends paused and is
continued with ``run_with_deferred_results``); a failed run raises ``RunError``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from golem_core import DeferredAnswer, Message
from golem_shell import Agent, RunResult
from golem_shell.temporal import ACTIVITIES, GolemRun, TemporalAgent

__all__ = ["TemporalRuntime"]


class TemporalRuntime:
    """Runs agents on the Temporal server at ``address`` (see the module's docstring)."""

    name = "temporal"

    def __init__(self, address: str) -> None:
        self.address = address
        self.queue = f"conformance-{uuid.uuid4().hex[:8]}"
        self.wrapped: dict[int, TemporalAgent[Any, Any]] = {}
        self.client: Client | None = None
        self.worker: Worker | None = None

    async def __aenter__(self) -> TemporalRuntime:
        self.client = await Client.connect(self.address)
        self.worker = Worker(
            self.client,
            task_queue=self.queue,
            workflows=[GolemRun],
            activities=list(ACTIVITIES),
        )
        await self.worker.__aenter__()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        assert self.worker is not None
        await self.worker.__aexit__(kind, error, trace)

    def _durable(self, agent: Agent[Any, Any]) -> TemporalAgent[Any, Any]:
        durable = self.wrapped.get(id(agent))
        if durable is None:
            name = f"{self.queue}-{len(self.wrapped)}"
            durable = TemporalAgent(agent, name=name, task_queue=self.queue)
            self.wrapped[id(agent)] = durable
        return durable

    async def run(
        self,
        agent: Agent[Any, Any],
        prompt: Any,
        *,
        history: Sequence[Message] = (),
        run_id: str | None = None,
        conversation_id: str | None = None,
        answers: Sequence[Mapping[str, DeferredAnswer]] = (),
    ) -> RunResult[Any]:
        assert self.client is not None, "use TemporalRuntime as an async context manager"
        durable = self._durable(agent)
        started = await durable.start(
            self.client, prompt, history=history, run_id=run_id, conversation_id=conversation_id
        )
        for answer in answers:
            waiting = await durable.waiting(self.client, started, timeout=30)
            await durable.answer(self.client, started, answer, pause=waiting.pause)
        return await durable.result(self.client, started)
