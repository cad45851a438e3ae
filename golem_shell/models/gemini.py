"""The Google Gemini API adapter (``generateContent``, ``streamGenerateContent?alt=sse``).

Only configuration lives here: the key and base URL, the two endpoints, the header, and
which pure codec (``golem_core.wire.gemini``) encodes and decodes. ``_http.py`` does the
HTTP. The key travels in the ``x-goog-api-key`` header, never in a URL.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
from returns.result import Result

from golem_core import ModelRequest, ModelSettings, StreamEvent
from golem_core.providers import Provider, profile_of
from golem_core.retry import RetryPolicy
from golem_core.wire import WireError
from golem_core.wire import gemini as wire
from golem_shell._errors import UsageError
from golem_shell.models._adapter import HTTPModel, key_and_base, key_headers
from golem_shell.models._http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_RETRY,
    DEFAULT_TIMEOUT,
    ProviderHTTP,
)

__all__ = ["DEFAULT_GEMINI_BASE_URL", "GeminiModel"]

DEFAULT_GEMINI_BASE_URL = profile_of(Provider.GOOGLE).default_base_url


class GeminiModel(HTTPModel):
    """A model behind the Gemini API: ``POST {base_url}/models/{model}:generateContent``,
    and ``...:streamGenerateContent?alt=sse`` for streams.

    Args:
        model: the model name, e.g. ``"gemini-2.5-flash"`` (``"models/..."`` and other
            resource names such as ``"tunedModels/..."`` are taken as they are).
        api_key: the key, sent as ``x-goog-api-key``; default ``GOOGLE_API_KEY``, else
            ``GEMINI_API_KEY`` (the order of the official ``google-genai`` SDK).
            Required for the default base URL; a custom base URL (a gateway that adds
            credentials itself) may need none, and then no key header is sent.
        base_url: the API version's base URL; default ``GEMINI_BASE_URL``, else
            ``https://generativelanguage.googleapis.com/v1beta``.
        http_client: your ``httpx.AsyncClient``; it stays yours to close. Without one
            the model creates a client: close it with ``aclose()`` or ``async with``.
        timeout: seconds (or an ``httpx.Timeout``) for every request, also on your
            client: connecting, and waiting between two reads of a response.
        retry: how failed requests are retried.
        settings: defaults for the request settings a run leaves unset.
        include_thoughts: ask thinking models for thought summaries (they arrive as
            ``ThinkingPart``s).
        max_response_bytes: the largest response body or stream read.

    Raises:
        UsageError: no key for the default base URL, no model name, or a base URL that
            is not http(s).
    """

    provider = Provider.GOOGLE
    supports_native_output = True
    """Honours ``ModelRequest.output_schema`` (``responseJsonSchema``: ``output_mode="native"``)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy = DEFAULT_RETRY,
        settings: ModelSettings | None = None,
        include_thoughts: bool = False,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        if not model or not model.strip():
            raise UsageError("GeminiModel needs a model name")
        profile = self.profile_of_class()
        key, base, late = key_and_base(profile, api_key, base_url, vendor="Gemini")
        headers = key_headers(profile, key)

        def endpoint(stream: bool) -> ProviderHTTP:
            return ProviderHTTP(
                provider=profile.provider.value,
                url=f"{base}/{wire.request_path(model, stream=stream)}",
                headers=headers,
                secret=key,
                late_key=late,
                http_client=http_client,
                timeout=timeout,
                retry=retry,
                decode_error=wire.decode_error,
                max_response_bytes=max_response_bytes,
            )

        super().__init__(
            model.strip(),
            http=endpoint(False),
            settings=settings,
        )
        self._stream_http = endpoint(True)
        self._include_thoughts = include_thoughts

    @property
    def stream_url(self) -> str:
        """The endpoint streamed requests are sent to."""
        return self._stream_http.url

    def _encode(self, request: ModelRequest, *, stream: bool) -> Result[dict[str, Any], WireError]:
        return wire.encode_request(request, include_thoughts=self._include_thoughts)

    async def request_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send one request and yield its deltas as they arrive, then one ``StreamDone``.

        Raises:
            UsageError: the request holds content Gemini cannot take.
            ModelError: the request or the stream failed (retried only before the first
                delta).
        """
        body = self._body(request, stream=True)
        stream = self._stream_http.stream(body, self._new_stream_decoder, self._decode_response)
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                yield event

    async def aclose(self) -> None:
        """Close the HTTP clients this model created (a client you passed stays open)."""
        await super().aclose()
        await self._stream_http.aclose()
