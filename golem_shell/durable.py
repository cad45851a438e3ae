"""Durable runs on DBOS: an ``Agent`` run as a workflow whose steps are the loop's effects.

Owns the mapping of golem's sans-IO loop onto DBOS (ADR 0042). The workflow body is the
driver: it asks ``golem_core.loop`` for the next command and feeds the outcome back, so
every decision is replayed deterministically. Each effect is a DBOS step whose output is
recorded before the run moves on:

- ``golem.instructions``: the dynamic instructions (only for an agent that has them);
- ``golem.request``: one model request (the adapter's own retries happen inside it;
  DBOS never retries a step);
- ``golem.tool``: one tool call (the calls of one batch run concurrently, each its own
  step, at step ids reserved in call order).

Validation of the output, the history processor and every transition run in the body.
Step outputs, the workflow's input and its result are plain JSON in golem's message
contract, so a run recorded by one version of golem resumes in the next. A worker that
dies (even by SIGKILL) and restarts replays the body: recorded effects return their
recorded outputs and are not performed again; an effect that was interrupted mid-flight
(not recorded) is performed again (at least once). The workflow id is the run id.

A run that pauses on deferred tools publishes the waiting calls as the event
``golem.waiting`` and waits, durably, for answers sent to the topic ``golem.answers``
(``DurableAgent.answer``); then it goes on in the same workflow.

``dbos`` is an optional dependency: importing this module without it raises
``UsageError`` naming the extra. Register every ``DurableAgent`` (by name) in every
worker process before ``DBOS.launch()``, so a recovered run finds its agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Generic, TypeAlias, TypeVar, cast

import attrs
from returns.result import Failure, Success

from golem_core import (
    Approved,
    DeferredAnswer,
    Denied,
    ExternalResult,
    Message,
    ModelErrorKind,
    Part,
    ToolCallPart,
    Usage,
    history_from_jsonable,
    history_to_jsonable,
    join_instructions,
    make_converter,
)
from golem_core._deferred import _check
from golem_core.loop import (
    DeferredCall,
    ExecuteTools,
    Fail,
    Finish,
    ModelFailed,
    ModelResponded,
    Pause,
    RequestModel,
    RunState,
    ToolCanceled,
    ToolCrashed,
    ToolOutcome,
    ToolRetry,
    ToolReturned,
    ToolsReturned,
    ValidateOutput,
    next_command,
    receive,
    resume_run,
    start_run,
)
from golem_shell._agent import Agent, Prompt, RunResult, _partial, _prompt_parts, _run_ids
from golem_shell._checks import check_history
from golem_shell._errors import DeferredResultsError, PartialResult, RunError, Stage, UsageError
from golem_shell._schema import ValidationFailed, validate
from golem_shell._tools import RunContext

try:
    from dbos import (
        DBOS,
        SetWorkflowID,
        StepOptions,
        WorkflowHandleAsync,
        WorkflowSerializationFormat,
    )
    from dbos import error as dbos_error
except ImportError as _missing:  # pragma: no cover - the extra is installed in CI
    raise UsageError(
        "golem_shell.durable needs DBOS: install golem with the dbos extra"
        " (pip install 'golem[dbos]')"
    ) from _missing

__all__ = ["ANSWERS_TOPIC", "DurableAgent", "WAITING_EVENT", "WORKFLOW_NAME"]

DepsT = TypeVar("DepsT")
OutputT = TypeVar("OutputT")
JSON: TypeAlias = Any
"""A plain JSON value (what ``json.loads`` returns)."""

WORKFLOW_NAME = "golem.run"
"""The DBOS workflow every durable run is an instance of (its id is the run id)."""
WAITING_EVENT = "golem.waiting"
"""The DBOS event a paused run sets to the calls it waits for (``[]`` once answered)."""
ANSWERS_TOPIC = "golem.answers"
"""The DBOS topic a paused run receives its answers on."""
_REJECTED_EVENT = "golem.rejected"
_WAIT_SECONDS = 24 * 3600.0  # one durable recv; a paused run waits in a loop of these
_POLL_SECONDS = 0.1  # how often a waiting reader checks for a run's result
_LOOKUP_SECONDS = 30.0  # how long a recovered run waits for its agent to be registered
_PORTABLE = WorkflowSerializationFormat.PORTABLE

_CONVERTER = make_converter()
_AGENTS: dict[str, DurableAgent[Any, Any]] = {}


# -- JSON of the values that cross a step or the workflow boundary --------------------


class _Corrupt(ValueError):
    """Recorded JSON that golem did not write (or a newer golem wrote differently)."""


def _messages(value: JSON, where: str) -> tuple[Message, ...]:
    match history_from_jsonable(value):
        case Success(decoded):
            messages: tuple[Message, ...] = decoded
            return messages
        case Failure(error):
            raise _Corrupt(f"{where}: {error}")
    raise AssertionError("unreachable")  # pragma: no cover


def _message(value: JSON, where: str) -> Message:
    return _messages([value], where)[0]


def _parts(value: JSON, where: str) -> tuple[Part, ...]:
    if type(value) is not list:
        raise _Corrupt(f"{where}: expected a list of parts")
    try:
        return tuple(_CONVERTER.structure(p, Part) for p in value)  # type: ignore[arg-type]
    except ValueError as e:
        raise _Corrupt(f"{where}: {e}") from None


def _parts_json(parts: Sequence[Part]) -> list[JSON]:
    return [_CONVERTER.unstructure(p, Part) for p in parts]


def _usage(value: JSON) -> Usage:
    return _CONVERTER.structure(value, Usage)


def _step(name: str) -> StepOptions:
    """A golem step: recorded, never retried by DBOS (golem's adapters retry requests)."""
    return {"name": name, "retries_allowed": False}


def _outcome_json(outcome: ToolOutcome) -> JSON:
    if isinstance(outcome, ToolReturned):
        out: JSON = {
            "type": "returned",
            "callId": outcome.call_id,
            "parts": _parts_json(outcome.parts),
        }
        if outcome.failed:
            out["failed"] = True
        return out
    kind = {ToolRetry: "retry", ToolCanceled: "canceled", ToolCrashed: "crashed"}[type(outcome)]
    return {"type": kind, "callId": outcome.call_id, "reason": outcome.reason}


def _outcome(value: JSON) -> ToolOutcome:
    kind, call_id = value["type"], value["callId"]
    if kind == "returned":
        return ToolReturned(call_id, _parts(value["parts"], "tool"), bool(value.get("failed")))
    if kind == "retry":
        return ToolRetry(call_id, value["reason"])
    if kind == "canceled":
        return ToolCanceled(call_id, value["reason"])
    if kind == "crashed":
        return ToolCrashed(call_id, value["reason"])
    raise _Corrupt(f"tool outcome: unknown type {kind!r}")


def _deferred_json(deferred: Sequence[DeferredCall]) -> list[JSON]:
    return [{"call": _CONVERTER.unstructure(d.call, Part), "kind": d.kind} for d in deferred]


def _deferred(value: JSON) -> tuple[DeferredCall, ...]:
    out: list[DeferredCall] = []
    for i, d in enumerate(value or ()):
        (call,) = _parts([d["call"]], f"waiting[{i}].call")
        if not isinstance(call, ToolCallPart) or d["kind"] not in ("approval", "external"):
            raise _Corrupt(f"waiting[{i}]: not a waiting tool call")
        out.append(DeferredCall(call, d["kind"]))
    return tuple(out)


def _answers_json(answers: Mapping[str, DeferredAnswer]) -> JSON:
    out: dict[str, JSON] = {}
    for call_id, answer in answers.items():
        if type(answer) is Approved:
            out[call_id] = {"type": "approved"}
        elif type(answer) is Denied:
            out[call_id] = {"type": "denied", "reason": answer.reason}
        elif type(answer) is ExternalResult:
            out[call_id] = {
                "type": "external",
                "parts": _parts_json(answer.parts),
                "failed": answer.failed,
            }
        else:
            raise UsageError(
                f"the answer for call {call_id!r} is a {type(answer).__name__}; answer with"
                " Approved(), Denied(reason) or ExternalResult(parts)"
            )
    return out


def _answers(value: JSON) -> dict[str, DeferredAnswer]:
    out: dict[str, DeferredAnswer] = {}
    for call_id, a in value.items():
        kind = a.get("type")
        if kind == "approved":
            out[call_id] = Approved()
        elif kind == "denied":
            out[call_id] = Denied(a["reason"])
        elif kind == "external":
            out[call_id] = ExternalResult(_parts(a["parts"], f"answers.{call_id}"), a["failed"])
        else:
            raise _Corrupt(f"answers.{call_id}: unknown type {kind!r}")
    return out


# -- the workflow ---------------------------------------------------------------------


async def _lookup(name: str) -> DurableAgent[Any, Any]:
    """The agent registered as ``name``, waiting briefly for a worker still starting."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _LOOKUP_SECONDS
    while name not in _AGENTS and loop.time() < deadline:
        await asyncio.sleep(0.05)  # not recorded: it decides nothing
    durable = _AGENTS.get(name)
    if durable is None:
        raise UsageError(
            f"no DurableAgent named {name!r} is registered in this worker; create it"
            f" before DBOS.launch() (registered: {', '.join(sorted(_AGENTS)) or 'none'})"
        )
    return durable


@DBOS.workflow(name=WORKFLOW_NAME, serialization_type=_PORTABLE)
async def _durable_run(agent: str, run: dict[str, Any]) -> dict[str, Any]:
    """One durable run of the agent registered as ``agent``; ``run`` is its JSON input."""
    durable = await _lookup(agent)
    return await durable._workflow(run)


class DurableAgent(Generic[DepsT, OutputT]):
    """An ``Agent`` whose runs are DBOS workflows: they survive a crashed worker.

    Create one per agent, under a name unique in the process, in every process that
    starts or executes runs, before ``DBOS.launch()``: a worker resuming a run finds its
    agent (model, tools, output type) by that name. Start runs with ``start`` (or
    ``run``, which also waits), here or on a DBOS queue that other workers pull from;
    read the result by run id with ``result``. The run id is the DBOS workflow id:
    starting a run id again does not start a second run.

    What differs from ``Agent.run``: tools of one batch all run to the end (a tool that
    stops the run does not cancel its siblings); ``timeout`` and streaming do not apply
    (use DBOS's workflow timeouts); a paused run does not end but waits for
    ``answer``; the history processor and output validation run in the workflow body
    and must be deterministic (golem's are).

    Args:
        agent: the agent to run (toolsets are not supported: their tool lists are
            asked per run, which a restarted worker cannot replay).
        name: its registration name, the same in every worker (default: the agent's
            ``name``).
        deps: what ``RunContext.deps`` holds for tools and instructions in this process
            (dependencies are per worker, not per run: they are not recorded).

    Raises:
        UsageError: ``agent`` is not an ``Agent``, the name is empty or taken by another
            agent, or the agent has toolsets.
    """

    def __init__(
        self, agent: Agent[DepsT, OutputT], *, name: str | None = None, deps: DepsT | None = None
    ) -> None:
        if not isinstance(agent, Agent):
            raise UsageError(f"DurableAgent wraps an Agent, not {type(agent).__name__}")
        name = name if name is not None else agent.name
        if not isinstance(name, str) or not name:
            raise UsageError(
                f"a DurableAgent needs a non-empty name (name=, or Agent(name=)), got {name!r}"
            )
        if getattr(agent, "toolsets", ()):
            raise UsageError(
                f"durable runs do not support toolsets yet ({agent!r}): a toolset's tools"
                " are listed per run, which a restarted worker cannot replay"
            )
        taken = _AGENTS.get(name)
        if taken is not None and taken.agent is not cast(Any, agent):
            raise UsageError(f"a DurableAgent named {name!r} is already registered")
        self.agent: Agent[DepsT, OutputT] = agent
        self.name = name
        self.deps = deps
        _AGENTS[name] = self

    def __repr__(self) -> str:
        return f"DurableAgent({self.name!r}, {self.agent!r})"

    # -- starting and reading runs ----------------------------------------------------

    async def start(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        run_id: str | None = None,
        conversation_id: str | None = None,
        queue: str | None = None,
    ) -> str:
        """Start a durable run and return its run id (also its DBOS workflow id).

        Args:
            prompt: the user's prompt (``None`` continues ``history`` as it is).
            history: the conversation so far (a previous ``result.messages``).
            run_id: the run's id; a fresh UUIDv7 when omitted. A run id already started
                is not started again: its existing run continues.
            conversation_id: as for ``Agent.run_with_history``.
            queue: the name of a DBOS queue (``DBOS.register_queue``) to enqueue the run
                on, for any worker listening to it; ``None`` runs it in this process.
        """
        handle = await self._start(prompt, history, run_id, conversation_id, queue)
        return handle.get_workflow_id()

    async def run(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        run_id: str | None = None,
        conversation_id: str | None = None,
        queue: str | None = None,
    ) -> RunResult[OutputT]:
        """``start`` the run, then wait for its result (see ``result``)."""
        handle = await self._start(prompt, history, run_id, conversation_id, queue)
        return await self._result_of(handle)

    async def result(self, run_id: str) -> RunResult[OutputT]:
        """The result of the run ``run_id``, waiting for it to finish (wherever it runs).

        Raises:
            RunError: the run failed (``partial`` holds the evidence it recorded), or it
                was cancelled through DBOS (stage ``canceled``, no partial).
            UsageError: there is no run with this id, or it belongs to another agent.
        """
        try:
            handle: Any = await DBOS.retrieve_workflow_async(run_id)
        except dbos_error.DBOSNonExistentWorkflowError:
            raise UsageError(f"there is no durable run with id {run_id!r}") from None
        return await self._result_of(handle)

    async def _result_of(self, handle: WorkflowHandleAsync[dict[str, Any]]) -> RunResult[OutputT]:
        try:
            value = await handle.get_result(polling_interval_sec=_POLL_SECONDS)
        except dbos_error.DBOSAwaitedWorkflowCancelledError as e:
            raise RunError(
                Stage.CANCELED,
                f"the durable run {handle.get_workflow_id()!r} was cancelled (through DBOS)",
                cause=e,
            ) from e
        return self._decode_result(value)

    async def _start(
        self,
        prompt: Prompt,
        history: Sequence[Message],
        run_id: str | None,
        conversation_id: str | None,
        queue: str | None,
    ) -> WorkflowHandleAsync[dict[str, Any]]:
        history = check_history(history)
        parts = _prompt_parts(prompt)
        run_id, conversation_id = _run_ids(history, run_id, conversation_id)
        payload: dict[str, Any] = {
            "runId": run_id,
            "conversationId": conversation_id,
            "history": history_to_jsonable(history),
            "prompt": None if parts is None else _parts_json(parts),
            "now": datetime.now(UTC).isoformat(),  # the prompt's time: when it was submitted
        }
        with SetWorkflowID(run_id):
            if queue is None:
                return await DBOS.start_workflow_async(_durable_run, self.name, payload)
            return await DBOS.enqueue_workflow_async(queue, _durable_run, self.name, payload)

    async def waiting(self, run_id: str, *, timeout: float = 0.0) -> tuple[DeferredCall, ...]:
        """The calls the run ``run_id`` waits for (approval or an external result).

        Empty when the run is not paused. ``timeout`` is how long to wait for the run to
        pause the first time.
        """
        value = await DBOS.get_event_async(run_id, WAITING_EVENT, timeout)
        return _deferred(value)

    async def answer(self, run_id: str, answers: Mapping[str, DeferredAnswer]) -> None:
        """Answer waiting calls of the paused run ``run_id``, by call id; it goes on.

        ``Approved()`` runs the tool, ``Denied(reason)`` gives the model a failed result,
        ``ExternalResult`` is the result of a call executed elsewhere. Calls left
        unanswered keep the run paused. The calls are the run's own (recorded by the
        workflow), so a forged call cannot be answered.

        Raises:
            DeferredResultsError: an answer names a call that is not waiting, or answers
                it with the wrong kind of answer; nothing is sent then.
        """
        encoded = _answers_json(answers)
        error = _check(await self.waiting(run_id), answers)
        if error is not None:
            raise DeferredResultsError(str(error), error.call_ids)
        await DBOS.send_async(run_id, encoded, ANSWERS_TOPIC, serialization_type=_PORTABLE)

    # -- the workflow body --------------------------------------------------------------

    async def _workflow(self, run: dict[str, Any]) -> dict[str, Any]:
        agent = self.agent
        run_id: str = run["runId"]
        conversation_id: str = run["conversationId"]
        history = _messages(run["history"], "history")
        prompt = None if run["prompt"] is None else _parts(run["prompt"], "prompt")
        context: RunContext[Any] = RunContext(self.deps, run_id, conversation_id)
        instructions: str | None = join_instructions(agent.instructions, None)
        if agent.dynamic_instructions is not None:
            resolved = await DBOS.run_step_async(
                _step("golem.instructions"), self._instructions_step, context
            )
            if "failed" in resolved:
                return self._failed_json(
                    run_id, conversation_id, "instructions", resolved["failed"]
                )
            instructions = resolved["instructions"]
        config = agent._run_config(run_id, conversation_id, instructions)
        state = start_run(
            config,
            history,
            prompt,
            processor=agent._processor(),
            now=datetime.fromisoformat(run["now"]),
        )
        before = 0  # messages the run added before its latest resume
        while True:
            command = next_command(state)
            outcome: Any
            if isinstance(command, RequestModel):
                recorded = await DBOS.run_step_async(
                    _step("golem.request"), self._request_step, command, state
                )
                if "failed" in recorded:
                    kind = recorded.get("kind")
                    outcome = ModelFailed(
                        recorded["failed"], None if kind is None else ModelErrorKind(kind)
                    )
                else:
                    outcome = ModelResponded(_message(recorded["message"], "model response"))
            elif isinstance(command, ExecuteTools):
                reserved = [DBOS.reserve_step() for _ in command.calls]
                results = await asyncio.gather(
                    *(
                        r.run_async(
                            _step("golem.tool"),
                            self._tool_step,
                            call,
                            state,
                            context,
                        )
                        for r, call in zip(reserved, command.calls, strict=True)
                    )
                )
                outcome = ToolsReturned(tuple(_outcome(r) for r in results))
            elif isinstance(command, ValidateOutput):
                outcome = agent._output.check(command.candidate)
            elif isinstance(command, Finish):
                return self._done_json(command.state, command.output, before)
            elif isinstance(command, Pause):
                before += len(command.state.added)
                state = await self._wait(command.state)
                continue
            else:
                assert isinstance(command, Fail)
                return self._failed_json(
                    run_id, conversation_id, command.stage, command.reason, command.state
                )
            state = receive(state, outcome)

    async def _wait(self, paused: RunState) -> RunState:
        """Publish the waiting calls, then receive answers until they fit; resume."""
        await DBOS.set_event_async(
            WAITING_EVENT, _deferred_json(paused.deferred), serialization_type=_PORTABLE
        )
        resumed: RunState
        while True:
            message = await DBOS.recv_async(ANSWERS_TOPIC, timeout_seconds=_WAIT_SECONDS)
            if message is None:
                continue
            try:
                answers = _answers(message)
            except (_Corrupt, KeyError, TypeError, AttributeError) as e:
                reason = f"answers that cannot be read: {e}"
            else:
                match resume_run(paused.config, paused.messages, answers):
                    case Success(value):
                        resumed = value
                        break
                    case Failure(error):
                        reason = str(error)
            await DBOS.set_event_async(_REJECTED_EVENT, reason, serialization_type=_PORTABLE)
        await DBOS.set_event_async(WAITING_EVENT, [], serialization_type=_PORTABLE)
        # one run: its limits and counts go on across the pause
        return attrs.evolve(
            resumed,
            usage=paused.usage + resumed.usage,
            requests=paused.requests + resumed.requests,
            tool_executions=paused.tool_executions + resumed.tool_executions,
            retries=paused.retries,
            output_attempts=paused.output_attempts,
        )

    # -- the steps (each output is recorded; none is retried by DBOS) -------------------

    async def _instructions_step(self, context: RunContext[Any]) -> JSON:
        try:
            return {"instructions": await self.agent._resolve_instructions(context)}
        except Exception as e:
            return {"failed": f"resolving the instructions failed: {e}"}

    async def _request_step(self, command: RequestModel, state: RunState) -> JSON:
        outcome = await self.agent._request_once(command, state)
        if isinstance(outcome, ModelFailed):
            failed: JSON = {"failed": outcome.reason}
            if outcome.kind is not None:
                failed["kind"] = outcome.kind.value
            return failed
        return {"message": history_to_jsonable((outcome.message,))[0]}

    async def _tool_step(
        self, call: ToolCallPart, state: RunState, context: RunContext[Any]
    ) -> JSON:
        return _outcome_json(await self.agent._execute_once(call, state, context))

    # -- the workflow's result ------------------------------------------------------------

    def _done_json(self, state: RunState, output: Any, before: int) -> dict[str, Any]:
        return {
            "agent": self.name,
            "status": "done",
            "runId": state.config.run_id,
            "conversationId": state.config.conversation_id,
            "output": self.agent._output.dump(output),
            "messages": history_to_jsonable(state.messages),
            "added": before + len(state.added),
            "usage": _CONVERTER.unstructure(state.usage),
            "requests": state.requests,
            "toolExecutions": state.tool_executions,
        }

    def _failed_json(
        self,
        run_id: str,
        conversation_id: str,
        stage: str,
        reason: str,
        state: RunState | None = None,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent": self.name,
            "status": "failed",
            "runId": run_id,
            "conversationId": conversation_id,
            "stage": stage,
            "reason": reason,
        }
        partial = None if state is None else _partial(state)
        if partial is not None:
            out["partial"] = {
                "messages": history_to_jsonable(partial.messages),
                "usage": _CONVERTER.unstructure(partial.usage),
                "requests": partial.requests,
                "toolExecutions": partial.tool_executions,
            }
        return out

    def _decode_result(self, value: JSON) -> RunResult[OutputT]:
        if not isinstance(value, dict) or value.get("agent") != self.name:
            owner = value.get("agent") if isinstance(value, dict) else None
            raise UsageError(
                f"run {value.get('runId') if isinstance(value, dict) else value!r} is not a"
                f" run of DurableAgent {self.name!r} (it belongs to {owner!r})"
            )
        run_id, conversation_id = value["runId"], value["conversationId"]
        if value["status"] == "failed":
            partial = None
            p = value.get("partial")
            if p is not None:
                partial = PartialResult(
                    messages=_messages(p["messages"], "partial.messages"),
                    usage=_usage(p["usage"]),
                    requests=p["requests"],
                    tool_executions=p["toolExecutions"],
                    run_id=run_id,
                    conversation_id=conversation_id,
                )
            raise RunError(Stage(value["stage"]), value["reason"], partial=partial)
        messages = _messages(value["messages"], "messages")
        output: Any = value["output"]
        if not self.agent._output.text:
            try:
                output = validate(output, self.agent._output.type, path="output")
            except ValidationFailed as e:
                raise _Corrupt(f"the recorded output no longer fits the output type: {e}") from e
        added = value["added"]
        return RunResult(
            output=cast(OutputT, output),
            messages=messages,
            new_messages=messages[len(messages) - added :],
            usage=_usage(value["usage"]),
            run_id=run_id,
            conversation_id=conversation_id,
            requests=value["requests"],
            tool_executions=value["toolExecutions"],
        )
