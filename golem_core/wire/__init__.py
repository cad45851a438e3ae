"""Pure wire codecs: provider request bodies out, assistant messages and errors in.

One module per provider API, each with the same shape: ``encode_request(request, *,
model, stream)`` returns the JSON body (or ``Failure(WireError)`` for content the
provider cannot take), ``decode_response(body)`` the assistant ``Message``,
``StreamDecoder`` turns server-sent events into deltas and then the message, and
``decode_error(status, headers, body)`` reads a failed response. No I/O anywhere:
``golem_shell.models`` sends the bytes.

- ``golem_core.wire.openai``: OpenAI Chat Completions and compatible servers;
- ``golem_core.wire.openai_responses``: the OpenAI Responses API;
- ``golem_core.wire.anthropic``: Anthropic Messages;
- ``golem_core.wire.gemini``: the Google Gemini API (the model and the choice of stream
  are in the request path, ``request_path(model, stream=...)``, not the body).

The room also holds what the codecs share: ``_common`` (errors, ids), ``_cache`` (cache
markers), ``_arguments``, ``_stream`` (the stream accumulator) and ``_sse`` (the SSE
decoder behind ``golem_core.sse``). May import: the ground of ``golem_core``
(``_messages``, ``_model``, ``_identity``, ``_retry``) and ``codec/``; never
``history/`` or ``loop/``, which import it.
"""

from golem_core.wire._arguments import TRUNCATED_ARGS_KEY, wire_arguments
from golem_core.wire._common import WireError, call_as_text, result_as_text
from golem_core.wire._sse import ServerSentEvent, SSEDecoder, SSEError
from golem_core.wire._stream import StreamAccumulator, text_deltas

__all__ = [
    "TRUNCATED_ARGS_KEY",
    "SSEDecoder",
    "SSEError",
    "ServerSentEvent",
    "StreamAccumulator",
    "WireError",
    "call_as_text",
    "result_as_text",
    "text_deltas",
    "wire_arguments",
]

from golem_core.public import claim_public_names as _claim_public_names

_claim_public_names(globals())  # reprs and tracebacks name this module
