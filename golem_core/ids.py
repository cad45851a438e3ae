"""Identity helpers below the application level: pure UUIDv7 minting (the clock and the
randomness are arguments; ``golem_shell.new_id`` feeds them), stamping, and the run tag of
the call ids a run mints."""

from golem_core._identity import stamp
from golem_core._ids import next_uuid7, run_tag, uuid7, uuid7_unix_ms

__all__ = ["next_uuid7", "run_tag", "stamp", "uuid7", "uuid7_unix_ms"]

from golem_core.public import claim_public_names as _claim_public_names

_claim_public_names(globals())  # reprs and tracebacks name this module
