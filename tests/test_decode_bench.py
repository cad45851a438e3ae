"""``python -m bench.decode`` and its second workload (``bench/workload2.py``)."""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ is not part of the wheel
    sys.path.insert(0, str(ROOT))

from bench import decode, report, workload2  # noqa: E402
from golem_core import decode_history, encode_history  # noqa: E402


def test_the_second_workload_is_deterministic_and_a_prefix_of_a_longer_one() -> None:
    short = workload2.conversation(300, seed=3)
    assert len(short) == 300
    assert short == workload2.conversation(300, seed=3)
    assert workload2.conversation(500, seed=3)[:300] == short
    assert workload2.conversation(300, seed=4) != short


def test_the_second_workload_is_the_mix_it_says() -> None:
    messages = workload2.conversation(3_000)
    kinds = collections.Counter(p["kind"] for m in messages for p in m["parts"])
    assert {"text", "thinking", "tool_call", "image_url", "image_data", "document_url"} <= set(
        kinds
    )
    calls = [sum(p["kind"] == "tool_call" for p in m["parts"]) for m in messages]
    assert max(calls) >= 6 and kinds["tool_call"] > len(messages) / 3
    results = [len(m["parts"][0]["text"]) for m in messages if m["role"] == "tool"]
    assert min(results) < 200 and max(results) > 8_000
    assert any(m["failed"] for m in messages)
    assistants = [m for m in messages if m["role"] == "assistant"]
    assert all(m["meta"] is not None for m in assistants)


def test_golem_round_trips_the_second_workload() -> None:
    history = decode.to_golem2(workload2.conversation(400))
    assert decode_history(encode_history(history)).unwrap() == history
    assert any(m.usage is not None and m.created_at is not None for m in history)


def test_the_command_writes_its_section_and_the_report_is_its_render(tmp_path: Path) -> None:
    written = tmp_path / "results.md"
    argv = ["--sizes", "60", "--repeat", "1", "--no-peers", "--write", str(written)]
    assert decode.main(argv) in (0, 1)
    recorded = report.load(written.with_suffix(".json"))
    rows = recorded["decode"]["rows"]
    assert [(r["workload"], r["n"]) for r in rows] == [("chat", 60), ("agentic", 60)]
    assert all(r["pydantic_ai_s"] is None for r in rows)
    text = written.read_text(encoding="utf-8")
    assert text == report.render(recorded)
    assert "## Decode on two workloads" in text
    assert "python -m bench.decode --sizes 60 --repeat 1 --no-peers" in text
    assert json.loads(written.with_suffix(".json").read_text())["decode"]["repeat"] == 1


def test_a_missed_target_is_said_missed() -> None:
    row = {
        "workload": "chat",
        "n": 1_000,
        "bytes": 1_000_000,
        "json_loads_s": 1.0,
        "decode_s": 2.0,
        "parse_s": 0.5,
        "build_s": 1.4,
        "pydantic_ai_s": 10.0,
    }
    data = {"command": "c", "machine": "m", "repeat": 1, "versions": {}, "rows": [row]}
    text = decode.render(data)
    assert "| 2.00 | **missed** |" in text and "| 0.200 | met |" in text
    assert "Targets met: 1 of 2." in text and "Missed: chat 1,000 vs json.loads." in text
