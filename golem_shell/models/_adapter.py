"""What the HTTP adapters share: encoding a request, the two entry points of the
``Model`` protocol, owning or borrowing the HTTP client, and a key-free repr.

A provider adapter only says how to encode its body and which pure decoders read the
answer; ``ProviderHTTP`` (``_http.py``) does every effect. Every request's history is
first ported to the model (``golem_core.port_history``, ADR 0085): artifacts of another
provider, endpoint or model are left off or sent as text, call ids fit the provider's
rules. ``port_report(request)`` says what changed (the run's ``HistoryPorted`` event);
every answer records its origin (``Message.provider``, ``endpoint``, ``model``).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any, Self

import attrs
import httpx
from returns.result import Failure, Result, Success

from golem_core import (
    Message,
    ModelErrorKind,
    ModelRequest,
    ModelSettings,
    Origin,
    PortReport,
    StreamEvent,
    Target,
    port_history,
)
from golem_core.wire import WireError
from golem_shell._errors import UsageError
from golem_shell.models._http import (
    BodyDecoder,
    ProviderHTTP,
    StreamDecoder,
    encode_json,
    merge_settings,
)

__all__ = ["HTTPModel", "check_base_url", "endpoint_of", "env_value"]


def env_value(name: str) -> str | None:
    """An environment variable, ``None`` when unset or empty."""
    value = os.environ.get(name, "").strip()
    return value or None


def check_base_url(base_url: str, setting: str) -> str:
    """``base_url`` without a trailing slash; ``UsageError`` unless it is http(s)."""
    url = base_url.strip().rstrip("/")
    if not url.lower().startswith(("http://", "https://")):
        raise UsageError(f"{setting} must start with http:// or https://, got {base_url!r}")
    return url


def endpoint_of(url: str) -> str:
    """The issuing endpoint of a request URL: its host, and its port when one is given
    (``api.openai.com``, ``127.0.0.1:8080``)."""
    parsed = httpx.URL(url)
    return f"{parsed.host}:{parsed.port}" if parsed.port else parsed.host


class HTTPModel:
    """A model answered over HTTP by one provider endpoint."""

    _prefix: str = ""

    def __init__(
        self,
        model: str,
        *,
        http: ProviderHTTP,
        settings: ModelSettings | None,
        decode_response: Callable[..., Result[Message, WireError]],
        new_stream_decoder: Callable[..., StreamDecoder],
        quirks: frozenset[str] = frozenset(),
    ) -> None:
        if not model or not model.strip():
            raise UsageError(f"{type(self).__name__} needs a model name")
        self._model = model
        self._http = http
        self._settings = settings
        self._target = Target(self._prefix, model, endpoint_of(http.url), quirks)
        self._origin = Origin(self._prefix, model, self._target.endpoint)
        self._decode_response: BodyDecoder = functools.partial(decode_response, origin=self._origin)
        self._new_stream_decoder: Callable[[], StreamDecoder] = functools.partial(
            new_stream_decoder, origin=self._origin
        )

    @property
    def name(self) -> str:
        """``"<provider>:<model>"``, e.g. ``"openai:gpt-4o-mini"``."""
        return f"{self._prefix}:{self._model}"

    @property
    def model_name(self) -> str:
        """The model name sent to the provider."""
        return self._model

    @property
    def url(self) -> str:
        """The endpoint requests are sent to."""
        return self._http.url

    @property
    def target(self) -> Target:
        """Where requests go, as ``port_history`` needs it: provider, model, endpoint."""
        return self._target

    @property
    def origin(self) -> Origin:
        """What every answer of this model records as its origin (ADR 0085)."""
        return self._origin

    def port_report(self, request: ModelRequest) -> PortReport:
        """What this model's requests change in ``request``'s history (``port_history``;
        the same as the next ``request`` call sends). Pure: a run calls it before a
        request and emits ``HistoryPorted`` when ``report.changed``."""
        return port_history(request.messages, self._target)[1]

    def _ported(self, request: ModelRequest) -> ModelRequest:
        messages, _ = port_history(request.messages, self._target)
        return attrs.evolve(request, messages=messages)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model!r}, url={self._http.url!r})"

    def _encode(self, request: ModelRequest, *, stream: bool) -> Result[dict[str, Any], WireError]:
        raise NotImplementedError

    def _body(self, request: ModelRequest, *, stream: bool) -> bytes:
        request = self._ported(merge_settings(self._settings, request))
        match self._encode(request, stream=stream):
            case Success(value):
                body: dict[str, Any] = value
                return encode_json(body)
            case Failure(error):
                if error.kind is ModelErrorKind.UNSUPPORTED_CONTENT:
                    raise UsageError(error.message)
                raise UsageError(f"{self.name}: {error.message}")
        raise AssertionError("unreachable")  # pragma: no cover

    async def request(self, request: ModelRequest) -> Message:
        """Send one request and return the assistant's answer.

        Raises:
            UsageError: the request holds content the provider cannot take.
            ModelError: the request failed (after retries).
        """
        body = self._body(request, stream=False)
        return await self._http.post(body, self._decode_response)

    async def request_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send one request and yield its deltas as they arrive, then one ``StreamDone``.

        Raises:
            UsageError: the request holds content the provider cannot take.
            ModelError: the request or the stream failed (retried only before the first
                delta).
        """
        body = self._body(request, stream=True)
        stream = self._http.stream(body, self._new_stream_decoder, self._decode_response)
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                yield event

    async def aclose(self) -> None:
        """Close the HTTP client this model created (a client you passed stays open)."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
