"""Neutral workload dicts to golem messages (the peers' converters live in ``peers.py``).

One neutral message becomes one golem ``Message``: ``system`` and ``user`` hold their
text; an ``assistant`` message its text (when not ``None``) then one ``ToolCallPart``
per call, arguments kept verbatim; a ``tool`` message is a result answering
``tool_call_id``, its text the evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.workload import NeutralMessage
from golem_core import Message, Part, Role, TextPart, ToolCallPart

__all__ = ["to_golem"]


def to_golem(messages: Sequence[NeutralMessage]) -> tuple[Message, ...]:
    """The golem history of neutral messages (fresh objects on every call)."""
    out: list[Message] = []
    for m in messages:
        role = m["role"]
        if role == "assistant":
            parts: list[Part] = [] if m["text"] is None else [TextPart(m["text"])]
            parts.extend(ToolCallPart(c["id"], c["name"], c["arguments"]) for c in m["tool_calls"])
            out.append(Message(Role.ASSISTANT, tuple(parts)))
        elif role == "tool":
            out.append(Message.tool_result(m["tool_call_id"], m["tool_name"], m["text"]))
        elif role == "user":
            out.append(Message.user(m["text"]))
        else:
            out.append(Message.system(m["text"]))
    return tuple(out)
