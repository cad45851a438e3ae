"""The pure stream accumulator: model deltas in, one assistant message out.

Owns how fragments become parts: text and thinking deltas append to the part of their
kind and index, a tool call's id and name are taken from its first fragment that has
them and its arguments are concatenated in arrival order, whatever the interleaving of
indices. Parts keep the order in which their first fragment arrived, so a streamed
message equals the non-streamed one for the same content.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from golem_core._messages import Message, Part, Role, TextPart, ThinkingPart, ToolCallPart, Usage
from golem_core._model import ModelDelta, TextDelta, ThinkingDelta, ToolCallDelta

__all__ = ["StreamAccumulator", "text_deltas"]

_Key = tuple[str, int]


class _Building:
    __slots__ = ("call_id", "kind", "name", "redacted", "signature", "text")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.text: list[str] = []
        self.signature: str | None = None
        self.redacted = False
        self.call_id: str | None = None
        self.name: str | None = None

    def part(self) -> Part:
        text = "".join(self.text)
        if self.kind == "tool_call":
            return ToolCallPart(self.call_id, self.name or "", text)
        if self.kind == "thinking":
            return ThinkingPart(text, signature=self.signature, redacted=self.redacted)
        return TextPart(text)


class StreamAccumulator:
    """Deltas folded into the message they build.

    A builder, not a value: ``add`` changes it in place (linear in the stream, where a
    persistent value would copy on every delta). Deterministic and effect-free: the
    same deltas in the same order give the same message.
    """

    __slots__ = ("_building",)

    def __init__(self) -> None:
        self._building: dict[_Key, _Building] = {}

    def add(self, delta: ModelDelta) -> None:
        """Fold ``delta`` in."""
        tp = type(delta)
        if tp is ToolCallDelta:
            assert isinstance(delta, ToolCallDelta)
            b = self._get(("tool_call", delta.index))
            if delta.arguments:
                b.text.append(delta.arguments)
            if b.call_id is None and delta.id:
                b.call_id = delta.id
            if b.name is None and delta.name:
                b.name = delta.name
        elif tp is ThinkingDelta:
            assert isinstance(delta, ThinkingDelta)
            b = self._get(("thinking", delta.index))
            if delta.text:
                b.text.append(delta.text)
            if delta.signature is not None:
                b.signature = delta.signature
            b.redacted = b.redacted or delta.redacted
        else:
            assert isinstance(delta, TextDelta)
            b = self._get(("text", delta.index))
            if delta.text:
                b.text.append(delta.text)

    def add_all(self, deltas: Iterable[ModelDelta]) -> StreamAccumulator:
        """Fold every delta in, in order; returns ``self`` for chaining."""
        for d in deltas:
            self.add(d)
        return self

    def _get(self, key: _Key) -> _Building:
        b = self._building.get(key)
        if b is None:
            b = self._building[key] = _Building(key[0])
        return b

    @property
    def parts(self) -> tuple[Part, ...]:
        """The parts built so far, in order of first arrival; empty text parts omitted."""
        out: list[Part] = []
        for b in self._building.values():
            part = b.part()
            if type(part) is TextPart and not part.text:
                continue
            out.append(part)
        return tuple(out)

    def message(
        self,
        *,
        model: str | None = None,
        usage: Usage | None = None,
        finish_reason: str | None = None,
        created_at: datetime | None = None,
    ) -> Message:
        """The assistant message the deltas built."""
        return Message(
            Role.ASSISTANT,
            self.parts,
            model=model,
            usage=usage,
            finish_reason=finish_reason,
            created_at=created_at,
        )


def text_deltas(text: str) -> tuple[TextDelta, ...]:
    """Split text into word-sized deltas (for offline models that fake a stream)."""
    out: list[TextDelta] = []
    start = 0
    for i, ch in enumerate(text):
        if ch == " ":
            out.append(TextDelta(text[start : i + 1]))
            start = i + 1
    if start < len(text):
        out.append(TextDelta(text[start:]))
    return tuple(out)
