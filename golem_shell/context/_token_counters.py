"""Token counters that ask the provider, and a token budget that can await them.

Owns ``anthropic_token_counter`` (``POST {base}/v1/messages/count_tokens``),
``gemini_token_counter`` (``POST {base}/models/{model}:countTokens``), the
``AsyncTokenCounter`` shape they share, and ``async_budget_history``: the core's
``budget_history`` with its counts computed beforehand, so any counter (async or not)
can bound a history.

A provider counts requests, not messages. A message's count is the difference between
a request holding a fixed one-word user message and then the message, and that request
without it: the message's own tokens as the provider's wire encoder sends it in a
request without tools (calls and results as text, ADR 0031), without the request's
fixed overhead. The bodies come from the pure wire encoders, so what is counted is what
would be sent: system messages and unknown parts count 0, as they are never sent.
Counts are cached by the encoded message (stamps and ids that never reach the provider
do not matter), least recently used first out.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Protocol, TypeAlias, cast

import attrs
import httpx
from returns.result import Failure, Result, Success

from golem_core import (
    HistoryError,
    Message,
    ModelErrorKind,
    ModelRequest,
    ModelSettings,
    RetryPolicy,
    Role,
    TokenCounter,
    Usage,
    budget_history,
)
from golem_core.wire import WireError
from golem_core.wire import anthropic as anthropic_wire
from golem_core.wire import gemini as gemini_wire
from golem_shell._errors import UsageError
from golem_shell.context._summarize import AsyncHistoryProcessor
from golem_shell.models._adapter import HTTPModel
from golem_shell.models._http import (
    DEFAULT_RETRY,
    DEFAULT_TIMEOUT,
    ErrorDecoder,
    ProviderHTTP,
    encode_json,
)
from golem_shell.models.anthropic import AnthropicModel
from golem_shell.models.gemini import GeminiModel

__all__ = [
    "AsyncTokenCounter",
    "ProviderTokenCounter",
    "anthropic_token_counter",
    "async_budget_history",
    "gemini_token_counter",
]

DEFAULT_CACHE_SIZE: Final = 4096
"""How many message counts a provider counter remembers."""

_PRIMER: Final = Message.user("Hi")
"""The user message every counted request opens with (providers want a user turn first)."""


class AsyncTokenCounter(Protocol):
    """Counts the tokens one message costs by asking someone (a provider's endpoint)."""

    async def __call__(self, message: Message) -> int: ...


Counter: TypeAlias = TokenCounter | AsyncTokenCounter | Callable[[Message], Awaitable[int]]
"""Any counter ``async_budget_history`` takes: sync or async."""

_Encode: TypeAlias = Callable[[tuple[Message, ...]], Result[dict[str, Any], WireError]]


class ProviderTokenCounter:
    """An ``AsyncTokenCounter`` backed by a provider's token-counting endpoint.

    Made by ``anthropic_token_counter`` and ``gemini_token_counter``, on the model's own
    ``ProviderHTTP`` (its credential rules, its retries, an HTTP client per event loop,
    keys scrubbed from errors). Call it with a message to get its count; ``hits`` and
    ``misses`` say how often the cache answered. ``aclose()`` (or ``async with``) closes
    the client it made for the running event loop; a client you passed stays yours.

    Raises (when called):
        ModelError: the endpoint failed (status, provider's message; the key never
            appears), or answered without a count.
        UsageError: the message holds content the provider cannot take.
    """

    def __init__(
        self,
        *,
        made_by: str,
        model: str,
        http: ProviderHTTP,
        encode: _Encode,
        count_field: str,
        cache_size: int,
        headers_of: Callable[[dict[str, Any]], dict[str, str]] | None = None,
    ) -> None:
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise UsageError(f"cache_size must be an int of at least 0, got {cache_size!r}")
        self.made_by = made_by
        self.model = model
        self._http = http
        self._encode = encode
        self._count_field = count_field
        self._headers_of = headers_of
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._cache_size = cache_size
        self._baseline: int | None = None
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"{self.made_by}({self.model!r})"

    async def __aenter__(self) -> ProviderTokenCounter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client this counter made for the running event loop (never
        one you passed)."""
        await self._http.aclose()

    async def __call__(self, message: Message) -> int:
        if message.role is Role.SYSTEM:
            return 0  # never sent: the run's instructions replace it
        body = self._body((_PRIMER, message))
        key = encode_json(body)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            self.hits += 1
            return cached
        self.misses += 1
        if body == self._body((_PRIMER,)):  # nothing of the message is sent
            count = 0
        else:
            count = max(0, await self._post(key, body) - await self._baseline_count())
        if self._cache_size:
            self._cache[key] = count
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return count

    async def _baseline_count(self) -> int:
        if self._baseline is None:
            primer = self._body((_PRIMER,))
            self._baseline = await self._post(encode_json(primer), primer)
        return self._baseline

    def _body(self, messages: tuple[Message, ...]) -> dict[str, Any]:
        match self._encode(messages):
            case Failure(error):
                raise UsageError(f"{self!r} cannot count this message: {error.message}")
            case encoded:
                body: dict[str, Any] = encoded.value_or({})
                return body

    def _read_count(self, payload: object) -> Result[Message, WireError]:
        """The answer's count, carried as the input tokens of an empty message (the
        shape ``ProviderHTTP.post`` decodes to)."""
        count = payload.get(self._count_field) if isinstance(payload, dict) else None
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            return Failure(
                WireError(
                    ModelErrorKind.BAD_RESPONSE,
                    f"the token count answer has no non-negative integer {self._count_field!r}:"
                    f" {json.dumps(payload)[:200]}",
                )
            )
        return Success(Message(Role.ASSISTANT, (), usage=Usage(input_tokens=count)))

    async def _post(self, data: bytes, body: dict[str, Any]) -> int:
        headers = self._headers_of(body) if self._headers_of is not None else None
        answer = await self._http.post(data, self._read_count, headers=headers)
        assert answer.usage is not None  # _read_count always sets it
        return answer.usage.input_tokens


def _counting(decode_error: ErrorDecoder) -> ErrorDecoder:
    """``decode_error`` whose messages say that counting tokens failed."""

    def decode(
        status: int, headers: Mapping[str, str], body: bytes, *, now_unix: float | None
    ) -> WireError:
        error = decode_error(status, headers, body, now_unix=now_unix)
        return attrs.evolve(error, message=f"counting tokens failed: {error.message}")

    return decode


def _endpoint(model: HTTPModel, url: str, decode_error: ErrorDecoder) -> ProviderHTTP:
    """The model's ``ProviderHTTP`` (credentials, headers, client, timeout, retries) sent
    to ``url`` instead, its errors saying that counting tokens failed."""
    http = copy.copy(model._http)  # a copy: the model's own endpoint stays as it was
    http.url = url
    http._decode_error = _counting(decode_error)
    http._clients = weakref.WeakKeyDictionary()  # clients of its own, one per event loop
    return http


_NO_CACHE: Final = ModelSettings(cache=None)
"""Counting requests carry no cache markers: a marker is not content and costs nothing."""


def _anthropic_betas(body: dict[str, Any]) -> dict[str, str]:
    """The ``anthropic-beta`` header a counting body needs (a ``compaction`` block's)."""
    betas = anthropic_wire.request_betas(body)
    return {"anthropic-beta": ",".join(betas)} if betas else {}


def anthropic_token_counter(
    model: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    http_client: httpx.AsyncClient | None = None,
    timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
    retry: RetryPolicy = DEFAULT_RETRY,
    cache_size: int = DEFAULT_CACHE_SIZE,
) -> ProviderTokenCounter:
    """A counter that asks Anthropic: ``POST {base_url}/v1/messages/count_tokens``.

    Args:
        model: The model whose tokenizer counts (``"claude-sonnet-4-5"``).
        api_key: Sent as ``x-api-key``; default ``ANTHROPIC_API_KEY`` (a custom base URL
            may need none): ``AnthropicModel``'s rules.
        base_url: Default ``ANTHROPIC_BASE_URL``, else ``https://api.anthropic.com``.
        http_client: Your ``httpx.AsyncClient`` (it stays yours to close).
        timeout: Seconds for each counting request.
        retry: What is retried (a 429, a 5xx), as for the model's requests.
        cache_size: How many counts to remember (0: none).

    Returns:
        The counter (free: Anthropic does not bill counting, but rate-limits it).

    Raises:
        UsageError: no key for the default base URL, or a base URL that is not http(s).
    """
    source = AnthropicModel(
        model,
        api_key=api_key,
        base_url=base_url,
        http_client=http_client,
        timeout=timeout,
        retry=retry,
    )

    def encode(messages: tuple[Message, ...]) -> Result[dict[str, Any], WireError]:
        encoded = anthropic_wire.encode_request(
            ModelRequest(messages=messages, settings=_NO_CACHE), model=model, stream=False
        )
        return encoded.map(
            lambda body: {k: v for k, v in body.items() if k in ("model", "messages")}
        )

    return ProviderTokenCounter(
        made_by="anthropic_token_counter",
        model=model,
        http=_endpoint(source, f"{source.url}/count_tokens", anthropic_wire.decode_error),
        encode=encode,
        count_field="input_tokens",
        cache_size=cache_size,
        headers_of=_anthropic_betas,
    )


def gemini_token_counter(
    model: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    http_client: httpx.AsyncClient | None = None,
    timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
    retry: RetryPolicy = DEFAULT_RETRY,
    cache_size: int = DEFAULT_CACHE_SIZE,
) -> ProviderTokenCounter:
    """A counter that asks Gemini: ``POST {base_url}/models/{model}:countTokens``.

    Args:
        model: The model (``"gemini-2.5-flash"``; a name with ``/`` is a resource name).
        api_key: Sent as ``x-goog-api-key``; default ``GOOGLE_API_KEY``, else
            ``GEMINI_API_KEY`` (a custom base URL may need none): ``GeminiModel``'s rules.
        base_url: The API version's base URL; default ``GEMINI_BASE_URL``, else
            ``https://generativelanguage.googleapis.com/v1beta``.
        http_client: Your ``httpx.AsyncClient`` (it stays yours to close).
        timeout: Seconds for each counting request.
        retry: What is retried (a 429, a 5xx), as for the model's requests.
        cache_size: How many counts to remember (0: none).

    Returns:
        The counter.

    Raises:
        UsageError: no key for the default base URL, or a base URL that is not http(s).
    """
    source = GeminiModel(
        model,
        api_key=api_key,
        base_url=base_url,
        http_client=http_client,
        timeout=timeout,
        retry=retry,
    )
    url = source.url.removesuffix(":generateContent") + ":countTokens"

    def encode(messages: tuple[Message, ...]) -> Result[dict[str, Any], WireError]:
        encoded = gemini_wire.encode_request(ModelRequest(messages=messages))
        return encoded.map(lambda body: {"contents": body["contents"]})

    return ProviderTokenCounter(
        made_by="gemini_token_counter",
        model=model,
        http=_endpoint(source, url, gemini_wire.decode_error),
        encode=encode,
        count_field="totalTokens",
        cache_size=cache_size,
    )


# -- a budget over any counter ----------------------------------------------------------------


def _name(function: object) -> str:
    return str(getattr(function, "__qualname__", None) or repr(function))


class _AsyncBudget:
    def __init__(
        self, counter: Counter, max_tokens: int, concurrency: int, low_water: int | None
    ) -> None:
        self.counter = counter
        self.max_tokens = max_tokens
        self.concurrency = concurrency
        # checks max_tokens and low_water as the core does
        core = budget_history(lambda m: 0, max_tokens, low_water=low_water)
        self.low_water: int = getattr(core, "low_water")  # noqa: B009 (not on the alias)

    def __repr__(self) -> str:
        low = (
            ""
            if self.low_water == self.max_tokens - self.max_tokens // 2
            else (f", low_water={self.low_water}")
        )
        return f"async_budget_history({_name(self.counter)}, {self.max_tokens}{low})"

    async def _count(self, message: Message) -> object:
        value: object = self.counter(message)
        if inspect.isawaitable(value):
            value = await value
        return value

    async def __call__(
        self, history: Sequence[Message]
    ) -> Result[tuple[Message, ...], HistoryError]:
        counts: dict[int, object] = {}
        newest_first = [m for m in reversed(history) if m.role is not Role.SYSTEM]
        total = 0
        over = False
        for start in range(0, len(newest_first), self.concurrency):
            window = newest_first[start : start + self.concurrency]
            values = await asyncio.gather(*(self._count(m) for m in window))
            counts.update(zip(map(id, window), values, strict=True))
            over = False
            for value in values:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    over = True  # the core's processor names the bad count
                    break
                total += value
                if total > self.max_tokens:
                    over = True
                    break
            if over:
                break
        if over and self.low_water < self.max_tokens:  # a stepped cut counts every message
            rest = [m for m in newest_first if id(m) not in counts]
            for start in range(0, len(rest), self.concurrency):
                window = rest[start : start + self.concurrency]
                values = await asyncio.gather(*(self._count(m) for m in window))
                counts.update(zip(map(id, window), values, strict=True))

        def precomputed(message: Message) -> int:
            return cast(int, counts[id(message)])  # checked by the core's processor

        precomputed.__qualname__ = precomputed.__name__ = _name(self.counter)
        return budget_history(precomputed, self.max_tokens, low_water=self.low_water)(history)


def async_budget_history(
    counter: Counter, max_tokens: int, *, concurrency: int = 8, low_water: int | None = None
) -> AsyncHistoryProcessor:
    """``budget_history`` for a counter that must be awaited (or any counter).

    Counts the non-system messages from the newest back, ``concurrency`` at a time,
    until the budget is exceeded, then runs the core's ``budget_history`` on those
    counts: the same cut, the same boundary rule, the same errors. In the sliding window
    (``low_water=max_tokens``) a counter is asked about at most ``concurrency - 1``
    messages beyond the first that does not fit; a stepped cut (the default) counts
    every message once the history does not fit.

    Args:
        counter: An ``AsyncTokenCounter`` (``anthropic_token_counter(...)``,
            ``gemini_token_counter(...)``) or a plain ``TokenCounter``
            (``tiktoken_counter()``, ``approximate_tokens``).
        max_tokens: The budget, at least 1.
        concurrency: How many counts may be in flight at once, at least 1.
        low_water: Where a cut brings the history down to (``budget_history``'s).

    Returns:
        An async processor (run it with ``run_history_processor`` or as an agent's
        ``history_processor``); a counter's error propagates (``ModelError``).

    Raises:
        ValueError: ``max_tokens`` or ``concurrency`` is not an int of at least 1.
        TypeError: ``counter`` is not callable.
    """
    if not callable(counter):
        raise TypeError(f"async_budget_history(counter): expected a callable, got {counter!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(
            f"async_budget_history(concurrency): must be an int of at least 1, got {concurrency!r}"
        )
    return _AsyncBudget(counter, max_tokens, concurrency, low_water)
