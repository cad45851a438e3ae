"""MkDocs hooks: guide pages include sections of the README, so the README stays the one
source of the tour and the site never repeats it by hand; the API reference has a page
for every public module, made here from the source tree.

A line ``<!-- readme: ### Stored conversations -->`` in a page is replaced by that README
section: the heading line and everything up to the next heading of the same or a higher
level (headings inside fenced code are not headings). The included heading becomes the
page's level ``##``; links into ``docs/`` are rewritten relative to the page. A section that
is not in the README fails the build (``mkdocs build --strict`` or not).

A line ``<!-- adr-index -->`` is replaced by a list of every decision record in
``docs/adr/`` (its title line), so a new ADR is on the site without editing a page.

Every public module of ``golem_core`` and ``golem_shell`` (no ``_`` in its dotted path,
declaring ``__all__``) gets ``reference/<module>.md``: its docstring's summary and
``::: <module>``, which mkdocstrings fills with every name of ``__all__``. A line
``<!-- reference-index -->`` is replaced by a table of them.
"""

from __future__ import annotations

import ast
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

_INCLUDE = re.compile(r"^<!-- readme: (#+ .+?) -->$", re.M)
_HEADING = re.compile(r"^(#+) ")
_FENCE = re.compile(r"^(```|~~~)")
_DOCS_LINK = re.compile(r"\]\(docs/([^)]+)\)")


def _readme(config: Any) -> list[str]:
    root = Path(config["config_file_path"]).parent
    return (root / "README.md").read_text(encoding="utf-8").splitlines()


def _section(lines: list[str], heading: str) -> list[str]:
    """The README lines of ``heading``'s section."""
    level = len(heading) - len(heading.lstrip("#"))
    start: int | None = None
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        m = _HEADING.match(line)
        if start is None:
            if line.rstrip() == heading:
                start = i
        elif m and len(m.group(1)) <= level:
            return lines[start:i]
    if start is None:
        raise ValueError(f"the README has no section {heading!r} (a docs page includes it)")
    return lines[start:]


def _relevel(lines: list[str], shift: int) -> list[str]:
    out: list[str] = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        m = None if fenced else _HEADING.match(line)
        out.append("#" * max(1, len(m.group(1)) + shift) + line[len(m.group(1)) :] if m else line)
    return out


def _adr_index(config: Any, page: Any) -> str:
    docs = Path(config["docs_dir"])
    up = posixpath.relpath(".", posixpath.dirname(page.file.src_uri) or ".")
    items = []
    for path in sorted((docs / "adr").glob("*.md")):
        title = path.read_text(encoding="utf-8").splitlines()[0].lstrip("# ").strip()
        items.append(f"- [{title}]({posixpath.join(up, 'adr', path.name)})")
    return "\n".join(items)


PACKAGES = ("golem_core", "golem_shell")


def public_modules(root: Path) -> list[tuple[str, str]]:
    """``(dotted name, docstring summary)`` of every public module that declares ``__all__``."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if any(p.startswith("_") for p in parts):
                continue
            source = path.read_text(encoding="utf-8")
            if "__all__" not in source:
                continue
            doc = ast.get_docstring(ast.parse(source)) or ""
            found.append((".".join(parts), " ".join(doc.split("\n\n")[0].split())))
    return sorted(found)


def on_files(files: Files, config: Any) -> Files:
    root = Path(config["config_file_path"]).parent
    for module, summary in public_modules(root):
        content = f"# `{module}`\n\n{summary}\n\n::: {module}\n"
        files.append(File.generated(config, f"reference/{module}.md", content=content))
    return files


def _reference_index(config: Any) -> str:
    root = Path(config["config_file_path"]).parent
    rows = ["| module | what it holds |", "|---|---|"]
    for module, summary in public_modules(root):
        cell = summary.replace("|", "\\|")
        rows.append(f"| [`{module}`]({module}.md) | {cell} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if "<!-- reference-index -->" in markdown:
        markdown = markdown.replace("<!-- reference-index -->", _reference_index(config))
    if "<!-- adr-index -->" in markdown:
        markdown = markdown.replace("<!-- adr-index -->", _adr_index(config, page))
    if "<!-- readme:" not in markdown:
        return markdown
    lines = _readme(config)
    up = posixpath.relpath(".", posixpath.dirname(page.file.src_uri) or ".")

    def include(match: re.Match[str]) -> str:
        heading = match.group(1).strip()
        section = _section(lines, heading)
        shift = 2 - (len(heading) - len(heading.lstrip("#")))
        text = "\n".join(_relevel(section, shift))
        return _DOCS_LINK.sub(lambda m: f"]({posixpath.join(up, m.group(1))})", text)

    return _INCLUDE.sub(include, markdown)
