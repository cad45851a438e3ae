"""Argument checks at the public entry points: a wrong type is a ``UsageError`` that says
what was given and what is expected, before anything runs, never an ``AttributeError``
or an ``AssertionError`` from deep inside a run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from golem_core import (
    DataPart,
    Message,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
)
from golem_shell._errors import UsageError

__all__ = ["check_history", "check_prompt_parts", "check_settings"]

_PARTS = (TextPart, ThinkingPart, URLPart, DataPart, ToolCallPart, UnknownPart)


def _what(value: object) -> str:
    name = type(value).__name__
    text = repr(value)
    return f"{name} {text[:60]}{'...' if len(text) > 60 else ''}"


def check_history(history: object, name: str = "history") -> Sequence[Message]:
    """``history`` if it is a sequence of ``Message``; else a ``UsageError`` naming the
    first thing that is not, and how to get messages from what was given."""
    if type(history) is tuple or type(history) is list:
        items: Sequence[Any] = history
    elif hasattr(history, "messages") and hasattr(history, "new_messages"):
        raise UsageError(
            f"{name} must be a sequence of golem Message, got a {type(history).__name__};"
            " pass result.messages to continue a conversation"
        )
    elif isinstance(history, str | bytes | bytearray | Mapping) or not isinstance(
        history, Sequence
    ):
        hint = (
            "; use decode_history(...) for JSON"
            if isinstance(history, str | bytes | bytearray)
            else ""
        )
        raise UsageError(f"{name} must be a sequence of golem Message, got {_what(history)}{hint}")
    else:
        items = history
    for i, m in enumerate(items):
        if type(m) is not Message:
            hint = (
                "; provider-style dicts are not golem messages: build Message values,"
                " or decode golem's JSON with decode_history"
                if isinstance(m, Mapping)
                else ""
            )
            raise UsageError(f"{name}[{i}] must be a golem Message, got {_what(m)}{hint}")
    return items


def check_prompt_parts(prompt: object) -> tuple[Part, ...] | None:
    """The prompt as parts: ``None``, a string, or a sequence of golem parts."""
    if prompt is None:
        return None
    if isinstance(prompt, str):
        return (TextPart(prompt),)
    if isinstance(prompt, bytes | bytearray | Mapping) or not isinstance(prompt, Sequence):
        raise UsageError(
            "prompt must be a string, a sequence of golem parts (TextPart, URLPart,"
            f" DataPart), or None; got {_what(prompt)}"
        )
    parts = tuple(prompt)
    for i, p in enumerate(parts):
        if type(p) not in _PARTS:
            raise UsageError(
                f"prompt[{i}] must be a golem part (TextPart, URLPart, DataPart), got {_what(p)}"
            )
    return parts


def _int(name: str, value: object, least: int) -> None:
    if type(value) is not int:
        raise UsageError(f"{name} must be an int, got {_what(value)}")
    if value < least:
        raise UsageError(f"{name} must be at least {least}, got {value}")


def check_settings(
    *,
    max_requests: object,
    output_retries: object,
    timeout: object,
    instructions: object,
    dynamic_instructions: object,
    history_processor: object,
    tools: object,
) -> None:
    """The plain settings of an ``Agent``: right types and ranges, or ``UsageError``."""
    _int("max_requests", max_requests, 1)
    _int("output_retries", output_retries, 0)
    if timeout is not None:
        if not isinstance(timeout, int | float) or isinstance(timeout, bool):
            raise UsageError(f"timeout must be a number of seconds or None, got {_what(timeout)}")
        if not timeout > 0:  # also refuses NaN
            raise UsageError(f"timeout must be positive, got {timeout}")
    if instructions is not None and not isinstance(instructions, str):
        raise UsageError(f"instructions must be a string or None, got {_what(instructions)}")
    for name, fn in (
        ("dynamic_instructions", dynamic_instructions),
        ("history_processor", history_processor),
    ):
        if fn is not None and not callable(fn):
            raise UsageError(f"{name} must be a function or None, got {_what(fn)}")
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise UsageError(
            f"tools must be a sequence of functions or Tool values, got {_what(tools)}"
        )
