"""What the HTTP adapters share: encoding a request, the two entry points of the
``Model`` protocol, owning or borrowing the HTTP client, and a key-free repr.

A provider adapter names its ``provider`` (a ``golem_core.providers.Provider``: its
profile in the registry gives the codec's decoders, the default endpoint and the key's
environment variables) and says how to encode its body; ``ProviderHTTP`` (``_http.py``)
does every effect. Every request's history is ported to the model once
(``golem_core.providers.port_history``, ADR 0085): artifacts of another provider,
endpoint or model are left off or sent as text, call ids fit the provider's rules.
``port_report(request)`` says what changed (the run's ``HistoryPorted`` event); the
request then sent reuses that port (``ported``) instead of porting again. Every answer
records its origin (``Message.provider``, ``endpoint``, ``model``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import weakref
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any, ClassVar, Self

import attrs
import httpx
from returns.result import Failure, Result, Success

from golem_core import (
    Message,
    ModelDelta,
    ModelErrorKind,
    ModelRequest,
    ModelSettings,
    StreamDone,
    StreamEvent,
)
from golem_core.providers import (
    Origin,
    PortReport,
    Provider,
    ProviderProfile,
    Target,
    UnknownProviderError,
    port_history,
    profile_of,
    record_asked_model,
)
from golem_core.sse import ServerSentEvent
from golem_core.wire import WireError
from golem_shell._errors import UsageError
from golem_shell.models._base import check_allowed
from golem_shell.models._http import (
    BodyDecoder,
    LateKey,
    ProviderHTTP,
    StreamDecoder,
    encode_json,
)
from golem_shell.models._native_records import native_compaction_recorded
from golem_shell.models._settings import merge_settings

_KEPT_PORTS = 64
"""Ports kept between ``port_report`` and sending, per model (concurrent runs)."""

__all__ = [
    "HTTPModel",
    "check_base_url",
    "endpoint_of",
    "env_value",
    "key_and_base",
    "key_from_env",
    "key_headers",
]


def env_value(name: str) -> str | None:
    """An environment variable, ``None`` when unset or empty."""
    value = os.environ.get(name, "").strip()
    return value or None


def key_from_env(profile: ProviderProfile) -> str | None:
    """The first of the provider's key variables that is set (``GOOGLE_API_KEY``, then
    ``GEMINI_API_KEY``), ``None`` when none is."""
    return next((v for v in map(env_value, profile.key_env) if v is not None), None)


def key_and_base(
    profile: ProviderProfile, api_key: str | None, base_url: str | None, *, vendor: str
) -> tuple[str | None, str, LateKey | None]:
    """The API key and base URL of an adapter: the arguments, else the provider's
    environment variables, else (the base URL) its default endpoint; and, when no key
    is set yet for the default endpoint, the ``LateKey`` that reads it at the first
    request (a custom base URL may need none).

    Raises:
        UsageError: a base URL that is not http(s).
    """
    key = api_key or key_from_env(profile)
    custom_base = base_url or env_value(profile.base_url_env)
    late = None
    if key is None and custom_base is None:
        names = " or ".join(profile.key_env)
        late = LateKey(
            profile.key_env,
            profile.key_header,
            f"no {vendor} API key: pass api_key= or set {names} before the first request"
            f" (a custom base_url / {profile.base_url_env} needs none)",
        )
    base = check_base_url(custom_base or profile.default_base_url, f"the {vendor} base URL")
    return key, base, late


def key_headers(profile: ProviderProfile, key: str | None) -> dict[str, str]:
    """The header that carries ``key`` (none without one)."""
    name, prefix = profile.key_header
    return {name: prefix + key} if key else {}


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


class _AskedStream:
    """A provider's stream decoder whose final message records the model asked for."""

    def __init__(self, inner: StreamDecoder, asked: Callable[[Message], Message]) -> None:
        self._inner = inner
        self._asked = asked

    @property
    def done(self) -> bool:
        return self._inner.done

    def feed(self, event: ServerSentEvent) -> Result[tuple[ModelDelta, ...], WireError]:
        return self._inner.feed(event)

    def finish(self) -> Result[Message, WireError]:
        return self._inner.finish().map(self._asked)


def _record_asked(model: str, message: Message) -> Message:
    """``message`` recording that its adapter asked for ``model`` (issue 33, item 2)."""
    return record_asked_model(message, model)


class HTTPModel:
    """A model answered over HTTP by one provider endpoint.

    A subclass sets ``provider``; constructing one whose provider has no profile in the
    registry raises ``UsageError``.
    """

    provider: ClassVar[Provider]

    def __init__(
        self,
        model: str,
        *,
        http: ProviderHTTP,
        settings: ModelSettings | None,
        decode_response: Callable[..., Result[Message, WireError]] | None = None,
        new_stream_decoder: Callable[..., StreamDecoder] | None = None,
        quirks: frozenset[str] = frozenset(),
        replays_reasoning: bool = True,
    ) -> None:
        if not model or not model.strip():
            raise UsageError(f"{type(self).__name__} needs a model name")
        profile = self.profile_of_class()
        self._model = model
        self._http = http
        self._settings = settings
        try:
            self._target = Target(
                profile.provider,
                model,
                endpoint_of(http.url),
                quirks,
                replays_reasoning=replays_reasoning,
            )
        except UnknownProviderError as e:
            raise UsageError(str(e)) from None
        self._origin = Origin(profile.provider.value, model, self._target.endpoint)
        decode = functools.partial(
            decode_response or profile.codec.decode_response, origin=self._origin
        )
        new_decoder = functools.partial(
            new_stream_decoder or profile.codec.StreamDecoder, origin=self._origin
        )

        # the decoders close over the model's name, never over ``self``: a model in a
        # reference cycle would wait for the cyclic collector, and so would the
        # ``weakref.finalize`` closing its ``ProviderHTTP``'s clients, run wherever the
        # collector happens to run (once deep in ``json.loads`` at the recursion limit)
        asked = functools.partial(_record_asked, model)

        def decode_asked(body: object) -> Result[Message, WireError]:
            return decode(body).map(asked)

        self._decode_response: BodyDecoder = decode_asked
        self._new_stream_decoder: Callable[[], StreamDecoder] = lambda: _AskedStream(
            new_decoder(), asked
        )
        # ports made for ``port_report``, kept until the request they were made for is
        # encoded (by id, checked against a weak reference: one port per request)
        self._ports: dict[int, tuple[weakref.ref[ModelRequest], ModelRequest, PortReport]] = {}

    def _asked(self, message: Message) -> Message:
        """An answer recording the model this adapter asked for (issue 33, item 2)."""
        return _record_asked(self._model, message)

    @classmethod
    def profile_of_class(cls) -> ProviderProfile:
        """The registry profile of this adapter's ``provider``.

        Raises:
            UsageError: the class names no provider, or one with no profile.
        """
        provider = getattr(cls, "provider", None)
        if provider is None:
            raise UsageError(
                f"{cls.__name__} names no provider: set provider = Provider.<...>"
                " (golem_core.providers) and register its profile"
            )
        try:
            return profile_of(provider)
        except UnknownProviderError as e:
            raise UsageError(f"{cls.__name__}: {e}") from None

    @property
    def name(self) -> str:
        """``"<provider>:<model>"``, e.g. ``"openai:gpt-4o-mini"``."""
        return f"{self._target.provider.value}:{self._model}"

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
        the same as the next ``request`` call sends). A run calls it before a request
        and emits ``HistoryPorted`` when ``report.changed``; sending that same request
        object then reuses this port rather than porting again."""
        ported, report = self._port(request)
        if len(self._ports) >= _KEPT_PORTS:
            self._ports.pop(next(iter(self._ports)))
        key = id(request)
        ports = self._ports
        ref = weakref.ref(request, lambda _: ports.pop(key, None))
        ports[key] = (ref, ported, report)
        return report

    def _port(self, request: ModelRequest) -> tuple[ModelRequest, PortReport]:
        messages, report = port_history(request.messages, self._target)
        return attrs.evolve(request, messages=messages), report

    def ported(self, request: ModelRequest) -> tuple[ModelRequest, PortReport]:
        """``request`` as it is sent (ported to this model) and the report: the port
        ``port_report`` made for this very request, else a new one. Pure."""
        kept = self._ports.pop(id(request), None)
        if kept is not None and kept[0]() is request:
            return kept[1], kept[2]
        return self._port(request)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model!r}, url={self._http.url!r})"

    def _encode(self, request: ModelRequest, *, stream: bool) -> Result[dict[str, Any], WireError]:
        raise NotImplementedError

    def _headers_for(self, body: dict[str, Any]) -> dict[str, str]:
        """Headers a request needs beyond the adapter's own, from its encoded ``body``
        (Anthropic: the ``anthropic-beta`` values its edits and blocks need)."""
        return {}

    def _body(self, request: ModelRequest, *, stream: bool) -> bytes:
        return self._encoded(request, stream=stream)[0]

    def _encoded(self, request: ModelRequest, *, stream: bool) -> tuple[bytes, dict[str, str]]:
        """The body ``request`` is sent as, and the headers it needs (``_headers_for``)."""
        ported, _ = self.ported(request)
        request = attrs.evolve(ported, settings=merge_settings(self._settings, ported.settings))
        match self._encode(request, stream=stream):
            case Success(value):
                body: dict[str, Any] = value
                return encode_json(body), self._headers_for(body)
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
        check_allowed(self.name)
        body, headers = self._encoded(request, stream=False)
        answer = await self._http.post(body, self._decode_response, headers=headers)
        return native_compaction_recorded(request, answer, self._target)

    async def request_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send one request and yield its deltas as they arrive, then one ``StreamDone``.

        Raises:
            UsageError: the request holds content the provider cannot take.
            ModelError: the request or the stream failed (retried only before the first
                delta).
        """
        check_allowed(self.name)
        body, headers = self._encoded(request, stream=True)
        stream = self._http.stream(
            body, self._new_stream_decoder, self._decode_response, headers=headers
        )
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                if isinstance(event, StreamDone):
                    event = StreamDone(
                        native_compaction_recorded(request, event.message, self._target)
                    )
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
