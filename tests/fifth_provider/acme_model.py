"""The adapter of Acme, the fictional fifth provider of ``acme_wire.py`` (copied to
``golem_shell/models/acme.py`` in a copy of golem by
``tests/test_registry.py``)."""

from __future__ import annotations

from typing import Any

import httpx
from returns.result import Result

from golem_core import ModelRequest
from golem_core.providers import Provider
from golem_core.wire import WireError
from golem_core.wire import acme as wire  # type: ignore[attr-defined]
from golem_shell.models._adapter import HTTPModel, key_and_base, key_headers
from golem_shell.models._http import DEFAULT_RETRY, DEFAULT_TIMEOUT, ProviderHTTP

__all__ = ["AcmeModel"]


class AcmeModel(HTTPModel):
    """A model behind Acme's API, ``POST {base_url}/chat/completions``."""

    provider = Provider.ACME  # type: ignore[attr-defined]

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        profile = self.profile_of_class()
        key, base, late = key_and_base(profile, api_key, base_url, vendor="Acme")
        http = ProviderHTTP(
            provider=profile.provider.value,
            url=f"{base}/chat/completions",
            headers=key_headers(profile, key),
            secret=key,
            late_key=late,
            http_client=http_client,
            timeout=DEFAULT_TIMEOUT,
            retry=DEFAULT_RETRY,
            decode_error=wire.decode_error,
        )
        super().__init__(model, http=http, settings=None)

    def _encode(self, request: ModelRequest, *, stream: bool) -> Result[dict[str, Any], WireError]:
        result: Result[dict[str, Any], WireError] = wire.encode_request(
            request, model=self._model, stream=stream
        )
        return result
