"""golem_core stays pure: no effectful import, no clock, no entropy."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import golem_core

CORE = Path(golem_core.__file__).parent
FORBIDDEN_MODULES = {
    "httpx",
    "httpx_sse",
    "asyncio",
    "anyio",
    "time",
    "random",
    "os",
    "socket",
    "logging",
    "secrets",
    "threading",
    "subprocess",
    "io",
    "pathlib",
    "tempfile",
    "shutil",
    "urllib.request",
    "http",
    "hypothesis",
}
OPTIONAL_IMPORTS = {"testing.py": {"hypothesis"}}
"""The one exception: ``golem_core.testing`` is the testing kit, an optional extra built on
Hypothesis (which itself uses ``random`` and ``time``); ``import golem_core`` never
loads it (``test_importing_the_core_loads_no_effect_module``)."""
FORBIDDEN_CALLS = {"now", "utcnow", "today", "uuid1", "uuid4", "open", "time", "time_ns"}


def _core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_core_imports_no_effect() -> None:
    offenders = []
    for path in _core_files():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            allowed = OPTIONAL_IMPORTS.get(str(path.relative_to(CORE)), set())
            for name in names:
                if name.split(".")[0] in allowed:
                    continue
                if name in FORBIDDEN_MODULES or name.split(".")[0] in FORBIDDEN_MODULES:
                    offenders.append(f"{path.name}:{node.lineno} imports {name}")
    assert offenders == []


def test_core_calls_no_clock_or_entropy() -> None:
    offenders = []
    for path in _core_files():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name in FORBIDDEN_CALLS:
                    offenders.append(f"{path.name}:{node.lineno} calls {name}()")
    assert offenders == []


def test_importing_the_core_loads_no_effect_module() -> None:
    code = (
        "import sys, golem_core\n"
        "bad = sorted(m for m in ('httpx', 'asyncio', 'socket', 'anyio', 'httpx_sse',"
        " 'hypothesis')"
        " if m in sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
