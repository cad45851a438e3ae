"""``bench/results.md``: rendered, never typed, from the measurements in ``results.json``.

Owns the report file. Each benchmark command that takes ``--write PATH`` (``python -m
bench``, ``python -m bench.cache``, ``python -m bench.durable``) records what it measured
as one section of ``PATH``'s JSON sibling (``bench/results.json``: its command, machine
and raw figures, nothing rendered), then renders the whole Markdown report from that
JSON with ``render``: every table, count, ratio, verdict and sentence that cites a
figure comes from a template here or in the section's module that reads the numbers.
So a re-measurement is a re-run, and ``tests/test_bench_results.py``
fails when ``results.md`` (or the benchmark paragraph of the history guide,
``docs/guides/history.md``, between its ``bench/results.json`` markers) differs from what
the JSON renders to.

Sections, in this order: ``run`` (``bench.run``), ``cache`` (``bench.cache``), ``store``
(``bench.store --window``), ``store_pages`` (``bench.store_pages``), ``storage``
(``bench.storage``), ``durable`` (``bench.durable``), ``durable_peers``
(``bench.durable_peers``), ``durable_temporal`` (``bench.durable_temporal``), ``decode``
(``bench.decode``), ``compaction`` (``bench.compaction``), ``pyodide``
(``bench.pyodide``), ``soak`` and ``soak_long`` (``bench.soak``), ``soak_limit``
(``bench.soak_limit``). Each section's module has its ``render(data) -> str``
(``run``, ``durable`` and ``durable_peers`` import theirs from a module beside them).
A section no command has written is left out. What a section records of how it was
measured is built here too: ``recorded_command`` (the command that re-measures it, without
the ``--write`` option that ``add_write_option`` gives a command) and ``machine`` (cores,
Python, the load at the end).

The section modules import this one (to record themselves); this one never imports them:
it reaches a section's module by its name in ``SECTIONS`` when it renders (``_section``),
so the import graph goes one way (``tests/test_import_graph.py``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "BLOCK_BEGIN",
    "BLOCK_END",
    "GUIDE",
    "add_write_option",
    "guide_block",
    "load",
    "machine",
    "recorded_command",
    "render",
    "write_section",
]

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = (
    "run",
    "cache",
    "store",
    "store_pages",
    "storage",
    "durable",
    "durable_peers",
    "durable_temporal",
    "decode",
    "compaction",
    "pyodide",
    "soak",
    "soak_long",
    "soak_limit",
)
GUIDE = ROOT / "docs" / "guides" / "history.md"  # the page that cites the cache benchmark
BLOCK_BEGIN = "<!-- bench/results.json: written by bench/report.py, do not edit -->"
BLOCK_END = "<!-- end of bench/results.json -->"


def load(path: Path) -> dict[str, Any]:
    """The recorded sections of a results JSON file (``{}`` when there is none)."""
    if not path.exists():
        return {}
    results: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    unknown = set(results) - set(SECTIONS)
    if unknown:
        raise ValueError(f"{path}: unknown sections {sorted(unknown)}; known: {SECTIONS}")
    return results


def add_write_option(parser: argparse.ArgumentParser) -> None:
    """Give a section's command its ``--write PATH`` (a ``Path``; ``None`` when not given)."""
    parser.add_argument(
        "--write",
        type=Path,
        help="record this section in the report's JSON sibling and render the report from it",
    )


def recorded_command(program: str, argv: Sequence[str] | None) -> str:
    """The command that re-measures a section: ``program`` and its arguments (``argv``, or
    ``sys.argv``'s when ``None``) without ``--write PATH``, which only says where to record."""
    shown = list(sys.argv[1:] if argv is None else argv)
    if "--write" in shown:
        at = shown.index("--write")
        del shown[at : at + 2]
    return " ".join([program, *shown])


def machine(*, load_average: bool = True) -> dict[str, Any]:
    """The machine a section was measured on: ``nproc``, ``python`` (its version) and, with
    ``load_average``, ``load_average_end`` (the one-minute load, read when called)."""
    found: dict[str, Any] = {"nproc": os.cpu_count(), "python": sys.version.split()[0]}
    if load_average:
        found["load_average_end"] = round(os.getloadavg()[0], 1)
    return found


def _section(name: str) -> ModuleType:
    """The module that owns section ``name``, found by its name (``bench.<name>``)."""
    return importlib.import_module(f"bench.{name}")


def render(results: dict[str, Any]) -> str:
    """The whole Markdown report from the recorded sections."""
    parts = [
        _section(name).render(results[name]).strip("\n") for name in SECTIONS if name in results
    ]
    if "run" not in results:
        parts.insert(0, "# golem benchmark results")
    return "\n\n".join(parts) + "\n"


def guide_block(results: dict[str, Any]) -> str | None:
    """The history guide's benchmark paragraph (between the markers), or ``None`` without
    the ``cache`` section."""
    if "cache" not in results:
        return None
    paragraph = _section("cache").guide_paragraph(results["cache"])
    return f"{BLOCK_BEGIN}\n{paragraph}\n{BLOCK_END}"


def _replace_guide_block(guide: Path, results: dict[str, Any]) -> None:
    block = guide_block(results)
    text = guide.read_text(encoding="utf-8")
    if block is None or BLOCK_BEGIN not in text:
        return
    head, rest = text.split(BLOCK_BEGIN, 1)
    _, tail = rest.split(BLOCK_END, 1)
    guide.write_text(head + block + tail, encoding="utf-8")


def write_section(report: Path, name: str, data: dict[str, Any]) -> None:
    """Record ``data`` as section ``name`` of ``report``'s JSON sibling, then render
    ``report`` from it (and the history guide's paragraph when ``report`` is this repository's
    ``bench/results.md``)."""
    if name not in SECTIONS:
        raise ValueError(f"unknown section {name!r}; known: {SECTIONS}")
    store = report.with_suffix(".json")
    results = load(store)
    results[name] = data
    store.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    report.write_text(render(results), encoding="utf-8")
    if report.resolve() == ROOT / "bench" / "results.md":
        _replace_guide_block(GUIDE, results)
