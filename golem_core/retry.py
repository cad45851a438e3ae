"""The retry policy's arithmetic, pure: how long to wait before the next attempt of a
failed request, and how to read a provider's ``retry-after``. ``RetryPolicy`` itself is
exported by ``golem_core`` and ``golem_shell``."""

from golem_core._retry import RetryPolicy, backoff_delay, next_delay, parse_retry_after

__all__ = ["RetryPolicy", "backoff_delay", "next_delay", "parse_retry_after"]

from golem_core.public import claim_public_names as _claim_public_names

_claim_public_names(globals())  # reprs and tracebacks name this module
