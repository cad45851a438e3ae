"""Issue 46 item 1: a durable run takes every steering message it accepted or gives it
back, on DBOS and on Temporal.

A flood of steering messages (one every few milliseconds) is sent across a run's end,
until ``steer`` refuses one (the run has ended). Every message ``steer`` accepted must be
either taken (in the run's conversation) or given back (``RunResult.steering_left``, or
``RunError.steering_left`` for a failed run): never both, never neither; the refused one
is in neither. Repeated, on a run that ends with its output after five tool turns (the
race with the last look) and on a run whose model fails (a run that ends without looking
again).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from dbos_launch import dbos_fixture

from golem_core import Message, ModelErrorKind, Role, ToolCallPart
from golem_shell import Agent, FunctionModel, ModelError, RunError, UsageError

dbos = pytest.importorskip("dbos", reason="the dbos extra is not installed")
pytest.importorskip("temporalio", reason="the temporal extra is not installed")

from temporalio.client import Client  # noqa: E402

from golem_shell.durable import DurableAgent  # noqa: E402
from golem_shell.temporal import TemporalAgent  # noqa: E402

pytestmark = pytest.mark.anyio

_REPEATS = 3
_CAP = 2000  # messages; a run that never ends fails the test instead of hanging it


async def tick() -> str:
    """Wait a little."""
    await asyncio.sleep(0.02)
    return "ticked"


async def _answer(request: Any) -> Message | str:
    """Five tool turns (so the flood is under way well before the end), then the answer."""
    await asyncio.sleep(0.002)
    turns = sum(1 for m in request.messages if m.role is Role.ASSISTANT)
    if turns < 5:
        return Message(Role.ASSISTANT, (ToolCallPart(f"t{turns}", "tick", "{}"),))
    return "done"


async def _fail_late(request: Any) -> str:
    await asyncio.sleep(0.3)  # steering messages arrive while the request runs
    raise ModelError(ModelErrorKind.INVALID_REQUEST, "the model refuses", provider="test")


_MODELS: dict[str, Callable[[Any], Awaitable[Message | str]]] = {
    "ends": _answer,
    "fails": _fail_late,
}


def _agent(kind: str) -> Agent[None, str]:
    return Agent(FunctionModel(_MODELS[kind]), name=f"steer-flood-{kind}", tools=[tick])


async def _flood(steer: Callable[[str], Awaitable[None]]) -> tuple[list[str], str]:
    """Steer until the run refuses: the accepted messages and the refused one."""
    accepted: list[str] = []
    for i in range(_CAP):
        text = f"steer-{i}"
        try:
            await steer(text)
        except UsageError as e:
            assert "not taken" in str(e) or "not be taken" in str(e), e
            return accepted, text
        accepted.append(text)
        await asyncio.sleep(random.uniform(0.001, 0.008))
    raise AssertionError(f"the run did not end after {_CAP} steering messages")


def _check(
    accepted: list[str],
    refused: str,
    messages: tuple[Message, ...],
    left: tuple[Message, ...],
) -> None:
    taken = [m.text for m in messages if m.role is Role.USER and m.text.startswith("steer-")]
    given_back = [m.text for m in left]
    assert len(set(taken)) == len(taken)  # none taken twice
    assert not set(taken) & set(given_back), "a message both taken and given back"
    lost = set(accepted) - set(taken) - set(given_back)
    assert not lost, f"accepted, neither taken nor given back: {sorted(lost)}"
    assert set(taken) | set(given_back) == set(accepted)
    assert refused not in taken and refused not in given_back
    print(f"accepted {len(accepted)}: taken {len(taken)}, given back {len(given_back)}")


async def _outcome(read: Awaitable[Any]) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    """The conversation and the given-back messages of a run, done or failed."""
    try:
        result = await read
    except RunError as e:
        messages = () if e.partial is None else e.partial.messages
        return messages, e.steering_left
    return result.messages, result.steering_left


# -- DBOS -------------------------------------------------------------------------------------

_DBOS = {kind: DurableAgent(_agent(kind), steerable=True) for kind in _MODELS}


launched = dbos_fixture("golem-steering")
"""One DBOS on a fresh SQLite file for this module's tests; yields the file."""


@pytest.mark.parametrize("repeat", range(_REPEATS))
@pytest.mark.parametrize("kind", sorted(_MODELS))
async def test_dbos_takes_or_gives_back_every_steering_message(
    launched: Path, kind: str, repeat: int
) -> None:
    durable = _DBOS[kind]
    run_id = await durable.start("go", run_id=f"flood-{kind}-{uuid.uuid4()}")
    accepted, refused = await _flood(lambda text: durable.steer(run_id, text))
    messages, left = await _outcome(durable.result(run_id))
    _check(accepted, refused, messages, left)
    if kind == "fails":
        assert left, "messages sent while the failing request ran are given back"


# -- Temporal ---------------------------------------------------------------------------------

_QUEUE = f"steering-{uuid.uuid4().hex[:8]}"
_TEMPORAL = {kind: TemporalAgent(_agent(kind), task_queue=_QUEUE) for kind in _MODELS}


@pytest.mark.parametrize("repeat", range(_REPEATS))
@pytest.mark.parametrize("kind", sorted(_MODELS))
async def test_temporal_takes_or_gives_back_every_steering_message(
    temporal_server: Any, kind: str, repeat: int
) -> None:
    client = await Client.connect(temporal_server.address)
    durable = _TEMPORAL[kind]
    async with durable.worker(client):
        run_id = await durable.start(client, "go", run_id=f"flood-{kind}-{uuid.uuid4()}")
        accepted, refused = await _flood(lambda text: durable.steer(client, run_id, text))
        messages, left = await _outcome(durable.result(client, run_id))
    _check(accepted, refused, messages, left)
    if kind == "fails":
        assert left, "messages sent while the failing request ran are given back"
