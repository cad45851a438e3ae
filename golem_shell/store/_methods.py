"""The public methods of both stores, each one line over ``_run`` / ``_run_async``.

Every method has an async form for async code and a ``_sync`` twin; every one takes the
owner first (``scope``: a user, a tenant): a conversation id of another owner is "not
found", never that owner's data, because the owner is the first column of every key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from types import TracebackType
from typing import Protocol, Self, TypeVar

import attrs

from golem_core import Message
from golem_shell._errors import UsageError
from golem_shell.store._erase import Selection, delete_op, erase_op, prune_op, reencrypt_op
from golem_shell.store._ops import (
    append_op,
    branch_op,
    branches_op,
    fork_op,
    head_op,
    interrupted_messages,
    list_op,
    load_op,
)
from golem_shell.store._pages import page_op
from golem_shell.store._rows import Config
from golem_shell.store._sql import Dialect, Operation
from golem_shell.store._streamerase import erase_streams
from golem_shell.store._tombstone import PartFilter
from golem_shell.store._values import (
    MAIN,
    BlobsErased,
    BranchInfo,
    Head,
    Page,
    Receipt,
    VerifyReport,
    Window,
)
from golem_shell.store._verify import verify_op
from golem_shell.store._window import window_op

__all__ = ["ErasableBlobs", "HistoryStore", "StoreMethods", "blob_stores"]

T = TypeVar("T")


def _heads(last_head: Head | Sequence[Head] | None) -> tuple[Head, ...]:
    if last_head is None:
        return ()
    heads = (last_head,) if isinstance(last_head, Head) else tuple(last_head)
    for h in heads:
        if not isinstance(h, Head):
            raise UsageError(f"last_head must be a Head from store.head(), got {type(h).__name__}")
    return heads


def _ms(older_than: datetime | None) -> int | None:
    if older_than is None:
        return None
    if not isinstance(older_than, datetime) or older_than.tzinfo is None:
        raise UsageError(f"older_than must be a timezone-aware datetime, got {older_than!r}")
    return int(older_than.timestamp() * 1000)


class ErasableBlobs(Protocol):
    """A durable engine's blob store (``golem_shell.durable.SQLBlobs`` and friends) as
    erasure reaches it (ADR 0152)."""

    def release(self, conversations: Sequence[str], note: str) -> tuple[str, ...]:
        """Take the conversations' hold on their blobs away; delete the blobs no other
        conversation holds; the deleted keys."""
        ...


def blob_stores(blobs: ErasableBlobs | Sequence[ErasableBlobs] | None) -> tuple[ErasableBlobs, ...]:
    """A store's ``blobs=`` argument, checked.

    Raises:
        UsageError: an item has no ``release`` (not a golem blob store).
    """
    if blobs is None:
        return ()
    found = tuple(blobs) if isinstance(blobs, list | tuple) else (blobs,)
    for b in found:
        if not callable(getattr(b, "release", None)):
            raise UsageError(
                f"blobs= takes durable blob stores (SQLBlobs, SQLiteBlobs, MemoryBlobs),"
                f" got {type(b).__name__}"
            )
    return found


class HistoryStore(Protocol):
    """Where conversations live, per owner: branches, compare-and-set appends, erasure.

    The core of what both stores offer (each also has ``load_page``, ``head``,
    ``verify``, ``prune``, ``reencrypt`` and ``append_interrupted``); every method has a
    ``_sync`` twin.
    """

    async def load(
        self, owner: str, conversation_id: str, *, branch: str = MAIN
    ) -> tuple[Message, ...]: ...

    async def load_window(
        self, owner: str, conversation_id: str, *, last: int | None = None,
        low_water: int | None = None, keep_first: int = 0, branch: str = MAIN,
        processor: Callable[..., object] | None = None, last_head: Head | None = None,
        after: Window | None = None,
    ) -> Window: ...  # fmt: skip

    async def append(
        self,
        owner: str,
        conversation_id: str,
        messages: Sequence[Message],
        expected_length: int,
        *,
        branch: str = MAIN,
        window: Window | None = None,
    ) -> int: ...

    async def branch(
        self, owner: str, conversation_id: str, at: int, *, source: str = MAIN,
        name: str | None = None,
    ) -> str: ...  # fmt: skip

    async def branches(self, owner: str, conversation_id: str) -> tuple[BranchInfo, ...]: ...

    async def fork(
        self, owner: str, conversation_id: str, at: int, new_id: str, *, branch: str = MAIN
    ) -> None: ...

    async def list_conversations(self, owner: str) -> tuple[str, ...]: ...

    async def erase(
        self, owner: str, conversation_id: str, select: Selection, *, branch: str = MAIN,
        parts: PartFilter | None = None,
    ) -> Receipt: ...  # fmt: skip

    async def delete(self, owner: str, conversation_id: str) -> Receipt: ...

    def load_sync(
        self, owner: str, conversation_id: str, *, branch: str = MAIN
    ) -> tuple[Message, ...]: ...

    def load_window_sync(
        self, owner: str, conversation_id: str, *, last: int | None = None,
        low_water: int | None = None, keep_first: int = 0, branch: str = MAIN,
        processor: Callable[..., object] | None = None, last_head: Head | None = None,
        after: Window | None = None,
    ) -> Window: ...  # fmt: skip

    def append_sync(
        self,
        owner: str,
        conversation_id: str,
        messages: Sequence[Message],
        expected_length: int,
        *,
        branch: str = MAIN,
        window: Window | None = None,
    ) -> int: ...

    def list_conversations_sync(self, owner: str) -> tuple[str, ...]: ...


class StoreMethods:
    """The public methods; a store supplies ``_config``, ``_dialect``, ``_run``, ``_run_async``."""

    _config: Config
    _dialect: Dialect
    _blobs: tuple[ErasableBlobs, ...] = ()

    def _run(self, op: Operation[T]) -> T:
        raise NotImplementedError

    def _reach(self, receipt: Receipt) -> Receipt:
        """After an erasure committed: delete the frames of the touched conversations'
        streams in the store's ``StreamLog`` (ADR 0153), and take their durable runs'
        blobs away from every blob store given (``blobs=``), the receipt listing both."""
        receipt = erase_streams(self._run, self._dialect, receipt)
        cids = receipt.conversations
        if not cids or not self._blobs:
            return receipt
        note = f"{receipt.action} of {', '.join(map(repr, cids))} at {receipt.at.isoformat()}"
        found = tuple(BlobsErased(repr(b), cids, tuple(b.release(cids, note))) for b in self._blobs)
        return attrs.evolve(receipt, blobs=found)

    async def _erasing(self, op: Operation[Receipt]) -> Receipt:
        receipt = await self._run_async(op)
        return await asyncio.to_thread(self._reach, receipt)

    async def _run_async(self, op: Operation[T]) -> T:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        await self.aclose()

    # -- reading and growing -----------------------------------------------------------

    async def load(
        self, owner: str, conversation_id: str, *, branch: str = MAIN
    ) -> tuple[Message, ...]:
        """The branch's messages, oldest first (``()`` for a conversation not stored).

        Raises:
            HistoryNotFound: ``branch`` (not ``main``) does not exist for this owner.
            CorruptHistoryError: a row no longer decodes; names conversation and position.
            EncryptionKeyError: a row is encrypted under a key id the store lacks.
        """
        return await self._run_async(load_op(self._config, owner, conversation_id, branch))

    def load_sync(
        self, owner: str, conversation_id: str, *, branch: str = MAIN
    ) -> tuple[Message, ...]:
        """``load`` for code without an event loop."""
        return self._run(load_op(self._config, owner, conversation_id, branch))

    async def load_window(
        self, owner: str, conversation_id: str, *, last: int | None = None,
        low_water: int | None = None, keep_first: int = 0, branch: str = MAIN,
        processor: Callable[..., object] | None = None, last_head: Head | None = None,
        after: Window | None = None,
    ) -> Window:  # fmt: skip
        """The newest part of the branch: what ``trim_history(last, low_water=...)``
        needs, read and verified against the signed head without reading the rest.

        The window starts on the processor's step grid one step before its cut (``0``
        while the branch has at most ``last`` messages), so it holds at most ``last +
        step`` messages at any length, grows by the new messages between two steps
        (cache-stable), and the processor returns from it what it returns from the
        whole branch. Pass ``window.messages`` to the run and ``window.length`` as
        ``append``'s ``expected_length``.

        Args:
            last: The processor's ``max_messages``.
            low_water: The processor's ``low_water`` (``None``: half, as its default).
            processor: Instead of ``last`` and ``low_water``: the agent's history
                processor, read for them (``golem_core.message_window``):
                ``trim_history(n, ...)`` or a ``compose(...)`` that starts with one,
                such as ``compose(trim_history(400), budget_history(counter, 8000))``;
                or ``budget_history(...)`` (or a ``compose(...)`` that starts with one),
                whose window starts on its step point before the cut
                (``golem_core.budget_window``): a load given ``after=``, or one after
                an ``append(..., window=)`` of that processor's window, reads from that
                window's start on; without either (the branch's very first load, or
                after an erasure) it reads the whole branch once. Any other processor
                may read every message: refused with a ``UsageError`` that says so.
            last_head: The ``window.head`` (or ``store.head(...)``) you kept from the
                turn before: the branch must be it or a successor of it (appends, or
                an erasure since), else ``CorruptHistoryError`` (the database was
                rolled back to an older state, or the head is forged). Costs reading
                the seals and links appended since that head, nothing more.
            after: The ``Window`` of the last load of this branch: its head is checked
                as ``last_head`` is, and a ``budget_history`` window reads only from its
                ``start`` on (a step point), unless an erasure since rechained the
                branch or the processor differs (then it reads the whole branch once).
            keep_first: Also return the branch's first messages (a first user message,
                a summary placed first), before the window.
            branch: Which branch.

        Returns:
            The ``Window``: its messages, where it starts, the branch's length, the
            pinned count and the head it was verified against.

        Raises:
            HistoryNotFound: ``branch`` (not ``main``) does not exist for this owner.
            CorruptHistoryError: a row of the window does not decode or does not verify
                (altered, missing, reordered, restored after an erasure, or the head
                does not verify or end with it), or the branch is older than
                ``last_head``; names the position.
            EncryptionKeyError: a row is encrypted under a key id the store lacks.
            UsageError: ``last``, ``low_water`` or ``keep_first`` out of range; neither
                ``last`` nor ``processor``, or both; a processor that is not bounded
                by a ``trim_history``.
        """
        op = window_op(
            self._config, owner, conversation_id, branch, last, low_water, keep_first,
            processor=processor, last_head=last_head, after=after,
        )  # fmt: skip
        return await self._run_async(op)

    def load_window_sync(
        self, owner: str, conversation_id: str, *, last: int | None = None,
        low_water: int | None = None, keep_first: int = 0, branch: str = MAIN,
        processor: Callable[..., object] | None = None, last_head: Head | None = None,
        after: Window | None = None,
    ) -> Window:  # fmt: skip
        """``load_window`` for code without an event loop."""
        op = window_op(
            self._config, owner, conversation_id, branch, last, low_water, keep_first,
            processor=processor, last_head=last_head, after=after,
        )  # fmt: skip
        return self._run(op)

    async def load_page(
        self, owner: str, conversation_id: str, *, limit: int, before: int | None = None,
        branch: str = MAIN,
    ) -> Page:  # fmt: skip
        """Up to ``limit`` messages of the branch just before position ``before`` (``None``:
        the newest), read and verified without reading the rest of the branch.

        Scroll back with ``before=page.older`` until it is ``None``. The rows are checked
        against their seals and links, then followed to the next signed mark (every 64th
        row) or the signed head: the cost is the page plus at most 64 seals and links,
        at any length of the branch, across branch points too.

        Args:
            limit: At most how many messages (at least 1).
            before: The position after the page's last message (a message's position:
                the page ends just before it); at most the branch's length.
            branch: Which branch (its view includes what it shares with its parent).

        Returns:
            The ``Page``: its messages, where it starts, the branch's length, the head.

        Raises:
            HistoryNotFound: ``branch`` (not ``main``) does not exist for this owner.
            CorruptHistoryError: a row of the page does not decode or does not verify
                (altered, missing, reordered, restored after an erasure, or the chain
                from it does not reach the signed mark or head); names the position.
            EncryptionKeyError: a row is encrypted under a key id the store lacks.
            UsageError: ``limit`` below 1, ``before`` negative or past the branch's end.
        """
        op = page_op(self._config, owner, conversation_id, branch, before, limit)
        return await self._run_async(op)

    def load_page_sync(
        self, owner: str, conversation_id: str, *, limit: int, before: int | None = None,
        branch: str = MAIN,
    ) -> Page:  # fmt: skip
        """``load_page`` for code without an event loop."""
        return self._run(page_op(self._config, owner, conversation_id, branch, before, limit))

    async def append(
        self,
        owner: str,
        conversation_id: str,
        messages: Sequence[Message],
        expected_length: int,
        *,
        branch: str = MAIN,
        window: Window | None = None,
    ) -> int:
        """Append ``messages`` if the branch has exactly ``expected_length`` messages.

        The first append to ``main`` creates the conversation; other branches are made
        by ``branch``. Returns the new length.

        Args:
            window: The ``Window`` this turn ran on, when a ``budget_history`` named
                it: its start (a step point of that processor) is recorded with the
                append, signed, so the next ``load_window`` of that processor reads
                from there without ``after=`` (a stateless worker's first load is
                bounded too). An erasure since the window makes the record stale.

        Raises:
            HistoryConflict: it is not ``expected_length`` long; nothing was written.
            HistoryNotFound: ``branch`` (not ``main``) does not exist.
            UsageError: ``window`` is not a ``Window`` of this branch.
        """
        op = append_op(
            self._config, owner, conversation_id, messages, expected_length, branch, window
        )
        return await self._run_async(op)

    def append_sync(
        self,
        owner: str,
        conversation_id: str,
        messages: Sequence[Message],
        expected_length: int,
        *,
        branch: str = MAIN,
        window: Window | None = None,
    ) -> int:
        """``append`` for code without an event loop."""
        op = append_op(
            self._config, owner, conversation_id, messages, expected_length, branch, window
        )
        return self._run(op)

    async def append_interrupted(
        self,
        owner: str,
        conversation_id: str,
        prompt: str | Message,
        error: BaseException,
        expected_length: int,
        *,
        branch: str = MAIN,
    ) -> int:
        """Store what a failed or cancelled run leaves: the user's prompt and every
        completed step (``partial_from(error)``: a ``RunError``'s partial, or the one on
        the ``CancelledError`` of a run cancelled from outside; a tool still running is
        closed as unfinished), so a reload shows them and the next run
        (``run_with_history``) continues without repeating a finished tool.

        Returns the new length; raises as ``append``.
        """
        added = interrupted_messages(prompt, error, expected_length)
        return await self.append(owner, conversation_id, added, expected_length, branch=branch)

    def append_interrupted_sync(
        self,
        owner: str,
        conversation_id: str,
        prompt: str | Message,
        error: BaseException,
        expected_length: int,
        *,
        branch: str = MAIN,
    ) -> int:
        """``append_interrupted`` for code without an event loop."""
        added = interrupted_messages(prompt, error, expected_length)
        return self.append_sync(owner, conversation_id, added, expected_length, branch=branch)

    async def branch(
        self, owner: str, conversation_id: str, at: int, *, source: str = MAIN,
        name: str | None = None,
    ) -> str:  # fmt: skip
        """A new branch sharing the first ``at`` messages of ``source`` (stored once):
        edit or regenerate message ``at``. Returns its name (``name``, or ``b1``, ``b2``...).

        Raises:
            HistoryNotFound: no such conversation or source branch for this owner.
            UsageError: ``at`` is past the end, or ``name`` is taken.
        """
        return await self._run_async(
            branch_op(self._config, owner, conversation_id, at, source, name)
        )

    def branch_sync(
        self, owner: str, conversation_id: str, at: int, *, source: str = MAIN,
        name: str | None = None,
    ) -> str:  # fmt: skip
        """``branch`` for code without an event loop."""
        return self._run(branch_op(self._config, owner, conversation_id, at, source, name))

    async def branches(self, owner: str, conversation_id: str) -> tuple[BranchInfo, ...]:
        """The conversation's branches, oldest first (``()`` when it is not stored)."""
        return await self._run_async(branches_op(owner, conversation_id))

    def branches_sync(self, owner: str, conversation_id: str) -> tuple[BranchInfo, ...]:
        """``branches`` for code without an event loop."""
        return self._run(branches_op(owner, conversation_id))

    async def fork(
        self, owner: str, conversation_id: str, at: int, new_id: str, *, branch: str = MAIN
    ) -> None:
        """Start conversation ``new_id`` with the first ``at`` messages of ``branch``,
        shared, not copied (messages keep their stamps; run the fork with
        ``conversation_id=new_id``). ``at=0`` stores nothing.

        Raises:
            HistoryConflict: ``new_id`` already holds messages.
            UsageError: ``at`` is past the end.
        """
        op = fork_op(self._config, owner, conversation_id, at, new_id, branch)
        return await self._run_async(op)

    def fork_sync(
        self, owner: str, conversation_id: str, at: int, new_id: str, *, branch: str = MAIN
    ) -> None:
        """``fork`` for code without an event loop."""
        return self._run(fork_op(self._config, owner, conversation_id, at, new_id, branch))

    async def list_conversations(self, owner: str) -> tuple[str, ...]:
        """The owner's stored conversation ids, sorted."""
        return await self._run_async(list_op(owner))

    def list_conversations_sync(self, owner: str) -> tuple[str, ...]:
        """``list_conversations`` for code without an event loop."""
        return self._run(list_op(owner))

    async def head(self, owner: str, conversation_id: str, *, branch: str = MAIN) -> Head | None:
        """The branch's signed head (keep it: ``verify`` given it detects rollback)."""
        return await self._run_async(head_op(owner, conversation_id, branch))

    def head_sync(self, owner: str, conversation_id: str, *, branch: str = MAIN) -> Head | None:
        """``head`` for code without an event loop."""
        return self._run(head_op(owner, conversation_id, branch))

    # -- taking away ---------------------------------------------------------------------

    async def erase(
        self, owner: str, conversation_id: str, select: Selection, *, branch: str = MAIN,
        parts: PartFilter | None = None,
    ) -> Receipt:  # fmt: skip
        """Erase messages (or, with ``parts``, the parts it selects) where they are stored:
        every branch and fork sharing them sees a tombstone, pairing stays valid.

        Args:
            select: positions of ``branch``, or a predicate over every message of every
                branch of the conversation.
            parts: which parts of a selected message to erase (default: all).

        Returns:
            The receipt: every (conversation, branch) affected, positions, bytes, when.

        Raises:
            HistoryNotFound: no such conversation or branch for this owner.
            UsageError: a position past the end.
        """
        op = erase_op(self._config, owner, conversation_id, select, branch, parts)
        return await self._erasing(op)

    def erase_sync(
        self, owner: str, conversation_id: str, select: Selection, *, branch: str = MAIN,
        parts: PartFilter | None = None,
    ) -> Receipt:  # fmt: skip
        """``erase`` for code without an event loop."""
        op = erase_op(self._config, owner, conversation_id, select, branch, parts)
        return self._reach(self._run(op))

    async def delete(self, owner: str, conversation_id: str) -> Receipt:
        """Erase the conversation and every branch of it from the database.

        Forks in other conversations keep their own copy of what they shared with it.
        A conversation not stored (another owner's id too) gives an empty receipt.
        """
        return await self._erasing(delete_op(self._config, owner, conversation_id))

    def delete_sync(self, owner: str, conversation_id: str) -> Receipt:
        """``delete`` for code without an event loop."""
        return self._reach(self._run(delete_op(self._config, owner, conversation_id)))

    async def prune(
        self, *, owner: str | None = None, older_than: datetime | None = None,
        keep_newest: int | None = None,
    ) -> Receipt:  # fmt: skip
        """Delete conversations last written before ``older_than``, and all but the
        ``keep_newest`` most recently written per owner (one owner, or every owner)."""
        op = prune_op(self._config, owner, _ms(older_than), keep_newest)
        return await self._erasing(op)

    def prune_sync(
        self, *, owner: str | None = None, older_than: datetime | None = None,
        keep_newest: int | None = None,
    ) -> Receipt:  # fmt: skip
        """``prune`` for code without an event loop."""
        return self._reach(self._run(prune_op(self._config, owner, _ms(older_than), keep_newest)))

    async def verify(
        self, owner: str, conversation_id: str, *, branch: str | None = None,
        last_head: Head | Sequence[Head] | None = None,
    ) -> VerifyReport:  # fmt: skip
        """Check the chain and signed heads of every branch (or ``branch``); given the
        last head(s) you saw, also detect a rollback to an older database state."""
        op = verify_op(self._config, owner, conversation_id, branch, _heads(last_head))
        return await self._run_async(op)

    def verify_sync(
        self, owner: str, conversation_id: str, *, branch: str | None = None,
        last_head: Head | Sequence[Head] | None = None,
    ) -> VerifyReport:  # fmt: skip
        """``verify`` for code without an event loop."""
        return self._run(verify_op(self._config, owner, conversation_id, branch, _heads(last_head)))

    async def reencrypt(self, *, owner: str | None = None) -> int:
        """Re-encrypt every row not under the current key (after a rotation); the count."""
        return await self._run_async(reencrypt_op(self._config, owner))

    def reencrypt_sync(self, *, owner: str | None = None) -> int:
        """``reencrypt`` for code without an event loop."""
        return self._run(reencrypt_op(self._config, owner))
