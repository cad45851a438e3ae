"""The README's test command works on a fresh clone (issue 33, item 1).

``python -m pip install -e '.[test]' && python -m pytest`` must pass in a venv with nothing
else installed, so the ``test`` extra provides (directly or through its requirements)
every third-party module that the tests import, and that the code the tests load or run
imports: ``tests/``, ``properties/``, ``bench/``, ``examples/`` and ``docs/site_hooks.py``.
An import guarded by ``except ImportError`` is optional by design and not counted, and so
is an import inside a function of ``bench/`` (the peers: the benchmark calls them only
when ``bench.peers`` found them installed, the ``bench`` extra). ``.ci/run`` runs that
command in such a venv before anything else is installed into it.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("tests", "properties", "bench", "examples", "docs/site_hooks.py")
SEARCH_PATH = (ROOT, ROOT / "tests", ROOT / "properties", ROOT / "docs", ROOT / "examples")
"""Where the tests find their own modules (the checkout and the folders they put on
``sys.path``): a module found here is the project's, not a dependency."""


def _files() -> Iterator[Path]:
    """The project's Python files under ``SCANNED``: not what npm installed
    (``node_modules``: Node 22's package ships a debugger script) nor a cache of wheels."""
    for name in SCANNED:
        path = ROOT / name
        found = [path] if path.is_file() else sorted(path.rglob("*.py"))
        yield from (
            p
            for p in found
            if not any(
                part == "node_modules" or part.startswith(".") for part in p.relative_to(ROOT).parts
            )
        )


def _optional_lines(tree: ast.AST) -> set[int]:
    """Lines inside a ``try`` whose handlers catch ``ImportError``/``ModuleNotFoundError``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = {
            n.id
            for h in node.handlers
            if h.type is not None
            for n in ast.walk(h.type)
            if isinstance(n, ast.Name)
        }
        if caught & {"ImportError", "ModuleNotFoundError"}:
            for statement in node.body:
                for inner in ast.walk(statement):
                    if hasattr(inner, "lineno"):
                        lines.add(inner.lineno)
    return lines


def _function_lines(tree: ast.AST) -> set[int]:
    return {
        inner.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for statement in node.body
        for inner in ast.walk(statement)
        if hasattr(inner, "lineno")
    }


def imported_modules(source: str, *, module_level: bool = False) -> set[str]:
    """Top-level names of the modules ``source`` imports unconditionally (``import x``,
    ``from x import y``, ``importlib.import_module("x")``), optional imports left out;
    ``module_level``: imports inside functions left out too."""
    tree = ast.parse(source)
    optional = _optional_lines(tree) | (_function_lines(tree) if module_level else set())
    names: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in optional:
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value.split(".")[0])
    return names


def _is_own(module: str) -> bool:
    return any(
        (folder / f"{module}.py").is_file() or (folder / module / "__init__.py").is_file()
        for folder in SEARCH_PATH
    )


def third_party_imports() -> dict[str, set[str]]:
    """Each third-party top-level module the scanned files import, and the files."""
    found: dict[str, set[str]] = {}
    for path in _files():
        source = path.read_text(encoding="utf-8")
        peers_inside = path.is_relative_to(ROOT / "bench")
        for module in imported_modules(source, module_level=peers_inside):
            if module in sys.stdlib_module_names or _is_own(module):
                continue
            found.setdefault(module, set()).add(str(path.relative_to(ROOT)))
    return found


def extra_requirements() -> list[Requirement]:
    """What ``pip install -e '.[test]'`` installs: the project's dependencies and the
    ``test`` extra's, as pyproject.toml declares them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    return [Requirement(r) for r in declared]


def provided_by(requirements: list[Requirement]) -> set[str]:
    """Every distribution the requirements bring in, their own requirements included
    (as installed here: markers evaluated on this interpreter, extras followed)."""
    seen: set[str] = set()
    todo = [(r, "") for r in requirements]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        extras = sorted(requirement.extras)
        key = f"{name}[{','.join(extras)}]"
        if key in seen:
            continue
        seen.add(key)
        seen.add(name)
        try:
            declared = requires(requirement.name) or []
        except PackageNotFoundError:
            continue  # not installed: its own requirements are unknown here
        for text in declared:
            inner = Requirement(text)
            for chosen in ["", *extras]:
                todo.append((inner, chosen))
    return {k for k in seen if "[" not in k}


def test_the_test_extra_provides_every_module_the_tests_import() -> None:
    distributions = packages_distributions()
    provided = provided_by(extra_requirements())
    problems = []
    for module, files in sorted(third_party_imports().items()):
        names = {canonicalize_name(d) for d in distributions.get(module, [])}
        if not names:
            problems.append(f"{module} (imported by {sorted(files)}) is not installed here")
        elif not names & provided:
            problems.append(
                f"{module} (imported by {sorted(files)}) comes from {sorted(names)}, "
                "which the `test` extra does not provide"
            )
    assert not problems, "\n".join(problems)


def test_the_scan_sees_the_imports_that_broke_a_fresh_clone() -> None:
    modules = third_party_imports()
    assert "docs/site_hooks.py" in modules["mkdocs"]
    assert {"pytest", "hypothesis", "httpx"} <= set(modules)
    source = "try:\n    import orjson\nexcept ImportError:\n    orjson = None\nimport yaml\n"
    assert imported_modules(source) == {"yaml"}
    assert imported_modules("importlib.import_module('site_hooks.x')") == {"site_hooks"}
    inside = "import attrs\ndef peer():\n    import pydantic_ai\n"
    assert imported_modules(inside, module_level=True) == {"attrs"}
    assert imported_modules(inside) == {"attrs", "pydantic_ai"}


def test_ci_runs_the_readme_command_in_a_venv_with_nothing_else_installed() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = "python -m pip install -e '.[test]' && python -m pytest"
    assert command in readme
    lines = [line.strip() for line in ci.splitlines() if not line.strip().startswith("#")]
    run_at = lines.index(command)
    installs = [i for i, line in enumerate(lines) if re.search(r"pip install .*-e|\.\[", line)]
    assert installs and installs[0] == run_at, "something is installed before the test command"
    venvs = [i for i, line in enumerate(lines) if "-m venv" in line]
    assert venvs and venvs[0] < run_at
    assert "export CI=1" in lines and lines.index("export CI=1") < run_at
