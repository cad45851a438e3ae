# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Encryption at rest (the ``encryption`` extra) on SQLite and a real PostgreSQL: no
plaintext in the database, ids and positions still queryable, a missing or wrong key is
an error naming the key id, rotation with ``reencrypt``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from store_backends import (  # noqa: F401 (fixtures)
    KEY,
    OWNER,
    Backend,
    Store,
    backend,
    postgres_backend,
    sqlite_backend,
    store,
    store_database,
    texts,
    user,
)

from golem_core import check_pairing
from golem_shell import UsageError
from golem_shell.store import ERASED_TEXT, EncryptionKeyError, EncryptionKeys, FindingKind

CANARY = "canary-plaintext-5b2e"
K1 = b"k" * 32
K2 = b"j" * 32


def keys(current: str = "k1", **others: bytes) -> EncryptionKeys:
    return EncryptionKeys(others or {"k1": K1}, current)


def conversation() -> list:  # type: ignore[type-arg]
    return [user(f"{CANARY} {i}") for i in range(3)]


def test_no_plaintext_in_the_sqlite_file(sqlite_backend: Backend) -> None:
    store = sqlite_backend.open(encryption=keys(), signing_keys=KEY)
    store.append_sync(OWNER, "c", conversation(), 0)
    store.branch_sync(OWNER, "c", 1)
    path = Path(sqlite_backend.target)
    stored = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    assert CANARY.encode() not in stored
    assert texts(store.load_sync(OWNER, "c")) == [f"{CANARY} {i}" for i in range(3)]
    assert store.verify_sync(OWNER, "c").intact


def test_rows_are_ciphertext_with_their_key_id_and_stay_queryable(backend: Backend) -> None:
    store = backend.open(encryption=keys())
    store.append_sync(OWNER, "c", conversation(), 0)
    rows = backend.raw("SELECT conversation_id, position, message FROM {M} ORDER BY position")
    assert [(c, p) for c, p, _ in rows] == [("c", 0), ("c", 1), ("c", 2)]
    assert all(m.startswith("~gcm1:k1:") and CANARY not in m for _, _, m in rows)
    assert len({m for _, _, m in rows}) == 3  # a fresh nonce per row


def test_a_missing_key_id_is_named(backend: Backend) -> None:
    backend.open(encryption=keys()).append_sync(OWNER, "c", conversation(), 0)
    with pytest.raises(EncryptionKeyError, match=r"key id 'k1'.* has only \('k2',\)") as caught:
        backend.open(encryption=keys("k2", k2=K2)).load_sync(OWNER, "c")
    assert caught.value.key_id == "k1"
    with pytest.raises(EncryptionKeyError, match=r"key id 'k1'.* this store has no keys"):
        backend.open().load_sync(OWNER, "c")


def test_a_wrong_key_for_an_id_is_named(backend: Backend) -> None:
    backend.open(encryption=keys()).append_sync(OWNER, "c", conversation(), 0)
    with pytest.raises(EncryptionKeyError, match="key id 'k1': does not open a stored row"):
        backend.open(encryption=keys(k1=K2)).load_sync(OWNER, "c")


def test_rotation_then_reencrypt(backend: Backend) -> None:
    backend.open().append_sync(OWNER, "c", [user("written before encryption")], 0)
    backend.open(encryption=keys()).append_sync(OWNER, "c", [user("under k1")], 1)
    both = backend.open(encryption=keys("k2", k1=K1, k2=K2))
    both.append_sync(OWNER, "c", [user("under k2")], 2)
    both.append_sync("bob", "c", [user("bob's")], 0)
    assert texts(both.load_sync(OWNER, "c")) == [
        "written before encryption",
        "under k1",
        "under k2",
    ]
    assert both.reencrypt_sync(owner=OWNER) == 2  # the plain row and the k1 row
    assert both.reencrypt_sync() == 0
    only_k2 = backend.open(encryption=keys("k2", k2=K2))
    assert texts(only_k2.load_sync(OWNER, "c"))[1] == "under k1"
    rows = backend.raw("SELECT message FROM {M}")
    assert all(m.startswith("~gcm1:k2:") for (m,) in rows)


def test_erasure_under_encryption(backend: Backend) -> None:
    store = backend.open(encryption=keys(), signing_keys=KEY)
    store.append_sync(OWNER, "c", conversation(), 0)
    receipt = store.erase_sync(OWNER, "c", lambda m: m.text.endswith("1"))
    assert receipt.erased[0].positions == (1,)
    history = store.load_sync(OWNER, "c")
    assert history[1].text == ERASED_TEXT and check_pairing(history) == ()
    assert store.verify_sync(OWNER, "c").intact


def test_bad_keys_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError, match="at least one key"):
        EncryptionKeys({}, "k1")
    with pytest.raises(UsageError, match="16, 24 or 32 bytes"):
        EncryptionKeys({"k1": b"short"}, "k1")
    with pytest.raises(UsageError, match="without ':'"):
        EncryptionKeys({"a:b": K1}, "a:b")
    with pytest.raises(UsageError, match="current key id 'k9'"):
        EncryptionKeys({"k1": K1}, "k9")
    assert "k" * 32 not in repr(keys())
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.ciphers.aead", None)
    with pytest.raises(UsageError, match=r"pip install 'golem-agents\[encryption\]'"):
        keys()


# -- verify without the key (issue 49): a configuration error, not a tamper alarm -------


def test_verify_without_the_rows_key_reports_missing_key_never_altered(backend: Backend) -> None:
    backend.open(encryption=keys(), signing_keys=KEY).append_sync(OWNER, "c", conversation(), 0)
    for opened, says in (
        (backend.open(signing_keys=KEY), "opened with no encryption keys"),
        (backend.open(encryption=keys("k2", k2=K2), signing_keys=KEY), "only ('k2',)"),
    ):
        report = opened.verify_sync(OWNER, "c")
        found = [(f.kind, f.position) for f in report.findings]
        assert found == [(FindingKind.MISSING_KEY, i) for i in range(3)]
        assert all("key id 'k1'" in f.detail and says in f.detail for f in report.findings)
        assert not report.intact  # not verified: but nothing reads as tampering
    # the right keys again: intact
    assert backend.open(encryption=keys(), signing_keys=KEY).verify_sync(OWNER, "c").intact


def test_verify_with_a_wrong_key_under_the_rows_id_reports_altered(backend: Backend) -> None:
    # a wrong key for a known id and an altered row are the same AES-GCM failure
    backend.open(encryption=keys(), signing_keys=KEY).append_sync(OWNER, "c", conversation(), 0)
    report = backend.open(encryption=keys(k1=K2), signing_keys=KEY).verify_sync(OWNER, "c")
    assert [(f.kind, f.position) for f in report.findings] == [
        (FindingKind.ALTERED, i) for i in range(3)
    ]
    assert all("does not open a stored row" in f.detail for f in report.findings)
