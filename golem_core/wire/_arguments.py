"""The arguments object every adapter sends for a tool call.

Owns ADR 0026's wire shape. A call's arguments are stored as the model's raw bytes;
on the wire a provider wants an object. A JSON object is sent as itself; anything else
(a stream cut mid-arguments, an array, a bare scalar, ``NaN`` or ``1e400``, lone
surrogates, nesting deeper than ``MAX_ARGUMENT_DEPTH``) is sent as
``{"truncated_args": "<verbatim>"}``, so the model sees a shaped call that names the
failure instead of the request being rejected, and replays stay byte-identical.
"""

from __future__ import annotations

from golem_core._messages import ToolCallPart

__all__ = ["TRUNCATED_ARGS_KEY", "wire_arguments"]

TRUNCATED_ARGS_KEY = "truncated_args"
"""The key under which arguments that are not a JSON object travel, verbatim."""


def wire_arguments(call: ToolCallPart) -> dict[str, object]:
    """The object an adapter sends as ``call``'s arguments.

    Args:
        call: A tool call as stored.

    Returns:
        A fresh dict every time (changing it never touches the part's cached parse):
        the arguments parsed as a JSON object (``{}`` for empty or whitespace-only
        arguments), or ``{"truncated_args": call.arguments}`` with the string verbatim
        when they are not a JSON object. Total and deterministic.
    """
    parsed = call.arguments_object  # a fresh copy
    if parsed is None:
        return {TRUNCATED_ARGS_KEY: call.arguments}
    return parsed
