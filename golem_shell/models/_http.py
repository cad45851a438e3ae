"""The one choke point between the provider adapters and the network.

Owns every effect of a model request: the httpx call, the clock, the jitter, the sleep
between retries, reading a body within a size limit, and reading a stream through the
pure SSE decoder (``golem_core.wire._sse``) and a provider's pure stream decoder. Every
foreign failure becomes a ``ModelError`` here, and only here:

- httpx timeouts are ``TIMEOUT``; failing to connect or send is ``CONNECTION``; a
  connection lost once the response began is ``STREAM_INTERRUPTED``;
- HTTP >= 400 is read by the provider's ``decode_error`` (kind, message, request id,
  ``retry-after``); a 2xx of the wrong content type, a redirect, a body that is not
  JSON, a body or a stream line larger than the limit, are ``BAD_RESPONSE``;
- a stream fails when it reports an error, when its connection is lost, or when it ends
  before the provider's end marker (``STREAM_INTERRUPTED``).

Retries follow ``golem_core._retry``: a retryable failure is tried again after the
policy's delay (``retry-after`` honoured), and a stream only while nothing has been
yielded to the caller, since deltas already handed out cannot be taken back. The API
key is scrubbed from every message that leaves this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import random
import time
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, Protocol, TypeAlias

import attrs
import httpx
from returns.result import Failure, Result, Success

from golem_core import (
    Message,
    ModelDelta,
    ModelErrorKind,
    StreamDone,
    StreamEvent,
)
from golem_core.retry import RetryPolicy, next_delay
from golem_core.sse import DEFAULT_MAX_LINE_BYTES, ServerSentEvent, SSEDecoder, SSEError
from golem_core.wire import WireError
from golem_shell._errors import ModelError, UsageError
from golem_shell._hooks import report_retry

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_RETRY",
    "BodyDecoder",
    "DEFAULT_TIMEOUT",
    "ErrorDecoder",
    "LateKey",
    "ProviderHTTP",
    "StreamDecoder",
    "encode_json",
    "redact",
]

logger = logging.getLogger("golem_shell.models")

DEFAULT_TIMEOUT = 60.0
"""Seconds an adapter waits to connect, and between two reads of a response."""
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""The largest response body (or whole stream) an adapter reads: 32 MiB."""
DEFAULT_RETRY = RetryPolicy()
"""Three retries within 60 seconds, backoff from 0.5 s up to 8 s."""
_MAX_ERROR_BODY_BYTES = 1024 * 1024
_REDACTED = "[redacted]"


class ErrorDecoder(Protocol):
    """A provider's ``decode_error``."""

    def __call__(
        self, status: int, headers: Mapping[str, str], body: bytes, *, now_unix: float | None
    ) -> WireError: ...


class StreamDecoder(Protocol):
    """A provider's pure stream decoder (``golem_core.wire.<provider>.StreamDecoder``)."""

    @property
    def done(self) -> bool: ...

    def feed(self, event: ServerSentEvent) -> Result[tuple[ModelDelta, ...], WireError]: ...

    def finish(self) -> Result[Message, WireError]: ...


BodyDecoder: TypeAlias = Callable[[object], Result[Message, WireError]]
"""A provider's ``decode_response``."""


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced."""
    return text.replace(secret, _REDACTED) if secret else text


def encode_json(body: Mapping[str, Any]) -> bytes:
    """The request body as compact UTF-8 JSON; ``UsageError`` if it cannot be JSON.

    A body holds the caller's tool schemas, so NaN or a non-JSON value there is misuse.
    """
    try:
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"the request cannot be sent as JSON: {exc}") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # a lone surrogate (text from a broken source, or cut-off arguments sent verbatim
        # per ADR 0026) has no UTF-8 form: it travels as U+FFFD, on the wire only, so the
        # conversation can always be sent; the history keeps what it holds
        return _without_lone_surrogates(text).encode("utf-8")


def _without_lone_surrogates(text: str) -> str:
    """``text`` with surrogate pairs joined and every lone surrogate replaced by U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _media_type(response: httpx.Response) -> str:
    value: str = response.headers.get("content-type", "")
    return value.split(";")[0].strip().lower()


@attrs.frozen
class LateKey:
    """An API key read from the environment when the first request is sent, not when
    the model is made: an application can make its agents at import time, and its tests
    can replace their models (``agent.override``) with no key set at all."""

    env: tuple[str, ...]
    """The variables to read, in order."""
    header: tuple[str, str]
    """The header the key travels in, and what precedes it (``"Bearer "``)."""
    missing: str
    """The error when none of them is set."""


class ProviderHTTP:
    """POST a JSON body to one provider endpoint, with retries; plain or streamed.

    Args:
        provider: the adapter's short name for errors (``"openai"``).
        url: the endpoint.
        headers: headers of every request, credentials included (never logged).
        secret: the API key, scrubbed from every error message.
        http_client: the caller's client, or ``None`` to own one (closed by ``aclose``).
        timeout: applied to every request, also on a caller's client.
        retry: the retry policy.
        decode_error: the provider's reading of a failed response.
        max_response_bytes: the largest body or stream read.
    """

    def __init__(
        self,
        *,
        provider: str,
        url: str,
        headers: Mapping[str, str],
        secret: str | None,
        late_key: LateKey | None = None,
        http_client: httpx.AsyncClient | None,
        timeout: float | httpx.Timeout,
        retry: RetryPolicy,
        decode_error: ErrorDecoder,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        if secret is not None and not (secret.isascii() and secret.isprintable()):
            # httpx would refuse the header, quoting the key in its error: never echo it
            raise UsageError(
                f"the {provider} API key holds a character an HTTP header cannot carry"
                " (a control character such as a trailing newline, or a non-ASCII one)"
            )
        self.provider = provider
        self.url = url
        self._headers = dict(headers)
        self._secret = secret
        self._late_key = late_key if secret is None else None
        self._owns_client = http_client is None
        self._given = http_client
        # an httpx client's connections belong to the event loop that opened them: an
        # owned client is made per loop, so each ``asyncio.run`` gets its own, and it is
        # closed with its loop (``_bind_to_loop``), or when this object is collected or
        # the interpreter exits (``_close_owned``): a keep-alive socket is never left
        # to the garbage collector (ResourceWarning: unclosed transport)
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._clients = weakref.WeakKeyDictionary()
        self._closers: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, AsyncGenerator[None, None]
        ] = weakref.WeakKeyDictionary()
        # when this object goes (or the interpreter exits), close what it still owns
        weakref.finalize(self, _close_owned, self._clients, self._closers)
        self._timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self.retry = retry
        self._decode_error = decode_error
        self._max_bytes = max_response_bytes

    def __repr__(self) -> str:
        return f"ProviderHTTP({self.provider!r}, {self.url!r})"

    @property
    def _client(self) -> httpx.AsyncClient:
        """The caller's client, or the one this object owns for the running event loop."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            for old in [old for old in self._clients if old.is_closed()]:
                del self._clients[old]
            client = self._clients[loop] = httpx.AsyncClient()
        return client

    async def _open(self) -> httpx.AsyncClient:
        """``_client``, bound to the running loop on first use (``_bind_to_loop``: the
        loop's shutdown, or this object's collection, closes it inside the loop)."""
        client = self._client
        loop = asyncio.get_running_loop()
        if not self._owns_client or loop in self._closers:
            return client
        closer = _bind_to_loop(client)
        await anext(closer)  # parked at its ``yield`` until the loop shuts it down
        self._closers[loop] = closer
        return client

    async def aclose(self) -> None:
        """Close the HTTP client this object created for the running event loop (a
        caller's client stays open)."""
        if self._given is not None:
            return
        loop = asyncio.get_running_loop()
        client = self._clients.pop(loop, None)
        closer = self._closers.pop(loop, None)
        if client is not None:
            await client.aclose()
        if closer is not None:
            await closer.aclose()

    # -- errors ---------------------------------------------------------------------

    def _error(self, error: WireError) -> ModelError:
        return ModelError(
            error.kind,
            redact(error.message, self._secret),
            status=error.status,
            request_id=None if error.request_id is None else redact(error.request_id, self._secret),
            retry_after=error.retry_after,
            provider=self.provider,
        )

    def _fail(self, kind: ModelErrorKind, message: str, status: int | None = None) -> ModelError:
        return ModelError(
            kind, redact(message, self._secret), status=status, provider=self.provider
        )

    def _transport_error(self, exc: httpx.RequestError, *, responded: bool) -> ModelError:
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            what = "timed out reading the response" if responded else "timed out"
            return self._fail(ModelErrorKind.TIMEOUT, f"{what} ({detail})")
        if isinstance(exc, httpx.DecodingError):
            return self._fail(ModelErrorKind.BAD_RESPONSE, f"undecodable body ({detail})")
        if responded:
            return self._fail(
                ModelErrorKind.STREAM_INTERRUPTED, f"connection lost mid-response ({detail})"
            )
        return self._fail(ModelErrorKind.CONNECTION, f"{type(exc).__name__}: {detail}")

    async def _read_limited(self, response: httpx.Response, limit: int) -> tuple[bytes, bool]:
        """The body, up to ``limit`` bytes; ``True`` when it was longer."""
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                chunks.append(chunk[: len(chunk) - (size - limit)])
                return b"".join(chunks), True
            chunks.append(chunk)
        return b"".join(chunks), False

    async def _check_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if status >= 400:
            body, _ = await self._read_limited(response, _MAX_ERROR_BODY_BYTES)
            raise self._error(
                self._decode_error(status, response.headers, body, now_unix=time.time())
            )
        if not 200 <= status < 300:
            where = response.headers.get("location")
            extra = f" to {where}" if where else ""
            raise self._fail(
                ModelErrorKind.BAD_RESPONSE, f"unexpected HTTP {status}{extra}", status
            )

    # -- retries --------------------------------------------------------------------

    def _gave_up(self, error: ModelError, attempts: int, started: float) -> ModelError:
        """``error`` saying where it happened and how many attempts were made (the URL's
        host and path only: a query never reaches an error message)."""
        url = httpx.URL(self.url)
        error.endpoint = f"{url.host}{':' + str(url.port) if url.port else ''}{url.path}"
        error.attempts = attempts
        error.elapsed = asyncio.get_running_loop().time() - started
        return error

    async def _pause_before_retry(self, attempt: int, started: float, error: ModelError) -> bool:
        elapsed = asyncio.get_running_loop().time() - started
        delay = next_delay(
            self.retry, attempt, elapsed, error.kind, error.retry_after, random.random()
        )
        if delay is None:
            return False
        logger.info(
            "%s request failed (%s); retry %d of %d in %.2fs",
            self.provider,
            error,
            attempt,
            self.retry.max_attempts,
            delay,
        )
        await report_retry(attempt, delay, error)  # the observed run's RetryScheduled event
        await asyncio.sleep(delay)
        return True

    def _request_headers(
        self, accept: str, extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        if self._late_key is not None:
            self._take_key(self._late_key)
        common = {"content-type": "application/json", "accept": accept}
        return {**self._headers, **(extra or {}), **common}

    def _take_key(self, late: LateKey) -> None:
        """Read the key the first request needs from the environment (see ``LateKey``).

        Raises:
            UsageError: no variable is set, or the key cannot travel in a header.
        """
        key = next((v.strip() for v in map(os.environ.get, late.env) if v and v.strip()), None)
        if key is None:
            raise UsageError(late.missing)
        if not (key.isascii() and key.isprintable()):
            raise UsageError(
                f"the {self.provider} API key holds a character an HTTP header cannot carry"
                " (a control character such as a trailing newline, or a non-ASCII one)"
            )
        name, prefix = late.header
        self._headers[name] = prefix + key
        self._secret = key
        self._late_key = None

    # -- plain requests ---------------------------------------------------------------

    async def post(
        self, body: bytes, decode: BodyDecoder, *, headers: Mapping[str, str] | None = None
    ) -> Message:
        """Send ``body`` (with ``headers``, an adapter's per-request ones) and decode
        the answer, retrying what the policy allows.

        Raises:
            ModelError: the request failed (after retries).
        """
        started = asyncio.get_running_loop().time()
        attempt = 0
        while True:
            try:
                return await self._post_once(body, decode, headers)
            except ModelError as error:
                attempt += 1
                if not await self._pause_before_retry(attempt, started, error):
                    raise self._gave_up(error, attempt, started) from error.__cause__

    async def _post_once(
        self, body: bytes, decode: BodyDecoder, extra: Mapping[str, str] | None = None
    ) -> Message:
        responded = False
        try:
            client = await self._open()
            async with client.stream(
                "POST",
                self.url,
                content=body,
                headers=self._request_headers("application/json", extra),
                timeout=self._timeout,
            ) as response:
                responded = True
                await self._check_status(response)
                media_type = _media_type(response)
                if media_type and "json" not in media_type:
                    raise self._fail(
                        ModelErrorKind.BAD_RESPONSE,
                        f"expected a JSON response, got content type {media_type!r}",
                        response.status_code,
                    )
                status = response.status_code
                raw, too_long = await self._read_limited(response, self._max_bytes)
                if too_long:
                    raise self._fail(
                        ModelErrorKind.BAD_RESPONSE,
                        f"response body larger than {self._max_bytes} bytes; refused",
                        status,
                    )
        except httpx.RequestError as exc:
            raise self._transport_error(exc, responded=responded) from exc
        payload = _parse_json(raw)
        if payload is _NOT_JSON:
            raise self._fail(ModelErrorKind.BAD_RESPONSE, "response body is not JSON", status)
        match decode(payload):
            case Success(value):
                message: Message = value
                return message
            case Failure(error):
                raise self._error(error)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- streams ----------------------------------------------------------------------

    async def stream(
        self,
        body: bytes,
        new_decoder: Callable[[], StreamDecoder],
        decode: BodyDecoder,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Send ``body`` (``headers``: as ``post``) and yield the stream's deltas, then
        one ``StreamDone``.

        A failure before the first delta is retried as the policy allows; after it,
        it is raised (the caller already holds part of the answer).

        Raises:
            ModelError: the request or the stream failed.
        """
        started = asyncio.get_running_loop().time()
        attempt = 0
        while True:
            yielded = False
            try:
                async with contextlib.aclosing(
                    self._stream_once(body, new_decoder(), decode, headers)
                ) as events:
                    async for event in events:
                        yielded = True
                        yield event
                return
            except ModelError as error:
                attempt += 1
                if yielded or not await self._pause_before_retry(attempt, started, error):
                    raise self._gave_up(error, attempt, started) from error.__cause__

    async def _stream_once(
        self,
        body: bytes,
        decoder: StreamDecoder,
        decode: BodyDecoder,
        extra: Mapping[str, str] | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        sse = SSEDecoder(max_line_bytes=min(DEFAULT_MAX_LINE_BYTES, self._max_bytes))
        responded = False
        try:
            client = await self._open()
            async with client.stream(
                "POST",
                self.url,
                content=body,
                headers=self._request_headers("text/event-stream", extra),
                timeout=self._timeout,
            ) as response:
                responded = True
                await self._check_status(response)
                await self._check_stream_type(response, decode)
                received = 0
                async for chunk in response.aiter_bytes():
                    received += len(chunk)
                    if received > self._max_bytes:
                        raise self._fail(
                            ModelErrorKind.BAD_RESPONSE,
                            f"stream larger than {self._max_bytes} bytes; refused",
                        )
                    for event in sse.feed(chunk):
                        match decoder.feed(event):
                            case Success(deltas):
                                for delta in deltas:
                                    yield delta
                            case Failure(error):
                                raise self._error(error)
                    if decoder.done:
                        break
                sse.close()
        except httpx.RequestError as exc:
            raise self._transport_error(exc, responded=responded) from exc
        except SSEError as exc:
            raise self._fail(ModelErrorKind.BAD_RESPONSE, str(exc)) from exc
        match decoder.finish():
            case Success(message):
                yield StreamDone(message)
            case Failure(error):
                raise self._error(error)

    async def _check_stream_type(self, response: httpx.Response, decode: BodyDecoder) -> None:
        media_type = _media_type(response)
        if media_type == "text/event-stream":
            return
        if "json" in media_type:  # a server that reports an error as JSON with 200
            raw, _ = await self._read_limited(response, _MAX_ERROR_BODY_BYTES)
            payload = _parse_json(raw)
            if payload is not _NOT_JSON:
                match decode(payload):
                    case Failure(error) if error.kind is not ModelErrorKind.BAD_RESPONSE:
                        raise self._error(error)
                    case _:
                        pass
        raise self._fail(
            ModelErrorKind.BAD_RESPONSE,
            f"expected a stream (text/event-stream), got content type {media_type!r}",
            response.status_code,
        )


_NOT_JSON = object()

_CLOSING: set[asyncio.Task[None]] = set()
"""Closings scheduled on a running loop (a task is kept only weakly by asyncio)."""


async def _bind_to_loop(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    """Parked at its ``yield`` in the client's event loop: when the loop shuts down
    (``asyncio.run``, ``Runner.close``: ``shutdown_asyncgens``) or the generator is
    collected with its owner, the loop closes the client, so no keep-alive socket is
    left to the garbage collector."""
    try:
        yield
    finally:
        await client.aclose()


async def _aclose(client: httpx.AsyncClient, closer: AsyncGenerator[None, None] | None) -> None:
    await client.aclose()
    if closer is not None:
        await closer.aclose()


def _close_later(
    loop: asyncio.AbstractEventLoop,
    client: httpx.AsyncClient,
    closer: AsyncGenerator[None, None] | None,
) -> None:
    task = loop.create_task(_aclose(client, closer))
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)


def _close_owned(
    clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient],
    closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncGenerator[None, None]],
) -> None:
    """Close the clients a collected ``ProviderHTTP`` owned (``weakref.finalize``, also
    at exit): in their loop now when it is idle (a thread's sync runner between two
    calls), else as soon as it runs; a closed loop's client was closed by its closer."""
    for loop, client in list(clients.items()):
        closer = closers.pop(loop, None)
        if loop.is_closed():
            continue
        if loop.is_running() or asyncio._get_running_loop() is not None:
            # that loop runs (maybe in another thread), or another runs in this one
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_close_later, loop, client, closer)
        else:
            loop.run_until_complete(_aclose(client, closer))
    clients.clear()


def _parse_json(raw: bytes) -> object:
    """A response body's JSON value, else ``_NOT_JSON``. Parsed with the cyclic collector
    paused, as golem_core parses a provider's body (``golem_core.wire``): a body nested to
    the recursion limit would otherwise start a collection, and run every pending
    finalizer, at that depth, where they fail with ``RecursionError``."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return _NOT_JSON
    finally:
        if collecting:
            gc.enable()
