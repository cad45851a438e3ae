"""Identity helpers below the application level: pure UUIDv7 minting (the clock and the
randomness are arguments; ``golem_shell.new_id`` feeds them) and stamping."""

from golem_core._identity import stamp
from golem_core._ids import next_uuid7, uuid7, uuid7_unix_ms

__all__ = ["next_uuid7", "stamp", "uuid7", "uuid7_unix_ms"]
