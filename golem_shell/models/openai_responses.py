"""The OpenAI Responses API adapter (``POST {base}/responses``).

Only configuration lives here: the key and base URL (the same ``OPENAI_API_KEY`` and
``OPENAI_BASE_URL`` as the Chat Completions adapter), the headers, whether to keep
encrypted reasoning, and which pure codec (``golem_core.wire.openai_responses``) encodes
and decodes. ``_http.py`` does the HTTP; it opens one client per event loop, so a model
can serve any number of ``asyncio.run`` calls (every ``_sync`` method of an Agent).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs
import httpx
from returns.result import Failure, Result, Success

from golem_core import Message, ModelRequest, ModelSettings
from golem_core.providers import Provider
from golem_core.retry import RetryPolicy
from golem_core.wire import WireError
from golem_core.wire import openai_responses as wire
from golem_shell._errors import UsageError
from golem_shell.models._adapter import HTTPModel, key_and_base, key_headers
from golem_shell.models._http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_RETRY,
    DEFAULT_TIMEOUT,
    ProviderHTTP,
    encode_json,
)
from golem_shell.models._settings import merge_settings

__all__ = ["OpenAIResponsesModel", "ReasoningEffort", "ReasoningSummary"]

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
"""How hard a reasoning model thinks (``reasoning.effort``)."""
ReasoningSummary = Literal["auto", "concise", "detailed"]
"""Which reasoning summary to ask for (``reasoning.summary``)."""

_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
_SUMMARIES = ("auto", "concise", "detailed")


class OpenAIResponsesModel(HTTPModel):
    """A model behind the OpenAI Responses API, ``POST {base_url}/responses``.

    Every request is stateless (``store: false``): the conversation golem sends is the
    whole state. A reasoning model's reasoning comes back encrypted, is kept on the
    assistant message (a ``ThinkingPart`` whose ``extra`` holds the item id and the
    encrypted content; ADR 0049) and is sent back on the next request.

    Args:
        model: the model name, e.g. ``"gpt-5"`` or ``"gpt-4.1-mini"``.
        api_key: the key; default ``OPENAI_API_KEY``. Required for the default base
            URL; a custom base URL may need none, and then no ``Authorization`` header
            is sent.
        base_url: default ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.
        http_client: your ``httpx.AsyncClient``; it stays yours to close. Without one
            the model creates one per event loop: close it with ``aclose()`` or
            ``async with``.
        timeout: seconds (or an ``httpx.Timeout``) for every request, also on your
            client: connecting, and waiting between two reads of a response.
        retry: how failed requests are retried.
        encrypted_reasoning: ask for and send back encrypted reasoning
            (``include: ["reasoning.encrypted_content"]``). Default: on for reasoning
            models (o-series, gpt-5), off for others, which refuse it.
        reasoning_effort: ``reasoning.effort`` for reasoning models.
        reasoning_summary: ``reasoning.summary``: ask for readable summaries of the
            reasoning (some organizations must be verified for this).
        settings: defaults for the request settings a run leaves unset.
        max_response_bytes: the largest response body or stream read.

    Raises:
        UsageError: no key for the default base URL, a base URL that is not http(s),
            or an unknown reasoning effort or summary.
    """

    provider = Provider.OPENAI_RESPONSES
    supports_native_output = True
    """Honours ``ModelRequest.output_schema`` (``text.format``: ``output_mode="native"``)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy = DEFAULT_RETRY,
        encrypted_reasoning: bool | None = None,
        reasoning_effort: ReasoningEffort | None = None,
        reasoning_summary: ReasoningSummary | None = None,
        settings: ModelSettings | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        profile = self.profile_of_class()
        key, base, late = key_and_base(profile, api_key, base_url, vendor="OpenAI")
        if reasoning_effort is not None and reasoning_effort not in _EFFORTS:
            raise UsageError(
                f"reasoning_effort must be one of {', '.join(_EFFORTS)}, got {reasoning_effort!r}"
            )
        if reasoning_summary is not None and reasoning_summary not in _SUMMARIES:
            raise UsageError(
                f"reasoning_summary must be one of {', '.join(_SUMMARIES)},"
                f" got {reasoning_summary!r}"
            )
        headers = key_headers(profile, key)
        http = ProviderHTTP(
            provider=profile.provider.value,
            url=f"{base}/responses",
            headers=headers,
            secret=key,
            late_key=late,
            http_client=http_client,
            timeout=timeout,
            retry=retry,
            decode_error=wire.decode_error,
            max_response_bytes=max_response_bytes,
        )
        self._compact_http = ProviderHTTP(
            provider=profile.provider.value,
            url=f"{base}/responses/compact",
            headers=headers,
            secret=key,
            late_key=late,
            http_client=http_client,
            timeout=timeout,
            retry=retry,
            decode_error=wire.decode_error,
            max_response_bytes=max_response_bytes,
        )
        self._encrypted_reasoning = (
            wire.supports_encrypted_reasoning(model)
            if encrypted_reasoning is None
            else encrypted_reasoning
        )
        super().__init__(
            model,
            http=http,
            settings=settings,
            replays_reasoning=self._encrypted_reasoning,
        )
        reasoning: dict[str, str] = {}
        if reasoning_effort is not None:
            reasoning["effort"] = reasoning_effort
        if reasoning_summary is not None:
            reasoning["summary"] = reasoning_summary
        self._reasoning = reasoning

    @property
    def encrypted_reasoning(self) -> bool:
        """Whether requests ask for, and send back, encrypted reasoning."""
        return self._encrypted_reasoning

    @property
    def compact_url(self) -> str:
        """The endpoint ``compact`` posts to: ``{base_url}/responses/compact``."""
        return self._compact_http.url

    async def compact(self, request: ModelRequest) -> tuple[Message, ...]:
        """Compact ``request``'s history with OpenAI's own compaction
        (``POST {base_url}/responses/compact``, ADR 0148).

        The history is ported to this model first (artifacts of other origins left off,
        as for a request); the request's ``instructions`` and cache key travel with it.

        Returns:
            The compacted window: the user messages OpenAI kept, then one assistant
            message (this model's origin and the pass's usage) holding the ``compaction``
            item; later requests to this model send it back, other models leave it off.

        Raises:
            ModelError: the request failed (after retries) or the answer holds no
                compaction item.
            UsageError: nothing to compact.
        """
        ported, _ = self.ported(request)
        ported = attrs.evolve(ported, settings=merge_settings(self._settings, ported.settings))
        match wire.encode_compact_request(
            ported, model=self._model, encrypted_reasoning=self._encrypted_reasoning
        ):
            case Success(value):
                body: dict[str, Any] = value
            case Failure(error):
                raise UsageError(f"{self.name}: {error.message}")
        got: list[tuple[Message, ...]] = []

        def decode(payload: object) -> Result[Message, WireError]:
            def keep(messages: tuple[Message, ...]) -> Message:
                got.append(tuple(self._asked(m) if m.provider else m for m in messages))
                return messages[-1]

            return wire.decode_compact_response(payload, origin=self._origin).map(keep)

        await self._compact_http.post(encode_json(body), decode)
        return got[-1]

    async def aclose(self) -> None:
        """Close the clients this model owns (requests and compaction)."""
        await super().aclose()
        await self._compact_http.aclose()

    def _encode(self, request: ModelRequest, *, stream: bool) -> Result[dict[str, Any], WireError]:
        return wire.encode_request(
            request,
            model=self._model,
            stream=stream,
            encrypted_reasoning=self._encrypted_reasoning,
            reasoning=self._reasoning or None,
        )
