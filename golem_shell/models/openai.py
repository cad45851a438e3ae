"""The OpenAI Chat Completions adapter (also every OpenAI-compatible server).

Only configuration lives here: the key and base URL, the headers, and which pure codec
(``golem_core.wire.openai``) encodes and decodes. ``_http.py`` does the HTTP.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import httpx
from returns.result import Result

from golem_core import ModelRequest, ModelSettings
from golem_core.providers import Provider, profile_of
from golem_core.retry import RetryPolicy
from golem_core.wire import WireError
from golem_core.wire import openai as wire
from golem_shell._errors import UsageError
from golem_shell.models._adapter import HTTPModel, key_and_base, key_headers
from golem_shell.models._http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_RETRY,
    DEFAULT_TIMEOUT,
    ProviderHTTP,
)

__all__ = ["DEFAULT_OPENAI_BASE_URL", "OpenAIModel", "guess_quirks"]

_PROFILE = profile_of(Provider.OPENAI)
DEFAULT_OPENAI_BASE_URL = _PROFILE.default_base_url
_QUIRKS = _PROFILE.quirks


def guess_quirks(base_url: str, model: str) -> frozenset[str]:
    """The OpenAI-compatible server's quirks, guessed from its host and the model name
    by the vendors its profile knows (``ProviderProfile.vendors``): Mistral's API
    (``api.mistral.ai``) and Mistral models anywhere (vLLM's mistral mode) take only
    nine-character call ids (``"mistral-call-ids"``)."""
    return _PROFILE.guess_quirks(httpx.URL(base_url).host, model)


class OpenAIModel(HTTPModel):
    """A model behind OpenAI Chat Completions, ``POST {base_url}/chat/completions``.

    Args:
        model: the model name, e.g. ``"gpt-4o-mini"``.
        api_key: the key; default ``OPENAI_API_KEY``. Required for the default base
            URL; a custom base URL (Ollama, llama.cpp, vLLM, a gateway) may need none,
            and then no ``Authorization`` header is sent.
        base_url: default ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.
        http_client: your ``httpx.AsyncClient`` (pooling, proxies, a custom or mock
            transport); it stays yours to close. Without one the model creates a client:
            close it with ``aclose()`` or ``async with``.
        timeout: seconds (or an ``httpx.Timeout``) for every request, also on your
            client: connecting, and waiting between two reads of a response.
        retry: how failed requests are retried.
        system_role: ``"system"``, or ``"developer"`` for models that want it.
        max_tokens_field: the name the token limit is sent under. Default:
            ``"max_completion_tokens"`` for api.openai.com (its o-series and gpt-5
            models refuse ``max_tokens``), ``"max_tokens"`` for any other base URL
            (compatible servers know that one).
        settings: defaults for the request settings a run leaves unset.
        max_response_bytes: the largest response body or stream read.
        quirks: what the compatible server refuses that OpenAI takes:
            ``"mistral-call-ids"`` (call ids of exactly nine letters and digits),
            ``"string-content"`` (a text-only message as one string, never an array).
            Default: guessed (``guess_quirks``). Servers that refuse the ``developer``
            role need only the default ``system_role``.

    Raises:
        UsageError: no key for the default base URL, a base URL that is not http(s),
            or an unknown quirk.
    """

    provider = Provider.OPENAI
    supports_native_output = True
    """Honours ``ModelRequest.output_schema`` (``response_format``: ``output_mode="native"``)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy = DEFAULT_RETRY,
        system_role: Literal["system", "developer"] = "system",
        max_tokens_field: wire.MaxTokensField | None = None,
        settings: ModelSettings | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        quirks: Iterable[str] | None = None,
    ) -> None:
        profile = self.profile_of_class()
        key, base, late = key_and_base(profile, api_key, base_url, vendor="OpenAI")
        if system_role not in ("system", "developer"):
            raise UsageError(f"system_role must be 'system' or 'developer', got {system_role!r}")
        if max_tokens_field is None:
            official = httpx.URL(base).host == "api.openai.com"
            max_tokens_field = "max_completion_tokens" if official else "max_tokens"
        elif max_tokens_field not in ("max_tokens", "max_completion_tokens"):
            raise UsageError(
                "max_tokens_field must be 'max_tokens' or 'max_completion_tokens',"
                f" got {max_tokens_field!r}"
            )
        found = guess_quirks(base, model) if quirks is None else frozenset(quirks)
        if not found <= _QUIRKS:
            raise UsageError(
                f"unknown quirks {sorted(found - _QUIRKS)}; known: {', '.join(sorted(_QUIRKS))}"
            )
        headers = key_headers(profile, key)
        http = ProviderHTTP(
            provider=profile.provider.value,
            url=f"{base}/chat/completions",
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
            quirks=found,
        )
        self._system_role: Literal["system", "developer"] = system_role
        self._max_tokens_field: wire.MaxTokensField = max_tokens_field

    def _encode(self, request: ModelRequest, *, stream: bool) -> Result[dict[str, Any], WireError]:
        return wire.encode_request(
            request,
            model=self._model,
            stream=stream,
            system_role=self._system_role,
            max_tokens_field=self._max_tokens_field,
        )
