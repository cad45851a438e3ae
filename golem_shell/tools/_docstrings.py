"""A tool's description from its function's docstring: the summary, and each argument's
description, from a Google-style (``Args:``) or Sphinx-style (``:param name:``) docstring.
"""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_ARG_LINE = re.compile(r"^\s{2,}(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_FIELD = re.compile(r"^:(\w+)(?:\s+([^:]*?))?\s*:\s*(.*)$")
_SPHINX_PARAM = ("param", "parameter", "arg", "argument", "key", "keyword")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Summary and per-argument descriptions from a Google-style (``Args:``) or
    Sphinx-style (``:param name: ...``) docstring."""
    if not doc:
        return "", {}
    doc = inspect.cleandoc(doc)
    sphinx_summary, sphinx_params = _parse_sphinx(doc)
    sections = re.split(r"\n(?=(?:Args|Arguments|Parameters|Returns|Raises|Yields):\s*\n)", doc)
    summary = sections[0].strip()
    params: dict[str, str] = {}
    for section in sections[1:]:
        head, _, body = section.partition("\n")
        if head.rstrip(":").strip() not in ("Args", "Arguments", "Parameters"):
            continue
        current: str | None = None
        for line in body.splitlines():
            m = _ARG_LINE.match(line)
            indent = len(line) - len(line.lstrip())
            if m and indent <= 4:
                current = m.group(1).lstrip("*")
                params[current] = m.group(2).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
    if len(sphinx_summary) < len(summary):
        summary = sphinx_summary
    return summary, {**sphinx_params, **params}


def _parse_sphinx(doc: str) -> tuple[str, dict[str, str]]:
    """Summary (the text before the first ``:field:``) and ``:param x:`` descriptions."""
    lines = doc.splitlines()
    first = next(
        (i for i, line in enumerate(lines) if _SPHINX_FIELD.match(line.strip())), len(lines)
    )
    params: dict[str, str] = {}
    current: str | None = None
    for line in lines[first:]:
        m = _SPHINX_FIELD.match(line.strip()) if not line[:1].isspace() else None
        if m:
            kind, target, text = m.groups()
            current = None
            if kind in _SPHINX_PARAM and target:
                current = target.split()[-1].lstrip("*")
                params[current] = text.strip()
        elif current and line.strip():
            params[current] = (params[current] + " " + line.strip()).strip()
    return "\n".join(lines[:first]).strip(), params
