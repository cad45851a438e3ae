"""The retry hook: how the HTTP layer tells the run in progress that a request is retried.

Owns one context variable. The run's observer (``golem_shell.observe._observe``) sets it for the
duration of a run; the HTTP layer (``golem_shell.models._http``) calls ``report_retry``
before it sleeps. A leaf module, so the HTTP layer depends on it and not on the observer.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import TypeAlias

__all__ = ["RetryHook", "report_retry", "retry_hook"]

RetryHook: TypeAlias = Callable[[int, float, BaseException], Awaitable[None]]
"""Called with (attempt, delay in seconds, the error) before a request is retried."""

retry_hook: contextvars.ContextVar[RetryHook | None] = contextvars.ContextVar(
    "golem_retry_hook", default=None
)


async def report_retry(attempt: int, delay: float, error: BaseException) -> None:
    """Tell the run in progress (if observed) that a request is retried after ``delay`` s.

    Called by the HTTP layer before it sleeps; a custom ``Model`` that retries on its
    own may call it too. Outside an observed run it does nothing.
    """
    hook = retry_hook.get()
    if hook is not None:
        await hook(attempt, delay, error)
