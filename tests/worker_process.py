"""The worker processes of the durable fault tests, and the wait that watches them.

Owns ``Worker``: a test's worker script (``durable_worker.py``, ``temporal_worker.py``,
``events_worker.py``, ``mcp_durable_worker.py``) started as a subprocess of this tree's
golem with one JSON configuration file, its stderr kept in a file beside it and shown
when it dies; ``kill()`` is a SIGKILL (no cleanup, no exception, no flush). And the
waits that poll a condition while the workers run, failing the test with the stderr of
a worker that died or after a deadline: ``wait_for`` (blocking) and ``until`` (in an
event loop; the condition may be a coroutine function).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

__all__ = ["Worker", "until", "wait_for"]

TESTS = Path(__file__).resolve().parent
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
"""A worker imports this tree's golem (a script's own directory comes first on its path,
so without this it would import the installed one)."""


class Worker:
    """``script`` run as a subprocess with ``config`` written to ``<where>/<name>.json``
    (its only argument); its stderr goes to ``<where>/<name>.stderr``, its stdout nowhere.
    ``ready`` is ``<where>/<name>.ready``, the file a worker that writes one creates once
    it polls."""

    def __init__(self, script: Path, where: Path, name: str, config: dict[str, Any]) -> None:
        path = where / f"{name}.json"
        path.write_text(json.dumps(config))
        self.name = name
        self.ready = where / f"{name}.ready"
        self.stderr = (where / f"{name}.stderr").open("w+")
        self.process = subprocess.Popen(
            [sys.executable, str(script), str(path)],
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            cwd=TESTS.parent,
            env=ENV,
        )

    def died(self) -> str | None:
        """``None`` while the worker runs; once it exited, its exit code and stderr."""
        if self.process.poll() is None:
            return None
        self.stderr.seek(0)
        return f"worker {self.name} exited with {self.process.returncode}:\n{self.stderr.read()}"

    def kill(self) -> None:
        """SIGKILL: no cleanup, no exception, no flush."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def finish(self, timeout: float = 60) -> None:
        """Wait for the worker to exit by itself, successfully."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.stderr.seek(0)
            pytest.fail(f"worker {self.name} did not finish:\n{self.stderr.read()}")
        problem = self.died()
        assert self.process.returncode == 0, problem


def _check(workers: Sequence[Worker], what: str, deadline: float) -> None:
    """Fail the test if a worker died or the deadline passed while waiting for ``what``."""
    for w in workers:
        problem = w.died()
        if problem is not None:
            pytest.fail(f"while waiting for {what}: {problem}")
    if time.monotonic() > deadline:
        pytest.fail(f"timed out waiting for {what}")


def wait_for(
    condition: Callable[[], bool],
    workers: Sequence[Worker],
    what: str,
    *,
    seconds: float = 60,
    every: float = 0.02,
) -> None:
    """Block until ``condition()`` holds, looking every ``every`` seconds: the test fails
    if one of ``workers`` dies first, or after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        _check(workers, what, deadline)
        time.sleep(every)


async def until(
    condition: Callable[[], bool | Awaitable[bool]],
    workers: Sequence[Worker],
    what: str,
    *,
    seconds: float = 60,
    every: float = 0.02,
) -> None:
    """``wait_for`` in an event loop (it sleeps with ``asyncio.sleep``); ``condition`` may
    return an awaitable (a coroutine function), which is awaited."""
    deadline = time.monotonic() + seconds
    while not await _holds(condition):
        _check(workers, what, deadline)
        await asyncio.sleep(every)


async def _holds(condition: Callable[[], bool | Awaitable[bool]]) -> bool:
    value = condition()
    return await value if inspect.isawaitable(value) else value
