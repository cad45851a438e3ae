"""The repository's import graph and module sizes (issue 45, item 8).

- No import cycle among ``golem_core``, ``golem_shell`` and ``bench``: every ``import`` and
  ``from ... import`` statement, at module level or inside a function (or under
  ``TYPE_CHECKING``), is resolved to the module it names; strongly connected components
  (Tarjan) of more than one module, or a module importing itself, are cycles.
- At most 15 modules directly in ``golem_core/`` and in ``golem_shell/``.
- A module of ``golem_core``/``golem_shell`` over 600 lines says why in its docstring
  ("Over 600 lines because ..."); one under ``golem_shell/engines`` or named ``durable`` or
  ``temporal`` is at most 700 lines; one in ``bench/`` is at most 700 lines.

Resolution: ``import a.b`` is an import of ``a.b`` (of ``a`` when ``a.b`` is no module);
``from a import b`` is an import of ``a.b`` when that is a module and of ``a`` otherwise;
relative imports are resolved from the importing module's package. A module with no
``.py`` source (a compiled extension, with or without a ``.pyi`` stub) is a module of its
own, not its package. Imports of modules outside the three roots are ignored, and so is
``importlib.import_module`` of a computed name: ``bench/report.py`` reaches the section
modules that import it by their names when it renders, a late binding it documents.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("golem_core", "golem_shell", "bench")
FLAT_LIMIT = 15
LONG = 600
LONG_REASON = "Over 600 lines because"
ENGINE_LIMIT = 700
BENCH_LIMIT = 700
EXTENSION_SUFFIXES = (".so", ".pyd", ".pyi")


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(ROOT).parts)
    stem = parts[-1].split(".")[0]  # _speedups.cpython-311-x86_64-linux-gnu.so -> _speedups
    parts[-1] = stem
    if stem == "__init__":
        parts.pop()
    return ".".join(parts)


def sources() -> dict[str, Path]:
    """Every module of the three roots with a ``.py`` source, by dotted name."""
    return {_dotted(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def modules() -> set[str]:
    """Every module's dotted name: the ``.py`` sources and the compiled extensions."""
    found = set(sources())
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*"):
            if path.suffix in EXTENSION_SUFFIXES and path.is_file():
                found.add(_dotted(path))
    return found


def _known(name: str, known: set[str]) -> str | None:
    """``name`` if it is a module of the three roots, else ``None``."""
    return name if name in known else None


def _nearest(name: str, known: set[str]) -> str | None:
    """The longest prefix of dotted ``name`` that is a module of the three roots."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if (found := _known(".".join(parts[:end]), known)) is not None:
            return found
    return None


def imports_of(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """The modules of the three roots that ``name`` (whose source is ``path``) imports,
    with the line of each import statement, wherever the statement is."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _nearest(alias.name, known)
                if target is not None:
                    yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            for alias in node.names:
                target = _known(f"{origin}.{alias.name}", known) or _nearest(origin, known)
                if target is not None:
                    yield target, node.lineno


def graph() -> dict[str, dict[str, int]]:
    """Each module with a source: the modules it imports, each with one line importing it."""
    known = modules()
    edges: dict[str, dict[str, int]] = {}
    for name, path in sources().items():
        edges[name] = {}
        for target, line in imports_of(name, path, known):
            edges[name].setdefault(target, line)
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with a cycle (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in edges.get(node, {}):
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def _describe(component: list[str], edges: dict[str, dict[str, int]]) -> str:
    inside = set(component)
    links = [
        f"{source}:{line} -> {target}"
        for source in component
        for target, line in sorted(edges.get(source, {}).items())
        if target in inside
    ]
    return f"{len(component)} modules: " + "; ".join(links)


def test_no_import_cycle() -> None:
    edges = graph()
    found = cycles(edges)
    assert found == [], "\n".join(_describe(c, edges) for c in found)


def test_the_check_sees_function_level_relative_and_extension_imports() -> None:
    """The resolution the cycle check relies on, on the tree itself."""
    edges = graph()
    # a function-level import (``report.write_section``'s users import it in ``main``)
    assert "bench.report" in edges["bench.cache"]
    # ``from pkg import module`` is an import of the module, not the package
    assert "bench.cache" in edges["bench.compaction"]
    assert "bench" not in edges["bench.compaction"]
    # a compiled extension is a module of its own, not its package
    assert "golem_core._native._speedups" in modules()
    speedups_users = [name for name, out in edges.items() if "golem_core._native._speedups" in out]
    assert speedups_users, "nothing imports the compiled decoder by its own name"
    # a cycle is found when there is one
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]
    assert cycles({"a": {"a": 1}}) == [["a"]]
    assert cycles({"a": {"b": 1}, "b": {}}) == []


@pytest.mark.parametrize("package", ["golem_core", "golem_shell"])
def test_few_modules_directly_in_each_package(package: str) -> None:
    flat = sorted(p.name for p in (ROOT / package).glob("*.py"))
    assert len(flat) <= FLAT_LIMIT, f"{package}/ holds {len(flat)} modules: {flat}"


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_a_long_module_says_why() -> None:
    unreasoned = []
    for package in ("golem_core", "golem_shell"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if _lines(path) <= LONG:
                continue
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            if LONG_REASON not in " ".join(doc.split()):
                unreasoned.append(f"{path.relative_to(ROOT)} ({_lines(path)} lines)")
    assert unreasoned == [], f"over {LONG} lines without '{LONG_REASON} ...': {unreasoned}"


def test_the_engines_stay_short() -> None:
    shell = ROOT / "golem_shell"
    engines = [
        path
        for path in sorted(shell.rglob("*.py"))
        if "engines" in path.relative_to(shell).parts[:-1]
        or path.stem.strip("_") in {"durable", "temporal"}
    ]
    long = [f"{p.relative_to(ROOT)} ({_lines(p)})" for p in engines if _lines(p) > ENGINE_LIMIT]
    assert long == []


def test_bench_modules_stay_short() -> None:
    long = [
        f"{p.relative_to(ROOT)} ({_lines(p)})"
        for p in sorted((ROOT / "bench").rglob("*.py"))
        if _lines(p) > BENCH_LIMIT
    ]
    assert long == []


def room_of(module: str) -> str:
    """The room a module lives in: its package's first level (``golem_core.codec`` for
    ``golem_core.codec._json``), or the module itself when it lies directly in the package
    (``golem_shell._agent``); the packages' faces (``golem_core``, ``golem_shell``) are
    rooms of their own."""
    parts = module.split(".")
    return ".".join(parts[:2])


@pytest.mark.parametrize("package", ["golem_core", "golem_shell"])
def test_no_arrow_runs_back_up_between_rooms(package: str) -> None:
    """Issue 45 item 1: the rooms of a package form no cycle among themselves, so each
    reads top-down (the faces, which re-export everything, are left out: nothing of the
    package imports its own face but ``ui/``, which nothing imports)."""
    rooms: dict[str, dict[str, int]] = {}
    for module, edges in graph().items():
        if not module.startswith(package + ".") or module == package:
            continue
        room = room_of(module)
        targets = rooms.setdefault(room, {})
        for target, line in edges.items():
            if target.startswith(package + ".") and room_of(target) != room:
                targets.setdefault(room_of(target), line)
    assert [_describe(c, rooms) for c in cycles(rooms)] == []
