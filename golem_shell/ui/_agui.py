"""AG-UI: a run as AG-UI events, and AG-UI messages as golem history (``ag-ui-protocol``).

Owns both directions of the AG-UI protocol (types from the ``ag_ui.core`` package):

- ``AGUIStream`` translates a run's items into events, in the protocol's order:
  ``RUN_STARTED``; per model answer ``TEXT_MESSAGE_START``/``_CONTENT``/``_END``,
  ``REASONING_START``/``REASONING_MESSAGE_*``/``REASONING_END``, ``TOOL_CALL_START``/
  ``_ARGS``/``_END``; ``TOOL_CALL_RESULT`` per result; a steering message the run took
  (the person wrote while it worked) as a ``TEXT_MESSAGE_*`` of role ``user`` where it
  joined (AG-UI has no steering event; a text message may have any text role); then
  ``RUN_FINISHED`` (outcome
  ``success``, or ``interrupt`` with one ``Interrupt`` per call that waits for
  approval, whose id is the call id), preceded by a ``MESSAGES_SNAPSHOT`` of the whole
  history, or ``RUN_ERROR`` (code ``run_failed``, a generic message and an error id;
  the detail goes to the log).
- ``agui_messages_to_history`` reads ``RunAgentInput.messages`` as golem history (a
  ``tool`` message with ``error`` is a failed result; ``system`` and ``developer``
  messages become system messages, which ``sanitize_history`` drops and reports);
  ``history_to_agui_messages`` renders a history back (ids ``m<index>``, golem JSON of
  each message in ``metadata.golem`` so the round trip is exact).
- ``agui_answers(resume)`` reads ``RunAgentInput.resume``: an entry ``resolved`` with
  payload ``{"approved": true}`` approves the call its ``interruptId`` names; anything
  else denies it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, assert_never

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    FunctionCall,
    Interrupt,
    MessagesSnapshotEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    ResumeEntry,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    SystemMessage,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import Message as AGUIMessage
from returns.result import Failure, Success

from golem_core import (
    Approved,
    DataPart,
    DeferredAnswer,
    Denied,
    Message,
    Part,
    Role,
    TextPart,
    ToolCallPart,
    URLPart,
    history_from_jsonable,
    history_to_jsonable,
)
from golem_shell.ui._boundary import Refused
from golem_shell.ui._run import (
    ApprovalRequested,
    BlockDelta,
    BlockEnded,
    BlockStarted,
    CallArguments,
    CallReady,
    CallResult,
    CallStarted,
    RunEnded,
    RunItem,
    Steered,
    StepEnded,
    StepStarted,
    UIFold,
    UIStep,
    failure_text,
)

__all__ = [
    "AGUIStream",
    "agui_answers",
    "agui_frames",
    "agui_messages_to_history",
    "encode_event",
    "history_to_agui_messages",
]


class AGUIStream:
    """Translates one run's items into AG-UI events (a builder, used once per run).

    Args:
        thread_id: the AG-UI thread (golem's conversation id).
        run_id: the AG-UI run id.
        history: the history the run continues: the run ends with a
            ``MESSAGES_SNAPSHOT`` of it and what the run added (each message with its
            golem JSON in ``metadata.golem``), which a client sends back as
            ``messages`` next time: signatures then still verify.
        answered: answers a continued run gives to waiting calls (their results are
            reported).
    """

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        *,
        history: Sequence[Message] = (),
        answered: dict[str, DeferredAnswer] | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self._history = tuple(history)
        self._fold = UIFold(run_id, answered)
        self._message_id = f"{run_id}-0"
        self._results = 0

    def start(self) -> list[BaseEvent]:
        """The first event."""
        return [RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)]

    def item(self, item: RunItem) -> list[BaseEvent]:
        """The events one run item adds."""
        return [e for step in self._fold.steps(item) for e in self._events(step)]

    def _events(self, step: UIStep) -> list[BaseEvent]:
        match step:
            case StepStarted(request=n):
                self._message_id = f"{self.run_id}-{n}"
                return []
            case StepEnded():
                return []
            case BlockStarted(kind="text", id=block):
                return [TextMessageStartEvent(message_id=block, role="assistant")]
            case BlockStarted(id=block):
                return [
                    ReasoningStartEvent(message_id=block),
                    ReasoningMessageStartEvent(message_id=block, role="reasoning"),
                ]
            case BlockDelta(kind="text", id=block, text=text):
                return [TextMessageContentEvent(message_id=block, delta=text)]
            case BlockDelta(id=block, text=text):
                return [ReasoningMessageContentEvent(message_id=block, delta=text)]
            case BlockEnded(kind="text", id=block):
                return [TextMessageEndEvent(message_id=block)]
            case BlockEnded(id=block):
                return [
                    ReasoningMessageEndEvent(message_id=block),
                    ReasoningEndEvent(message_id=block),
                ]
            case CallStarted(id=call_id, name=name):
                return [
                    ToolCallStartEvent(
                        tool_call_id=call_id,
                        tool_call_name=name,
                        parent_message_id=self._message_id,
                    )
                ]
            case CallArguments(id=call_id, text=text):
                return [ToolCallArgsEvent(tool_call_id=call_id, delta=text)]
            case CallReady(part=part):
                assert part.id is not None
                return [ToolCallEndEvent(tool_call_id=part.id)]
            case CallResult(message=m):
                assert m.tool_call_id is not None
                self._results += 1
                return [
                    ToolCallResultEvent(
                        message_id=f"{self.run_id}-r{self._results}",
                        tool_call_id=m.tool_call_id,
                        content=m.text,
                        role="tool",
                    )
                ]
            case ApprovalRequested():
                return []  # the interrupts come with RUN_FINISHED
            case Steered(request=n, messages=messages):
                out: list[BaseEvent] = []
                for k, m in enumerate(messages):
                    block = f"{self.run_id}-u{n}.{k}"
                    out.append(TextMessageStartEvent(message_id=block, role="user"))
                    if m.text:  # a file alone has no text to stream: the snapshot holds it
                        out.append(TextMessageContentEvent(message_id=block, delta=m.text))
                    out.append(TextMessageEndEvent(message_id=block))
                return out
            case RunEnded():
                if step.result is None:
                    return [self._end(step)]
                every = (*self._history, *step.result.new_messages)
                snapshot = MessagesSnapshotEvent(messages=history_to_agui_messages(every))
                return [snapshot, self._end(step)]
        assert_never(step)

    def _end(self, ended: RunEnded) -> BaseEvent:
        result = ended.result
        if result is None:
            return RunErrorEvent(message=failure_text(ended.error), code="run_failed")
        if result.paused:
            interrupts = [
                Interrupt(
                    id=str(d.call.id),
                    reason="tool_approval" if d.kind == "approval" else "external_result",
                    tool_call_id=d.call.id,
                    message=f"{d.call.name} waits for "
                    + ("approval" if d.kind == "approval" else "its result"),
                )
                for d in result.deferred
            ]
            return RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                outcome=RunFinishedInterruptOutcome(type="interrupt", interrupts=interrupts),
            )
        output = result.output
        return RunFinishedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            result=output if isinstance(output, str | int | float | bool | None) else str(output),
            outcome=RunFinishedSuccessOutcome(type="success"),
        )


def agui_answers(resume: Sequence[ResumeEntry] | None) -> dict[str, DeferredAnswer]:
    """The deferred answers of ``RunAgentInput.resume``, keyed by call id.

    Only ``status: "resolved"`` with ``payload: {"approved": true}`` (a real boolean)
    approves; ``cancelled`` or any other payload denies (with ``payload.reason`` when
    it is a string).
    """
    out: dict[str, DeferredAnswer] = {}
    for entry in resume or ():
        payload = entry.payload if isinstance(entry.payload, dict) else {}
        if entry.status == "resolved" and payload.get("approved") is True:
            out[entry.interrupt_id] = Approved()
        else:
            reason = payload.get("reason")
            out[entry.interrupt_id] = Denied(reason) if isinstance(reason, str) else Denied()
    return out


def _exact(message: AGUIMessage, where: str) -> tuple[Message, ...] | None:
    metadata = getattr(message, "metadata", None)
    if not isinstance(metadata, dict) or "golem" not in metadata:
        return None
    match history_from_jsonable(metadata["golem"]):
        case Success(value):
            history: tuple[Message, ...] = value
            return history
        case Failure(error):
            raise Refused(f"{where}.metadata.golem{error.path}: {error.reason}")
    raise AssertionError("unreachable")  # pragma: no cover


def _content_parts(content: Any, where: str) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (TextPart(content),)
    parts: list[Part] = []
    for n, item in enumerate(content or ()):
        kind = getattr(item, "type", None)
        if kind == "text":
            parts.append(TextPart(item.text))
            continue
        source = getattr(item, "source", None)
        if kind not in ("image", "audio", "video", "document") or source is None:
            raise Refused(f"{where}.content[{n}]: unsupported content of type {kind!r}")
        media_type = getattr(source, "mime_type", None)
        if source.type == "url":
            parts.append(URLPart(source.value, kind, media_type=media_type))
        else:
            try:
                data = base64.b64decode(source.value, validate=True)
            except (binascii.Error, ValueError):
                raise Refused(f"{where}.content[{n}].source.value: malformed base64") from None
            parts.append(DataPart(data, kind, media_type or "application/octet-stream"))
    return tuple(parts)


def agui_messages_to_history(messages: Sequence[AGUIMessage]) -> tuple[Message, ...]:
    """Read AG-UI messages (``RunAgentInput.messages``) as a golem history.

    A message with ``metadata.golem`` (as ``history_to_agui_messages`` writes it) is
    that golem message exactly. The result is NOT trusted: pass it through
    ``accept_history`` (``sanitize_history``).

    Raises:
        Refused: content golem cannot hold; the message names the path.
    """
    history: list[Message] = []
    for k, m in enumerate(messages):
        where = f"messages[{k}]"
        exact = _exact(m, where)
        if exact is not None:
            history.extend(exact)
            continue
        role = m.role
        if role in ("system", "developer"):
            history.append(Message(Role.SYSTEM, _content_parts(m.content, where)))
        elif role == "user":
            history.append(Message(Role.USER, _content_parts(m.content, where)))
        elif role == "assistant":
            assert isinstance(m, AssistantMessage)
            parts: list[Part] = [TextPart(m.content)] if m.content else []
            parts.extend(
                ToolCallPart(c.id, c.function.name, c.function.arguments)
                for c in m.tool_calls or ()
            )
            history.append(Message(Role.ASSISTANT, tuple(parts)))
        elif role == "tool":
            assert isinstance(m, ToolMessage)
            name = _tool_name_of(history, m.tool_call_id)
            if m.error:
                history.append(Message.tool_result(m.tool_call_id, name, m.error, failed=True))
            else:
                history.append(
                    Message.tool_result(m.tool_call_id, name, _content_parts(m.content, where))
                )
        # activity and reasoning messages are display-only
    return tuple(history)


def _tool_name_of(history: Sequence[Message], call_id: str) -> str | None:
    for m in reversed(history):
        for c in m.tool_calls:
            if c.id == call_id:
                return c.name
    return None


def history_to_agui_messages(history: Sequence[Message]) -> list[AGUIMessage]:
    """Render a golem history as AG-UI messages (ids ``m<index>``; each keeps its golem
    JSON in ``metadata.golem``). Thinking and media stay in the metadata only."""
    out: list[AGUIMessage] = []
    for i, m in enumerate(history):
        meta = {"golem": history_to_jsonable((m,))}
        ui_id = f"m{i}"
        match m.role:
            case Role.SYSTEM:
                out.append(SystemMessage(id=ui_id, content=m.text, metadata=meta))
            case Role.USER:
                out.append(UserMessage(id=ui_id, content=m.text, metadata=meta))
            case Role.ASSISTANT:
                calls = [
                    ToolCall(
                        id=c.id,
                        type="function",
                        function=FunctionCall(name=c.name, arguments=c.arguments),
                    )
                    for c in m.tool_calls
                    if c.id is not None
                ]
                out.append(
                    AssistantMessage(
                        id=ui_id,
                        content=m.text or None,
                        tool_calls=calls or None,
                        metadata=meta,
                    )
                )
            case Role.TOOL:
                out.append(
                    ToolMessage(
                        id=ui_id,
                        content=m.text,
                        tool_call_id=m.tool_call_id or "",
                        error=m.text if m.failed else None,
                        metadata=meta,
                    )
                )
            case _:
                assert_never(m.role)
    return out


async def agui_frames(
    stream: AGUIStream,
    items: AsyncIterator[RunItem],
    *,
    first: Sequence[BaseEvent] = (),
    on_end: Callable[[RunEnded], Awaitable[None]] | None = None,
) -> AsyncIterator[str]:
    """The data of every AG-UI event of a run: ``RUN_STARTED`` always first (AG-UI
    clients refuse a stream that opens with anything else), then ``first`` (e.g. a
    ``CUSTOM`` event with the sanitize report), then the run's events. ``on_end`` runs
    when the run has ended, before ``RUN_FINISHED`` or ``RUN_ERROR`` is sent (if it
    raises, the run ends with ``RUN_ERROR``)."""
    for event in (*stream.start(), *first):
        yield encode_event(event)
    async for item in items:
        if isinstance(item, RunEnded) and on_end is not None:
            try:
                await on_end(item)
            except Exception as e:  # e.g. the store refused: the client must know
                item = RunEnded(None, e)
        for event in stream.item(item):
            yield encode_event(event)


def encode_event(event: BaseEvent) -> str:
    """An AG-UI event as JSON (camelCase, no null fields), for ``sse_frame``."""
    return json.dumps(event.model_dump(mode="json", by_alias=True, exclude_none=True))
