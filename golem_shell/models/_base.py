"""The model effect: one request, or one stream, to a model; and the switch that keeps
tests from making real ones (``ALLOW_MODEL_REQUESTS``, read by ``check_allowed``)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from golem_core import Message, ModelRequest, StreamEvent
from golem_shell._errors import ModelRequestsNotAllowed

__all__ = ["Model", "check_allowed"]


def check_allowed(name: str) -> None:
    """Refuse a real model request while ``golem_shell.models.ALLOW_MODEL_REQUESTS`` is
    ``False`` (the offline models, ``TestModel``, ``FunctionModel`` and
    ``ScriptedModel``, never ask).

    Raises:
        ModelRequestsNotAllowed: naming the model that would have been called.
    """
    models = sys.modules.get("golem_shell.models")
    if getattr(models, "ALLOW_MODEL_REQUESTS", True) is False:
        raise ModelRequestsNotAllowed(
            f"a request to the real model {name} was about to be sent, and"
            " golem_shell.models.ALLOW_MODEL_REQUESTS is False: in tests, replace the"
            " model with agent.override(model=TestModel()) (or FunctionModel)"
        )


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
