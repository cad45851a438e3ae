"""The distribution's name and how to install it: ``golem-agents`` is not an unrelated PyPI
project's name, every ``pip install`` line in the README, the docs and the library's
messages names this distribution (or the clone) and a real extra, and the README's test
command is what CI runs (first contact, round 3; issue 26)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

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
