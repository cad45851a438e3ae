"""The docs site (first contact, round 3; issue 26): a reference page for every public
module, a strict build in CI, every guide's README include names a real section, and the
testing guide runs as written."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _site_hooks() -> Any:
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        return importlib.import_module("site_hooks")
    finally:
        sys.path.remove(str(ROOT / "docs"))


def test_the_api_reference_has_a_page_for_every_public_module() -> None:
    hooks = _site_hooks()
    modules = dict(hooks.public_modules(ROOT))
    expected = {"golem_core", "golem_core.testing", "golem_shell", "golem_shell.mcp"}
    assert expected <= set(modules)
    for name, summary in modules.items():
        module = importlib.import_module(name)
        assert module.__all__ and summary, f"{name}: no __all__ or no docstring"
    assert not any("._" in name or name.startswith("_") for name in modules)
    # every name of __all__, documented or not, appears on its module's page
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "show_if_no_docstring: true" in config and "filters: public" in config


def test_the_docs_build_in_ci_with_warnings_as_errors() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m mkdocs build --strict" in ci
    assert "docs" in PYPROJECT["project"]["optional-dependencies"]


def test_every_guide_include_names_a_readme_section() -> None:
    """The guides are the source (issue 45 item 6): no page includes a README section any
    more, and the README links to every guide of the site's nav, as files (and headings)
    that exist, so the links work on GitHub too."""
    hooks = _site_hooks()
    assert not hasattr(hooks, "_section"), "the hooks still include README sections"
    pages = sorted((ROOT / "docs").rglob("*.md"))
    assert [p for p in pages if "<!-- readme:" in p.read_text(encoding="utf-8")] == []
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]*)(?:#([^)]*))?\)", readme)
    assert len(links) >= 10
    for target, anchor in links:
        assert (ROOT / target).exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / target).read_text(encoding="utf-8"), re.M)
            slugs = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings}
            assert anchor in slugs, f"{target}#{anchor}"
    nav = re.findall(r"^\s+- [^:]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    guides = [page for page in nav if not page.startswith("reference/") and page != "index.md"]
    assert len(guides) >= 15
    linked = {target.removeprefix("docs/") for target, _ in links}
    assert [page for page in guides if page not in linked] == []
    # and the nav lists every guide of docs/guides/
    listed = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs/guides").glob("*.md")}
    assert listed <= set(nav)


def test_the_testing_guide_runs_as_written(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "guides" / "testing.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) == 4
    for k, block in enumerate(blocks):
        script = tmp_path / f"guide_{k}.py"
        script.write_text(block, encoding="utf-8")
        proc = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
