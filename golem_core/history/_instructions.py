"""A run's instructions: how the static and dynamic parts join, and how they replace the
system messages of a history.

Owns the seed's rule that the agent's current instructions govern every request: system
messages in a history are replaced by the instructions resolved for the run, so guidance
never duplicates or goes stale.
"""

from __future__ import annotations

from collections.abc import Sequence

from golem_core._messages import Message, Role

__all__ = ["apply_instructions", "join_instructions"]

_SEPARATOR = "\n\n"


def join_instructions(static: str | None, dynamic: str | None) -> str | None:
    """A run's instructions: the static part, a blank line, the dynamic part.

    A part that is ``None``, empty or only whitespace contributes nothing (no stray
    blank line); the other parts are kept verbatim, never stripped.

    Args:
        static: The agent's fixed instructions.
        dynamic: What the per-run instructions function returned.

    Returns:
        The joined text, or ``None`` when neither part contributes. Total and
        deterministic.
    """
    parts = [p for p in (static, dynamic) if p and not p.isspace()]
    return _SEPARATOR.join(parts) if parts else None


def apply_instructions(history: Sequence[Message], instructions: str | None) -> tuple[Message, ...]:
    """Replace every system message of ``history`` by the run's instructions.

    Every system message is removed wherever it sits; when ``instructions`` is not
    ``None`` (even ``""``: use ``join_instructions`` to get ``None`` for blank parts)
    one ``Message.system(instructions)`` opens the result. The other messages keep their
    order and identity.

    Args:
        history: Any history.
        instructions: The resolved instructions, or ``None`` for none.

    Returns:
        The history the request is built from; the input itself (same tuple) when it
        already has that shape. Total, deterministic and idempotent.
    """
    rest = [m for m in history if m.role is not Role.SYSTEM]
    if instructions is None:
        if len(rest) == len(history):
            return history if type(history) is tuple else tuple(history)
        return tuple(rest)
    head = Message.system(instructions)
    if len(rest) == len(history) - 1 and history[0] == head:
        return history if type(history) is tuple else tuple(history)
    return (head, *rest)
