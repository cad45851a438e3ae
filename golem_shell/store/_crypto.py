"""The store's keyed hash chain, its signed heads, and encryption at rest (AES-GCM).

Chain (ADR 0071): every stored message carries a *seal* and a *link*::

    genesis  = MAC(key, "genesis", owner, root conversation)
    seal_i   = MAC(key, "seal", genesis, stored plaintext bytes of message i)
    link_i   = MAC(key, "link", link_{i-1} (genesis for i = 0), seal_i)
    head     = MAC(key, "head", owner, conversation, branch, parent, at, length,
                   revision, rechained, link_{length-1})

MAC is HMAC-SHA256 cut to 16 bytes, written base64url; its inputs are length-prefixed.
The key is the first of the agent's signing keys (``golem_core`` provenance keys,
newest first; verification accepts any); without keys a fixed public key is used, which
detects accidents, not an attacker with write access to the database.

Encryption: a row's message text becomes ``~gcm1:<key id>:<base64(nonce | ciphertext)>``
(AES-256/192/128-GCM, a fresh 96-bit nonce per row, the owner as associated data), so
ids and positions stay queryable. Plain rows (``{...}``) are read as they are, so a store
can start encrypting at any time; ``reencrypt`` moves every row to the current key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Mapping
from typing import Any

from golem_core import SigningKeys, signing_keys
from golem_shell._errors import UsageError
from golem_shell.store._errors import EncryptionKeyError

__all__ = ["Cipher", "EncryptionKeys", "Sealer"]

_UNKEYED = b"golem-store/unkeyed: detects accidents, not an attacker"
_ENCRYPTED = "~gcm1:"
_NONCE = 12


def _frame(*parts: bytes) -> bytes:
    return b"".join(len(p).to_bytes(4, "big") + p for p in parts)


def mac(key: bytes, *parts: bytes) -> str:
    digest = hmac.digest(key, _frame(*parts), hashlib.sha256)[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class Sealer:
    """Seals, links and heads with the newest key; checks them with any key."""

    def __init__(self, keys: SigningKeys | None) -> None:
        self.signed = keys is not None
        self.keys: tuple[bytes, ...] = signing_keys(keys) if keys is not None else (_UNKEYED,)

    def genesis(self, owner: str, root: str, key: bytes | None = None) -> str:
        return mac(key or self.keys[0], b"genesis", owner.encode(), root.encode())

    def seal(self, genesis: str, content: bytes, key: bytes | None = None) -> str:
        return mac(key or self.keys[0], b"seal", genesis.encode(), content)

    def link(self, previous: str, seal: str, key: bytes | None = None) -> str:
        return mac(key or self.keys[0], b"link", previous.encode(), seal.encode())

    def head(self, fields: tuple[object, ...], key: bytes | None = None) -> str:
        return mac(key or self.keys[0], b"head", *(str(f).encode() for f in fields))

    def chain(self, genesis: str, previous: str, contents: list[bytes]) -> list[tuple[str, str]]:
        """(seal, link) for each of ``contents`` following the link ``previous``."""
        out = []
        for content in contents:
            seal = self.seal(genesis, content)
            previous = self.link(previous, seal)
            out.append((seal, previous))
        return out


class EncryptionKeys:
    """Keys for encryption at rest, by id; ``current`` encrypts, any of them decrypts.

    Needs ``pip install 'golem-agents[encryption]'`` (``cryptography``). Rotate by adding a new
    key, making it ``current`` and calling the store's ``reencrypt``; drop the old key
    after that. A key is 16, 24 or 32 bytes (AES-128/192/256); keep it out of the
    database (a secret manager, an environment variable).

    Raises:
        UsageError: no keys, ``current`` not among them, an id that is empty or holds
            ``:``, a key of another length, or ``cryptography`` missing.
    """

    def __init__(self, keys: Mapping[str, bytes], current: str) -> None:
        if not keys:
            raise UsageError("EncryptionKeys needs at least one key")
        for key_id, key in keys.items():
            if not isinstance(key_id, str) or not key_id or ":" in key_id:
                raise UsageError(f"encryption key id {key_id!r}: a non-empty string without ':'")
            if not isinstance(key, bytes) or len(key) not in (16, 24, 32):
                raise UsageError(f"encryption key {key_id!r}: 16, 24 or 32 bytes (AES)")
        if current not in keys:
            raise UsageError(f"current key id {current!r} is not among the keys {sorted(keys)}")
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError as e:
            raise UsageError(
                "encryption at rest needs cryptography: pip install 'golem-agents[encryption]'"
            ) from e
        self.current = current
        self._aead: dict[str, Any] = {k: AESGCM(v) for k, v in keys.items()}

    def __repr__(self) -> str:
        return f"EncryptionKeys(ids={sorted(self._aead)}, current={self.current!r})"

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(sorted(self._aead))

    def aead(self, key_id: str) -> Any:
        found = self._aead.get(key_id)
        if found is None:
            raise EncryptionKeyError(
                key_id, f"a stored row is encrypted under it, and this store has only {self.ids}"
            )
        return found


class Cipher:
    """Turns a message's plaintext bytes into the stored text and back."""

    def __init__(self, keys: EncryptionKeys | None) -> None:
        if keys is not None and not isinstance(keys, EncryptionKeys):
            raise UsageError(f"encryption must be EncryptionKeys, got {type(keys).__name__}")
        self.keys = keys

    def seal_text(self, owner: str, plaintext: bytes) -> str:
        if self.keys is None:
            return plaintext.decode("utf-8")
        nonce = os.urandom(_NONCE)
        sealed = self.keys.aead(self.keys.current).encrypt(nonce, plaintext, _ad(owner))
        body = base64.b64encode(nonce + sealed).decode("ascii")
        return f"{_ENCRYPTED}{self.keys.current}:{body}"

    def open_text(self, owner: str, stored: str) -> bytes:
        if not stored.startswith(_ENCRYPTED):
            return stored.encode("utf-8")
        key_id, _, body = stored[len(_ENCRYPTED) :].partition(":")
        if self.keys is None:
            raise EncryptionKeyError(
                key_id, "a stored row is encrypted under it, and this store has no keys"
            )
        aead = self.keys.aead(key_id)
        from cryptography.exceptions import InvalidTag

        try:
            raw = base64.b64decode(body, validate=True)
            return bytes(aead.decrypt(raw[:_NONCE], raw[_NONCE:], _ad(owner)))
        except (InvalidTag, ValueError):
            raise EncryptionKeyError(
                key_id,
                "does not open a stored row: a wrong key for this id, or the row was altered",
            ) from None

    def lacks_key(self, stored: str) -> bool:
        """Whether a stored row is encrypted under a key id this cipher does not have (no
        keys at all, or not that one): it cannot be opened, and that says nothing about
        its content."""
        key_id = self.current_key_id(stored)
        return key_id is not None and (self.keys is None or key_id not in self.keys.ids)

    def current_key_id(self, stored: str) -> str | None:
        """The key id a stored row is encrypted under (``None``: plain)."""
        if not stored.startswith(_ENCRYPTED):
            return None
        return stored[len(_ENCRYPTED) :].partition(":")[0]


def _ad(owner: str) -> bytes:
    return b"golem-store/1\x00" + owner.encode()
