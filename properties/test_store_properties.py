"""Stored conversations (SQLite in memory): what is appended loads back; a fork is a prefix.

The strategies draw messages with unknown fields and unknown part types, so these also
say that a store never loses what a newer golem wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import histories

from golem_core import Message, encode_history
from golem_shell.store import HistoryConflict, SQLiteHistoryStore

History = tuple[Message, ...]

# a store round trip costs a database per example: a third of the profile's examples
modest = settings(max_examples=max(10, settings.default.max_examples // 3))


@contextmanager
def memory_store() -> Iterator[SQLiteHistoryStore]:
    with SQLiteHistoryStore(":memory:") as store:
        yield store


@modest
@given(histories(), st.data())
def test_load_after_appends_is_the_concatenation(history: History, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(history)), max_size=3)))
    with memory_store() as store:
        start = 0
        for cut in [*cuts, len(history)]:  # appended in batches, each at the length it saw
            assert store.append_sync("u", "c", history[start:cut], expected_length=start) == cut
            start = cut
        loaded = store.load_sync("u", "c")
    assert loaded == history
    assert encode_history(loaded) == encode_history(history)  # byte for byte


@modest
@given(histories(max_size=6), st.integers(0, 8), st.integers(0, 8))
def test_a_stale_append_changes_nothing(history: History, stored: int, stale: int) -> None:
    stored = min(stored, len(history))
    with memory_store() as store:
        store.append_sync("u", "c", history[:stored], expected_length=0)
        if stale == stored:
            return
        try:
            store.append_sync("u", "c", history[stored:], expected_length=stale)
        except HistoryConflict as e:
            assert (e.expected_length, e.actual_length) == (stale, stored)
        else:
            raise AssertionError("a stale append was accepted")
        assert store.load_sync("u", "c") == history[:stored]


@modest
@given(histories(), st.data())
def test_a_fork_is_a_prefix_and_leaves_the_original(history: History, data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(history)))
    with memory_store() as store:
        store.append_sync("u", "a", history, expected_length=0)
        store.fork_sync("u", "a", at, "b")
        assert store.load_sync("u", "b") == history[:at]
        assert store.load_sync("u", "a") == history
        expected = ("a", "b") if at else ("a",)
        assert store.list_conversations_sync("u") == (expected if history else expected[1:])
