"""The values the stores return: branches, erasure receipts, signed heads, verify reports,
windows, pages.

All frozen attrs classes with tuple fields, made by the store and read by the caller.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Final

from attrs import field, frozen

from golem_core import Message

__all__ = [
    "MAIN",
    "BlobsErased",
    "BranchInfo",
    "BranchVerdict",
    "Erased",
    "Finding",
    "FindingKind",
    "Head",
    "Page",
    "Receipt",
    "VerifyReport",
    "Window",
]

MAIN: Final = "main"
"""The branch a conversation starts with, and the default of every ``branch=``."""


@frozen
class BranchInfo:
    """One branch of a conversation.

    ``parent`` is where its first ``at`` messages come from: ``(conversation, branch)``
    (another conversation for a fork), or ``None`` for a branch that shares nothing.
    ``revision`` counts the writes to it (appends and erasures): the compare-and-set
    revision its signed head is bound to.
    """

    name: str
    parent: tuple[str, str] | None
    at: int
    length: int
    revision: int


@frozen
class Erased:
    """What an erasure removed from one view: a branch of a conversation of an owner.

    ``positions`` are the messages whose content is gone (for ``delete``: every position
    the branch held); ``bytes`` the stored bytes removed from the rows this branch holds
    itself (a message shared with a parent branch counts once, in the branch storing it).
    """

    owner: str
    conversation_id: str
    branch: str
    positions: tuple[int, ...]
    bytes: int


@frozen
class BlobsErased:
    """What an erasure removed from one durable engine's blob store (ADR 0152).

    ``store`` is the store's repr (never a password); ``conversations`` the ids whose
    hold on their durable runs' blobs was taken away; ``keys`` the blobs deleted (the
    SHA-256 of their bytes): those no other conversation's runs hold.
    """

    store: str
    conversations: tuple[str, ...]
    keys: tuple[str, ...]


@frozen
class Receipt:
    """What an ``erase``, ``delete`` or ``prune`` erased, and when (the store's clock, UTC).

    ``summaries`` lists, per view, the stored summaries the operation made stale because
    they were built from what it erased (ADR 0143): their text is gone, their compaction
    record says ``"stale": true``; ``bytes`` of an entry there are the summary rows' size.
    ``blobs`` lists, per durable engine blob store the store was given (``blobs=``),
    the blobs of the touched conversations' durable runs it deleted (ADR 0152).
    ``streams`` names the streams of the store's ``StreamLog`` that carried a touched
    conversation and lost their frames (ADR 0153).
    """

    action: str
    at: datetime
    erased: tuple[Erased, ...]
    summaries: tuple[Erased, ...] = field(default=(), kw_only=True)
    blobs: tuple[BlobsErased, ...] = field(default=(), kw_only=True)
    streams: tuple[str, ...] = field(default=(), kw_only=True)

    @property
    def bytes(self) -> int:
        """The stored bytes removed, over every entry of ``erased`` (not ``summaries``)."""
        return sum(e.bytes for e in self.erased)

    @property
    def conversations(self) -> tuple[str, ...]:
        """The conversations touched (erased or holding a stale summary), sorted, each once."""
        return tuple(sorted({e.conversation_id for e in (*self.erased, *self.summaries)}))


@frozen
class Head:
    """A branch's signed head: its length and last chain link, bound to its revision.

    Keep the last head you saw (``store.head(...)`` after an append); ``verify`` given it
    tells a rollback of the database to an older snapshot from a later write.
    ``rechained`` is the revision of the last erasure (which rewrites the chain).
    """

    owner: str
    conversation_id: str
    branch: str
    parent: tuple[str, str] | None
    at: int
    length: int
    revision: int
    rechained: int
    link: str
    signature: str


class FindingKind(enum.StrEnum):
    """What ``verify`` can find wrong with a branch."""

    ALTERED = "altered"  # content changed in place: its seal no longer verifies
    SPLICED = "spliced"  # a message sealed for another conversation
    DELETED = "deleted"  # messages before this one are gone (or a position is missing)
    REORDERED = "reordered"  # this message belongs after another position
    TRUNCATED = "truncated"  # the branch ends before its signed head says
    UNSIGNED = "unsigned"  # rows past the signed head: written around the store
    HEAD = "head"  # the head itself does not verify (forged, or another key)
    ROLLED_BACK = "rolled_back"  # older than (or not a successor of) the head you gave
    MISSING_KEY = "missing_key"  # encrypted under a key id this store was not opened with


@frozen
class Finding:
    """One thing wrong, at a position of the branch (``-1``: the branch as a whole)."""

    kind: FindingKind
    position: int
    detail: str


@frozen
class BranchVerdict:
    """``verify``'s findings for one branch; ``intact`` when there are none."""

    conversation_id: str
    branch: str
    length: int
    findings: tuple[Finding, ...]

    @property
    def intact(self) -> bool:
        """No finding."""
        return not self.findings


@frozen
class VerifyReport:
    """``verify``'s verdicts, one per branch; ``signed`` says whether keys were used."""

    branches: tuple[BranchVerdict, ...]
    signed: bool

    @property
    def intact(self) -> bool:
        """Every branch intact."""
        return all(b.intact for b in self.branches)

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every finding of every branch."""
        return tuple(f for b in self.branches for f in b.findings)


@frozen(kw_only=True)
class Window:
    """What ``load_window`` read: the newest messages of a branch, and what it left out.

    ``messages`` is the history to run with: the ``pinned`` first messages of the branch
    (``keep_first``), then every message from position ``start`` to the end. The
    ``omitted`` messages between them were not read. ``length`` is the branch's length:
    pass it as ``append``'s ``expected_length`` (not ``len(messages)``). ``head`` is the
    signed head the window was verified against (``None``: nothing stored).
    ``step_grid`` names the ``budget_history`` processor whose step point ``start`` is
    (``""`` for a window by message count): pass the window back as the next load's
    ``after=``, or to the turn's ``append(..., window=)`` (which records ``start`` for
    any later load of that processor), and that load reads from ``start`` on.
    """

    messages: tuple[Message, ...]
    start: int
    length: int
    pinned: int
    head: Head | None
    step_grid: str = ""

    @property
    def omitted(self) -> int:
        """How many messages between the pinned ones and the window were not read."""
        return self.start - self.pinned


@frozen
class Page:
    """What ``load_page`` read: consecutive messages of a branch, verified.

    ``messages`` are the branch's messages at positions ``start`` to ``end - 1``, oldest
    first (``positions``). ``length`` is the branch's length when read and ``head`` the
    signed head the page was checked against (``None``: nothing stored). Pass ``older``
    as the next ``load_page``'s ``before=`` to read the page before this one; it is
    ``None`` once the page starts at the branch's first message.
    """

    messages: tuple[Message, ...]
    start: int
    length: int
    head: Head | None

    @property
    def end(self) -> int:
        """The position after the page's last message."""
        return self.start + len(self.messages)

    @property
    def positions(self) -> range:
        """The position of each message of the page."""
        return range(self.start, self.end)

    @property
    def older(self) -> int | None:
        """``before=`` of the page before this one; ``None``: this page starts at 0."""
        return self.start or None
