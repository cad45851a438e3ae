"""Searching a stored conversation for what compaction took out of the window.

Owns the search the recall tool runs (issue 35 item 5, ADR 0144): ``search_messages``
ranks the messages of a stored branch by how many of a query's words each holds (case
and spacing ignored) and returns the best ``limit`` as ``Recalled`` values, each with
its position in the branch. It reads only what it is given: what the store holds for
one owner's conversation, where an erased message is already a tombstone (its text
``[erased]``), so erased content is never found. Summaries are left out (they are what
the model already has; a stale one holds nothing). Pure: total and deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from golem_core import Message, Role, TextPart, ToolCallPart, is_summary
from golem_shell.store._tombstone import ERASED_RESULT_TEXT, ERASED_TEXT

__all__ = ["Recalled", "search_messages"]


@frozen
class Recalled:
    """One stored message a recall found: its position in the branch, role and text
    (a tool call as ``name(arguments)``)."""

    position: int
    role: Role
    text: str

    def render(self) -> str:
        """One line block for the model: ``[message 12, user] ...``."""
        return f"[message {self.position}, {self.role.value}] {self.text}"


def _text(message: Message) -> str:
    pieces: list[str] = []
    for part in message.parts:
        if type(part) is TextPart and part.text not in (ERASED_TEXT, ERASED_RESULT_TEXT):
            pieces.append(part.text)
        elif type(part) is ToolCallPart:
            pieces.append(f"{part.name}({part.arguments})")
    return "\n".join(pieces)


def search_messages(
    messages: Sequence[Message], query: str, *, limit: int = 5
) -> tuple[Recalled, ...]:
    """The messages holding the most words of ``query``, at most ``limit``.

    A message counts when its text holds at least one of the query's words (as
    substrings, case ignored); more words rank first, then the older message. Summaries,
    system messages and the ``[erased]`` text of tombstones are skipped. Total and deterministic.

    Raises:
        ValueError: ``query`` has no words, or ``limit`` is not an int from 1 to 50.
    """
    words = sorted({w for w in query.casefold().split() if w})
    if not words:
        raise ValueError("recall needs a query with at least one word")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 50:
        raise ValueError(f"limit must be an int from 1 to 50, got {limit!r}")
    scored: list[tuple[int, int, Recalled]] = []
    for position, message in enumerate(messages):
        if message.role is Role.SYSTEM or is_summary(message):
            continue
        text = _text(message)
        folded = text.casefold()
        hits = sum(1 for w in words if w in folded)
        if hits:
            scored.append((-hits, position, Recalled(position, message.role, text)))
    scored.sort(key=lambda s: (s[0], s[1]))
    return tuple(r for _, _, r in scored[:limit])
