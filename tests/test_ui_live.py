"""LiveRuns: a run's frames outlive their readers; readers join from any frame number."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from golem_shell.ui import LiveRun, LiveRuns, Refused

pytestmark = pytest.mark.anyio


def gated(gate: asyncio.Event, count: int = 6) -> Callable[[LiveRun], AsyncIterator[str]]:
    async def frames(run: LiveRun) -> AsyncIterator[str]:
        for k in range(1, count + 1):
            if k == 4:
                await gate.wait()  # the run waits here until the test lets it go on
            yield f"f{k}"

    return frames


async def test_a_reader_that_leaves_never_stops_the_run_and_a_new_one_gets_the_rest() -> None:
    runs = LiveRuns(linger=60)
    gate = asyncio.Event()
    run = runs.start("c1", gated(gate))
    seen: list[tuple[int, str]] = []
    async for n, data in run.follow():
        seen.append((n, data))
        if n == 2:
            break  # the browser dropped
    gate.set()
    rest = [item async for item in run.follow(after=2)]
    assert seen + rest == [(k, f"f{k}") for k in range(1, 7)]
    assert run.done and runs.get("c1") is run and runs.running("c1") is None
    assert [item async for item in run.follow(after=6)] == []
    await runs.aclose()


async def test_many_readers_get_the_same_frames_in_order() -> None:
    runs = LiveRuns()
    gate = asyncio.Event()
    run = runs.start("c1", gated(gate))

    async def read(after: int) -> list[str]:
        return [data async for _, data in run.follow(after)]

    readers = [asyncio.ensure_future(read(after)) for after in (0, 1, 3)]
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*readers) == [
        [f"f{k}" for k in range(1, 7)],
        [f"f{k}" for k in range(2, 7)],
        [f"f{k}" for k in range(4, 7)],
    ]
    await runs.aclose()


async def test_a_second_run_under_a_key_in_flight_is_refused() -> None:
    runs = LiveRuns()
    gate = asyncio.Event()
    runs.start("c1", gated(gate))
    with pytest.raises(Refused, match="still in flight") as caught:
        runs.start("c1", gated(gate))
    assert caught.value.status == 409
    other = runs.start("c2", gated(gate))  # another key is fine
    gate.set()
    await runs.wait("c1")
    again = runs.start("c1", gated(gate))  # finished: a new turn may start
    await runs.wait("c1")
    assert [d async for _, d in again.follow()] == [f"f{k}" for k in range(1, 7)]
    await runs.wait("c2")
    assert other.done
    await runs.aclose()


async def test_a_finished_run_is_forgotten_after_it_lingered() -> None:
    runs = LiveRuns(linger=0)
    gate = asyncio.Event()
    gate.set()
    run = runs.start("c1", gated(gate))
    assert run.task is not None
    await run.task
    assert runs.get("c1") is None


async def test_a_stream_that_raises_still_ends_for_its_readers() -> None:
    async def broken(run: LiveRun) -> AsyncIterator[str]:
        yield "first"
        raise RuntimeError("bug in the server's stream")

    runs = LiveRuns()
    run = runs.start("c1", broken)
    assert [d async for _, d in run.follow()] == ["first"]
    assert run.done
    await runs.aclose()


async def test_resume_gives_the_run_in_flight_none_once_finished_and_refuses_past_the_end() -> None:
    runs = LiveRuns(linger=60)
    gate = asyncio.Event()
    run = runs.start("c1", gated(gate))
    await asyncio.sleep(0)
    assert len(run.frames) == 3  # waiting at the gate
    assert runs.resume("c1", 0) is run and runs.resume("c1", 3) is run
    with pytest.raises(Refused, match="past the end") as caught:
        runs.resume("c1", 4)
    assert caught.value.status == 409
    with pytest.raises(Refused, match="frame number") as caught:
        runs.resume("c1", -1)
    assert caught.value.status == 400
    assert runs.resume("c2") is None
    gate.set()
    await runs.wait("c1")
    assert runs.get("c1") is run  # still kept for linger ...
    assert runs.resume("c1", 0) is None and runs.resume("c1", 99) is None  # ... but done
    await runs.aclose()
