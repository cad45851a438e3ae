"""What ``python -m bench.compaction`` counts, for every strategy alike.

Owns the one token counter (``count``: ``approximate_tokens``, a compaction item counted as
the summary it holds), the simulated summaries (``summary_tokens``, ``words``: a tenth of
what they read, ``SUMMARY_MIN`` to ``SUMMARY_MAX`` tokens), the simulated
``POST /responses/compact`` (``compact_server``, keeping the newest user messages up to
``KEPT_USER_TOKENS``) and the client that reaches it (``mock_client``), and what a strategy
did (``Trace``: its requests and side calls; ``Recorder``: the side calls as they happen).
``bench/compaction.py`` (golem's strategies, the measure) and ``bench/compaction_peers.py``
(the peers' strategies) build on it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.compaction_facts import keep_facts
from golem_core import Message, TextPart, approximate_tokens
from golem_core.wire.openai_responses import compaction_item

__all__ = [
    "KEPT_USER_TOKENS",
    "SUMMARY_MAX",
    "SUMMARY_MIN",
    "Recorder",
    "Trace",
    "compact_server",
    "count",
    "mock_client",
    "summary_tokens",
    "words",
]

SUMMARY_MIN, SUMMARY_MAX = 300, 1_200
KEPT_USER_TOKENS = 2_000


# -- counting ------------------------------------------------------------------------------


def _encrypted(tokens: int, seed: str, facts: str = "") -> str:
    """A simulated encrypted compaction: opaque, but it says how many tokens it stands for
    (and, after them, the planted facts its summary keeps: ``bench.compaction_facts``)."""
    return f"gAAAAB{tokens:06d}" + hashlib.sha256(seed.encode()).hexdigest()[:32] + facts


def _tokens_of_encrypted(encrypted: str) -> int:
    return int(encrypted[6:12])


def count(message: Message) -> int:
    """``approximate_tokens``, except a compaction item counts as the summary it holds."""
    for part in message.parts:
        if isinstance(part, TextPart) and (item := compaction_item(part)) is not None:
            return 4 + _tokens_of_encrypted(str(item["encrypted_content"]))
    return approximate_tokens(message)


def summary_tokens(read: int) -> int:
    """The size of a simulated summary of ``read`` tokens."""
    return max(SUMMARY_MIN, min(SUMMARY_MAX, read // 10))


def words(tokens: int, seed: str) -> str:
    """About ``tokens`` tokens (by ``approximate_tokens``) of deterministic text."""
    digest = hashlib.sha256(seed.encode()).hexdigest()
    word = f"fact-{digest[:10]} "
    return (word * (tokens * 4 // len(word) + 1))[: tokens * 4]


# -- what a strategy did -------------------------------------------------------------------


@dataclass
class Trace:
    """The requests a strategy sent (two per turn, as golem messages) and its side calls."""

    name: str
    requests: list[tuple[Message, ...]] = field(default_factory=list)
    calls: list[tuple[int, int, int]] = field(default_factory=list)  # turn, read, written
    cache_written: list[int] = field(default_factory=list)  # per call: read tokens marked
    note: str = ""
    waited: int | None = None
    """Turns whose user waited for a side call (``None``: every turn that made one)."""


@dataclass
class Recorder:
    """The side calls (summarizing or compacting) made while ``turn`` is played."""

    turn: int = 0
    calls: list[tuple[int, int, int]] = field(default_factory=list)
    cache_written: list[int] = field(default_factory=list)
    """Per call, the tokens of what it read that it asked the provider to cache (written
    at the cache-write rate; 0, or missing, for a call that asked for no cache)."""


def _strings(value: object) -> int:
    """Characters of text in a Responses input item (ids, types and roles left out)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_strings(v) for v in value)
    if isinstance(value, dict):
        return sum(
            _strings(v) for k, v in value.items() if k not in ("id", "type", "role", "status")
        )
    return 0


def _item_tokens(item: dict[str, Any]) -> int:
    if item.get("type") == "compaction":
        return 4 + _tokens_of_encrypted(str(item["encrypted_content"]))
    return 4 + math.ceil(_strings(item) / 4)


def compact_server(recorder: Recorder) -> Callable[[Any], dict[str, Any]]:
    """The simulated ``POST /responses/compact``: the body it answers a request body with."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        items = [i for i in body["input"] if isinstance(i, dict)]
        read = sum(_item_tokens(i) for i in items)
        read_text = json.dumps(items)  # what the compacting model reads, facts included
        written = summary_tokens(read)
        kept: list[dict[str, Any]] = []
        budget = KEPT_USER_TOKENS
        for item in reversed(items):
            if item.get("role") != "user" or item.get("type", "message") != "message":
                continue
            budget -= _item_tokens(item)
            if budget < 0:
                break
            content = item["content"]
            text = content if isinstance(content, str) else "".join(c["text"] for c in content)
            kept.insert(0, {"type": "message", "role": "user", "status": "completed",
                            "content": [{"type": "input_text", "text": text}]})  # fmt: skip
        recorder.calls.append((recorder.turn, read, written))
        n = len(recorder.calls)
        return {
            "id": f"resp_cmp_{n}",
            "object": "response.compaction",
            "created_at": 1760000000,
            "output": [
                *kept,
                {
                    "id": f"cmp_{n}",
                    "type": "compaction",
                    "encrypted_content": _encrypted(
                        written, json.dumps(items)[-200:], "|".join(keep_facts(read_text, written))
                    ),
                },
            ],
            "usage": {
                "input_tokens": read,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": written,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": read + written,
            },
        }

    return answer


def mock_client(module: Any, answer: Callable[[Any], dict[str, Any]]) -> Any:
    """An ``AsyncClient`` of ``module`` (httpx or httpx2) whose server is ``answer``."""

    def handle(request: Any) -> Any:
        return module.Response(200, json=answer(json.loads(request.content)))

    return module.AsyncClient(transport=module.MockTransport(handle))
