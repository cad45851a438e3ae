"""The second decode workload: an agentic mix, unlike ``bench/workload.py``'s (stdlib only).

``bench/workload.py`` is one fixed 5-message turn: text of 200-400 characters, exactly
two tool calls, no metadata. This one varies what that one holds constant, so a decoder
tuned to the first is tested on a different mix of message sizes, part kinds and tool
calls (``python -m bench.decode`` runs both):

- a long system message (~2,000 characters);
- a turn is a user message, then one to four agent steps, then a final answer. The
  user text is heavy-tailed (10 to 3,000 characters); 10% of user messages add an image
  URL part, 3% a small inline image (2 kB of bytes, base64 in JSON), 2% a document URL;
- an agent step is an assistant message (a thinking part with a signature in 40% of
  them, a short text in 30%, then one to eight tool calls: one in half the steps, two
  or three in 30%, four to eight in 20%; small JSON arguments), then one result message
  per call: 70% short (20-200 characters), 25% medium (500-3,000), 5% long
  (8,000-30,000); 5% of results are failed;
- every assistant message carries its origin and cost: ``createdAt``, ``model``,
  ``provider``, ``usage`` (input and output tokens), ``finishReason`` and ``runId``;
- the final answer is 50 to 1,500 characters.

A neutral message here is a dict with ``role``, ``parts`` (dicts with ``kind``:
``text``, ``thinking``, ``tool_call``, ``image_url``, ``document_url`` or
``image_data``), ``tool_call_id``, ``tool_name``, ``failed`` and ``meta`` (``None``, or
the assistant's ``model``, ``provider``, ``created_at`` (ISO 8601 text), ``input_tokens``,
``output_tokens``, ``finish_reason`` and ``run_id``). ``conversation(n, seed)`` is
exactly ``n`` messages, deterministic, and a prefix of a longer one with the same seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, TypeAlias

from bench.workload import _WORDS, _corpus

__all__ = ["NeutralMessage2", "conversation"]

NeutralMessage2: TypeAlias = dict[str, Any]

_CORPUS_LEN = 1 << 16
_TOOLS = ("read_file", "grep", "run_tests", "edit_file", "list_dir", "web_fetch", "shell")
_MODELS = (("claude-sonnet-4-5", "anthropic"), ("gpt-5-mini", "openai-responses"))
_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
_SYSTEM_LEN = 2_000


def _text(rng: random.Random, corpus: str, length: int) -> str:
    """``length`` characters cut from the corpus (longer than it: repeated)."""
    if length >= _CORPUS_LEN - 1:
        return (corpus * (length // _CORPUS_LEN + 1))[:length]
    start = rng.randrange(_CORPUS_LEN - length)
    return corpus[start : start + length]


def _heavy(rng: random.Random, low: int, high: int) -> int:
    """A length between ``low`` and ``high``, log-uniform (most short, some long)."""
    return int(low * (high / low) ** rng.random())


def _message(
    role: str,
    parts: list[dict[str, Any]],
    *,
    tool_call_id: str | None = None,
    tool_name: str | None = None,
    failed: bool = False,
    meta: dict[str, Any] | None = None,
) -> NeutralMessage2:
    return {
        "role": role,
        "parts": parts,
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
        "failed": failed,
        "meta": meta,
    }


def _arguments(rng: random.Random, tool: str) -> str:
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4)))
    if tool in ("read_file", "edit_file", "list_dir"):
        value: dict[str, object] = {"path": f"src/{words.replace(' ', '/')}.py"}
        if tool == "edit_file":
            value["line"] = rng.randint(1, 900)
    elif tool == "web_fetch":
        value = {"url": f"https://example.org/{words.replace(' ', '-')}"}
    else:
        value = {"query": words, "limit": rng.randint(1, 50)}
    return json.dumps(value)


def _result_len(rng: random.Random) -> int:
    draw = rng.random()
    if draw < 0.70:
        return rng.randint(20, 200)
    if draw < 0.95:
        return rng.randint(500, 3_000)
    return rng.randint(8_000, 30_000)


def _calls(rng: random.Random) -> int:
    draw = rng.random()
    if draw < 0.5:
        return 1
    if draw < 0.8:
        return rng.randint(2, 3)
    return rng.randint(4, 8)


class _Clock:
    """Deterministic timestamps: a few seconds apart, with microseconds."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.now = _START

    def tick(self) -> str:
        self.now += timedelta(
            seconds=self.rng.randint(1, 40), microseconds=self.rng.randrange(10**6)
        )
        return self.now.isoformat()


def _meta(rng: random.Random, clock: _Clock, run: int, finish: str) -> dict[str, Any]:
    model, provider = _MODELS[run % 2]
    return {
        "model": model,
        "provider": provider,
        "created_at": clock.tick(),
        "input_tokens": rng.randint(1_000, 150_000),
        "output_tokens": rng.randint(5, 4_000),
        "finish_reason": finish,
        "run_id": f"run_{run:06d}",
    }


def _user(rng: random.Random, corpus: str, turn: int) -> NeutralMessage2:
    parts: list[dict[str, Any]] = [
        {"kind": "text", "text": f"[u{turn}] " + _text(rng, corpus, _heavy(rng, 10, 3_000))}
    ]
    draw = rng.random()
    if draw < 0.10:
        parts.append(
            {
                "kind": "image_url",
                "url": f"https://img.example.org/{turn}.png",
                "media_type": "image/png",
            }
        )
    elif draw < 0.13:
        parts.append(
            {"kind": "image_data", "data": rng.randbytes(2_048), "media_type": "image/png"}
        )
    elif draw < 0.15:
        parts.append(
            {
                "kind": "document_url",
                "url": f"https://docs.example.org/{turn}.pdf",
                "media_type": "application/pdf",
            }
        )
    return _message("user", parts)


def _turns(seed: int) -> Iterator[NeutralMessage2]:
    rng = random.Random(seed ^ 0xA6E7)
    corpus = _corpus(seed + 7)
    clock = _Clock(rng)
    call_number = 0
    turn = 0
    while True:
        yield _user(rng, corpus, turn)
        for _ in range(rng.randint(1, 4)):
            parts: list[dict[str, Any]] = []
            if rng.random() < 0.4:
                parts.append(
                    {
                        "kind": "thinking",
                        "text": _text(rng, corpus, rng.randint(200, 1_500)),
                        "signature": f"sig_{rng.getrandbits(320):080x}",
                    }
                )
            if rng.random() < 0.3:
                parts.append({"kind": "text", "text": _text(rng, corpus, rng.randint(20, 200))})
            calls = []
            for _ in range(_calls(rng)):
                tool = rng.choice(_TOOLS)
                calls.append((f"toolu_{call_number:08d}", tool))
                parts.append(
                    {
                        "kind": "tool_call",
                        "id": calls[-1][0],
                        "name": tool,
                        "arguments": _arguments(rng, tool),
                    }
                )
                call_number += 1
            yield _message("assistant", parts, meta=_meta(rng, clock, turn, "tool_call"))
            for call_id, tool in calls:
                text = _text(rng, corpus, _result_len(rng))
                yield _message(
                    "tool",
                    [{"kind": "text", "text": text}],
                    tool_call_id=call_id,
                    tool_name=tool,
                    failed=rng.random() < 0.05,
                )
        answer = _text(rng, corpus, rng.randint(50, 1_500))
        yield _message(
            "assistant", [{"kind": "text", "text": answer}], meta=_meta(rng, clock, turn, "stop")
        )
        turn += 1


def conversation(n_messages: int, seed: int = 0) -> list[NeutralMessage2]:
    """Exactly ``n_messages`` neutral messages: a system message, then agentic turns.

    Deterministic: the same ``(n_messages, seed)`` always gives equal messages, and a
    shorter conversation is a prefix of a longer one with the same seed.
    """
    if n_messages <= 0:
        return []
    system = _text(random.Random(seed), _corpus(seed + 7), _SYSTEM_LEN)
    out = [_message("system", [{"kind": "text", "text": system}])]
    turns = _turns(seed)
    while len(out) < n_messages:
        out.append(next(turns))
    return out
