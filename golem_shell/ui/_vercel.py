"""The Vercel AI SDK UI message stream (AI SDK 5 and 6; header ``x-vercel-ai-ui-message-stream``).

Owns both directions of the protocol a React ``useChat`` front end speaks:

- ``VercelStream`` folds a run's items (``golem_shell.ui._run``) into UI message stream
  chunks, in the documented order: ``start``; per model request ``start-step``, then
  ``text-start``/``text-delta``/``text-end``, ``reasoning-*``, ``tool-input-start``/
  ``tool-input-delta``/``tool-input-available``, and ``finish-step``; the tools'
  ``tool-output-available`` (``tool-output-error`` for a failed result,
  ``tool-output-denied`` for a call the person refused, which a rendered history shows
  as ``output-denied`` too); ``tool-approval-request`` for
  each call that waits for approval; ``data-steered`` (transient: the AI SDK has no
  steering chunk) where the person's messages sent while the run worked joined it;
  ``error`` when the run failed (``failure_text``: a
  generic sentence and an error id, the detail in the log); ``finish`` (with
  ``messageMetadata``: the run's golem messages as JSON) and ``[DONE]``.
- ``history_to_ui_messages`` renders a golem history as ``UIMessage``s (a user message;
  an assistant turn with its tool results and every step up to the next user message);
  ``ui_messages_to_history`` reads them back. Each rendered message keeps the exact
  golem messages it shows in ``metadata.golem.messages`` (stamps, usage, signatures), so
  the round trip is lossless for what golem keeps; messages without it (typed by the
  person, or from another client) are read from their parts. Approvals travel in tool
  parts (``state: "approval-responded"``, ``approval: {id, approved, reason}``) and are
  returned apart, as ``Approved()`` / ``Denied(reason)`` keyed by call id.

What a client sends is untrusted: ``ui_messages_to_history`` refuses malformed input
with ``Refused`` naming the path, and the adapter runs ``sanitize_history`` on the result
(``golem_shell.ui._boundary``) before a run sees it.

Over 600 lines because it holds both directions of one protocol, whose writer and
reader must agree part by part.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, assert_never

from returns.result import Failure, Success

from golem_core import (
    Approved,
    DataPart,
    DeferredAnswer,
    Denied,
    Message,
    Part,
    PartKind,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    URLPart,
    history_from_jsonable,
    history_to_jsonable,
)
from golem_core.wire import wire_arguments
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
    "DONE",
    "UI_MESSAGE_STREAM_HEADERS",
    "Chunk",
    "VercelStream",
    "history_to_ui_messages",
    "ui_messages_to_history",
    "vercel_frames",
]

Chunk = dict[str, Any]
"""One UI message stream chunk (a JSON object with a ``type``)."""

DONE = "[DONE]"
"""The data of the stream's last event."""

UI_MESSAGE_STREAM_HEADERS = {
    "x-vercel-ai-ui-message-stream": "v1",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
}
"""The headers of a UI message stream response (its media type is ``text/event-stream``)."""

_FINISH_REASONS = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "content_filter": "content-filter",
    "tool_calls": "tool-calls",
    "tool_use": "tool-calls",
}


class VercelStream:
    """Translates one run's items into UI message stream chunks (a builder, used once).

    Args:
        message_id: the id of the assistant ``UIMessage`` the stream writes (``start``).
        prior: the golem messages already in that UI message (a paused turn being
            continued), so that ``finish`` carries the whole turn.
        answered: answers the continuation gives to waiting calls: their results are
            shown, and a ``Denied`` one as ``tool-output-denied``.
        sdk_version: 6 (the default: AI SDK 6 and 7 read the same stream) or 5, which
            has no ``finishReason``, no ``tool-approval-request`` (a waiting call stays
            ``input-available``) and no ``tool-output-denied`` (a denial is a
            ``tool-output-error``).
    """

    def __init__(
        self,
        message_id: str,
        *,
        prior: Sequence[Message] = (),
        answered: Mapping[str, DeferredAnswer] | None = None,
        sdk_version: Literal[5, 6] = 6,
    ) -> None:
        if sdk_version not in (5, 6):
            raise ValueError(f"sdk_version must be 5 or 6, got {sdk_version!r}")
        self.message_id = message_id
        self.sdk_version = sdk_version
        self._prior = tuple(prior)
        # block ids unique across the streams of one UI message (a continued turn)
        self._fold = UIFold(f"{message_id}-{len(self._prior)}", answered)

    def start(self) -> list[Chunk]:
        """The first chunk."""
        return [{"type": "start", "messageId": self.message_id}]

    def data(self, name: str, value: Any, *, transient: bool = True) -> Chunk:
        """A ``data-<name>`` chunk (e.g. the sanitize report)."""
        return {"type": f"data-{name}", "data": value, "transient": transient}

    def item(self, item: RunItem) -> list[Chunk]:
        """The chunks one run item adds (``RunEnded`` gives the closing chunks)."""
        return [c for step in self._fold.steps(item) for c in self._chunks(step)]

    def results(self, messages: Iterable[Message], *, denied: Iterable[str] = ()) -> list[Chunk]:
        """The result chunks of the tool messages among ``messages``, whether or not
        this stream showed their calls (a stream written step by step, ``StreamTap``);
        a call in ``denied`` as ``tool-output-denied``."""
        refused = set(denied)
        return [
            c
            for m in messages
            if m.role is Role.TOOL and m.tool_call_id is not None
            for c in self._chunks(CallResult(m, denied=m.tool_call_id in refused))
        ]

    def paused(self, calls: Iterable[ToolCallPart]) -> list[Chunk]:
        """The closing chunks of a run that waits for approval of ``calls`` and goes on
        later (a durable run): each ``tool-approval-request``, then ``finish``."""
        out = [c for call in calls for c in self._chunks(ApprovalRequested(call))]
        finish: Chunk = {"type": "finish"}
        if self.sdk_version >= 6:
            finish["finishReason"] = "tool-calls"
        return [*out, finish]

    def _chunks(self, step: UIStep) -> list[Chunk]:
        match step:
            case StepStarted():
                return [{"type": "start-step"}]
            case StepEnded():
                return [{"type": "finish-step"}]
            case BlockStarted(kind=kind, id=block):
                return [{"type": f"{kind}-start", "id": block}]
            case BlockDelta(kind=kind, id=block, text=text):
                return [{"type": f"{kind}-delta", "id": block, "delta": text}]
            case BlockEnded(kind=kind, id=block):
                return [{"type": f"{kind}-end", "id": block}]
            case CallStarted(id=call_id, name=name):
                return [{"type": "tool-input-start", "toolCallId": call_id, "toolName": name}]
            case CallArguments(id=call_id, text=text):
                return [{"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": text}]
            case CallReady(part=part):
                return [
                    {
                        "type": "tool-input-available",
                        "toolCallId": part.id,
                        "toolName": part.name,
                        "input": wire_arguments(part),
                    }
                ]
            case CallResult(message=m, denied=denied):
                if denied and self.sdk_version >= 6:
                    return [{"type": "tool-output-denied", "toolCallId": m.tool_call_id}]
                if m.failed:
                    return [
                        {
                            "type": "tool-output-error",
                            "toolCallId": m.tool_call_id,
                            "errorText": m.text,
                        }
                    ]
                return [
                    {
                        "type": "tool-output-available",
                        "toolCallId": m.tool_call_id,
                        "output": m.text,
                    }
                ]
            case ApprovalRequested(call=call):
                if self.sdk_version < 6:
                    return []
                return [
                    {"type": "tool-approval-request", "approvalId": call.id, "toolCallId": call.id}
                ]
            case Steered():
                return [self.steered(step.request, step.messages)]
            case RunEnded():
                return self._end(step)
        assert_never(step)

    def steered(self, request: int, messages: Sequence[Message]) -> Chunk:
        """The ``data-steered`` chunk: ``messages`` (the person's, as UI messages' parts)
        joined the run before its model request ``request``."""
        shown = [{"role": "user", "parts": _user_parts(m)} for m in messages]
        return self.data("steered", {"request": request, "messages": shown})

    def _end(self, ended: RunEnded) -> list[Chunk]:
        out = self._finish(ended)
        if self.sdk_version < 6:
            out[-1].pop("finishReason", None)
        return out

    def _finish(self, ended: RunEnded) -> list[Chunk]:
        out: list[Chunk] = []
        finish: Chunk = {"type": "finish"}
        if ended.result is None:
            out.append({"type": "error", "errorText": failure_text(ended.error)})
            finish["finishReason"] = "error"
        else:
            added = ended.result.new_messages
            last = next((m for m in reversed(added) if m.role is Role.ASSISTANT), None)
            reason = "tool-calls" if ended.result.paused else None
            if reason is None and last is not None and last.finish_reason:
                reason = _FINISH_REASONS.get(last.finish_reason, "other")
            finish["finishReason"] = reason or "stop"
            turn = (*self._prior, *(m for m in added if m.role is not Role.USER))
            finish["messageMetadata"] = {"golem": {"messages": history_to_jsonable(turn)}}
        out.append(finish)
        return out


async def vercel_frames(
    stream: VercelStream,
    items: AsyncIterator[RunItem],
    *,
    first: Sequence[Chunk] = (),
    on_end: Callable[[RunEnded], Awaitable[None]] | None = None,
) -> AsyncIterator[str]:
    """The data of every event of a UI message stream: ``start``, ``first`` (e.g. a
    ``data-`` chunk with the sanitize report), the run's chunks, ``[DONE]``.

    ``on_end`` runs when the run has ended, before ``finish`` is sent (store the
    run's messages there: a client that sees ``finish`` finds them stored); if it
    raises, the stream ends with that ``error`` instead.
    """
    for chunk in (*stream.start(), *first):
        yield _dumps(chunk)
    async for item in items:
        if isinstance(item, RunEnded) and on_end is not None:
            try:
                await on_end(item)
            except Exception as e:  # e.g. the store refused: the client must know
                item = RunEnded(None, e)
        for chunk in stream.item(item):
            yield _dumps(chunk)
    yield DONE


def _dumps(chunk: Chunk) -> str:
    text = json.dumps(chunk, ensure_ascii=False, separators=(",", ":"))
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (from a stored history): escape it
            return json.dumps(chunk, separators=(",", ":"))
    return text


# -- golem history -> UIMessages ---------------------------------------------------------


def history_to_ui_messages(
    history: Sequence[Message], *, awaiting: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """Render ``history`` as ``UIMessage`` objects (JSON values).

    A user or system message is one UI message; an assistant turn (assistant and tool
    messages up to the next user message) is one, with a ``step-start`` part before
    each model answer and each tool call shown in the state its result gives it. Calls
    in ``awaiting`` without a result show ``approval-requested``. UI message ids are
    ``m<index>`` of the group's first message; ``metadata.golem.messages`` keeps the
    group's golem messages exactly. Total and deterministic.
    """
    waiting = set(awaiting)
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(history):
        m = history[i]
        if m.role is not Role.ASSISTANT and m.role is not Role.TOOL:
            out.append(_ui_message(f"m{i}", m.role.value, _user_parts(m), (m,)))
            i += 1
            continue
        j = i
        while j < len(history) and history[j].role in (Role.ASSISTANT, Role.TOOL):
            j += 1
        group = history[i:j]
        out.append(_ui_message(f"m{i}", "assistant", _turn_parts(group, waiting), group))
        i = j
    return out


def _ui_message(
    ui_id: str, role: str, parts: list[dict[str, Any]], group: Sequence[Message]
) -> dict[str, Any]:
    return {
        "id": ui_id,
        "role": role,
        "parts": parts,
        "metadata": {"golem": {"messages": history_to_jsonable(group)}},
    }


def _user_parts(m: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for p in m.parts:
        if isinstance(p, TextPart):
            parts.append({"type": "text", "text": p.text})
        elif isinstance(p, URLPart):
            parts.append({"type": "file", "mediaType": p.media_type or "", "url": p.url})
        elif isinstance(p, DataPart):
            data = base64.b64encode(p.data).decode("ascii")
            parts.append(
                {
                    "type": "file",
                    "mediaType": p.media_type,
                    "url": f"data:{p.media_type};base64,{data}",
                }
            )
    return parts


def _turn_parts(group: Sequence[Message], waiting: set[str]) -> list[dict[str, Any]]:
    results = {m.tool_call_id: m for m in group if m.role is Role.TOOL and m.tool_call_id}
    parts: list[dict[str, Any]] = []
    for m in group:
        if m.role is not Role.ASSISTANT:
            continue
        parts.append({"type": "step-start"})
        for p in m.parts:
            if isinstance(p, TextPart):
                parts.append({"type": "text", "text": p.text, "state": "done"})
            elif isinstance(p, ThinkingPart) and not p.redacted:
                parts.append({"type": "reasoning", "text": p.text, "state": "done"})
            elif isinstance(p, ToolCallPart) and p.id is not None:
                parts.append(_tool_part(p, results.get(p.id), p.id in waiting))
    return parts


_DENIED = "denied: "
"""How the loop words the failed result of a ``Denied`` call (``denied: <reason>``): such
a result renders as ``output-denied``, as the stream showed it (``tool-output-denied``)."""


def _tool_part(call: ToolCallPart, result: Message | None, waiting: bool) -> dict[str, Any]:
    part: dict[str, Any] = {
        "type": f"tool-{call.name}",
        "toolCallId": call.id,
        "input": wire_arguments(call),
    }
    if result is None:
        if waiting:
            part["state"] = "approval-requested"
            part["approval"] = {"id": call.id}
        else:
            part["state"] = "input-available"
    elif result.failed and result.text.startswith(_DENIED):
        part["state"] = "output-denied"
        part["approval"] = {"id": call.id, "approved": False, "reason": result.text[len(_DENIED) :]}
    elif result.failed:
        part["state"] = "output-error"
        part["errorText"] = result.text
    else:
        part["state"] = "output-available"
        part["output"] = result.text
    return part


# -- UIMessages -> golem history ------------------------------------------------------------


def ui_messages_to_history(
    messages: object,
) -> tuple[tuple[Message, ...], dict[str, DeferredAnswer]]:
    """Read the ``UIMessage``s a client sent as a golem history, and its approvals.

    A message whose ``metadata.golem.messages`` holds golem JSON is those messages
    (exactly); any other is read from its parts: ``text``, ``file`` (a ``data:`` URL
    becomes bytes, any other URL a URL part, whatever its scheme: sanitizing drops what
    is unsafe and reports it), ``reasoning``, tool parts (a call, and its result when
    the part has one); ``step-start`` splits an assistant message into model answers.
    Tool parts in state ``approval-responded`` give the returned answers.

    The result is NOT trusted: pass it through ``accept_history`` (``sanitize_history``).

    Raises:
        Refused: the input is not a list of UI messages; the message names the path.
    """
    if not isinstance(messages, list):
        raise Refused(f"messages: expected a list of UI messages, got {_kind(messages)}")
    history: list[Message] = []
    answers: dict[str, DeferredAnswer] = {}
    for k, ui in enumerate(messages):
        where = f"messages[{k}]"
        if not isinstance(ui, dict):
            raise Refused(f"{where}: expected an object, got {_kind(ui)}")
        role = ui.get("role")
        parts = ui.get("parts", [])
        if role not in ("system", "user", "assistant"):
            raise Refused(f"{where}.role: expected system, user or assistant, got {role!r}")
        if not isinstance(parts, list):
            raise Refused(f"{where}.parts: expected a list, got {_kind(parts)}")
        if role == "assistant":
            answers.update(_approvals(parts, where))
        exact = _golem_messages(ui.get("metadata"), where)
        if exact is not None:
            history.extend(exact)
        elif role == "assistant":
            history.extend(_assistant_from_parts(parts, where))
        else:
            history.append(Message(Role(role), _user_from_parts(parts, where)))
    return tuple(history), answers


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _golem_messages(metadata: object, where: str) -> tuple[Message, ...] | None:
    if not isinstance(metadata, dict):
        return None
    golem = metadata.get("golem")
    if not isinstance(golem, dict) or "messages" not in golem:
        return None
    match history_from_jsonable(golem["messages"]):
        case Success(value):
            history: tuple[Message, ...] = value
            return history
        case Failure(error):
            raise Refused(f"{where}.metadata.golem.messages{error.path}: {error.reason}")
    raise AssertionError("unreachable")  # pragma: no cover


def _part_fields(p: object, where: str) -> dict[str, Any]:
    if not isinstance(p, dict) or not isinstance(p.get("type"), str):
        raise Refused(f"{where}: expected a part object with a string type")
    return p


def _text_field(p: Mapping[str, Any], name: str, where: str) -> str:
    value = p.get(name)
    if not isinstance(value, str):
        raise Refused(f"{where}.{name}: expected a string, got {_kind(value)}")
    return value


def _kind_of(media_type: str) -> PartKind:
    top = media_type.split("/", 1)[0].lower()
    if top in ("image", "audio", "video"):
        return top  # type: ignore[return-value]
    return "document"


def _file_part(p: Mapping[str, Any], where: str) -> Part:
    url = _text_field(p, "url", where)
    media_type = _text_field(p, "mediaType", where)
    if url.startswith("data:"):
        head, comma, payload = url[5:].partition(",")
        if not comma or not head.endswith(";base64"):
            raise Refused(f"{where}.url: a data URL must be base64 (data:<type>;base64,...)")
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise Refused(f"{where}.url: the data URL's base64 is malformed") from None
        return DataPart(data, _kind_of(media_type), media_type)
    return URLPart(url, _kind_of(media_type), media_type=media_type or None)


def _user_from_parts(parts: list[Any], where: str) -> tuple[Part, ...]:
    out: list[Part] = []
    for n, raw in enumerate(parts):
        at = f"{where}.parts[{n}]"
        p = _part_fields(raw, at)
        if p["type"] == "text":
            out.append(TextPart(_text_field(p, "text", at)))
        elif p["type"] == "file":
            out.append(_file_part(p, at))
        # other parts (data-*, source-*, step-start) are display-only
    return tuple(out)


def _tool_name(p: Mapping[str, Any], where: str) -> str | None:
    kind = p["type"]
    if kind == "dynamic-tool":
        return _text_field(p, "toolName", where)
    if kind.startswith("tool-"):
        return str(kind[5:])
    return None


def _assistant_from_parts(parts: list[Any], where: str) -> list[Message]:
    out: list[Message] = []
    current: list[Part] = []
    results: list[Message] = []

    def flush() -> None:
        if current or results:
            out.append(Message(Role.ASSISTANT, tuple(current)))
            out.extend(results)
        current.clear()
        results.clear()

    for n, raw in enumerate(parts):
        at = f"{where}.parts[{n}]"
        p = _part_fields(raw, at)
        kind = p["type"]
        if kind == "step-start":
            flush()
        elif kind == "text":
            current.append(TextPart(_text_field(p, "text", at)))
        elif kind == "reasoning":
            current.append(ThinkingPart(_text_field(p, "text", at)))
        elif kind == "file":
            current.append(_file_part(p, at))
        else:
            name = _tool_name(p, at)
            if name is None:
                continue
            call_id = _text_field(p, "toolCallId", at)
            value = p.get("input", {})
            arguments = value["truncated_args"] if _is_truncated(value) else json.dumps(value)
            current.append(ToolCallPart(call_id, name, arguments))
            state = p.get("state")
            if state == "output-available":
                output = p.get("output")
                text = output if isinstance(output, str) else json.dumps(output)
                results.append(Message.tool_result(call_id, name, text))
            elif state == "output-error":
                text = _text_field(p, "errorText", at)
                results.append(Message.tool_result(call_id, name, text, failed=True))
            elif state == "output-denied":
                approval = p.get("approval")
                reason = approval.get("reason") if isinstance(approval, dict) else None
                if not isinstance(reason, str) or not reason:
                    reason = Denied().reason
                results.append(Message.tool_result(call_id, name, _DENIED + reason, failed=True))
    flush()
    return out


def _is_truncated(value: object) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"truncated_args"}
        and isinstance(value["truncated_args"], str)
    )


def _approvals(parts: list[Any], where: str) -> dict[str, DeferredAnswer]:
    out: dict[str, DeferredAnswer] = {}
    for n, raw in enumerate(parts):
        at = f"{where}.parts[{n}]"
        if not isinstance(raw, dict) or raw.get("state") != "approval-responded":
            continue
        call_id = _text_field(raw, "toolCallId", at)
        approval = raw.get("approval")
        if not isinstance(approval, dict):
            raise Refused(f"{at}.approval: expected an object, got {_kind(approval)}")
        approved = approval.get("approved")
        if type(approved) is not bool:  # strict: "true" or 1 never approve
            raise Refused(f"{at}.approval.approved: expected true or false, got {approved!r}")
        reason = approval.get("reason")
        if approved:
            out[call_id] = Approved()
        else:
            out[call_id] = Denied(reason) if isinstance(reason, str) and reason else Denied()
    return out
