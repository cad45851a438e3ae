"""When to try a failed model request again, and how long to wait first: pure arithmetic.

Owns the retry policy of the provider adapters. The shell supplies the effects (the
clock for ``elapsed`` and ``now_unix``, a uniform random number for the jitter, the
sleep itself); every decision is made here. The rules follow the official SDKs
(Stainless-generated, shared by OpenAI and Anthropic):

- a server's wait comes from ``retry-after-ms`` (milliseconds, float), else
  ``retry-after`` (seconds, float, or an HTTP date);
- that wait is honoured only when ``0 < wait <= 60`` seconds; otherwise the delay is
  exponential backoff with full jitter: ``rand * min(cap, base * 2 ** (attempt - 1))``;
- a failure whose kind is not retryable (``ModelErrorKind.retryable``) is never retried,
  nor is one past ``max_attempts`` retries or past ``max_total_seconds`` in all.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime

from attrs import field, frozen

from golem_core._model import ModelErrorKind

__all__ = ["RetryPolicy", "backoff_delay", "next_delay", "parse_http_date", "parse_retry_after"]

_MAX_HONOURED_WAIT = 60.0


def _non_negative(_instance: object, attribute: object, value: float) -> None:
    if not value >= 0:
        raise ValueError(f"{getattr(attribute, 'name', 'value')} must be >= 0, got {value!r}")


@frozen
class RetryPolicy:
    """How a model adapter retries a failed request.

    Args:
        max_attempts: how many times a failed request is tried again (``0`` never
            retries; the default ``3`` sends a request at most four times).
        max_total_seconds: no retry starts once this much time has passed since the
            first attempt began, nor a wait that would end past it.
        base: the first backoff ceiling in seconds; it doubles with each retry.
        cap: the largest backoff ceiling in seconds.
    """

    max_attempts: int = field(default=3, validator=_non_negative)
    max_total_seconds: float = field(default=60.0, validator=_non_negative)
    base: float = field(default=0.5, validator=_non_negative)
    cap: float = field(default=8.0, validator=_non_negative)

    @classmethod
    def never(cls) -> RetryPolicy:
        """A policy that never retries."""
        return cls(max_attempts=0)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is not None:
        return value
    for key, val in headers.items():
        if key.lower() == name:
            return val
    return None


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_retry_after(headers: Mapping[str, str], *, now_unix: float | None = None) -> float | None:
    """The wait, in seconds, a response's headers ask for.

    ``retry-after-ms`` (milliseconds) wins over ``retry-after`` (seconds, or an HTTP
    date, measured from ``now_unix``). Header names match case-insensitively. Total,
    deterministic.

    Args:
        headers: the response headers.
        now_unix: the current time in Unix seconds; without it an HTTP-date value is
            ignored.

    Returns:
        The wait in seconds (possibly zero or negative for a date in the past), or
        ``None`` when no header says, or none can be read.
    """
    ms = _header(headers, "retry-after-ms")
    if ms is not None:
        value = _finite(ms.strip())
        if value is not None:
            return value / 1000.0
    text = _header(headers, "retry-after")
    if text is None:
        return None
    text = text.strip()
    value = _finite(text)
    if value is not None:
        return value
    if now_unix is None:
        return None
    when = parse_http_date(text)
    return None if when is None else when - now_unix


_MONTHS = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_TIME = r"(\d{2}):(\d{2}):(\d{2})"
_IMF_FIXDATE = re.compile(r"[A-Za-z]{3}, (\d{2}) ([A-Za-z]{3}) (\d{4}) " + _TIME + r" GMT")
_RFC850 = re.compile(r"[A-Za-z]+, (\d{2})-([A-Za-z]{3})-(\d{2}) " + _TIME + r" GMT")
_ASCTIME = re.compile(r"[A-Za-z]{3} ([A-Za-z]{3}) ([ \d]\d) " + _TIME + r" (\d{4})")


def parse_http_date(text: str) -> float | None:
    """An HTTP date (RFC 9110 §5.6.7: IMF-fixdate, RFC 850 or asctime) in Unix seconds.

    Written out rather than taken from ``email.utils``, which imports ``socket``.
    Total, deterministic; ``None`` for anything else.
    """
    text = text.strip()
    if m := _IMF_FIXDATE.fullmatch(text):
        day, month, year, hh, mm, ss = m.groups()
    elif m := _RFC850.fullmatch(text):
        day, month, yy, hh, mm, ss = m.groups()
        year = str(1900 + int(yy) if int(yy) >= 70 else 2000 + int(yy))
    elif m := _ASCTIME.fullmatch(text):
        month, day, hh, mm, ss, year = m.groups()
    else:
        return None
    number = _MONTHS.get(month.lower())
    if number is None:
        return None
    try:
        when = datetime(int(year), number, int(day), int(hh), int(mm), int(ss), tzinfo=UTC)
    except ValueError:
        return None
    return when.timestamp()


def backoff_delay(
    attempt: int,
    *,
    retry_after: float | None,
    rand: float,
    base: float = 0.5,
    cap: float = 8.0,
) -> float:
    """How long to wait before retry number ``attempt``.

    Total, deterministic (the randomness is the ``rand`` argument).

    Args:
        attempt: the retry about to be made, from 1.
        retry_after: the wait the server asked for, honoured when ``0 < value <= 60``.
        rand: a uniform random number in ``[0, 1)`` for the full jitter.
        base: the first backoff ceiling in seconds.
        cap: the largest backoff ceiling in seconds.

    Returns:
        The wait in seconds, never negative.
    """
    if retry_after is not None and 0 < retry_after <= _MAX_HONOURED_WAIT:
        return retry_after
    exponent = max(0, attempt - 1)
    ceiling = cap if exponent >= 64 else min(cap, base * (2.0**exponent))
    return max(0.0, min(1.0, rand)) * ceiling


def next_delay(
    policy: RetryPolicy,
    attempt: int,
    elapsed: float,
    error_kind: ModelErrorKind,
    retry_after: float | None,
    rand: float,
) -> float | None:
    """Whether to retry a failed request, and after how long.

    Total, deterministic.

    Args:
        policy: the retry policy.
        attempt: the retry that would be made, from 1.
        elapsed: seconds since the first attempt began.
        error_kind: why the last attempt failed.
        retry_after: the wait the server asked for, if any.
        rand: a uniform random number in ``[0, 1)``.

    Returns:
        The wait in seconds before retrying, or ``None`` to give up.
    """
    if not error_kind.retryable or attempt > policy.max_attempts:
        return None
    delay = backoff_delay(
        attempt, retry_after=retry_after, rand=rand, base=policy.base, cap=policy.cap
    )
    if elapsed + delay > policy.max_total_seconds:
        return None
    return delay
