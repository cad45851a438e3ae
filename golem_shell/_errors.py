"""The exceptions golem raises at its public boundary, by blame.

::

    GolemError                      anything golem raises on purpose
    ├── UsageError (ValueError)     golem was misused: bad configuration, a missing key,
    │                               content a provider cannot take; fix the calling code
    ├── DeferredResultsError        answers for a paused run that do not fit it: a call
    │   (ValueError)                that is not waiting, or one this server never issued
    ├── ModelError                  the provider failed or misbehaved (after retries):
    │                               ``kind`` names why, with status, the provider's own
    │                               message and request id
    └── RunError                    a run failed: ``stage`` says where, ``partial`` holds
                                    the resume-ready evidence (or ``None``), ``cause`` why

Foreign exceptions (httpx, a tool's own errors) are translated at one choke point per
adapter and chained with ``from``. No message, repr or attribute ever holds an API key.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from golem_core import Message, ModelErrorKind, Usage
from golem_core.loop import Stage

__all__ = [
    "PYDANTIC_AI_KEYWORDS",
    "DeferredResultsError",
    "GolemError",
    "ModelError",
    "ModelRequestsNotAllowed",
    "PartialResult",
    "RunError",
    "Stage",
    "UsageError",
    "error_type",
    "keywords_of",
    "refuse_unknown_keywords",
]


class GolemError(Exception):
    """Base of every exception golem raises on purpose."""


class UsageError(GolemError, ValueError):
    """golem was misused: the calling code or its configuration must change."""


class ModelRequestsNotAllowed(UsageError):
    """A real model request while ``golem_shell.models.ALLOW_MODEL_REQUESTS`` is
    ``False`` (a test that forgot its ``agent.override(model=TestModel())``). Raised out
    of the run as it is, never turned into a failed run."""


class DeferredResultsError(GolemError, ValueError):
    """Deferred answers that do not fit the paused run; nothing was executed.

    ``call_ids`` names the offending calls: answered but not waiting, answered with the
    wrong kind of answer, or (when the caller supplied what it issued) never issued by
    this server: a forged call.
    """

    def __init__(self, message: str, call_ids: tuple[str, ...] = ()) -> None:
        self.call_ids = call_ids
        super().__init__(message)


class ModelError(GolemError):
    """A model request failed for a reason the provider (or the network) gave.

    Args:
        kind: why, in words common to every provider.
        message: the provider's own message, or a description of the failure.
        status: the HTTP status, when there was one.
        request_id: the provider's request id, when it sent one.
        retry_after: seconds the provider asked to wait, when it said.
        provider: which adapter raised it (``"openai"``, ``"anthropic"``, ...).
        endpoint: host and path the request went to (set by the HTTP adapters).
        attempts: how many times the request was sent before giving up, the first send
            included (``RetryPolicy.max_attempts`` counts only the retries).
        elapsed: seconds from the first attempt to giving up.
    """

    def __init__(
        self,
        kind: ModelErrorKind,
        message: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
        provider: str | None = None,
        endpoint: str | None = None,
        attempts: int | None = None,
        elapsed: float | None = None,
    ) -> None:
        self.kind = kind
        self.message = message
        self.status = status
        self.request_id = request_id
        self.retry_after = retry_after
        self.provider = provider
        self.endpoint = endpoint
        self.attempts = attempts
        self.elapsed = elapsed
        super().__init__(str(self))

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed if sent again."""
        return self.kind.retryable

    def __str__(self) -> str:
        where = f"{self.provider} " if self.provider else ""
        status = f" (HTTP {self.status})" if self.status is not None else ""
        rid = f" [request {self.request_id}]" if self.request_id else ""
        context = []
        if self.endpoint:
            context.append(f"at {self.endpoint}")
        if self.attempts is not None:
            tries = "1 attempt" if self.attempts == 1 else f"{self.attempts} attempts"
            spent = f" in {self.elapsed:.1f} s" if self.elapsed is not None else ""
            context.append(f"after {tries}{spent}")
        more = f" ({', '.join(context)})" if context else ""
        return f"{where}{self.kind.value} error{status}: {self.message}{rid}{more}"

    def __repr__(self) -> str:
        return f"ModelError({self.kind.value!r}, {self.message!r}, status={self.status!r})"


@frozen
class PartialResult:
    """The evidence a failed run produced, ready to resume with ``run_with_history``.

    ``messages`` is the conversation through the last completed model turn (history
    included); ``usage``, ``requests`` and ``tool_executions`` count what was done.
    """

    messages: tuple[Message, ...]
    usage: Usage
    requests: int
    tool_executions: int
    run_id: str
    conversation_id: str


class RunError(GolemError):
    """A run failed.

    Args:
        stage: where it failed.
        partial: the resume-ready evidence, or ``None`` when nothing was completed.
        cause: the underlying exception, also set as ``__cause__``.
        message: what happened, for a person.
        steering_left: the steering messages a durable run accepted but did not take
            before it failed (``RunResult.steering_left``): send them with the next run.
    """

    def __init__(
        self,
        stage: Stage,
        message: str,
        *,
        partial: PartialResult | None = None,
        cause: BaseException | None = None,
        steering_left: tuple[Message, ...] = (),
    ) -> None:
        self.stage = stage
        self.partial = partial
        self.steering_left = steering_left
        self.cause = cause
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"run failed at stage {self.stage.value}: {self.message}"

    def __repr__(self) -> str:
        return f"RunError({self.stage.value!r}, {self.message!r})"


def error_type(error: BaseException) -> str:
    """The class of ``error`` as OpenTelemetry's ``error.type`` names it: the bare name
    for a builtin (``ValueError``), else qualified by its module (``mypkg.errors.Timeout``)."""
    kind = type(error)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


PYDANTIC_AI_KEYWORDS: Mapping[str, str] = {
    "retries": "golem counts retries per tool and for the output: max_retries= on each"
    " tool (@agent.tool(max_retries=...), @tool(max_retries=...)) and Agent(output_retries=...)",
    "defer_model_check": "golem never checks the model or its key when the agent is built"
    " (the first request does): drop defer_model_check=",
    "system_prompt": "golem's is instructions= (and @agent.instructions)",
    "model_settings": "golem's is settings=ModelSettings(...)",
    "history_processors": "golem's is history_processor= (one; compose(...) chains several)",
    "message_history": "golem's is run_with_history(history, prompt)",
    "instrument": "golem traces with golem_shell.instrument()",
    "takes_ctx": "golem's are @agent.tool (a RunContext first) and @agent.tool_plain (none)",
}
"""pydantic-ai's keywords that golem names otherwise, and how (a ``TypeError`` says so)."""


def refuse_unknown_keywords(
    where: str, unknown: Mapping[str, object], function: Callable[..., Any]
) -> None:
    """Raise the ``TypeError`` Python would raise for ``unknown`` keywords of ``where``
    (whose signature is ``function``'s), saying what golem calls a pydantic-ai keyword,
    else the closest keyword it takes; nothing when ``unknown`` is empty."""
    if not unknown:
        return
    names = sorted(keywords_of(function))
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, names, n=1)
        if name in PYDANTIC_AI_KEYWORDS:
            hints.append(f"{name}=: {PYDANTIC_AI_KEYWORDS[name]}")
        elif close:
            hints.append(f"{name}=: did you mean {close[0]}=?")
        else:
            hints.append(f"{name}=: {where} takes {', '.join(names)}")
    listed = ", ".join(repr(n) for n in unknown)
    plural = "s" if len(unknown) > 1 else ""
    raise TypeError(
        f"{where} got an unexpected keyword argument{plural} {listed} ({'; '.join(hints)})"
    )


def keywords_of(function: Callable[..., Any]) -> list[str]:
    """The keyword parameters of ``function`` (for an unexpected keyword's message)."""
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [
        p.name
        for p in inspect.signature(function).parameters.values()
        if p.kind in kinds and p.name not in ("self", "function")
    ]
