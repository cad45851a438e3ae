"""`python -m bench` runs with the peers and without them (smoke only: no timing asserted)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ is not part of the wheel
    sys.path.insert(0, str(ROOT))

from bench.peers import load_peers  # noqa: E402
from bench.run import main  # noqa: E402

PEER_MODULES = ("pydantic_ai", "langchain_core", "orjson", "openai", "anthropic", "google")
"""Peers, and the SDKs whose stream accumulation `bench/streaming.py` compares with."""
QUICK = ["--quick", "--sizes", "200", "--repeat", "1"]


def _lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _timed(lines: list[dict[str, object]]) -> set[tuple[object, object]]:
    return {(line["lib"], line["op"]) for line in lines if line["kind"] == "time"}


def test_quick_run_prints_json_lines_and_writes_the_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "results.md"
    assert main([*QUICK, "--write", str(report)]) == 0
    lines = _lines(capsys.readouterr().out)
    timed = _timed(lines)
    for op in ("decode_json", "encode_json", "normalize_damaged", "budget_half_tokens"):
        assert ("golem", op) in timed
    assert ("python", "floor_pass") in timed
    assert any(line["kind"] == "memory" for line in lines)
    ratios = [line for line in lines if line["kind"] == "ratio"]
    assert ratios and all(line["ratio"] > 0 for line in ratios)  # type: ignore[operator]
    if load_peers().pydantic_ai is not None:
        assert ("pydantic-ai", "agent_run_text") in timed
    text = report.read_text()
    assert "| golem op |" in text and "nproc" in text


def test_quick_run_without_any_peer_still_measures_golem_against_the_floor(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] in PEER_MODULES] + [*PEER_MODULES]:
        monkeypatch.setitem(sys.modules, name, None)  # importing it now raises ImportError
    peers = load_peers()
    assert (peers.pydantic_ai, peers.langchain, peers.orjson) == (None, None, None)
    assert main(QUICK) == 0
    lines = _lines(capsys.readouterr().out)
    assert {lib for lib, _ in _timed(lines)} == {"golem", "python", "stdlib-json"}
    versus = {(line["op"], line["versus"]) for line in lines if line["kind"] == "ratio"}
    assert ("normalize_clean_cold", "python floor_pass") in versus
    assert ("sanitize_clean_cold", "python floor_pass") in versus
    assert ("decode_json", "stdlib-json json_loads") in versus
