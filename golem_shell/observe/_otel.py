"""The OpenTelemetry exporter: a run's spans and metrics, per the GenAI semantic conventions.

Owns turning what a run does into OpenTelemetry signals. Imported only once
``golem_shell.instrument()`` has been called (``opentelemetry-api`` is an optional
dependency); without it no code of this module runs. The span tree of a run::

    invoke_agent {agent}        INTERNAL  one per run (or per resume of a paused run)
    ├── chat {model}            CLIENT    one per model request; retries are its events
    └── execute_tool {tool}     INTERNAL  one per tool call executed

Attributes follow the GenAI conventions (``gen_ai.operation.name``,
``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.response.model``,
``gen_ai.response.finish_reasons``, ``gen_ai.usage.*``, ``gen_ai.conversation.id``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ...) plus golem's own ``golem.run.id``.
Metrics: ``gen_ai.client.token.usage`` (histogram of tokens, by ``gen_ai.token.type``) and
``gen_ai.client.operation.duration`` (seconds), one record per model request.

Message content (instructions, messages, tool arguments and results) is recorded only
on opt-in: ``capture_content=True``, or the environment variable
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``. Errors set the span status
to ERROR with a description free of content (the run's stage, the error's kind), and
``error.type``. Nothing here ever sees an API key: models never hand one out.
The run span also carries golem's own events: ``golem.history.processed``,
``golem.compaction.started`` and ``golem.compaction.finished``, ``golem.retry``.

Over 600 lines because it is one concept, the mapping of a run onto one span tree: the
run, chat and tool spans share the run's attributes, content rules and metric records.
"""

from __future__ import annotations

import base64
import json
import os
import weakref
from collections.abc import Sequence
from contextlib import suppress
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from operator import is_
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.metrics import Histogram, MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from golem_core import (
    CompactionRecord,
    DataPart,
    HistoryChange,
    Message,
    ModelRequest,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    URLPart,
    Usage,
)
from golem_core.loop import DeferredCall, RunState, ToolCrashed, ToolOutcome, ToolReturned
from golem_core.providers import profile_of, recorded_provider
from golem_shell._errors import ModelError, RunError

__all__ = ["CAPTURE_ENV", "Instrumentation", "RunTrace", "capture_from_env"]

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_TRUE = {"1", "true", "yes", "on", "span_only", "span_and_event"}

TOKEN_BUCKETS = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)
"""``gen_ai.client.token.usage`` bucket boundaries: the GenAI semantic conventions' list."""
DURATION_BUCKETS = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
"""The conventions' advised histogram bucket boundaries."""


def capture_from_env() -> bool:
    """Whether ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks for content."""
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in _TRUE


def _golem_version() -> str:
    try:
        return version("golem-agents")
    except PackageNotFoundError:  # pragma: no cover (a source checkout not installed)
        return ""


class Instrumentation:
    """The tracer, meter, instruments and content policy ``instrument()`` configured."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        capture_content: bool,
    ) -> None:
        own = _golem_version()
        self.tracer = trace.get_tracer("golem", own, tracer_provider=tracer_provider)
        meter = metrics.get_meter("golem", own, meter_provider=meter_provider)
        self.token_usage: Histogram = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.duration: Histogram = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.capture_content = capture_content


def model_names(model: Any) -> tuple[str, str]:
    """``(gen_ai.provider.name, gen_ai.request.model)`` of a golem model.

    A provider of the registry is named by its profile (``golem_core.providers``:
    ``"google:gemini-2.5-flash"`` is ``("gcp.gemini", "gemini-2.5-flash")``,
    ``"openai-responses:..."`` is ``"openai"``); a model named without a provider prefix
    (an offline ``FunctionModel``), or with one the registry does not know, is named by
    its own prefix.
    """
    name = str(getattr(model, "name", "") or type(model).__name__)
    prefix, colon, rest = name.partition(":")
    request_model = getattr(model, "model_name", None)
    if not isinstance(request_model, str) or not request_model:
        request_model = rest if colon else name
    if not colon:
        return name, request_model
    known = recorded_provider(prefix)
    if known is None:
        return prefix.lower(), request_model
    return profile_of(known).otel_name, request_model


def _server(model: Any) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of an HTTP model (host only: no credentials)."""
    url = getattr(model, "url", None)
    if not isinstance(url, str):
        return {}
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return {}
    if not host:
        return {}
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return {"server.address": host, "server.port": port}


# -- content (opt-in) ----------------------------------------------------------------


def _part(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "content": part.text}
    if isinstance(part, ThinkingPart):
        return {"type": "reasoning", "content": part.text}
    if isinstance(part, ToolCallPart):
        args = part.arguments_object
        return {
            "type": "tool_call",
            "id": part.id,
            "name": part.name,
            "arguments": args if args is not None else part.arguments,
        }
    if isinstance(part, URLPart):
        return {"type": "uri", "modality": part.kind, "mime_type": part.media_type, "uri": part.url}
    assert isinstance(part, DataPart)
    return {
        "type": "blob",
        "modality": part.kind,
        "mime_type": part.media_type,
        "content": base64.b64encode(part.data).decode("ascii"),
    }


def _text(parts: Sequence[Part]) -> str:
    return "".join(p.text for p in parts if isinstance(p, TextPart))


def _message(message: Message) -> dict[str, Any]:
    if message.role is Role.TOOL:
        return {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": message.tool_call_id,
                    "response": _text(message.parts),
                }
            ],
        }
    out: dict[str, Any] = {"role": message.role.value, "parts": [_part(p) for p in message.parts]}
    if message.role is Role.ASSISTANT and message.finish_reason is not None:
        out["finish_reason"] = message.finish_reason
    return out


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


_MESSAGE_TEXTS: dict[int, tuple[weakref.ref[Message], str]] = {}
"""The span JSON of each live message, by object: a request's span holds the whole
history, and the history of a conversation is the same message objects request after
request and run after run, so each message is written once, not once per request
(O(n) per request, O(n^2) per conversation). An entry leaves with its message."""


def _message_text(message: Message) -> str:
    key = id(message)
    hit = _MESSAGE_TEXTS.get(key)
    if hit is not None and hit[0]() is message:
        return hit[1]
    text = _json(_message(message))
    _MESSAGE_TEXTS[key] = (weakref.ref(message, partial(_forget, key)), text)
    return text


def _forget(key: int, _: object) -> None:
    _MESSAGE_TEXTS.pop(key, None)


_RECENT_HISTORIES: dict[int, tuple[tuple[Message, ...], list[str], str]] = {}
"""The last histories written (by the id of their first message, which the entry keeps
alive) with each message's text, at most ``_RECENT_MAX``: the next request of a run, or
the next run of the conversation, shares a prefix with one of them."""
_RECENT_MAX = 8


def _bracketed(texts: list[str]) -> str:
    """``"[" + ", ".join(texts) + "]"`` in one join: a long history's text is not copied
    twice more (a copy of a large string costs more than the join itself)."""
    ends = [*texts]
    ends[0] = "[" + ends[0]
    ends[-1] += "]"
    return ", ".join(ends)


def _messages_json(messages: Sequence[Message]) -> str:
    """``_json([_message(m) for m in messages])``, without writing again what a recent
    request of the conversation wrote: the prefix shared with it (the same objects, in
    order) is found and joined in C, and only the messages after it are looked up (each
    message is written once, ``_message_text``). A request's cost does not grow with
    the history beyond copying its text."""
    history = tuple(messages)
    if not history:
        return "[]"
    key = id(history[0])
    recent = _RECENT_HISTORIES.pop(key, None)
    if recent is None:
        texts = [_message_text(m) for m in history]
        text = _bracketed(texts)
    else:
        sent, sent_texts, sent_text = recent
        same = list(map(is_, sent, history))  # the first message is the same: key
        shared = len(same) if all(same) else same.index(False)
        if shared == len(sent) == len(history):
            texts, text = sent_texts, sent_text
        else:
            texts = sent_texts[:shared] + [_message_text(m) for m in history[shared:]]
            text = _bracketed(texts)
    _RECENT_HISTORIES[key] = (history, texts, text)
    if len(_RECENT_HISTORIES) > _RECENT_MAX:
        with suppress(KeyError, RuntimeError, StopIteration):  # another thread got there
            del _RECENT_HISTORIES[next(iter(_RECENT_HISTORIES))]
    return text


def _usage(usage: Usage) -> dict[str, int]:
    out = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }
    if usage.cache_read_tokens is not None:
        out["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens is not None:
        out["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens is not None:
        out["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    return out


def _error_type(error: BaseException) -> str:
    if isinstance(error, ModelError):
        return error.kind.value
    return type(error).__name__


def _error_description(error: BaseException) -> str:
    """A description without content: the kind and status of a model error, else the type."""
    if isinstance(error, ModelError):
        status = f" (HTTP {error.status})" if error.status is not None else ""
        return f"{error.kind.value} error{status}"
    if isinstance(error, RunError):
        return f"run failed at stage {error.stage.value}"
    return type(error).__name__


# -- one run ---------------------------------------------------------------------------


class RunTrace:
    """The spans of one run, driven by ``golem_shell.observe._observe.RunObserver``.

    The run span is current (in the run's task) while the run is driven; a chat span
    while its request is in flight; a tool's span inside the tool's own task, so spans
    the caller's code opens nest where they belong.
    """

    def __init__(
        self,
        setup: Instrumentation,
        agent: Any,
        state: RunState,
        *,
        resumed: bool,
    ) -> None:
        self._setup = setup
        self._agent = agent
        config = state.config
        self._ids: dict[str, Any] = {
            "gen_ai.conversation.id": config.conversation_id,
            "golem.run.id": config.run_id,
        }
        self._provider, self._model = model_names(agent.model)
        self._server = _server(agent.model)
        name = getattr(agent, "name", None)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": self._provider,
            "gen_ai.request.model": self._model,
            "gen_ai.output.type": "text" if config.output_tool is None else "json",
            **self._ids,
        }
        if isinstance(name, str) and name:
            attributes["gen_ai.agent.name"] = name
        if resumed:
            attributes["golem.run.resumed"] = True
        span_name = f"invoke_agent {name}" if isinstance(name, str) and name else "invoke_agent"
        self.span = setup.tracer.start_span(
            span_name, kind=SpanKind.INTERNAL, attributes=attributes
        )
        self._tokens: list[object] = []
        self._chat: Span | None = None
        self._chat_token: object | None = None

    # -- the run ----------------------------------------------------------------------

    def attach(self) -> None:
        """Make the run span current in the calling task."""
        self._tokens.append(otel_context.attach(trace.set_span_in_context(self.span)))

    def _end_run(self, state: RunState, outcome: str) -> None:
        span = self.span
        if span.is_recording():
            span.set_attributes(_usage(state.usage))
            span.set_attribute("golem.run.requests", state.requests)
            span.set_attribute("golem.run.tool_executions", state.tool_executions)
            span.set_attribute("golem.run.outcome", outcome)

    def finished(self, state: RunState) -> None:
        self._end_run(state, "finished")
        self.span.set_status(Status(StatusCode.OK))

    def paused(self, state: RunState, deferred: Sequence[DeferredCall]) -> None:
        self._end_run(state, "paused")
        self.span.set_attribute("golem.run.deferred_call_ids", [str(d.call.id) for d in deferred])
        self.span.set_status(Status(StatusCode.OK))

    def failed(self, state: RunState, error: BaseException) -> None:
        self._end_run(state, "failed")
        span = self.span
        if isinstance(error, RunError):
            span.set_attribute("golem.run.stage", error.stage.value)
        span.set_attribute("error.type", type(error).__name__)
        span.set_status(Status(StatusCode.ERROR, _error_description(error)))

    def close(self) -> None:
        """End whatever is still open (a request cut off by cancellation), then the run."""
        if self._chat is not None:
            self._chat.set_attribute("error.type", "CancelledError")
            self._chat.set_status(Status(StatusCode.ERROR, "CancelledError"))
            self._end_chat()
        for token in reversed(self._tokens):
            otel_context.detach(token)  # type: ignore[arg-type]
        self._tokens.clear()
        self.span.end()

    # -- requests ---------------------------------------------------------------------

    def request_started(self, request: ModelRequest, stream: bool) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self._provider,
            "gen_ai.request.model": self._model,
            **self._server,
            **self._ids,
        }
        if stream:
            attributes["gen_ai.request.stream"] = True
        settings = request.settings
        if settings.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = settings.max_tokens
        if settings.temperature is not None:
            attributes["gen_ai.request.temperature"] = settings.temperature
        if settings.top_p is not None:
            attributes["gen_ai.request.top_p"] = settings.top_p
        if settings.stop:
            attributes["gen_ai.request.stop_sequences"] = list(settings.stop)
        span = self._setup.tracer.start_span(
            f"chat {self._model}",
            context=trace.set_span_in_context(self.span),
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        if self._setup.capture_content and span.is_recording():
            if request.instructions:
                span.set_attribute(
                    "gen_ai.system_instructions",
                    _json([{"type": "text", "content": request.instructions}]),
                )
            span.set_attribute("gen_ai.input.messages", _messages_json(request.messages))
        self._chat = span
        self._chat_token = otel_context.attach(trace.set_span_in_context(span))

    def _end_chat(self) -> None:
        if self._chat_token is not None:
            otel_context.detach(self._chat_token)  # type: ignore[arg-type]
            self._chat_token = None
        if self._chat is not None:
            self._chat.end()
            self._chat = None

    def _metric_attributes(self, response_model: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self._provider,
            "gen_ai.request.model": self._model,
            **self._server,
        }
        if response_model:
            out["gen_ai.response.model"] = response_model
        return out

    def retry(self, attempt: int, delay: float, error: BaseException) -> None:
        span = self._chat
        if span is None:
            return
        attributes: dict[str, Any] = {
            "golem.retry.attempt": attempt,
            "golem.retry.delay": delay,
            "error.type": _error_type(error),
        }
        status = getattr(error, "status", None)
        if isinstance(status, int):
            attributes["http.response.status_code"] = status
        span.add_event("golem.retry", attributes)

    def history_processed(self, change: HistoryChange) -> None:
        """A ``golem.history.processed`` event on the run span: what the history processor
        removed, summarized or rewrote, and where the cached prefix ends (ADR 0080)."""
        self.span.add_event(
            "golem.history.processed",
            {
                "golem.processor": change.processor,
                "golem.history.removed": [f"{a}..{b - 1}" for a, b in change.removed],
                "golem.history.summarized": [f"{a}..{b - 1}" for a, b in change.summarized],
                "golem.history.rewritten": len(change.rewritten),
                "golem.history.first_change": change.first_change,
                "golem.history.messages_before": change.messages_before,
                "golem.history.messages_after": change.messages_after,
                "golem.history.tokens_before": change.tokens_before,
                "golem.history.tokens_after": change.tokens_after,
                "golem.history.pairs_kept": change.pairs_kept,
                "golem.history.pending_kept": len(change.pending_kept),
            },
        )

    def steered(self, request: int, messages: int) -> None:
        """A ``golem.steered`` event on the run span: user messages joined the run."""
        self.span.add_event(
            "golem.steered", {"golem.request": request, "golem.steered.messages": messages}
        )

    def compaction_started(self, processor: str, trigger: str, request: int, messages: int) -> None:
        """A ``golem.compaction.started`` event on the run span (ADR 0140)."""
        self.span.add_event(
            "golem.compaction.started",
            {
                "golem.processor": processor,
                "golem.compaction.trigger": trigger,
                "golem.compaction.request": request,
                "golem.compaction.messages": messages,
            },
        )

    def compaction_finished(
        self,
        processor: str,
        trigger: str,
        outcome: str,
        record: CompactionRecord | None,
        request: int,
    ) -> None:
        """A ``golem.compaction.finished`` event on the run span: the outcome, and the
        record's counts (references and counts only, never content)."""
        attributes: dict[str, Any] = {
            "golem.processor": processor,
            "golem.compaction.trigger": trigger,
            "golem.compaction.request": request,
            "golem.compaction.outcome": outcome,
        }
        if record is not None:
            attributes |= {
                "golem.compaction.kind": record.kind,
                "golem.compaction.replaced": len(record.replaced),
                "golem.compaction.tokens_before": record.tokens_before,
                "golem.compaction.tokens_after": record.tokens_after,
            }
        self.span.add_event("golem.compaction.finished", attributes)

    def request_finished(self, message: Message, duration: float) -> None:
        span = self._chat
        if span is not None and span.is_recording():
            if message.model:
                span.set_attribute("gen_ai.response.model", message.model)
            response_id = getattr(message, "response_id", None)
            if isinstance(response_id, str) and response_id:
                span.set_attribute("gen_ai.response.id", response_id)
            if message.finish_reason:
                span.set_attribute("gen_ai.response.finish_reasons", [message.finish_reason])
            if message.usage is not None:
                span.set_attributes(_usage(message.usage))
            if self._setup.capture_content:
                span.set_attribute("gen_ai.output.messages", _json([_message(message)]))
        self._end_chat()
        attributes = self._metric_attributes(message.model)
        self._setup.duration.record(duration, attributes)
        if message.usage is not None:
            tokens = self._setup.token_usage
            tokens.record(message.usage.input_tokens, {**attributes, "gen_ai.token.type": "input"})
            tokens.record(
                message.usage.output_tokens, {**attributes, "gen_ai.token.type": "output"}
            )

    def request_failed(self, error: BaseException | None, duration: float) -> None:
        kind = _error_type(error) if error is not None else "_OTHER"
        span = self._chat
        if span is not None:
            span.set_attribute("error.type", kind)
            status = getattr(error, "status", None)
            if isinstance(status, int):
                span.set_attribute("http.response.status_code", status)
            description = _error_description(error) if error is not None else "request failed"
            span.set_status(Status(StatusCode.ERROR, description))
        self._end_chat()
        self._setup.duration.record(duration, {**self._metric_attributes(None), "error.type": kind})

    # -- tools ------------------------------------------------------------------------

    def tool_started(self, call: ToolCallPart) -> Span:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.type": "function",
            **self._ids,
        }
        if call.id is not None:
            attributes["gen_ai.tool.call.id"] = call.id
        tool = getattr(self._agent, "tools", {}).get(call.name)
        description = getattr(getattr(tool, "definition", None), "description", None)
        if isinstance(description, str) and description:
            attributes["gen_ai.tool.description"] = description
        span = self._setup.tracer.start_span(
            f"execute_tool {call.name}",
            context=trace.set_span_in_context(self.span),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        if self._setup.capture_content and span.is_recording():
            span.set_attribute("gen_ai.tool.call.arguments", call.arguments)
        return span

    def tool_finished(self, span: Span, outcome: ToolOutcome, kind: str) -> None:
        if span.is_recording():
            span.set_attribute("golem.tool.outcome", kind)
            if kind == "crashed":
                self._tool_crashed(span, outcome)
            elif isinstance(outcome, ToolReturned) and self._setup.capture_content:
                span.set_attribute("gen_ai.tool.call.result", _text(outcome.parts))
        span.end()

    def _tool_crashed(self, span: Span, outcome: ToolOutcome) -> None:
        """A crashed tool's span, as the conventions record an exception: ``error.type``
        is the exception's class (``ToolCrashed`` where the driver never saw one) and an
        ``exception`` event carries its type, and its message only when content is
        captured (a tool's message may quote the user's data)."""
        crashed = outcome if isinstance(outcome, ToolCrashed) else None
        kind = (crashed.error_type if crashed is not None else None) or "ToolCrashed"
        span.set_attribute("error.type", kind)
        event: dict[str, str] = {"exception.type": kind}
        description = kind
        if self._setup.capture_content and crashed is not None:
            event["exception.message"] = description = crashed.reason
        span.add_event("exception", event)
        span.set_status(Status(StatusCode.ERROR, description))

    def tool_interrupted(self, span: Span) -> None:
        span.set_attribute("error.type", "CancelledError")
        span.set_status(Status(StatusCode.ERROR, "CancelledError"))
        span.end()
