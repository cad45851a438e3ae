"""The benchmark workload: a deterministic, library-neutral conversation (stdlib only).

A neutral message is a plain dict with exactly these keys:

- ``role``: ``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``;
- ``text``: ``str``, or ``None`` on an assistant message that only calls tools;
- ``tool_calls``: a list of ``{"id", "name", "arguments"}`` (``arguments`` is a JSON
  object as a ``str``);
- ``tool_call_id`` and ``tool_name``: ``str`` on tool messages, else ``None``.

``conversation(n, seed)`` is one system message followed by repeating 5-message turns:
a user message (~200 characters), an assistant message with two tool calls
(``get_weather`` and ``search``), their two results (~300 characters each) and a final
assistant text (~400 characters), cut at exactly ``n`` messages (the last turn may be
partial). ``damaged(n, seed)`` breaks its tool pairing: ~2% of the results are removed
(their calls dangle), ~1% are followed by an orphan result, ~1% are duplicated.

This is golem's own implementation of the project's reference workload spec: the same
shapes, sizes and seeds (a seed always gives the same messages, and the same messages
as the reference generator, so figures measured by either compare).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any, TypeAlias

__all__ = ["NeutralMessage", "conversation", "damaged", "pairing_problems"]

NeutralMessage: TypeAlias = dict[str, Any]

_WORD_TEXT = (
    "agent alpha amber anchor apple archive atlas autumn basin beacon binary birch "
    "bridge cable canyon carbon cedar channel cipher cloud cobalt comet copper coral "
    "crystal delta desert drift ember engine falcon fern field flint forest frost "
    "garden glacier granite harbor hazel helix horizon island ivory jade kernel lagoon "
    "lantern ledger lemon linen lunar maple marble meadow meteor mirror mosaic nectar "
    "needle nickel north oasis ocean olive onyx orbit packet paper pearl pepper pixel "
    "planet plaza prairie prism quartz quill radar raven reef ridge river rocket saffron "
    "signal silver slate solar spiral spruce stone summit tablet thistle thunder timber "
    "topaz tower tundra valley vector velvet violet vortex walnut willow winter zenith"
)
_WORDS = _WORD_TEXT.split()

_CITIES = ["Paris", "Lagos", "Osaka", "Lima", "Oslo", "Quito", "Perth", "Cairo", "Dhaka", "Sofia"]

_SYSTEM_TEXT = "You are a helpful assistant. Use the tools when they help. Be brief."
_CORPUS_LEN = 1 << 16
_USER_LEN, _RESULT_LEN, _ANSWER_LEN = 200, 300, 400
_DROP, _ORPHAN, _DUPLICATE = 0.02, 0.03, 0.04  # cumulative thresholds of one draw
_DAMAGE_SEED_OFFSET = 1_000_003


def _corpus(seed: int) -> str:
    """A long string of words the message texts are cut from."""
    rng = random.Random(seed ^ 0x5EED)
    words: list[str] = []
    size = 0
    while size < _CORPUS_LEN + 1024:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


def _text(rng: random.Random, corpus: str, length: int, tag: str) -> str:
    """``length`` characters: ``[tag] `` then a slice of the corpus at a random offset."""
    start = rng.randrange(_CORPUS_LEN - length)
    head = f"[{tag}] "
    return head + corpus[start : start + length - len(head)]


def _message(
    role: str,
    text: str | None = None,
    *,
    tool_calls: list[dict[str, str]] | None = None,
    tool_call_id: str | None = None,
    tool_name: str | None = None,
) -> NeutralMessage:
    return {
        "role": role,
        "text": text,
        "tool_calls": tool_calls or [],
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
    }


def _turns(seed: int) -> Iterator[NeutralMessage]:
    """The endless sequence of 5-message turns after the system message."""
    rng = random.Random(seed)
    corpus = _corpus(seed)
    call_number = 0
    turn = 0
    while True:
        calls: list[dict[str, str]] = []
        for name in ("get_weather", "search"):
            arguments: dict[str, object]
            if name == "get_weather":
                arguments = {"city": rng.choice(_CITIES), "unit": "c"}
            else:
                arguments = {"query": " ".join(rng.choice(_WORDS) for _ in range(3)), "limit": 5}
            calls.append(
                {"id": f"call_{call_number:06d}", "name": name, "arguments": json.dumps(arguments)}
            )
            call_number += 1
        yield _message("user", _text(rng, corpus, _USER_LEN, f"u{turn}"))
        yield _message("assistant", None, tool_calls=calls)
        for call in calls:
            yield _message(
                "tool",
                _text(rng, corpus, _RESULT_LEN, call["id"]),
                tool_call_id=call["id"],
                tool_name=call["name"],
            )
        yield _message("assistant", _text(rng, corpus, _ANSWER_LEN, f"a{turn}"))
        turn += 1


def conversation(n_messages: int, seed: int = 0) -> list[NeutralMessage]:
    """Exactly ``n_messages`` neutral messages: a system message, then 5-message turns.

    Deterministic: the same ``(n_messages, seed)`` always gives equal messages, and a
    shorter conversation is a prefix of a longer one with the same seed.
    """
    if n_messages <= 0:
        return []
    out = [_message("system", _SYSTEM_TEXT)]
    turns = _turns(seed)
    while len(out) < n_messages:
        out.append(next(turns))
    return out


def damaged(n_messages: int, seed: int = 0) -> list[NeutralMessage]:
    """``conversation(n_messages, seed)`` with broken tool pairing.

    One draw per tool result: below 2% the result is removed (its call dangles); below
    3% an orphan result (an id no call has) follows it; below 4% it is duplicated
    (same ``tool_call_id``, right after the original). The length therefore differs
    from ``n_messages`` by a few.
    """
    rng = random.Random(seed + _DAMAGE_SEED_OFFSET)
    out: list[NeutralMessage] = []
    orphans = 0
    for m in conversation(n_messages, seed):
        if m["role"] != "tool":
            out.append(m)
            continue
        draw = rng.random()
        if draw < _DROP:
            continue
        out.append(m)
        if draw < _ORPHAN:
            out.append(
                _message(
                    "tool",
                    "orphan result " + m["text"][:280],
                    tool_call_id=f"call_orphan_{orphans:06d}",
                    tool_name=m["tool_name"],
                )
            )
            orphans += 1
        elif draw < _DUPLICATE:
            out.append(dict(m))
    return out


def pairing_problems(messages: list[NeutralMessage]) -> dict[str, object]:
    """Count provider-invalid tool pairing in neutral messages (the strict OpenAI/Anthropic
    rule: an assistant message's results come right after it, each call answered once)."""
    dangling = orphan = duplicate = 0
    open_ids: set[str] = set()
    answered: set[str] = set()
    starts_with: str | None = None
    for m in messages:
        role = m["role"]
        if starts_with is None and role != "system":
            starts_with = role
        if role == "tool":
            cid = m["tool_call_id"]
            if cid in open_ids:
                open_ids.discard(cid)
                answered.add(cid)
            elif cid in answered:
                duplicate += 1
            else:
                orphan += 1
            continue
        dangling += len(open_ids)
        open_ids, answered = set(), set()
        if role == "assistant":
            open_ids = {c["id"] for c in m["tool_calls"]}
    dangling += len(open_ids)
    return {
        "dangling": dangling,
        "orphan": orphan,
        "duplicate": duplicate,
        "starts_with": starts_with,
    }
