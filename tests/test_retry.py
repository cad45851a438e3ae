"""golem_core._retry: retry-after parsing, backoff, and the retry decision."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem_core import (
    ModelErrorKind,
    RetryPolicy,
)
from golem_core._retry import parse_http_date
from golem_core.retry import (
    backoff_delay,
    next_delay,
    parse_retry_after,
)

NOW = 784111777.0  # Sun, 06 Nov 1994 08:49:37 GMT


def test_retry_after_ms_wins() -> None:
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "7"}) == 0.25


def test_retry_after_seconds_integer_and_float() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": " 1.5 "}) == 1.5


def test_header_names_match_case_insensitively() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"RETRY-AFTER-MS": "3000"}) == 3.0


def test_unreadable_ms_falls_back_to_seconds() -> None:
    assert parse_retry_after({"retry-after-ms": "soon", "retry-after": "2"}) == 2.0


def test_http_date_needs_now() -> None:
    headers = {"retry-after": "Sun, 06 Nov 1994 08:49:47 GMT"}
    assert parse_retry_after(headers) is None
    assert parse_retry_after(headers, now_unix=NOW) == 10.0
    assert parse_retry_after(headers, now_unix=NOW + 20) == -10.0


@pytest.mark.parametrize(
    "text",
    ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"],
)
def test_the_three_http_date_forms(text: str) -> None:
    assert parse_http_date(text) == NOW


@pytest.mark.parametrize(
    "value", ["", "soon", "nan", "inf", "-inf", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994"]
)
def test_unreadable_values_are_none(value: str) -> None:
    assert parse_retry_after({"retry-after": value}, now_unix=NOW) is None


def test_no_header_is_none() -> None:
    assert parse_retry_after({}) is None


def test_backoff_is_exponential_with_full_jitter_and_capped() -> None:
    assert [backoff_delay(a, retry_after=None, rand=0.999999) for a in (1, 2, 3, 4, 5, 6)] == [
        pytest.approx(x, rel=1e-5) for x in (0.5, 1.0, 2.0, 4.0, 8.0, 8.0)
    ]
    assert backoff_delay(3, retry_after=None, rand=0.0) == 0.0
    assert backoff_delay(3, retry_after=None, rand=0.5) == 1.0
    assert backoff_delay(1000, retry_after=None, rand=0.5, cap=3.0) == 1.5


def test_retry_after_is_honoured_only_within_sixty_seconds() -> None:
    assert backoff_delay(1, retry_after=2.5, rand=0.5) == 2.5
    assert backoff_delay(1, retry_after=60, rand=0.5) == 60
    assert backoff_delay(1, retry_after=61, rand=0.5) == 0.25
    assert backoff_delay(1, retry_after=0, rand=0.5) == 0.25
    assert backoff_delay(1, retry_after=-3, rand=0.5) == 0.25


@given(
    attempt=st.integers(min_value=-5, max_value=10_000),
    rand=st.floats(min_value=0, max_value=1),
    retry_after=st.none() | st.floats(allow_nan=False),
)
def test_backoff_is_never_negative_nor_above_the_cap_or_sixty(
    attempt: int, rand: float, retry_after: float | None
) -> None:
    delay = backoff_delay(attempt, retry_after=retry_after, rand=rand)
    assert 0 <= delay <= 60
    if retry_after is None or not 0 < retry_after <= 60:
        assert delay <= 8.0


def test_non_retryable_kinds_are_never_retried() -> None:
    policy = RetryPolicy()
    for kind in ModelErrorKind:
        delay = next_delay(policy, 1, 0.0, kind, None, 0.5)
        assert (delay is not None) == kind.retryable, kind
    for kind in (
        ModelErrorKind.QUOTA,
        ModelErrorKind.CONTEXT_TOO_LONG,
        ModelErrorKind.AUTHENTICATION,
        ModelErrorKind.INVALID_REQUEST,
        ModelErrorKind.BAD_RESPONSE,
        ModelErrorKind.UNSUPPORTED_CONTENT,
    ):
        assert next_delay(policy, 1, 0.0, kind, 1.0, 0.5) is None


def test_gives_up_after_max_attempts() -> None:
    policy = RetryPolicy(max_attempts=2)
    kind = ModelErrorKind.OVERLOADED
    assert next_delay(policy, 1, 0.0, kind, None, 0.5) == 0.25
    assert next_delay(policy, 2, 0.0, kind, None, 0.5) == 0.5
    assert next_delay(policy, 3, 0.0, kind, None, 0.5) is None
    assert next_delay(RetryPolicy.never(), 1, 0.0, kind, None, 0.5) is None


def test_gives_up_past_the_total_time_budget() -> None:
    policy = RetryPolicy(max_total_seconds=10)
    kind = ModelErrorKind.RATE_LIMIT
    assert next_delay(policy, 1, 5.0, kind, 4.0, 0.5) == 4.0
    assert next_delay(policy, 1, 7.0, kind, 4.0, 0.5) is None


def test_retry_after_is_used_by_next_delay() -> None:
    assert next_delay(RetryPolicy(), 1, 0.0, ModelErrorKind.RATE_LIMIT, 3.0, 0.9) == 3.0


def test_policy_refuses_negative_values() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=-1)
    with pytest.raises(ValueError):
        RetryPolicy(cap=float("nan"))
