"""Compaction records: what a fold of a history did, anchored to the messages it replaced.

Owns the record a compacting processor (a summary, a clear of old tool results) leaves in
the history it returns, and the words for how an attempt to compact ended (ADR 0140):

- **message references**: ``message_ref(m)`` names a message by what it is, not where it
  sits: ``"m:"`` and the first 32 hex digits of SHA-256 over the message's canonical JSON
  (``canonical_bytes``: stamps included, its own signature left out). A message keeps its
  reference when the messages before it are cut, moved or erased, and in every store
  (a function of the JSON value only);
- **the record**, ``CompactionRecord``: the processor, the kind of fold (``summary`` or
  ``cleared``), the references of the messages it replaced (in order), the tokens of the
  history before and after (by the processor's own counter), the outcome, and the usage
  of a summarizing request. It travels as the additive JSON field ``"compaction"`` on the
  message that holds the fold (the summary; the newest cleared result), kept in
  ``Message.extra`` like the summary marker (ADR 0044): every version stores it and
  writes it back, wire encoders never send it;
- **outcomes**: ``compacted``, ``declined: nothing to fold``, ``declined: a pending
  call``, ``failed: <reason>``. Only a compacted fold is written into a history; the
  others are reported in events (``CompactionFinished``);
- **the probe**: ``probe_history(before, after, facts)`` says which facts a compacted
  history still holds (in a kept message or in the fold's own text), and whether pairing
  and a pending call survived (``golem_core.testing.compaction_probe`` runs a strategy
  and probes it).

Every function here is total and deterministic.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs
from attrs import field, frozen

from golem_core._messages import Message, Role, TextPart, ThinkingPart, ToolCallPart, Usage
from golem_core.history._history import check_pairing
from golem_core.history._processors import _open_tail
from golem_core.history._provenance import canonical_bytes

__all__ = [
    "COMPACTED",
    "COMPACTION_KEY",
    "DECLINED_NOTHING_TO_FOLD",
    "DECLINED_PENDING_CALL",
    "CompactionKind",
    "CompactionProbe",
    "CompactionRecord",
    "FactCheck",
    "compaction_of",
    "compaction_records",
    "failed_outcome",
    "message_ref",
    "new_compactions",
    "probe_history",
    "with_compaction",
]

COMPACTION_KEY: Final = "compaction"
"""The JSON field that holds a compaction record (kept in ``Message.extra``)."""

COMPACTED: Final = "compacted"
"""The outcome of a fold that replaced messages."""
DECLINED_NOTHING_TO_FOLD: Final = "declined: nothing to fold"
"""The outcome when nothing older than what a strategy keeps could be folded."""
DECLINED_PENDING_CALL: Final = "declined: a pending call"
"""The outcome when the only messages a fold could take hold a call waiting for its
result (an approval, a deferred result): a fold never touches one."""

CompactionKind: TypeAlias = Literal["summary", "cleared", "cut"]
"""What a fold left in place of the messages it replaced: one summary message, the same
messages with their content cleared, or nothing (a cut, reported by compact-and-retry for
a strategy that writes no record of its own)."""


def failed_outcome(reason: str) -> str:
    """The outcome of a fold that failed: ``"failed: <reason>"`` (one line)."""
    return "failed: " + " ".join(reason.split())


def message_ref(message: Message) -> str:
    """The reference a compaction record names ``message`` by: ``"m:<32 hex digits>"``.

    SHA-256 of the message's canonical JSON (``canonical_bytes``: its stamps included,
    its own ``provenance`` signature left out), so the reference is the message's, not
    its place's: it survives cuts before it, round trips through the codec and every
    store, and signing. Two messages with equal JSON (no stamps, same content) share a
    reference; a record lists each replaced message in order, repeats included.
    Total and deterministic.
    """
    data = canonical_bytes(message)
    if data is None:  # not standard JSON (it cannot be stored either): named by its repr
        data = b"unwritable:" + repr(message).encode("utf-8", "surrogatepass")
    return "m:" + hashlib.sha256(data).hexdigest()[:32]


@frozen
class CompactionRecord:
    """What one fold did: the messages it replaced (by ``message_ref``), who folded them,
    and what it saved.

    Attributes:
        processor: The processor's name (its ``repr``).
        kind: ``"summary"`` (one summary message stands for them) or ``"cleared"`` (they
            kept their place; their content was cleared).
        replaced: The references of the replaced messages as they were before the fold,
            oldest first.
        tokens_before: Tokens of the history's non-system messages before the fold, by
            the processor's counter.
        tokens_after: The same after the fold.
        outcome: ``COMPACTED`` for a record written into a history; a record built for a
            report may hold a declined or failed outcome (then ``replaced`` is empty).
        usage: What a summarizing request cost, when the fold asked a model.
    """

    processor: str
    kind: CompactionKind = "summary"
    replaced: tuple[str, ...] = field(default=(), kw_only=True)
    tokens_before: int = field(default=0, kw_only=True)
    tokens_after: int = field(default=0, kw_only=True)
    outcome: str = field(default=COMPACTED, kw_only=True)
    usage: Usage | None = field(default=None, kw_only=True)

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object the ``"compaction"`` field holds (camelCase keys;
        ``usage`` only when set, as input and output tokens)."""
        out: dict[str, Any] = {
            "processor": self.processor,
            "kind": self.kind,
            "replaced": list(self.replaced),
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
            "outcome": self.outcome,
        }
        if self.usage is not None:
            out["usage"] = {
                "inputTokens": self.usage.input_tokens,
                "outputTokens": self.usage.output_tokens,
            }
        return out

    @classmethod
    def from_json(cls, value: object) -> CompactionRecord | None:
        """The record a ``"compaction"`` object holds, or ``None`` when it is not one this
        version reads (a newer or foreign shape: the field is still kept as written)."""
        if not isinstance(value, dict):
            return None
        processor, kind, replaced = value.get("processor"), value.get("kind"), value.get("replaced")
        before, after = value.get("tokensBefore"), value.get("tokensAfter")
        outcome = value.get("outcome", COMPACTED)
        if (
            not isinstance(processor, str)
            or kind not in ("summary", "cleared", "cut")
            or not isinstance(replaced, list)
            or not all(isinstance(r, str) for r in replaced)
            or type(before) is not int
            or type(after) is not int
            or before < 0
            or after < 0
            or not isinstance(outcome, str)
        ):
            return None
        usage = _usage(value.get("usage"))
        return cls(
            processor,
            kind,
            replaced=tuple(replaced),
            tokens_before=before,
            tokens_after=after,
            outcome=outcome,
            usage=usage,
        )

    def describe(self) -> str:
        """One line for a log: the processor, what it replaced and what it saved."""
        what = {"summary": "summarized", "cleared": "cleared", "cut": "cut"}[self.kind]
        return (
            f"{self.processor}: {self.outcome}, {what} {len(self.replaced)} messages "
            f"(tokens {self.tokens_before} -> {self.tokens_after})"
        )


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


def _usage(value: object) -> Usage | None:
    if not isinstance(value, dict):
        return None
    i, o = value.get("inputTokens", 0), value.get("outputTokens", 0)
    return Usage(i, o) if _count(i) and _count(o) else None


def compaction_of(message: Message) -> CompactionRecord | None:
    """The compaction record ``message`` holds, or ``None``. Total."""
    for key, text in message.extra:
        if key == COMPACTION_KEY:
            try:
                return CompactionRecord.from_json(json.loads(text))
            except (ValueError, RecursionError):
                return None
    return None


def with_compaction(message: Message, record: CompactionRecord) -> Message:
    """``message`` holding ``record`` in its ``"compaction"`` field (replacing one it held).
    Total, idempotent."""
    text = json.dumps(record.to_json(), ensure_ascii=False, separators=(",", ":"))
    kept = tuple((k, v) for k, v in message.extra if k != COMPACTION_KEY)
    return attrs.evolve(message, extra=(*kept, (COMPACTION_KEY, text)))


def compaction_records(history: Sequence[Message]) -> tuple[CompactionRecord, ...]:
    """Every compaction record ``history`` holds, oldest first. Total."""
    out: list[CompactionRecord] = []
    for message in history:
        if message.extra:
            record = compaction_of(message)
            if record is not None:
                out.append(record)
    return tuple(out)


def new_compactions(
    before: Sequence[Message], after: Sequence[Message]
) -> tuple[CompactionRecord, ...]:
    """The records ``after`` holds that ``before`` does not: the folds a processor made.
    Total and deterministic."""
    known = set(compaction_records(before))
    return tuple(r for r in compaction_records(after) if r not in known)


# -- the probe: what a fold kept (issue 35 item 6) ----------------------------------------


@frozen
class FactCheck:
    """Whether one fact is still in a compacted history: ``found_in`` is ``"kept"`` (a
    message the fold kept as it was), ``"summary"`` (the fold's own text), or ``None``
    (lost)."""

    fact: str
    found_in: Literal["kept", "summary"] | None

    @property
    def survived(self) -> bool:
        """Whether the compacted history still holds the fact."""
        return self.found_in is not None


@frozen
class CompactionProbe:
    """What a compaction strategy did to one history, and which facts came through.

    Attributes:
        outcome: ``COMPACTED``, a ``declined: ...`` outcome (the history came back
            unchanged) or ``failed: <reason>``.
        compacted: The history the strategy returned (the input when it declined or
            failed).
        facts: One ``FactCheck`` per fact, in the order given.
        pairing_kept: The output has no pairing problem its input did not have.
        pending_kept: The turn of a call waiting for its result came back unchanged at
            the end (``True`` when there was none).
    """

    outcome: str
    compacted: tuple[Message, ...]
    facts: tuple[FactCheck, ...]
    pairing_kept: bool
    pending_kept: bool

    @property
    def lost(self) -> tuple[str, ...]:
        """The facts the compacted history no longer holds."""
        return tuple(f.fact for f in self.facts if not f.survived)

    @property
    def survival(self) -> float:
        """The share of facts that survived (1.0 for no facts)."""
        return 1.0 if not self.facts else sum(f.survived for f in self.facts) / len(self.facts)


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def _message_text(message: Message) -> str:
    pieces: list[str] = []
    for part in message.parts:
        if type(part) is TextPart or type(part) is ThinkingPart:
            pieces.append(part.text)
        elif type(part) is ToolCallPart:
            pieces.append(f"{part.name} {part.arguments}")
    return _folded(" ".join(pieces))


def probe_history(
    before: Sequence[Message], after: Sequence[Message], facts: Sequence[str], *, outcome: str
) -> CompactionProbe:
    """The probe of a fold already made: which ``facts`` (case and spacing ignored) the
    ``after`` history holds, and whether pairing and the pending turn survived.

    Total and deterministic; ``compaction_probe`` (``golem_core.testing``) and
    ``golem_shell``'s model probe build on it.
    """
    originals = set(before)
    kept_text = " ".join(_message_text(m) for m in after if m in originals)
    new_text = " ".join(_message_text(m) for m in after if m not in originals)
    checks: list[FactCheck] = []
    for fact in facts:
        needle = _folded(fact)
        where: Literal["kept", "summary"] | None = (
            "kept" if needle in kept_text else "summary" if needle in new_text else None
        )
        checks.append(FactCheck(fact, where))
    pending = _open_tail(before)
    pending_kept = True
    if pending is not None:
        opening = [i for i in range(pending + 1) if before[i].role is Role.USER]
        tail = tuple(before[opening[-1] if opening else 0 :])
        pending_kept = tuple(after[len(after) - len(tail) :]) == tail
    return CompactionProbe(
        outcome,
        tuple(after),
        tuple(checks),
        len(check_pairing(after)) <= len(check_pairing(before)),
        pending_kept,
    )
