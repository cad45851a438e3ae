"""What a Temporal run's model request and tool call payloads carry: references only, so
they cross inline (issue 46 item 7), and ADR 0152 still holds.

The workflow builds those two payloads field by field, each either an id, a chain's head,
a count, or a blob's reference (``Refs``): the run's recorded keywords and its system
messages are stashed once per run (``kept``), the step's response is named by the
reference its request's activity returned (``added``; stamped with the run's ids as the run
adds it), and a tool call by its place in
that response (``call``); whatever is not known so is stashed as before. No field is
decided by looking at its content: the builder knows which fields are references. So a
step writes the blob store for what it makes only (the conversation's new nodes, each
activity's outcome), not for its payloads; and what one payload (or the run's end)
stores is written in one ``put``, one transaction (``Batched``). The activity's side is
``read_kept`` and ``read_tool``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from golem_core import Message, ModelRequest, ToolCallPart
from golem_shell.engines._blobs import BlobStore, Row, is_stashed, stash, stash_row, unstash
from golem_shell.engines._records import CALL, MESSAGES, CorruptRecord, decode
from golem_shell.engines.temporal._common import CONVERTER, JSON

__all__ = ["Batched", "Refs", "read_kept", "read_tool"]


class Batched:
    """A blob store whose writes wait for ``flush``, then go in one ``put`` (one
    transaction, one set of owner rows): what the workflow stores for one payload.
    Reads see what waits."""

    def __init__(self, store: BlobStore) -> None:
        self.store = store
        self._rows: dict[str, Row] = {}

    def __repr__(self) -> str:
        return repr(self.store)

    def put(self, rows: Sequence[Row]) -> None:
        for row in rows:
            self._rows.setdefault(row[0], row)

    def flush(self) -> None:
        """Write what waits (before a payload naming it crosses)."""
        rows, self._rows = list(self._rows.values()), {}
        if rows:
            self.store.put(rows)

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        waiting = {k: self._rows[k][2] for k in keys if k in self._rows}
        rest = [k for k in keys if k not in waiting]
        return {**(self.store.get(rest) if rest else {}), **waiting}

    def walk(self, head: str, limit: int | None) -> list[Row]:
        self.flush()
        return self.store.walk(head, limit)

    def erased(self, key: str) -> str | None:
        """Why the store erased ``key`` (``None``: it did not, or cannot say)."""
        erased: Callable[[str], str | None] | None = getattr(self.store, "erased", None)
        return None if erased is None else erased(key)


class Refs:
    """The references a run's workflow puts in its request and tool payloads."""

    def __init__(self, store: BlobStore) -> None:
        self.store = store
        self._kept: dict[str, tuple[Any, JSON]] = {}
        self.response: tuple[Message, JSON] | None = None  # the last request's, recorded
        self._set_up: tuple[ModelRequest, JSON] | None = None  # this run's, stored

    def set_up(self, request: ModelRequest) -> JSON:
        """A request without its messages and ids (instructions, tool definitions,
        settings, the output schema), by reference: a blob the same at every step of a
        run and in every run of the agent (its ids go beside it: ``requestIds``), so an
        activity's input is bounded by what a step adds, not by the size of the agent's
        tools (ADR 0125), and an activity reads and structures it once per worker.
        Stored at a run's first step (held by its conversation), unstructured once per
        worker while it stays the same."""
        bare = attrs.evolve(request, messages=(), run_id=None, conversation_id=None)
        known = self._set_up
        if known is not None and known[0] == bare:
            return known[1]
        made = _MADE.get("set-up")  # the last this worker made, any run's
        if made is None or made[0] != bare:
            unstructured = CONVERTER.unstructure(bare)
            del unstructured["messages"]
            made = _MADE["set-up"] = (bare, *stash_row(unstructured))
        self.store.put([made[2]])  # written again: this run's conversation holds it
        self._set_up = (bare, made[1])
        return made[1]

    def kept(self, name: str, value: Any, unstructure: Callable[[Any], JSON] = lambda v: v) -> JSON:
        """A reference to ``value`` (unstructured), stored once while the run's ``name``
        stays the same (compared by identity, then equality)."""
        known = self._kept.get(name)
        if known is not None and (known[0] is value or known[0] == value):
            return known[1]
        ref = stash(self.store, unstructure(value))
        self._kept[name] = (value, ref)
        return ref

    def responded(self, message: Message | None, recorded: JSON) -> None:
        """The last request answered ``message``, its outcome stored as ``recorded``."""
        self.response = (message, recorded) if message and is_stashed(recorded) else None

    def added(self, added: tuple[Message, ...], ids: tuple[str | None, str | None]) -> JSON:
        """A tool batch's messages since its history's head: the step's response as the
        run added it (stamped with the run's ``ids``), named by its request's recorded
        outcome (stored already); otherwise stashed."""
        known = self.response
        if known is not None and len(added) == 1:
            if added[0] == known[0].with_ids(*ids):  # the usual case
                return {"addedFrom": known[1], "stamped": True}
            if added[0] == known[0]:
                return {"addedFrom": known[1]}
        return {"added": stash(self.store, MESSAGES[0](added))}

    def call(self, call: ToolCallPart, carried: dict[str, JSON]) -> JSON:
        """A tool call, by its place in the step's recorded response (otherwise stashed),
        and what the payload ``carried`` of its tool (a toolset's entry: kept)."""
        kept = {k: self.kept(f"{k} {call.name}", v) for k, v in carried.items()}
        known = self.response
        if known is not None:
            for i, made in enumerate(known[0].tool_calls):
                if made is call or made == call:
                    return {"callFrom": known[1], "callAt": i, **kept}
        return {"call": stash(self.store, CALL[0](call)), **kept}


_MADE: dict[str, tuple[ModelRequest, JSON, Row]] = {}  # the last set-up made, its ref and row
_KEPT: OrderedDict[str, JSON] = OrderedDict()  # values read back by key (one content each)
_CACHED = 32


def read_kept(store: BlobStore, value: JSON, where: str) -> JSON:
    """A value ``Refs.kept`` stashed (or carried inline), read back; once per worker for
    a key (a run's steps carry the same one)."""
    if not is_stashed(value):
        return value
    key = value["key"]
    read = _KEPT.get(key)
    if read is None:
        read = _KEPT[key] = unstash(store, value, where)
        while len(_KEPT) > _CACHED:
            _KEPT.popitem(last=False)
    else:
        _KEPT.move_to_end(key)
    return read


def _response(store: BlobStore, ref: JSON, where: str) -> Message:
    outcome = decode(unstash(store, ref, where), where)
    message = getattr(outcome, "message", None)
    if not isinstance(message, Message):
        raise CorruptRecord(f"{where}: got a {type(outcome).__name__}, not a response")
    return message


def read_tool(store: BlobStore, payload: JSON) -> tuple[tuple[Message, ...], ToolCallPart]:
    """The messages a tool payload adds to its history's head, and its call (the step's
    response read once for both)."""
    read: dict[Any, Message] = {}

    def response(ref: JSON, where: str) -> Message:
        key = ref.get("key") if isinstance(ref, dict) else None
        if key not in read:
            read[key] = _response(store, ref, where)
        return read[key]

    added: tuple[Message, ...] = ()
    if "addedFrom" in payload:
        message = response(payload["addedFrom"], "added")
        if payload.get("stamped"):
            message = message.with_ids(payload["runId"], payload["conversationId"])
        added = (message,)
    elif payload.get("added"):
        added = MESSAGES[1](unstash(store, payload["added"], "added"), "added")
    if "callFrom" not in payload:
        return added, CALL[1](unstash(store, payload["call"], "call"), "call")
    calls = response(payload["callFrom"], "call").tool_calls
    at = payload["callAt"]
    if type(at) is not int or not 0 <= at < len(calls):
        raise CorruptRecord(f"call: no call {at!r} in its response")
    return added, calls[at]
