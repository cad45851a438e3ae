"""Stored conversations (SQLite in memory): what is appended loads back; a fork is a prefix;
after any sequence of appends, branches, forks, erasures and deletions every stored branch
loads, passes ``check_pairing`` and ``verify``.

The strategies draw messages with unknown fields and unknown part types, so these also
say that a store never loses what a newer golem wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from profiles import examples
from strategies import histories, valid_histories

from golem_core import Message, Role, TextPart, check_pairing, encode_history, trim_history
from golem_shell.store import HistoryConflict, PostgresHistoryStore, SQLiteHistoryStore

History = tuple[Message, ...]

# a store round trip costs a database per example: a third of the profile's examples
modest = settings(max_examples=examples(50))


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


# -- any sequence of appends, branches, forks, erasures and deletions ------------------------

OWNER = "u"
KEY = b"property-key-0123456789abcdef!!"


class StoredConversations(RuleBasedStateMachine):
    """A store and a model of its branch lengths; after every step every stored branch
    loads, passes ``check_pairing``, has the model's length and ``verify`` finds nothing."""

    @staticmethod
    def open_store() -> SQLiteHistoryStore | PostgresHistoryStore:
        """A fresh store per example (``tests/test_store_races.py`` runs this machine on
        PostgreSQL too, with a fresh table prefix)."""
        return SQLiteHistoryStore(":memory:", signing_keys=KEY)

    def __init__(self) -> None:
        super().__init__()
        self.store = self.open_store()
        self.lengths: dict[tuple[str, str], int] = {}
        self.forks = 0

    def teardown(self) -> None:
        self.store.close()

    def _views(self) -> list[tuple[str, str]]:
        return sorted(self.lengths)

    @rule(block=valid_histories(max_turns=2), cid=st.sampled_from(["a", "b"]), data=st.data())
    def append(self, block: History, cid: str, data: st.DataObject) -> None:
        branches = [b for c, b in self._views() if c == cid] or ["main"]
        branch = data.draw(st.sampled_from(branches))
        length = self.lengths.get((cid, branch), 0)
        if not block:
            return
        assert self.store.append_sync(OWNER, cid, block, length, branch=branch) == length + len(
            block
        )
        self.lengths[(cid, branch)] = length + len(block)

    @precondition(lambda self: bool(self.lengths))
    @rule(data=st.data(), fork=st.booleans())
    def branch(self, data: st.DataObject, fork: bool) -> None:
        cid, source = data.draw(st.sampled_from(self._views()))
        view = self.store.load_sync(OWNER, cid, branch=source)
        cuts = [n for n in range(len(view) + 1) if check_pairing(view[:n]) == ()]
        at = data.draw(st.sampled_from(cuts))
        if fork:
            if not at:
                return
            self.forks += 1
            new = f"fork{self.forks}"
            self.store.fork_sync(OWNER, cid, at, new, branch=source)
            self.lengths[(new, "main")] = at
        else:
            name = self.store.branch_sync(OWNER, cid, at, source=source)
            self.lengths[(cid, name)] = at

    @precondition(lambda self: bool(self.lengths))
    @rule(data=st.data(), by=st.sampled_from(["position", "role", "parts"]))
    def erase(self, data: st.DataObject, by: str) -> None:
        cid, branch = data.draw(st.sampled_from(self._views()))
        length = self.lengths[(cid, branch)]
        if by == "position" and length:
            picks = data.draw(st.lists(st.integers(0, length - 1), min_size=1, max_size=3))
            receipt = self.store.erase_sync(OWNER, cid, picks, branch=branch)
            assert all(set(e.positions) <= set(picks) for e in receipt.erased)
        elif by == "role":
            role = data.draw(st.sampled_from(list(Role)))
            self.store.erase_sync(OWNER, cid, lambda m: m.role is role)
        elif length:
            self.store.erase_sync(
                OWNER, cid, list(range(length)), branch=branch,
                parts=lambda p: not isinstance(p, TextPart),
            )  # fmt: skip

    @precondition(lambda self: bool(self.lengths))
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        cid = data.draw(st.sampled_from(sorted({c for c, _ in self.lengths})))
        receipt = self.store.delete_sync(OWNER, cid)
        assert receipt.conversations in ((cid,), ())
        self.lengths = {k: v for k, v in self.lengths.items() if k[0] != cid}

    @precondition(lambda self: bool(self.lengths))
    @rule(data=st.data(), last=st.integers(1, 8), low=st.integers(1, 8))
    def load_window(self, data: st.DataObject, last: int, low: int) -> None:
        """A windowed load is the whole branch's suffix from the step grid, bounded, and
        the processor returns from it what it returns from the whole branch (ADR 0107)."""
        cid, branch = data.draw(st.sampled_from(self._views()))
        low_water = min(low, last)
        whole = self.store.load_sync(OWNER, cid, branch=branch)
        window = self.store.load_window_sync(
            OWNER, cid, last=last, low_water=low_water, branch=branch
        )
        assert window.length == len(whole)
        assert window.messages == whole[window.start :]
        assert len(window.messages) <= max(last + 1, 2 * last - low_water)
        assert len(window.messages) > last or window.start == 0  # so the processor cuts
        if not any(m.role is Role.SYSTEM for m in whole):
            processor = trim_history(last, low_water=low_water)
            assert processor(window.messages) == processor(whole)

    @invariant()
    def every_branch_loads_pairs_and_verifies(self) -> None:
        for cid in self.store.list_conversations_sync(OWNER):
            for info in self.store.branches_sync(OWNER, cid):
                history = self.store.load_sync(OWNER, cid, branch=info.name)
                assert len(history) == info.length == self.lengths[(cid, info.name)]
                assert check_pairing(history) == ()
            report = self.store.verify_sync(OWNER, cid)
            assert report.intact, report.findings


StoredConversations.TestCase.settings = settings(max_examples=examples(30), stateful_step_count=10)
test_stored_conversations = StoredConversations.TestCase
