"""Model names compared by their spelling, for ``port_history`` (ADR 0085).

Owns ``same_model`` (whether two names name one model: an alias and its dated snapshot)
and ``model_key`` (a name as compared). Pure.
"""

from __future__ import annotations

import re

__all__ = ["model_key", "same_model"]

_SNAPSHOT = re.compile(r"(?:[0-9]{8}|[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{3})")
_MINOR_ZERO = re.compile(r"(?<=[0-9])-0$")


def model_key(name: str) -> str:
    """A model name as compared: lower case, without a ``models/`` (any path) prefix."""
    name = name.strip().lower()
    return name.rsplit("/", 1)[-1]


def _version_key(name: str) -> str:
    """A name without ``-latest`` and without a ``.0`` minor version (``-4-0``: ``-4``)."""
    return _MINOR_ZERO.sub("", model_key(name).removesuffix("-latest"))


def same_model(a: str | None, b: str | None) -> bool:
    """Whether two model names name the same model, by their spelling: equal, or one a
    dated snapshot or numbered version of the other (``gpt-4o`` and
    ``gpt-4o-2024-08-06``, ``claude-3-7-sonnet-latest`` and ``claude-3-7-sonnet-20250219``,
    ``gemini-2.5-flash`` and ``gemini-2.5-flash-001``; a ``models/`` prefix is ignored);
    never a different version (``claude-sonnet-4`` is not ``claude-sonnet-4-5``).
    A ``.0`` minor version names its major one: Anthropic's ``claude-sonnet-4-0`` is
    ``claude-sonnet-4``, answered as ``claude-sonnet-4-20250514``.
    Unknown (``None``) matches anything. Total.

    A guess from names: ``port_history`` matches the model an answer was asked for
    by its exact name (an alias's artifacts go back to that alias), and uses this
    guess for the model that answered; an alias that names no version
    (``gemini-flash-latest``) matches only itself.
    """
    if a is None or b is None:
        return True
    x, y = _version_key(a), _version_key(b)
    if x == y:
        return True
    short, long = (x, y) if len(x) < len(y) else (y, x)
    return long.startswith(short + "-") and _SNAPSHOT.fullmatch(long[len(short) + 1 :]) is not None
