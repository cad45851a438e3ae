"""golem_core's property suite, run inside Pyodide (CPython on WebAssembly) under Node.

The suite is the files of ``properties/`` and ``tests/`` that use golem_core alone
(``tests/pyodide/harness.py`` selects them by their imports); golem's wheel is built from
this clone and the pinned pure-Python wheels come from the package index (cached in
``tests/pyodide/.wheels``); the npm ``pyodide`` package pinned in
``tests/pyodide/package.json`` runs them, under the Hypothesis ``ci`` profile. It fails
when a golem_core module cannot be imported in Pyodide, when golem_core performs an effect
(``tests/pyodide/suite_main.py``: an audit hook and ``sys.monitoring``), or when a test
fails. Skips without node or ``tests/pyodide/node_modules`` (``npm ci`` there), unless
``GOLEM_REQUIRE_PYODIDE=1`` (``.ci/run``), which makes that a failure. ADR 0089.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType

import pytest

HARNESS_PATH = Path(__file__).resolve().parent / "pyodide" / "harness.py"


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("golem_pyodide_harness", HARNESS_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


harness = _harness()


def pyodide_or_skip() -> None:
    """Skip unless node and ``tests/pyodide/node_modules`` are here; with
    ``GOLEM_REQUIRE_PYODIDE=1`` a missing one fails instead."""
    missing = harness.missing_runtime()
    if missing is None:
        return
    if os.environ.get("GOLEM_REQUIRE_PYODIDE") == "1":
        pytest.fail(f"GOLEM_REQUIRE_PYODIDE=1 but {missing}", pytrace=False)
    pytest.skip(missing)


def test_the_suite_is_chosen_by_its_imports() -> None:
    files, left_out = harness.select_suite()
    tests = [f for f in files if "/test_" in f]
    assert "properties/test_history_properties.py" in tests
    assert "properties/strategies.py" in files  # a helper a property imports comes along
    assert "properties/profiles.py" in files  # and the conftest's
    assert "tests/test_agent.py" in left_out  # golem_shell
    assert "tests/test_purity.py" in left_out  # subprocess
    assert "properties/test_store_properties.py" in left_out
    assert all("golem_shell" not in (harness.ROOT / f).read_text() for f in tests)


def test_golem_core_suite_passes_in_pyodide_without_effects(tmp_path: Path) -> None:
    pyodide_or_skip()
    report = harness.run_suite(tmp_path / "wheel", shards=2)
    summary = {k: v for k, v in report.items() if k != "shards"}
    detail = (
        json.dumps(summary, indent=1)[:6000]
        + "\n"
        + "\n".join(s.get("stderr", "")[-3000:] for s in report["shards"])
    )
    assert report["python"] and report["pyodide"], detail
    assert report["hypothesis_profile"] == "ci", detail
    assert not report["crashed"], detail
    assert not report["import_errors"], detail
    assert not report["effects"], detail
    assert report["failed"] == 0 and report["errors"] == 0, detail
    assert report["passed"] > 0, detail
    assert report["ok"] is True, detail
