"""The Anthropic Messages adapter.

Only configuration lives here: the key and base URL, the headers, and which pure codec
(``golem_core.wire.anthropic``) encodes and decodes. ``_http.py`` does the HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx
from returns.result import Result

from golem_core import ModelRequest, ModelSettings
from golem_core.providers import Provider, profile_of
from golem_core.retry import RetryPolicy
from golem_core.wire import WireError
from golem_core.wire import anthropic as wire
from golem_shell._errors import UsageError
from golem_shell.models._adapter import HTTPModel, key_and_base, key_headers
from golem_shell.models._http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_RETRY,
    DEFAULT_TIMEOUT,
    ProviderHTTP,
)

__all__ = ["DEFAULT_ANTHROPIC_BASE_URL", "AnthropicModel"]

DEFAULT_ANTHROPIC_BASE_URL = profile_of(Provider.ANTHROPIC).default_base_url


class AnthropicModel(HTTPModel):
    """A model behind Anthropic Messages, ``POST {base_url}/v1/messages``.

    Args:
        model: the model name, e.g. ``"claude-sonnet-4-5"``.
        api_key: the key, sent as ``x-api-key``; default ``ANTHROPIC_API_KEY``.
            Required for the default base URL; a custom base URL (a gateway that adds
            credentials itself) may need none, and then no key header is sent.
        base_url: default ``ANTHROPIC_BASE_URL``, else ``https://api.anthropic.com``.
        http_client: your ``httpx.AsyncClient``; it stays yours to close. Without one
            the model creates a client: close it with ``aclose()`` or ``async with``.
        timeout: seconds (or an ``httpx.Timeout``) for every request, also on your
            client: connecting, and waiting between two reads of a response.
        retry: how failed requests are retried.
        settings: defaults for the request settings a run leaves unset.
        max_tokens: ``max_tokens`` when neither the run nor ``settings`` sets one
            (Anthropic requires it).
        max_response_bytes: the largest response body or stream read.
        native_output: whether the model takes native structured output
            (``output_config.format``); default: guessed from the name (Claude Opus,
            Sonnet and Haiku 4.5 and later). Other models keep the ``final_result`` tool.
        context_edits: Anthropic's server-side context management sent with every
            request (``context_management.edits``; ADR 0148): ``wire.clear_tool_uses()``,
            ``wire.clear_thinking()``, ``wire.compact()`` from ``golem_core.wire.anthropic``.
            The ``anthropic-beta`` header they need is added. A ``compaction`` block an
            answer holds stays in the history (every field of it) and goes back to this
            model only, with the compaction beta header on every request carrying it.

    Raises:
        UsageError: no key for the default base URL, a base URL that is not http(s), or
            context edits Anthropic would refuse.
    """

    provider = Provider.ANTHROPIC
    supports_native_output: bool = False
    """Whether this model honours ``ModelRequest.output_schema`` (``output_config.format``:
    ``output_mode="native"``): Claude 4.5 and later, or what ``native_output=`` says."""

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
        max_tokens: int = wire.DEFAULT_MAX_TOKENS,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        native_output: bool | None = None,
        context_edits: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        profile = self.profile_of_class()
        key, base, late = key_and_base(profile, api_key, base_url, vendor="Anthropic")
        if max_tokens < 1:
            raise UsageError(f"max_tokens must be positive, got {max_tokens}")
        edits = tuple(dict(e) for e in context_edits)
        problem = wire.context_edits_problem(edits)
        if problem is not None:
            raise UsageError(f"context_edits: {problem}")
        headers = {"anthropic-version": wire.ANTHROPIC_VERSION, **key_headers(profile, key)}
        http = ProviderHTTP(
            provider=profile.provider.value,
            url=f"{base}/v1/messages",
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
            model,
            http=http,
            settings=settings,
        )
        self._max_tokens = max_tokens
        self._context_edits = edits
        self.supports_native_output = (
            wire.supports_structured_output(model) if native_output is None else native_output
        )

    def _encode(self, request: ModelRequest, *, stream: bool) -> Result[dict[str, Any], WireError]:
        return wire.encode_request(
            request,
            model=self._model,
            stream=stream,
            default_max_tokens=self._max_tokens,
            context_edits=self._context_edits,
        )

    def _headers_for(self, body: dict[str, Any]) -> dict[str, str]:
        """The ``anthropic-beta`` header the body needs: its edits' and, when it carries
        a ``compaction`` block, the compaction beta (``wire.request_betas``)."""
        betas = wire.request_betas(body)
        return {"anthropic-beta": ",".join(betas)} if betas else {}

    @property
    def context_edits(self) -> tuple[dict[str, Any], ...]:
        """The ``context_management.edits`` every request sends (ADR 0148)."""
        return self._context_edits
