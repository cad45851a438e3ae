"""Stored conversations (SQLite in memory): what is appended loads back; a fork is a prefix;
after any sequence of appends, branches, forks, erasures and deletions every stored branch
loads exactly what a model of plain lists says (``StoreModel``: shared cells, tombstones,
copies for a deleted conversation's forks), passes ``check_pairing`` and ``verify``, any
page of it is its messages at those positions, verified (``load_page``), and every
erasure's receipt names exactly the views and positions whose messages changed (ADR 0101).

The strategies draw messages with unknown fields and unknown part types, so these also
say that a store never loses what a newer golem wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from profiles import examples
from strategies import histories, valid_histories

from golem_core import (
    Message,
    Role,
    TextPart,
    approximate_tokens,
    budget_history,
    check_pairing,
    compose,
    encode_history,
    trim_history,
)
from golem_shell.store import (
    CorruptHistoryError,
    HistoryConflict,
    PostgresHistoryStore,
    SQLiteHistoryStore,
    Window,
    _pages,
)
from golem_shell.store._tombstone import PartFilter, erase_message

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


View = tuple[str, str]  # (conversation, branch)


class StoreModel:
    """What a store should hold, as plain values: each view (a branch of a conversation)
    is a list of cells, and a cell is one stored message. A branch or a fork shares its
    source's cells up to the point it was made from (an erasure of one is seen by every
    view holding it); a deleted conversation's forks get their own copies first. The
    model is the store's documented behaviour and nothing more; the machine compares
    every view's messages with it, and every erasure's receipt with the views it says
    changed."""

    def __init__(self) -> None:
        self.cells: list[Message] = []
        self.views: dict[View, list[int]] = {}
        self.parents: dict[View, tuple[View, int] | None] = {}

    def messages(self, view: View) -> History:
        return tuple(self.cells[c] for c in self.views[view])

    def length(self, view: View) -> int:
        return len(self.views.get(view, ()))

    def append(self, view: View, block: History) -> None:
        if view not in self.views:
            self.views[view], self.parents[view] = [], None
        for message in block:
            self.views[view].append(len(self.cells))
            self.cells.append(message)

    def share(self, source: View, at: int, new: View) -> None:
        """A branch or a fork: ``new`` holds ``source``'s first ``at`` cells."""
        self.views[new] = self.views[source][:at]
        self.parents[new] = (source, at)

    def erase(self, cells: set[int], parts: PartFilter | None) -> dict[View, set[int]]:
        """Tombstones in ``cells``; returns each view's positions whose message changed."""
        changed = set()
        for c in cells:
            tombstone = erase_message(self.cells[c], parts)
            if tombstone is not None:
                self.cells[c] = tombstone
                changed.add(c)
        seen: dict[View, set[int]] = {}
        for view, held in self.views.items():
            positions = {i for i, c in enumerate(held) if c in changed}
            if positions:
                seen[view] = positions
        return seen

    def edges(self, view: View) -> list[int]:
        """Positions of ``view`` next to where sharing starts or stops (its own fork
        point, those of the views made from it): where an erasure finds the wrong row
        if it resolves a position to the wrong branch."""
        points = {parent[1] for v, parent in self.parents.items() if parent and parent[0] == view}
        own = self.parents[view]
        if own is not None:
            points.add(own[1])
        near = {q for at in points for q in (at - 1, at)}
        return sorted(q for q in near if 0 <= q < self.length(view))

    def _descendants(self, view: View) -> list[View]:
        out = [view]
        for other, parent in self.parents.items():
            if parent is not None and parent[0] == view:
                out += self._descendants(other)
        return out

    def delete(self, cid: str) -> None:
        """Each branch of another conversation made from ``cid`` gets its own copy of every
        cell it shared (so do the views made from it, which shared them through it); then
        ``cid``'s views go."""
        for view, parent in list(self.parents.items()):
            if view[0] == cid or parent is None or parent[0][0] != cid:
                continue
            copies: dict[int, int] = {}
            for c in self.views[view][: parent[1]]:
                copies[c] = len(self.cells)
                self.cells.append(self.cells[c])
            for holder in self._descendants(view):
                self.views[holder] = [copies.get(c, c) for c in self.views[holder]]
            self.parents[view] = None
        for view in [v for v in self.views if v[0] == cid]:
            del self.views[view], self.parents[view]


class StoredConversations(RuleBasedStateMachine):
    """A store and a model of its contents (``StoreModel``); after every step every stored
    branch loads exactly the model's messages, passes ``check_pairing``, reads back the
    same page by page, and ``verify`` finds nothing; the conversations and branches
    listed are the model's."""

    @staticmethod
    def open_store() -> SQLiteHistoryStore | PostgresHistoryStore:
        """A fresh store per example (``tests/test_store_races.py`` runs this machine on
        PostgreSQL too, with a fresh table prefix)."""
        return SQLiteHistoryStore(":memory:", signing_keys=KEY)

    def __init__(self) -> None:
        super().__init__()
        # a mark every 3 rows (not 64), so that these short branches have marks for pages
        # to be verified through, and erasures and forks to re-sign
        self.mark_every, _pages.MARK_EVERY = _pages.MARK_EVERY, 3  # type: ignore[misc]
        self.store = self.open_store()
        self.model = StoreModel()
        self.forks = 0
        self.windows: dict[View, Window] = {}

    def teardown(self) -> None:
        self.store.close()
        _pages.MARK_EVERY = self.mark_every  # type: ignore[misc]

    def _views(self) -> list[View]:
        return sorted(self.model.views)

    @initialize(block=valid_histories(max_turns=2).filter(bool))
    def start(self, block: History) -> None:
        """A first conversation before any rule: without one every rule but ``append`` is
        disabled, and a quarter of the cases gave up drawing a rule at their first step
        (issue 49 item 8)."""
        assert self.store.append_sync(OWNER, "a", block, 0) == len(block)
        self.model.append(("a", "main"), block)

    @rule(block=valid_histories(max_turns=2), cid=st.sampled_from(["a", "b"]), data=st.data())
    def append(self, block: History, cid: str, data: st.DataObject) -> None:
        branches = [b for c, b in self._views() if c == cid] or ["main"]
        branch = data.draw(st.sampled_from(branches))
        length = self.model.length((cid, branch))
        if not block:
            return
        stored = self.store.append_sync(OWNER, cid, block, length, branch=branch)
        assert stored == length + len(block)
        self.model.append((cid, branch), block)

    @precondition(lambda self: bool(self.model.views))
    @rule(data=st.data(), fork=st.booleans(), then=valid_histories(max_turns=1))
    def branch(self, data: st.DataObject, fork: bool, then: History) -> None:
        """A branch or a fork, then maybe a block appended to it (an edited message and
        the answers after it), so that it holds rows of its own past its fork point."""
        cid, source = data.draw(st.sampled_from(self._views()))
        view = self.model.messages((cid, source))
        cuts = [n for n in range(len(view) + 1) if check_pairing(view[:n]) == ()]
        at = data.draw(st.sampled_from(cuts))
        if fork:
            if not at:
                return
            self.forks += 1
            new = (f"fork{self.forks}", "main")
            self.store.fork_sync(OWNER, cid, at, new[0], branch=source)
        else:
            new = (cid, self.store.branch_sync(OWNER, cid, at, source=source))
        self.model.share((cid, source), at, new)
        if then:
            self.store.append_sync(OWNER, new[0], then, at, branch=new[1])
            self.model.append(new, then)

    @precondition(lambda self: bool(self.model.views))
    @rule(data=st.data(), by=st.sampled_from(["position", "role", "parts"]))
    def erase(self, data: st.DataObject, by: str) -> None:
        made = [v for v in self._views() if self.model.parents[v] is not None]
        views = st.sampled_from(self._views())
        cid, branch = data.draw(st.one_of(views, st.sampled_from(made)) if made else views)
        held = self.model.views[(cid, branch)]
        if by == "position" and held:
            anywhere = st.integers(0, len(held) - 1)
            edges = self.model.edges((cid, branch))
            positions = st.one_of(anywhere, st.sampled_from(edges)) if edges else anywhere
            picks = data.draw(st.lists(positions, min_size=1, max_size=3))
            receipt = self.store.erase_sync(OWNER, cid, picks, branch=branch)
            changed = self.model.erase({held[p] for p in picks}, None)
        elif by == "role":
            role = data.draw(st.sampled_from(list(Role)))
            receipt = self.store.erase_sync(OWNER, cid, lambda m: m.role is role)
            cells = {
                c
                for (c_cid, _), cs in self.model.views.items()
                if c_cid == cid
                for c in cs
                if self.model.cells[c].role is role
            }
            changed = self.model.erase(cells, None)
        elif held:
            receipt = self.store.erase_sync(
                OWNER, cid, list(range(len(held))), branch=branch,
                parts=lambda p: not isinstance(p, TextPart),
            )  # fmt: skip
            changed = self.model.erase(set(held), lambda p: not isinstance(p, TextPart))
        else:
            return
        reported = {(e.conversation_id, e.branch): set(e.positions) for e in receipt.erased}
        assert reported == changed

    @precondition(lambda self: bool(self.model.views))
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        cid = data.draw(st.sampled_from(sorted({c for c, _ in self.model.views})))
        receipt = self.store.delete_sync(OWNER, cid)
        assert receipt.conversations in ((cid,), ())
        self.model.delete(cid)
        self.windows = {v: w for v, w in self.windows.items() if v[0] != cid}

    @precondition(lambda self: bool(self.model.views))
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
            # a token budget behind the trim: the same window, the same result
            budget = data.draw(st.integers(1, 60), label="max_tokens")
            bounded = compose(processor, budget_history(approximate_tokens, budget))
            assert (
                self.store.load_window_sync(OWNER, cid, processor=bounded, branch=branch) == window
            )
            assert bounded(window.messages) == bounded(whole)

    @precondition(lambda self: bool(self.model.views))
    @rule(data=st.data(), budget=st.integers(1, 60))
    def load_budget_window(self, data: st.DataObject, budget: int) -> None:
        """A budget's window, read from the last window's start of the same view (any
        processor's: another one's is not trusted as an anchor), is the whole branch's
        suffix, and the processor returns from it what it returns from the whole."""
        view = data.draw(st.sampled_from(self._views()))
        low_water = data.draw(st.integers(1, budget), label="low_water")
        processor = budget_history(approximate_tokens, budget, low_water=low_water)
        after = self.windows.get(view)
        whole = self.store.load_sync(OWNER, view[0], branch=view[1])
        window = self.store.load_window_sync(
            OWNER, view[0], processor=processor, branch=view[1], after=after
        )
        assert window.length == len(whole)
        assert window.messages == whole[window.start :]
        assert processor(window.messages) == processor(whole)
        self.windows[view] = window

    @precondition(lambda self: bool(self.model.views))
    @rule(data=st.data(), then=valid_histories(max_turns=1))
    def stateless_budget_turn(self, data: st.DataObject, then: History) -> None:
        """A turn with no state: ``load_window`` of one budget without ``after=`` (from
        the step point the last ``append(..., window=)`` recorded, if it still holds) is
        the whole branch's suffix, and the processor returns from it what it returns
        from the whole; then the turn appends with its window."""
        view = data.draw(st.sampled_from(self._views()))
        processor = budget_history(approximate_tokens, 40)
        whole = self.store.load_sync(OWNER, view[0], branch=view[1])
        window = self.store.load_window_sync(OWNER, view[0], processor=processor, branch=view[1])
        assert window.length == len(whole)
        assert window.messages == whole[window.start :]
        assert processor(window.messages) == processor(whole)
        if then:
            self.store.append_sync(
                OWNER, view[0], then, window.length, branch=view[1], window=window
            )
            self.model.append(view, then)

    @precondition(lambda self: bool(self.model.views))
    @rule(data=st.data(), limit=st.integers(1, 9))
    def load_page(self, data: st.DataObject, limit: int) -> None:
        """Every page (any ``before``) is the whole branch's messages at its positions,
        verified through the marks or the head, and scrolling back from the newest page
        reaches the first message."""
        cid, branch = data.draw(st.sampled_from(self._views()))
        whole = self.store.load_sync(OWNER, cid, branch=branch)
        for before in range(len(whole) + 1):
            page = self.store.load_page_sync(OWNER, cid, limit=limit, before=before, branch=branch)
            assert (page.start, page.length) == (max(0, before - limit), len(whole))
            assert page.messages == whole[page.start : before]
        assert self._scrolled(cid, branch, limit) == whole

    def _scrolled(self, cid: str, branch: str, limit: int) -> History:
        """The branch read page by page from the newest back (each page verified)."""
        page = self.store.load_page_sync(OWNER, cid, limit=limit, branch=branch)
        read = list(page.messages)
        while page.older is not None:
            page = self.store.load_page_sync(
                OWNER, cid, limit=limit, before=page.older, branch=branch
            )
            read[:0] = page.messages
        return tuple(read)

    @invariant()
    def every_branch_holds_the_models_messages_pairs_and_verifies(self) -> None:
        conversations = self.store.list_conversations_sync(OWNER)
        assert sorted(conversations) == sorted({c for c, _ in self.model.views})
        for cid in conversations:
            infos = self.store.branches_sync(OWNER, cid)
            assert sorted(i.name for i in infos) == sorted(
                b for c, b in self.model.views if c == cid
            )
            for info in infos:
                history = self.store.load_sync(OWNER, cid, branch=info.name)
                assert info.length == len(history)
                assert history == self.model.messages((cid, info.name)), (cid, info.name)
                assert check_pairing(history) == ()
                assert self._scrolled(cid, info.name, 2) == history
            report = self.store.verify_sync(OWNER, cid)
            assert report.intact, report.findings


# 100 examples of 20 steps (about 8 s under ci): with 30 of 10 the planted fork-rechain bug
# below was found in one environment and not in a fresh clone's full run
StoredConversations.TestCase.settings = settings(max_examples=examples(100), stateful_step_count=20)
test_stored_conversations = StoredConversations.TestCase


def test_the_machine_finds_a_fork_left_out_of_a_rechain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine above, under the loaded profile, finds an erasure that rewrites a
    conversation's chain but not the chain of a fork sharing the erased row (planted here:
    ``rechain`` skips another conversation's branches). Under ``ci`` it did not: a quarter
    of its cases gave up drawing a first rule, and a fork then an erasure of a shared row
    came in 1 of 10 random runs (issue 49 item 8)."""
    from hypothesis import Phase
    from hypothesis.stateful import run_state_machine_as_test

    from golem_shell.store import _erase

    original = _erase.rechain
    rechaining: list[str] = []

    def fork_blind(d: Any, config: Any, owner: str, cid: str, branch: str, start: int) -> Any:
        if rechaining and rechaining[-1] != cid:
            return  # a fork of the conversation being rechained: left as it was
        rechaining.append(cid)
        try:
            yield from original(d, config, owner, cid, branch, start)
        finally:
            rechaining.pop()

    monkeypatch.setattr(_erase, "rechain", fork_blind)
    # 170 under ci, 102 under dev (0.6x): dev's 60 did not reach the draw that finds it
    # (a bare venv's README command, which runs dev, failed so)
    found = settings(
        StoredConversations.TestCase.settings,
        max_examples=examples(170),
        derandomize=True,
        database=None,
        phases=[Phase.generate],  # found, not shrunk
        report_multiple_bugs=False,
    )
    # an invariant's assertion, or a verified load refusing the fork's stale chain
    with pytest.raises((AssertionError, CorruptHistoryError)):
        run_state_machine_as_test(StoredConversations, settings=found)
