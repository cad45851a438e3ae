"""``bench.soak_limit``'s pieces that need no deployment: the machine's CPU share from
two ``/proc/stat`` readings, the search's stopping rule, and its section's rendering
(which names an invariant a phase broke). The search itself runs a deployment per step:
``python -m bench.soak_limit`` (the soak's own test, ``tests/test_soak.py``, covers the
deployment and ``run_phase``)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bench.soak_limit as soak_limit  # noqa: E402


def test_cpu_busy_is_the_share_of_cpu_time_not_idle() -> None:
    assert soak_limit.cpu_busy((100, 1000), (400, 1400)) == pytest.approx(0.75)
    assert soak_limit.cpu_busy((5, 5), (5, 5)) == 0.0  # no time passed: nothing to divide
    busy, total = soak_limit._cpu_times()
    assert 0 <= busy <= total


def _phase(users: int, turns_per_s: float, broken: str | None = None) -> dict[str, Any]:
    invariants: dict[str, Any] = {"counts": {}, "stored_once": {"ok": True}}
    if broken:
        invariants[broken] = {"ok": False}
    return {
        "users": users,
        "turns": int(turns_per_s * 60),
        "turns_per_s": turns_per_s,
        "latency_p50_s": 0.5,
        "latency_p99_s": 1.5,
        "added_p50_s": 0.1,
        "added_p99_s": None,
        "invariants": invariants,
    }


def test_the_search_doubles_the_users_until_throughput_levels_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rates = {4: 3.0, 8: 6.1, 16: 9.0, 32: 9.5, 64: 20.0}  # levels off at 32 (< +10 %)
    seen: list[int] = []

    class Deployment:
        def __init__(self, config: str, where: Path, *, servers: int) -> None:
            self.closed = False

        async def start(self) -> None:
            pass

        async def close(self) -> None:
            self.closed = True

    async def run_phase(deploy: Any, *, users: int, **_: Any) -> dict[str, Any]:
        seen.append(users)
        return _phase(users, rates[users])

    monkeypatch.setattr(soak_limit, "Deployment", Deployment)
    monkeypatch.setattr(soak_limit, "run_phase", run_phase)
    steps = asyncio.run(
        soak_limit.search("plain", tmp_path, start=4, max_users=128, minutes=0.1, gain=0.1)
    )
    assert seen == [4, 8, 16, 32]
    assert [s["config"] for s in steps] == ["plain"] * 4
    assert all(0 <= s["cpu_busy"] <= 1 for s in steps)


def test_the_section_names_what_broke_and_where() -> None:
    data = {
        "command": "python -m bench.soak_limit --config plain",
        "machine": {"nproc": 2, "python": "3.11.7", "load_average_end": 2.0},
        "parameters": {"minutes": 1.0, "gain": 0.1},
        "steps": [
            {**_phase(4, 3.0), "config": "plain", "cpu_busy": 0.41},
            {**_phase(8, 3.1, broken="frames"), "config": "plain", "cpu_busy": 0.97},
        ],
    }
    text = soak_limit.render(data)
    assert "`python -m bench.soak_limit --config plain`" in text
    assert "| plain | 4 | 180 | 3.00 | 500 | 1500 | 100 | - | 41% | hold |" in text
    assert "| plain | 8 | 186 | 3.10 | 500 | 1500 | 100 | - | 97% | BROKEN: frames |" in text
