"""Run golem_core's property suite inside Pyodide (CPython on WebAssembly) under Node.

This module owns three things, shared by ``tests/test_pyodide.py`` and ``bench/pyodide.py``:

- ``select_suite(root)``: which files of ``properties/`` and ``tests/`` form golem_core's
  suite, found by reading their imports with ``ast`` (so a new property joins by itself): a
  test file is in when it imports golem_core (itself or through a local helper) and
  otherwise only the standard library (minus the modules of effects Pyodide cannot do),
  golem_core's dependencies, Hypothesis, pytest, and local helpers that pass the same rule;
- ``wheels(root, cache)``: the wheels Pyodide installs: golem's own, built from the clone
  each time (``pip wheel --no-deps``), and the pinned pure-Python wheels of ``PINNED`` from
  the package index (``pip download --only-binary=:all: --no-deps``), cached in ``cache``;
- ``run_node(script, payload)``: ``node tests/pyodide/<script>`` with a JSON payload on
  stdin, returning the JSON it prints last.

Nothing here decides pass or fail: ``run_suite.mjs`` and ``suite_main.py`` (run inside
Pyodide) do, and ``tests/test_pyodide.py`` asserts on their report.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

HERE: Final = Path(__file__).resolve().parent
ROOT: Final = HERE.parent.parent
PYODIDE_DIR: Final = HERE / "node_modules" / "pyodide"
WHEEL_CACHE: Final = HERE / ".wheels"

PINNED: Final[tuple[str, ...]] = (
    # golem_core's dependencies
    "attrs==26.1.0",
    "cattrs==26.2.1",
    "returns==0.30.0",
    "typing_extensions==4.16.0",
    # Hypothesis: 6.155.7 is the last release that is pure Python (6.156 on ship a native
    # part, with no Pyodide wheel), and its one dependency
    "hypothesis==6.155.7",
    "sortedcontainers==2.4.0",
    # pytest and its dependencies (Pyodide's CPython is 3.13: no exceptiongroup, no tomli)
    "pytest==9.2.0",
    "pluggy==1.7.0",
    "iniconfig==2.3.1",
    "packaging==26.4",
    "pygments==2.21.0",
)
"""The third-party wheels installed into Pyodide, each pure Python (``py3-none-any``)."""

PYODIDE_PYTHON: Final = "3.13"
"""The Python version of the pinned ``pyodide`` npm package (``package.json``)."""

NODE_STACK_KB: Final = 4000
"""Node's stack (``--stack-size``, in KiB; its default is about 984): Pyodide's CPython runs
on it, and with the default one CPython's C JSON scanner recursing through input nested
about 4,000 deep (``test_deep_nesting_anywhere`` goes to 10,000, ``test_arguments`` to
100,000) overflows it with a fatal Pyodide error instead of a ``RecursionError``; with
4,000 (under the usual 8 MiB thread stack, ``ulimit -s``) Pyodide 0.29's Python 3.13
raises ``RecursionError`` as CPython does (Pyodide 314's Python 3.14 does not, at any
size: docs/adr/0089)."""

_ORJSON_ONLY: Final = "spies on the orjson-only build path; Pyodide has no orjson"
DESELECTED: Final[dict[str, str]] = {
    "tests/test_decode_gc.py::test_the_collector_is_paused_while_building_and_on_again_after"
    "[orjson]": _ORJSON_ONLY,
    "tests/test_decode_gc.py::test_the_collector_is_on_again_when_the_build_raises": _ORJSON_ONLY,
    "tests/test_decode_gc.py::test_a_collector_the_caller_disabled_stays_disabled": _ORJSON_ONLY,
}
"""Tests of the suite that assume orjson is installed without skipping when it is not,
each with why (``--deselect``; a test that skips itself without orjson needs no entry)."""

CORE_DEPENDENCIES: Final = frozenset({"attrs", "cattrs", "returns", "typing_extensions"})
SUITE_TOOLS: Final = frozenset({"hypothesis", "pytest"})
EFFECT_MODULES: Final = frozenset(
    {
        "subprocess",
        "socket",
        "ssl",
        "multiprocessing",
        "concurrent",
        "asyncio",
        "http",
        "urllib",
        "sqlite3",
        "webbrowser",
        "ctypes",
        "tempfile",
        "shutil",
        "threading",
    }
)
"""Standard modules whose use means a test is about effects, not about golem_core (and
that Pyodide cannot or need not do): a test file importing one is not in the suite."""

SUPPORT_FILES: Final = ("properties/conftest.py", "tests/conftest.py")
"""Always in the suite, with the local helpers their bodies import (``tests/conftest.py``
imports its servers' helpers inside fixtures the suite does not use)."""

DATA_DIRS: Final = ("tests/golden", "tests/fixtures")
"""Data the suite's tests read (golden JSON, recorded provider bodies), copied whole."""


def _imports(path: Path, *, top_only: bool = False) -> set[str]:
    """The top-level names ``path`` imports (absolute imports; with ``top_only`` only those
    of the module's body, not those inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: set[str] = set()
    for node in tree.body if top_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def select_suite(root: Path = ROOT) -> tuple[list[str], dict[str, list[str]]]:
    """The suite's files (paths relative to ``root``: the test files, the local helpers they
    import, and ``SUPPORT_FILES``), and for each test file left out, why.

    A local helper is a ``.py`` file of ``properties/`` or ``tests/`` imported by its stem.
    """
    local = {
        p.stem: p
        for d in ("properties", "tests")
        for p in sorted((root / d).glob("*.py"))
        if p.stem != "conftest"
    }
    allowed = (set(sys.stdlib_module_names) - EFFECT_MODULES) | CORE_DEPENDENCIES | SUITE_TOOLS
    allowed.add("__future__")
    verdicts: dict[str, tuple[bool, bool, list[str]]] = {}  # stem -> (ok, uses core, why)

    def judge(stem: str, seen: frozenset[str]) -> tuple[bool, bool, list[str]]:
        if stem in verdicts:
            return verdicts[stem]
        if stem in seen:
            return (True, False, [])
        uses_core = False
        why: list[str] = []
        for name in sorted(_imports(local[stem])):
            if name == "golem_core":
                uses_core = True
            elif name in local and name not in sys.stdlib_module_names:
                ok, core, _ = judge(name, seen | {stem})
                uses_core |= core
                if not ok:
                    why.append(f"{name} (a helper that is not in the suite)")
            elif name not in allowed:
                why.append(name)
        verdicts[stem] = (not why, uses_core, why)
        return verdicts[stem]

    chosen: set[str] = set()
    left_out: dict[str, list[str]] = {}
    for stem, path in local.items():
        if not stem.startswith("test_"):
            continue
        ok, core, why = judge(stem, frozenset())
        rel = str(path.relative_to(root))
        if ok and core:
            chosen.add(rel)
            chosen |= _helpers(path, local, root)
        else:
            left_out[rel] = why or ["does not import golem_core"]
    for support in SUPPORT_FILES:
        chosen |= _helpers(root / support, local, root, top_only=True)
    return sorted(chosen | set(SUPPORT_FILES)), left_out


def _helpers(
    start: Path, local: dict[str, Path], root: Path, *, top_only: bool = False
) -> set[str]:
    """The local helpers ``start`` imports, and theirs (relative paths)."""
    found: set[str] = set()
    todo = [start]
    while todo:
        for name in _imports(todo.pop(), top_only=top_only):
            if name in local and name not in sys.stdlib_module_names:
                rel = str(local[name].relative_to(root))
                if rel not in found:
                    found.add(rel)
                    todo.append(local[name])
    return found


def _pip(*args: str, env: dict[str, str] | None = None) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=True, text=True, check=False,
        env=env,
    )  # fmt: skip
    if completed.returncode != 0:
        raise RuntimeError(f"pip {' '.join(args)} failed:\n{completed.stderr[-3000:]}")


def pinned_wheels(cache: Path = WHEEL_CACHE, pins: Iterable[str] = PINNED) -> list[Path]:
    """The pinned pure-Python wheels, downloaded into ``cache`` once (kept between runs)."""
    cache.mkdir(parents=True, exist_ok=True)
    found: list[Path] = []
    missing: list[str] = []
    for pin in pins:
        name, version = pin.split("==")
        stem = f"{name.replace('-', '_').lower()}-{version}-"
        have = [p for p in cache.glob("*.whl") if p.name.lower().startswith(stem)]
        if have:
            found.append(have[0])
        else:
            missing.append(pin)
    if missing:
        _pip(
            "download", "-q", "--no-deps", "--only-binary=:all:",
            "--python-version", PYODIDE_PYTHON, "--implementation", "py",
            "--platform", "any", "--abi", "none", "-d", str(cache), *missing,
        )  # fmt: skip
        return pinned_wheels(cache, pins)
    for wheel in found:
        if not wheel.name.endswith("-none-any.whl"):
            raise RuntimeError(f"{wheel.name} is not a pure-Python wheel")
    return found


def golem_wheel(out: Path, root: Path = ROOT) -> Path:
    """golem's wheel, built from the clone ``root`` into ``out`` (fresh each time, so the
    suite always runs the code in the working tree); pure Python (``GOLEM_PURE=1``: no
    compiled decoder, which WebAssembly could not load; hatch_build.py)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    pure = {**os.environ, "GOLEM_PURE": "1"}
    _pip("wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(root), env=pure)
    built = sorted(out.glob("golem_agents-*.whl"))
    if len(built) != 1:
        raise RuntimeError(f"expected one golem wheel in {out}, found {built}")
    return built[0]


def wheels(build_dir: Path, root: Path = ROOT, cache: Path = WHEEL_CACHE) -> list[Path]:
    """Every wheel Pyodide installs: golem's (built into ``build_dir``) and the pinned ones."""
    return [golem_wheel(build_dir, root), *pinned_wheels(cache)]


def missing_runtime() -> str | None:
    """Why Pyodide under Node cannot run here, or None."""
    if shutil.which("node") is None:
        return (
            "node is not on PATH: install Node.js 20 or newer (the system's nodejs package or"
            " nodejs.org), then run (cd tests/pyodide && npm ci)"
        )
    if not (PYODIDE_DIR / "pyodide.mjs").is_file():
        return "tests/pyodide/node_modules is missing: run (cd tests/pyodide && npm ci)"
    return None


def run_node(script: str, payload: dict[str, Any], *, timeout: float = 600) -> dict[str, Any]:
    """Run ``node tests/pyodide/<script>`` with ``payload`` as JSON on stdin; the JSON
    object on the last line of its stdout, with ``stdout``/``stderr`` added (the whole
    output, for a failure message). A script that prints no JSON raises ``RuntimeError``."""
    completed = subprocess.run(
        ["node", f"--stack-size={NODE_STACK_KB}", script],
        cwd=HERE,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = completed.stdout.strip().splitlines()
    try:
        report: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        report = {}
    if not isinstance(report, dict) or not report:
        raise RuntimeError(
            f"node {script} printed no report (exit {completed.returncode}):\n"
            f"{completed.stdout[-4000:]}\n{completed.stderr[-4000:]}"
        )
    report["returncode"] = completed.returncode
    report["stdout"] = "\n".join(lines[:-1])
    report["stderr"] = completed.stderr
    return report


def suite_files(root: Path, files: Sequence[str]) -> dict[str, str]:
    """``{relative path: text}`` for ``files`` under ``root``."""
    return {rel: (root / rel).read_text(encoding="utf-8") for rel in files}


def _weight(path: Path) -> int:
    """A rough cost of a test file: its properties count most (each runs ~100 examples)."""
    text = path.read_text(encoding="utf-8")
    return 20 * text.count("@given") + text.count("def test_") + 1


def shard(root: Path, tests: Sequence[str], count: int) -> list[list[str]]:
    """``tests`` split into ``count`` lists of about equal cost (largest first, greedy)."""
    shards: list[list[str]] = [[] for _ in range(max(1, count))]
    loads = [0] * len(shards)
    for rel in sorted(tests, key=lambda r: -_weight(root / r)):
        at = loads.index(min(loads))
        shards[at].append(rel)
        loads[at] += _weight(root / rel)
    return [s for s in shards if s]


def run_suite(
    build_dir: Path,
    *,
    root: Path = ROOT,
    shards: int = 2,
    tests: Sequence[str] | None = None,
    pytest_args: Sequence[str] = ("-q",),
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """golem_core's suite in Pyodide: the wheels built or fetched, the suite selected, split
    into ``shards`` node processes run side by side; their reports merged (``ok`` only if
    every shard's is, counts summed, ``shards`` holding each one's own)."""
    from concurrent.futures import ThreadPoolExecutor

    files, _ = select_suite(root)
    chosen = list(tests) if tests is not None else [f for f in files if "/test_" in f]
    payload: dict[str, Any] = {
        "root": str(root),
        "wheels": [str(w) for w in wheels(build_dir, root)],
        "files": files,
        "data_dirs": [d for d in DATA_DIRS if (root / d).is_dir()],
        "env": {"CI": "1", **(env or {})},
        "pytest_args": [
            *pytest_args,
            *(f"--deselect={t}" for t in DESELECTED if t.split("::")[0] in chosen),
        ],
    }
    parts = shard(root, chosen, shards)
    with ThreadPoolExecutor(len(parts)) as pool:
        reports = list(
            pool.map(lambda part: run_node("run_suite.mjs", {**payload, "tests": part}), parts)
        )
    merged: dict[str, Any] = {"ok": all(r.get("ok") is True for r in reports), "shards": reports}
    for key in ("collected", "passed", "failed", "skipped", "errors", "effect_count"):
        merged[key] = sum(int(r.get(key, 0)) for r in reports)
    for key in ("failures", "import_errors", "effects"):
        merged[key] = [item for r in reports for item in r.get(key, [])]
    merged["crashed"] = [r["crashed"] for r in reports if "crashed" in r]
    for key in ("pyodide", "python", "hypothesis_profile", "max_examples"):
        merged[key] = reports[0].get(key)
    return merged
