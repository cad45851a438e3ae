"""The errors of the stores, and the checks of what a caller passes (owner, ids, lengths).

Errors::

    GolemError
    └── HistoryStoreError        the database failed or refused (the driver's error chained)
        ├── HistoryConflict      append/branch/fork lost a compare-and-set; nothing written
        ├── HistoryNotFound      no such conversation or branch for this owner
        ├── CorruptHistoryError  a stored row no longer decodes (or a position is missing)
        └── EncryptionKeyError   a row is encrypted under a key id the store lacks (or
                                 the key for that id does not open it)

Misuse (an empty or unstorable id, a negative length, a fork past the end, psycopg or
cryptography missing) raises ``UsageError``.
"""

from __future__ import annotations

from golem_shell._errors import GolemError, UsageError

__all__ = [
    "CorruptHistoryError",
    "EncryptionKeyError",
    "HistoryConflict",
    "HistoryNotFound",
    "HistoryStoreError",
]


class HistoryStoreError(GolemError):
    """A history store failed: the database refused, or could not be reached."""


class HistoryConflict(HistoryStoreError):
    """An append (or fork) lost a compare-and-set: the branch is not as long as expected.

    Nothing was written. Load the conversation again and decide (rerun, merge, give up).
    """

    def __init__(
        self, conversation_id: str, expected_length: int, actual_length: int, branch: str = "main"
    ) -> None:
        self.conversation_id = conversation_id
        self.expected_length = expected_length
        self.actual_length = actual_length
        self.branch = branch
        where = f"conversation {conversation_id!r}"
        if branch != "main":
            where += f", branch {branch!r},"
        super().__init__(
            f"{where} has {messages_count(actual_length)}, expected "
            f"{expected_length}: another writer got there first; nothing was written "
            "(load it again and retry)"
        )


class HistoryNotFound(HistoryStoreError, KeyError):
    """No such conversation (or branch) for this owner: another owner's ids look the same."""

    def __init__(self, conversation_id: str, branch: str | None = None) -> None:
        self.conversation_id = conversation_id
        self.branch = branch
        what = f"conversation {conversation_id!r}"
        if branch is not None:
            what = f"branch {branch!r} of {what}"
        super().__init__(f"{what} not found for this owner")

    def __str__(self) -> str:
        return str(self.args[0])


class CorruptHistoryError(HistoryStoreError):
    """A stored row no longer decodes, or a position is missing; names both."""

    def __init__(self, conversation_id: str, position: int, reason: str) -> None:
        self.conversation_id = conversation_id
        self.position = position
        self.reason = reason
        super().__init__(
            f"conversation {conversation_id!r}, position {position}: cannot load: {reason}"
        )


class EncryptionKeyError(HistoryStoreError):
    """A stored row needs an encryption key the store was not given, or a wrong one."""

    def __init__(self, key_id: str, reason: str) -> None:
        self.key_id = key_id
        super().__init__(f"encryption key id {key_id!r}: {reason}")


class DuplicateKey(Exception):
    """Internal: an insert hit a taken primary key: a lost race."""


def messages_count(n: int) -> str:
    return f"{n} message" if n == 1 else f"{n} messages"


def check_id(name: str, value: object) -> str:
    """``value`` if it is a non-empty string a database can hold, else ``UsageError``.

    A lone surrogate (``"\\ud800"``, which JSON allows) is refused by name and index: no
    database text type can hold it, and two ids differing only there would be one.
    """
    if not isinstance(value, str) or not value:
        raise UsageError(f"{name} must be a non-empty string, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UsageError(
            f"{name} {value!r} holds a lone surrogate at index {e.start}: not storable text "
            "(encode it, e.g. as its JSON escape, before using it as an id)"
        ) from None
    if "\x00" in value:
        raise UsageError(f"{name} {value!r} holds a NUL character: not storable text")
    return value


def check_length(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{name} must be an int >= 0, got {value!r}")
    return value
