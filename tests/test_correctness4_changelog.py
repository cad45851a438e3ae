"""Issue 37 item 6: a public name never disappears without a word in CHANGELOG.md.

``tests/public_names.txt`` lists every public name, ``module.name``, one a line: the
``__all__`` of every public module of ``golem_core`` and ``golem_shell`` (no ``_`` in its
dotted path, as the API reference reads them; ``__all__`` is read from the source, so
no optional extra is imported). A listed name that is gone must be named in CHANGELOG.md
on a removal line (under a ``### Removed`` heading, or a line saying "removed"), in
backticks, as `` `module.name` `` or `` `name` ``. Any change to the names then needs the
list written again::

    python tests/test_correctness4_changelog.py --write
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "tests" / "public_names.txt"
CHANGELOG = ROOT / "CHANGELOG.md"
PACKAGES = ("golem_core", "golem_shell")
WRITE = "python tests/test_correctness4_changelog.py --write"


def public_names(root: Path = ROOT) -> list[str]:
    """``module.name`` for every name of every public module's ``__all__``, sorted."""
    names: list[str] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if any(p.startswith("_") for p in parts):
                continue
            exported = _all_of(path)
            if exported is not None:
                names.extend(f"{'.'.join(parts)}.{name}" for name in exported)
    return sorted(names)


def _all_of(path: Path) -> list[str] | None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise AssertionError(f"{path}: __all__ must be a literal list of names") from None
            return [str(v) for v in value]
    return None


def listed_names(text: str) -> list[str]:
    return [s for line in text.splitlines() if (s := line.strip()) and not s.startswith("#")]


def removal_lines(changelog: str) -> list[str]:
    """The lines of the changelog that record a removal."""
    found: list[str] = []
    in_removed = False
    for line in changelog.splitlines():
        if line.startswith("#"):
            in_removed = line.strip().lower() == "### removed"
            continue
        if in_removed or re.search(r"\bremoved\b", line, re.IGNORECASE):
            found.append(line)
    return found


def unannounced(removed: list[str], changelog: str) -> list[str]:
    """The removed ``module.name`` entries no removal line of ``changelog`` names."""
    text = "\n".join(removal_lines(changelog))
    missing = []
    for qualified in removed:
        bare = qualified.rsplit(".", 1)[1]
        if f"`{qualified}`" not in text and f"`{bare}`" not in text:
            missing.append(qualified)
    return missing


def problems(current: list[str], listed: list[str], changelog: str) -> list[str]:
    out: list[str] = []
    if listed != sorted(set(listed)):
        out.append(f"{LIST.name} is not sorted or repeats a name: run `{WRITE}`")
    gone = sorted(set(listed) - set(current))
    new = sorted(set(current) - set(listed))
    missing = unannounced(gone, changelog)
    if missing:
        out.append(
            f"public names removed without a changelog entry: {', '.join(missing)}. Add a "
            "line under '### Removed' of '## Unreleased' in CHANGELOG.md naming each in "
            f"backticks (`module.name`) and what to use instead, then run `{WRITE}`"
        )
    elif gone:
        out.append(f"removed names are in the changelog; update the list: run `{WRITE}`")
    if new:
        out.append(f"public names added ({', '.join(new)}): update the list: run `{WRITE}`")
    return out


def test_every_public_name_is_listed_and_every_removal_announced() -> None:
    found = problems(
        public_names(), listed_names(LIST.read_text(encoding="utf-8")), CHANGELOG.read_text()
    )
    assert found == [], "\n".join(found)


def test_a_removed_name_fails_until_the_changelog_names_it() -> None:
    listed = ["golem_core.Message", "golem_core.loop.receive", "golem_shell.Agent"]
    current = ["golem_core.Message", "golem_shell.Agent"]
    silent = "# Changelog\n\n## Unreleased\n\n### Changed\n\n- `receive` is faster.\n"
    assert (
        "removed without a changelog entry: golem_core.loop.receive"
        in problems(current, listed, silent)[0]
    )
    for announced in (
        "## Unreleased\n\n### Removed\n\n- `golem_core.loop.receive`: use `drive`.\n",
        "## Unreleased\n\n### Changed\n\n- `receive` was removed: use `drive`.\n",
    ):
        assert problems(current, listed, announced) == [
            f"removed names are in the changelog; update the list: run `{WRITE}`"
        ]
        assert problems(current, current, announced) == []


def test_an_added_name_needs_only_the_list() -> None:
    listed = ["golem_shell.Agent"]
    current = ["golem_shell.Agent", "golem_shell.capture_run_messages"]
    assert problems(current, listed, "") == [
        f"public names added (golem_shell.capture_run_messages): update the list: run `{WRITE}`"
    ]
    assert problems(current, current, "") == []


def test_the_names_are_read_from_every_public_module(tmp_path: Path) -> None:
    (tmp_path / "golem_core" / "wire").mkdir(parents=True)
    (tmp_path / "golem_shell").mkdir()
    (tmp_path / "golem_core" / "__init__.py").write_text('__all__ = ["B", "A"]\n')
    (tmp_path / "golem_core" / "_private.py").write_text('__all__ = ["Hidden"]\n')
    (tmp_path / "golem_core" / "wire" / "openai.py").write_text('__all__ = ("encode",)\n')
    (tmp_path / "golem_shell" / "cli.py").write_text("def main() -> None: ...\n")
    assert public_names(tmp_path) == [
        "golem_core.A",
        "golem_core.B",
        "golem_core.wire.openai.encode",
    ]


def _write() -> None:
    names = public_names()
    header = (
        "# Every public name of golem_core and golem_shell (module.name), one a line.\n"
        f"# Written by `{WRITE}`; a name removed from here must be\n"
        "# named under '### Removed' in CHANGELOG.md (tests/test_correctness4_changelog.py).\n"
    )
    LIST.write_text(header + "".join(f"{n}\n" for n in names), encoding="utf-8")
    print(f"{LIST.relative_to(ROOT)}: {len(names)} names")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {WRITE}")
    _write()
