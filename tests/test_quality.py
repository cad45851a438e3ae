"""The test command also holds the code to ruff and mypy --strict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_check() -> None:
    _run("ruff", "check", ".")


def test_ruff_format() -> None:
    _run("ruff", "format", "--check", ".")


def test_mypy_strict() -> None:
    _run("mypy", "--strict", "golem_core", "golem_shell")


def test_users_code_passes_mypy_strict(tmp_path: Path) -> None:
    """The Python blocks of the README and the guides, and every example, pass ``mypy
    --strict`` as written, as a user's code would be checked (issue 14.5)."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "the README has no Python block"
    for guide in sorted((ROOT / "docs" / "guides").glob("*.md")):  # the docs site's own code
        blocks += re.findall(r"```python\n(.*?)```", guide.read_text(encoding="utf-8"), re.S)
    paths = []
    for k, block in enumerate(blocks):
        path = tmp_path / f"readme_block_{k}.py"
        path.write_text(block, encoding="utf-8")
        paths.append(str(path))
    examples = sorted(str(p) for p in (ROOT / "examples").glob("*.py"))
    # user code pinning what a type checker infers (output types, tools, results: issue 26)
    cases = sorted(str(p) for p in (ROOT / "tests" / "typing_cases").glob("*.py"))
    assert cases, "no typing cases"
    # incremental, on the cache test_mypy_strict just filled (the project's .mypy_cache):
    # golem's own modules, checked there, are read back rather than checked again; the
    # user code here is new to the cache, so all of it is checked
    _run("mypy", "--strict", *paths, *examples, *cases)
