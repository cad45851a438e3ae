"""MkDocs hooks: the list of decision records and the API reference, made from the
source tree so no page repeats them by hand. The guides themselves are plain Markdown in
``docs/`` (the README links to them and includes none of them).

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
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files


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
    return markdown
