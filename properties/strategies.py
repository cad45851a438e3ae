"""Hypothesis strategies for messages and histories, shared by every property module.

The strategies of messages and histories live in ``golem_core.testing`` (public, for
users' own property tests) and are re-exported here under their old names;
``histories()`` draws well-formed and deliberately broken conversations alike,
``valid_histories()`` only provider-valid ones. This module adds what only golem's own
properties need (history processors and their bounds).
"""

from __future__ import annotations

from hypothesis import strategies as st

from golem_core import HistoryProcessor, Message, approximate_tokens, budget_history, trim_history
from golem_core.testing import (
    C0_OR_SPACE,
    KINDS,
    arguments,
    assistant_with_calls,
    bad_arguments,
    browser_equivalent_urls,
    call_ids,
    damaged_histories,
    good_arguments,
    histories,
    hostile_urls,
    ids,
    json_scalars,
    json_values,
    messages,
    names,
    parts,
    texts,
    timestamps,
    tool_results,
    tool_turns,
    untrusted_histories,
    urls,
    usages,
    valid_histories,
)

__all__ = [
    "C0_OR_SPACE",
    "KINDS",
    "arguments",
    "assistant_with_calls",
    "bad_arguments",
    "browser_equivalent_urls",
    "call_ids",
    "damaged_histories",
    "good_arguments",
    "histories",
    "history_processors",
    "hostile_urls",
    "ids",
    "json_scalars",
    "json_values",
    "max_messages",
    "max_tokens",
    "messages",
    "names",
    "one_token",
    "part_tokens",
    "parts",
    "texts",
    "timestamps",
    "token_counters",
    "tool_results",
    "tool_turns",
    "untrusted_histories",
    "urls",
    "usages",
    "valid_histories",
]


# -- history processors (golem_core.history._processors) ----------------------------------------


def one_token(message: Message) -> int:
    """A counter under which a token budget is a message count."""
    return 1


def part_tokens(message: Message) -> int:
    """A counter with free (zero-token) messages: one token per part."""
    return len(message.parts)


token_counters = st.sampled_from([approximate_tokens, one_token, part_tokens])
max_messages = st.integers(1, 16)
max_tokens = st.one_of(st.integers(1, 40), st.integers(1, 4000))


@st.composite
def history_processors(draw: st.DrawFn) -> HistoryProcessor:
    """``trim_history`` or ``budget_history`` with a drawn bound (and counter), cutting in
    steps to a drawn low-water mark (the default, or the sliding window among them)."""
    limit = draw(max_messages) if (trim := draw(st.booleans())) else draw(max_tokens)
    low_water = draw(st.one_of(st.none(), st.just(limit), st.integers(1, limit)))
    if trim:
        return trim_history(limit, low_water=low_water)
    return budget_history(draw(token_counters), limit, low_water=low_water)
