"""Server-sent events, framed purely (the shell's HTTP adapters read the bytes): the
decoder, its events and errors, and the default bound on one line."""

from golem_core.wire._sse import DEFAULT_MAX_LINE_BYTES, ServerSentEvent, SSEDecoder, SSEError

__all__ = ["DEFAULT_MAX_LINE_BYTES", "SSEDecoder", "SSEError", "ServerSentEvent"]

from golem_core.public import claim_public_names as _claim_public_names

_claim_public_names(globals())  # reprs and tracebacks name this module
