"""The wire codec of Acme, a fictional fifth provider: Chat Completions, plus a
compaction of its own (a readable summary in the answer's ``acme_compaction`` field).

``tests/test_registry.py`` copies it to ``golem_core/wire/acme.py`` in a
copy of golem, adds Acme's ``Provider`` member and profile to ``_providers.py`` and its
adapter (``acme_model.py``) to ``golem_shell/models``, and runs ``check_acme.py`` there.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
from returns.result import Result

from golem_core._messages import Message, TextPart
from golem_core._model import ModelRequest
from golem_core.wire import openai as _chat
from golem_core.wire._common import Origin, WireError

__all__ = [
    "COMPACTION_KEY",
    "MAX_CALL_ID_LENGTH",
    "PROVIDER",
    "StreamDecoder",
    "decode_error",
    "decode_response",
    "encode_request",
    "media_block",
]

PROVIDER = "Acme"
COMPACTION_KEY = "acmeCompaction"
"""The part ``extra`` key of an Acme compaction (its summary, JSON)."""
MAX_CALL_ID_LENGTH = _chat.MAX_CALL_ID_LENGTH

StreamDecoder = _chat.StreamDecoder
decode_error = _chat.decode_error
media_block = _chat.media_block


def encode_request(
    request: ModelRequest, *, model: str, stream: bool
) -> Result[dict[str, Any], WireError]:
    """A Chat Completions body."""
    return _chat.encode_request(request, model=model, stream=stream)


def decode_response(body: object, *, origin: Origin | None = None) -> Result[Message, WireError]:
    """A Chat Completions answer; its ``acme_compaction`` summary, if any, opens it."""

    def with_compaction(message: Message) -> Message:
        summary = body.get("acme_compaction") if isinstance(body, dict) else None
        if not isinstance(summary, str):
            return message
        part = TextPart(summary, extra=((COMPACTION_KEY, json.dumps(summary)),))
        return attrs.evolve(message, parts=(part, *message.parts))

    return _chat.decode_response(body, origin=origin).map(with_compaction)
