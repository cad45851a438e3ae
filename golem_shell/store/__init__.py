"""Stored conversations: per owner, with branches, erasure, a tamper-evident log, encryption.

``SQLiteHistoryStore`` (stdlib ``sqlite3``: a file, or ``":memory:"``) and
``PostgresHistoryStore`` (``psycopg`` 3, the ``postgres`` extra) offer the same methods,
each async with a ``_sync`` twin. A store is not a session: the agent never reads it;
the application wires it around a run::

    window = await store.load_window(user, cid, last=200)  # as trim_history(200)
    result = await agent.run_with_history(window.messages, prompt, conversation_id=cid)
    await store.append(user, cid, result.new_messages, expected_length=window.length)

- **Windowed loads.** ``load_window`` reads only what the history processor needs: the
  newest part of a branch from its step grid (bounded, cache-stable; the processor
  returns from it what it returns from the whole branch), verified against the signed
  head without reading the rest (``load`` returns everything, unverified); a token
  budget's window reads from the step point ``append(..., window=)`` recorded.
- **Pages.** ``load_page(owner, cid, limit=100, before=...)`` reads any page of a
  branch (a chat UI scrolling back), verified against the chain through a signed mark
  every 64 rows: its cost is the page's, at any length.

- **Owners.** Every method takes the owner (a user, a tenant) first; it is the first
  column of every key, so another owner's conversation id is simply not there.
- **Compare-and-set.** ``append`` names the length it saw; if another writer got there
  first it raises ``HistoryConflict`` and writes nothing.
- **Branches.** ``branch(owner, cid, at)`` starts a branch sharing the first ``at``
  messages (edit, regenerate), stored once; ``branches`` lists them; ``load`` and
  ``append`` take ``branch=``. ``fork`` starts a new conversation the same way.
- **Erasure.** ``erase`` turns messages or parts (by position or predicate) into
  tombstones that keep the history valid, in every branch and fork sharing them;
  ``delete`` and ``prune`` (older than a date, newest N per owner) remove
  conversations, overwriting the bytes; each returns a ``Receipt``.
- **Tamper evidence.** Messages are chained (HMAC with the agent's signing keys) to a
  signed head bound to the branch's revision; ``verify`` reports deletion, reordering,
  truncation, splicing and, given the last ``head`` you saw, rollback.
- **Encryption at rest** (``encryption=EncryptionKeys(...)``, the ``encryption``
  extra): AES-GCM per message, key ids stored, ``reencrypt`` after a rotation.
- **The interrupted turn.** ``append_interrupted`` stores the prompt and every step a
  failed or cancelled run completed (``partial_from(error)``).

The guarantees, precisely: ``docs/stores.md``. The modules: ``_sql`` (tables, drivers),
``_rows`` (reading), ``_ops`` (load/append/branch/fork), ``_window`` (load_window),
``_pages`` (load_page and its marks),
``_erase`` (erase, delete, prune), ``_verify``, ``_crypto`` (chain, heads, AES-GCM),
``_tombstone``, ``_values``, ``_errors``, ``_methods`` (the public methods), ``_sqlite``,
``_postgres``.
May import: ``golem_core``'s public modules and the leaves (``_errors``, ``_results``);
nothing else of the shell (``context/``, ``cli`` and ``ui/`` import the stores).
"""

from golem_shell.store._crypto import EncryptionKeys
from golem_shell.store._erase import STALE_SUMMARY_TEXT, Selection
from golem_shell.store._errors import (
    CorruptHistoryError,
    EncryptionKeyError,
    HistoryConflict,
    HistoryNotFound,
    HistoryStoreError,
)
from golem_shell.store._methods import HistoryStore
from golem_shell.store._migrate import StoreMigration, migrate_store
from golem_shell.store._postgres import PostgresHistoryStore
from golem_shell.store._sqlite import SQLiteHistoryStore
from golem_shell.store._streams import StreamBusy, StreamLog, StreamRecord, StreamState
from golem_shell.store._tombstone import ERASED_RESULT_TEXT, ERASED_TEXT, PartFilter, erase_message
from golem_shell.store._values import (
    MAIN,
    BlobsErased,
    BranchInfo,
    BranchVerdict,
    Erased,
    Finding,
    FindingKind,
    Head,
    Page,
    Receipt,
    VerifyReport,
    Window,
)

__all__ = [
    "BlobsErased",
    "BranchInfo",
    "BranchVerdict",
    "CorruptHistoryError",
    "ERASED_RESULT_TEXT",
    "ERASED_TEXT",
    "EncryptionKeyError",
    "EncryptionKeys",
    "Erased",
    "Finding",
    "FindingKind",
    "Head",
    "HistoryConflict",
    "HistoryNotFound",
    "HistoryStore",
    "HistoryStoreError",
    "MAIN",
    "Page",
    "PartFilter",
    "PostgresHistoryStore",
    "Receipt",
    "SQLiteHistoryStore",
    "STALE_SUMMARY_TEXT",
    "Selection",
    "StoreMigration",
    "StreamBusy",
    "StreamLog",
    "StreamRecord",
    "StreamState",
    "VerifyReport",
    "Window",
    "erase_message",
    "migrate_store",
]

from golem_core.public import claim_public_names as _claim_public_names

_claim_public_names(globals())  # reprs and tracebacks name this module
