"""Tombstones: a message (or some of its parts) erased, with the history left valid.

Pure: ``erase_message`` turns a message into its tombstone and never touches pairing.
A tool call keeps its id and name (its arguments become ``{}``), a tool result keeps the
call id it answers and says its content was erased, every other erased part becomes one
text saying so. The message keeps its role and metadata (ids, time, model, usage) and
gains the additive JSON field ``"erased": true``; a ``provenance`` signature is dropped
(it signed content that is gone), and so are unknown fields when the whole message goes.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from golem_core import Message, Part, Role, TextPart, ToolCallPart

__all__ = ["ERASED_RESULT_TEXT", "ERASED_TEXT", "PartFilter", "erase_message"]

ERASED_TEXT = "[erased]"
ERASED_RESULT_TEXT = "[erased] the content of this tool result was erased"
ERASED_FIELD = ("erased", "true")

PartFilter = Callable[[Part], bool]
"""Which parts of a selected message to erase (``None``: all of them)."""


def _erased_part(role: Role) -> TextPart:
    return TextPart(ERASED_RESULT_TEXT if role is Role.TOOL else ERASED_TEXT)


def erase_message(message: Message, parts: PartFilter | None = None) -> Message | None:
    """The tombstone of ``message`` (``None``: nothing left to erase, it is unchanged).

    Total, deterministic and idempotent: erasing a tombstone again changes nothing.
    """
    tombstone = _erased_part(message.role)
    kept: list[Part] = []
    changed = False
    for part in message.parts:
        if parts is not None and not parts(part):
            kept.append(part)
            continue
        if type(part) is ToolCallPart and message.role is Role.ASSISTANT:
            erased_call = ToolCallPart(id=part.id, name=part.name, arguments="{}")
            changed |= erased_call != part
            kept.append(erased_call)
        elif part == tombstone:
            kept.append(part)
        else:
            changed = True
            if not (kept and kept[-1] == tombstone):
                kept.append(tombstone)
    if parts is None and not message.parts and message.role is not Role.ASSISTANT:
        kept.append(tombstone)
        changed = True
    extra = tuple((k, v) for k, v in message.extra if k != "provenance")
    if parts is None:
        extra = ()
    if ERASED_FIELD not in extra:
        extra = (*extra, ERASED_FIELD)
    if parts is None:  # the whole message was selected: its unknown fields go too
        changed |= extra != message.extra
    if not changed:
        return None
    return attrs.evolve(message, parts=tuple(kept), extra=extra)
