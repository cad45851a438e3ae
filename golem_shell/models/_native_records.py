"""What an answer holding a provider's native compaction was built from (issue 48).

Owns ``built_from`` (the references a compaction of some messages names: each message,
and what their own compaction records name) and ``native_compaction_recorded`` (an
answer holding its provider's compaction, carrying the record naming the request's
messages: ADR 0148 with ADR 0143), which every HTTP adapter applies to its answers.
Pure; loads no HTTP client (``native_compaction`` imports it too).
"""

from __future__ import annotations

from collections.abc import Sequence

from golem_core import (
    CompactionRecord,
    Message,
    ModelRequest,
    Role,
    TextPart,
    approximate_tokens,
    compaction_of,
    message_ref,
    with_compaction,
)
from golem_core.providers import Target

__all__ = ["built_from", "native_compaction_recorded"]


def built_from(messages: Sequence[Message]) -> tuple[str, ...]:
    """The references of what ``messages`` hold: each non-system message, and before it
    every message its compaction record names (a summary that may be stored nowhere),
    each once, oldest first."""
    refs: dict[str, None] = {}
    for m in messages:
        if m.role is Role.SYSTEM:
            continue
        record = compaction_of(m) if m.extra else None
        if record is not None:
            refs.update(dict.fromkeys(record.replaced))
        refs[message_ref(m)] = None
    return tuple(refs)


def native_compaction_recorded(request: ModelRequest, answer: Message, target: Target) -> Message:
    """``answer`` carrying a compaction record when it holds a compaction its provider
    made of the request (ADR 0148: an Anthropic ``compaction`` block summarizes every
    message it was sent): the record (kind ``summary``) names every message of
    ``request`` and what their own records name, so erasing any of them makes the
    block stale (ADR 0143). An answer holding no such compaction, only a void one (the
    rule's ``removed``: an empty, failed block) or a record already comes back as it is.
    Total, deterministic."""
    rule = target.profile.compaction
    if rule is None or compaction_of(answer) is not None:
        return answer
    if not any(
        type(p) is TextPart and any(k == rule.marker for k, _ in p.extra) and p != rule.removed
        for p in answer.parts
    ):
        return answer
    record = CompactionRecord(
        f"{target.provider.value} native compaction ({target.model})",
        "summary",
        replaced=built_from(request.messages),
        tokens_before=sum(
            approximate_tokens(m) for m in request.messages if m.role is not Role.SYSTEM
        ),
        tokens_after=approximate_tokens(answer),
    )
    return with_compaction(answer, record)
