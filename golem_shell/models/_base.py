"""The model effect: one request, or one stream, to a model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from golem_core import Message, ModelRequest, StreamEvent

__all__ = ["Model"]


@runtime_checkable
class Model(Protocol):
    """Anything that answers a ``ModelRequest`` with an assistant ``Message``.

    ``request`` returns the complete assistant message (with ``model``, ``usage`` and
    ``finish_reason`` where known). ``request_stream`` yields deltas as they arrive and
    ends with exactly one ``StreamDone`` holding the same message ``request`` would
    give. Both raise ``ModelError`` for a failed request (after any retries the model
    does itself) and ``UsageError`` for a request the model cannot take.
    """

    @property
    def name(self) -> str:
        """A short name for logs and results, e.g. ``"openai:gpt-4o-mini"``."""
        ...

    async def request(self, request: ModelRequest) -> Message:
        """Send one request and return the assistant's answer."""
        ...

    def request_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send one request and yield its answer as it streams."""
        ...
