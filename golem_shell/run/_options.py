"""The keywords every run method takes, declared once.

Owns ``RunOptions`` (and ``StreamOptions``, the same without ``on_event``, for
``iter_stream`` which supplies its own): the run methods of ``Agent`` take them as
``**options: Unpack[RunOptions[DepsT]]``, and their ``_sync`` twins forward them
unchanged, so a new per-run keyword is one line here plus where it is used.
``check_options`` refuses a keyword that is not one of them at run time, as a
signature would (a type checker refuses it before).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic

from typing_extensions import TypedDict, TypeVar

from golem_core import ModelSettings
from golem_shell._errors import PYDANTIC_AI_KEYWORDS
from golem_shell.models import Model, infer_model
from golem_shell.observe._observe import EventHandler
from golem_shell.run._limits import Overrides, UsageLimits
from golem_shell.run._steering import Steering

__all__ = ["STREAM_KEYWORDS", "RunOptions", "StreamOptions", "check_options", "overrides_of"]

DepsT = TypeVar("DepsT", default=None)


class StreamOptions(TypedDict, Generic[DepsT], total=False):
    """The keywords of ``Agent.iter_stream``: those of every run but ``on_event``."""

    deps: DepsT | None
    """What ``RunContext.deps`` holds for the run's tools and instructions."""
    run_id: str | None
    """The run's id (``None``: a new UUIDv7)."""
    conversation_id: str | None
    """The conversation's id (``None``: the history's, else a new one)."""
    model: Model | str | None
    """The model of this run only (``agent.override`` wins over it)."""
    settings: ModelSettings | None
    """Settings of this run, merged over the agent's (fields left at their default keep
    the agent's)."""
    usage_limits: UsageLimits | None
    """What this run may use (requests, tokens); fails at stage ``limit`` past it."""
    steering: Steering | None
    """Messages sent to the run while it works (``Steering.send``): they join it at its
    next safe point."""


class RunOptions(StreamOptions[DepsT], total=False):
    """The keywords every run method takes (``run``, ``run_with_history``, the stream and
    deferred-results methods, and their ``_sync`` twins)."""

    on_event: EventHandler | None
    """Receives the run's lifecycle events (and, in a stream, every ``DeltaEvent``)."""


_KNOWN = frozenset(RunOptions.__optional_keys__)


def check_options(
    method: str, options: Mapping[str, Any], *, allowed: frozenset[str] = _KNOWN
) -> None:
    """Refuse a keyword ``method`` does not take, as Python refuses it for a signature.

    Raises:
        TypeError: naming the unexpected keyword and the ones that exist.
    """
    unknown = sorted(set(options) - allowed)
    if unknown:
        hint = PYDANTIC_AI_KEYWORDS.get(unknown[0], f"run keywords: {', '.join(sorted(allowed))}")
        raise TypeError(f"{method}() got an unexpected keyword argument {unknown[0]!r} ({hint})")


STREAM_KEYWORDS = frozenset(StreamOptions.__optional_keys__)
"""The keywords ``iter_stream`` takes."""


def overrides_of(options: Mapping[str, Any]) -> Overrides:
    """What the keywords ``model``, ``settings`` and ``usage_limits`` replace (a model
    string is resolved here: a bad one is a ``UsageError`` before anything runs)."""
    model = options.get("model")
    return Overrides(
        infer_model(model) if model is not None else None,
        options.get("settings"),
        options.get("usage_limits"),
    )
