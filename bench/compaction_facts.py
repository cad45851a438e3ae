"""What a compaction loses, measured (issue 48 item 7): planted facts, after the last turn.

Owns the facts ``python -m bench.compaction`` plants in its conversation (``planted``: one
every ``EVERY`` turns, alternately a user's instruction, ``Keep in mind: <fact>.``, and a
detail somewhere in the turn's first tool result, what a summary is asked to keep by
``DEFAULT_SUMMARY_INSTRUCTIONS``: "the user's goals and constraints, ... facts learned
(tool results included)", and what ``probe_compaction`` checks a fold for), the rule every
simulated summary keeps them by (``keep_facts``: the facts it reads, newest first, within
``FACT_SHARE`` of its length, the rest of the summary prose), and the two counts:

- ``sent``: the facts the strategy's last request holds (any message, tool result or
  compaction item: an opaque item stands for a summary made by the same rule);
- ``recalled``: the facts golem's ``recall_tool`` reads back from a ``SQLiteHistoryStore``
  holding the conversation as an ``Agent`` with a store saves it (every message of every
  turn: compaction folds what is sent, never what is stored), asked once per fact with the
  fact's key (``vault-017``), the tool's own function on the stored branch, as made by
  default (the best match first, its text cut to 2,000 characters: a detail late in a
  long tool result is not read back).

Deterministic: seeded text, no clock.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from bench import cache
from golem_core import Message, encode_history

__all__ = [
    "EVERY",
    "FACT",
    "FACT_SHARE",
    "facts_of",
    "keep_facts",
    "planted",
    "recalled",
    "sent",
]

EVERY = 10
"""A fact every this many turns (50 in 500 turns)."""
FACT_SHARE = 0.25
"""The share of a simulated summary its kept facts may take."""
FACT = re.compile(r"vault-\d{3} opens with code [A-Z0-9]{6}")
OWNER, CONVERSATION = "bench", "facts"


def fact(i: int) -> str:
    code = hashlib.sha256(f"fact {i}".encode()).hexdigest()[:6].upper()
    return f"vault-{i:03d} opens with code {code}"


def planted(conversation: Sequence[cache.Turn], every: int = EVERY) -> list[cache.Turn]:
    """``conversation`` with fact ``i`` in turn ``every * i + every // 2``: in the user's
    question (even ``i``) or, at a seeded word, in the first tool result (odd ``i``)."""
    out = list(conversation)
    for i, t in enumerate(range(every // 2, len(out), every)):
        turn = out[t]
        if i % 2 == 0:
            out[t] = dataclasses.replace(turn, prompt=f"Keep in mind: {fact(i)}. {turn.prompt}")
        else:
            first, *rest = turn.results
            words = first.split()
            at = int(hashlib.sha256(f"at {i}".encode()).hexdigest(), 16) % (len(words) + 1)
            words[at:at] = [f"(note: {fact(i)})"]
            out[t] = dataclasses.replace(turn, results=(" ".join(words), *rest))
    return out


def facts_of(conversation: Sequence[cache.Turn]) -> tuple[str, ...]:
    """The facts planted in ``conversation``, in order."""
    found: list[str] = []
    for turn in conversation:
        for text in (turn.prompt, *turn.results):
            found += FACT.findall(text)
    return tuple(found)


def keep_facts(read: str, tokens: int, share: float = FACT_SHARE) -> list[str]:
    """The facts a simulated summary of ``tokens`` tokens keeps of the text it read: each
    fact found (once), newest first, while they fit in ``share`` of it; in reading order."""
    room = int(tokens * share) * 4  # characters
    kept: list[str] = []
    for found in reversed(list(dict.fromkeys(FACT.findall(read)))):
        if len(found) + 2 > room:
            break
        room -= len(found) + 2
        kept.insert(0, found)
    return kept


def sent(request: Sequence[Message], facts: Iterable[str]) -> set[str]:
    """The ``facts`` a request holds anywhere (text, tool results, compaction items)."""
    text = encode_history(tuple(request)).decode()
    return {f for f in facts if f in text}


async def recalled(conversation: Sequence[cache.Turn], facts: Sequence[str]) -> set[str]:
    """The ``facts`` golem's ``recall_tool`` reads back from a store holding the whole
    conversation, asked once per fact with its key."""
    from golem_shell.context._recall import recall_tool
    from golem_shell.store import SQLiteHistoryStore

    messages = [m for turn in conversation for group in cache.turn_messages(turn) for m in group]
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteHistoryStore(Path(folder) / "history.sqlite")
        await store.append(OWNER, CONVERSATION, messages, 0)
        tool = recall_tool(store, OWNER, CONVERSATION)
        found = set()
        for f in facts:
            answer = await tool.function(query=f.split()[0], limit=1)
            if f in answer:
                found.add(f)
        store.close()
    return found
