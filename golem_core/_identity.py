"""Run and conversation identity: which messages a run stamps, and which conversation it joins.

Owns the seed's rules: a run stamps its run id and conversation id on the messages it
adds, never on the history it received; the conversation id is the explicit one, else
the one donated by the most recent identified message of the history, else a new one
that the caller mints.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from golem_core._messages import Message

__all__ = ["conversation_id_of", "stamp"]


def conversation_id_of(history: Sequence[Message], explicit: str | None = None) -> str | None:
    """The conversation a run on ``history`` belongs to, or ``None`` when it starts one.

    ``explicit`` wins when given; else the most recent message of ``history`` that
    carries a conversation id donates it. Total and deterministic.
    """
    if explicit is not None:
        return explicit
    for message in reversed(history):
        if message.conversation_id is not None:
            return message.conversation_id
    return None


def stamp(messages: Sequence[Message], run_id: str, conversation_id: str) -> tuple[Message, ...]:
    """Stamp the messages a run adds with its run and conversation ids.

    Only for messages the run itself produced (prompt, model turns, tool results):
    history the run received keeps the stamps it carried in. Idempotent.
    """
    return tuple(
        m
        if m.run_id == run_id and m.conversation_id == conversation_id
        else attrs.evolve(m, run_id=run_id, conversation_id=conversation_id)
        for m in messages
    )
