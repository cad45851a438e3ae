"""Issue 37 item 6: a public name never disappears without a word in CHANGELOG.md.

``tests/public_names.txt`` lists every public name, ``module.name``, one a line: the
``__all__`` of every public module of ``golem_core`` and ``golem_shell`` (no ``_`` in its
dotted path, as the API reference reads them; ``__all__`` is read from the source, so
no optional extra is imported). A listed name that is gone must be named in CHANGELOG.md
on a removal line (under a ``### Removed`` heading, or a line saying "removed"), in
backticks, as `` `module.name` `` or `` `name` ``. Any change to the names then needs the
list written again::

    python tests/test_changelog.py --write

Issue 38 item 4 extends the rule to signatures for embedders (docs/guides/embedding.md):
``tests/embedder_surface.txt`` (written by the same command) lists every name of
``golem_core`` and ``golem_core.loop`` with its signature, one a line: a function's
parameters, an attrs class's fields, an enum's members, a class's public methods and
properties, a constant's value or type. A listed signature that changed must be named in
backticks in the changelog's Unreleased section (`` `start_run` ``, `` `RunConfig(...)` ``,
`` `golem_core.loop.receive` ``); a listed member that is gone must be on a removal line,
as a removed name is.
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import re
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "tests" / "public_names.txt"
CHANGELOG = ROOT / "CHANGELOG.md"
PACKAGES = ("golem_core", "golem_shell")
WRITE = "python tests/test_changelog.py --write"
SURFACE = ROOT / "tests" / "embedder_surface.txt"
EMBEDDER_MODULES = ("golem_core", "golem_core.loop")


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


# -- signatures: the surface an embedder drives the loop with ---------------------------


def embedder_surface(modules: tuple[str, ...] = EMBEDDER_MODULES) -> list[str]:
    """One line per name of each module's ``__all__`` (and per public method or property
    of each class), in ``surface_order``: ``module.name`` followed by its signature."""
    lines: list[str] = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            lines.extend(_describe(f"{module_name}.{name}", getattr(module, name)))
    return surface_order(lines)


def surface_order(lines: list[str]) -> list[str]:
    """``lines`` module by module (``EMBEDDER_MODULES`` order), sorted by name within each,
    a class before its members."""

    def rank(line: str) -> tuple[int, str]:
        key = surface_key(line)
        owners = [i for i, m in enumerate(EMBEDDER_MODULES) if key.startswith(m + ".")]
        return (max(owners, key=lambda i: len(EMBEDDER_MODULES[i]), default=-1), key)

    return sorted(lines, key=rank)


def surface_key(line: str) -> str:
    """The dotted name a surface line describes (what precedes its signature)."""
    match = re.match(r"[\w.]+", line)
    assert match, f"{SURFACE.name}: a line must start with a dotted name: {line!r}"
    return match.group(0)


def _describe(qualified: str, value: object) -> list[str]:
    if isinstance(value, type) and issubclass(value, enum.Enum):
        members = ", ".join(f"{m.name}={m.value!r}" for m in value)
        return [f"{qualified}: enum({members})"]
    if isinstance(value, type):
        if attrs.has(value):
            head = f"{qualified}({_fields(value)})"
        elif getattr(value, "_is_protocol", False):
            head = f"{qualified}: protocol"
        else:
            head = f"{qualified}{_signature(value)}"
        return [head, *_members(qualified, value)]
    if inspect.isfunction(value):
        return [f"{qualified}{_signature(value)}"]
    if isinstance(value, str | int | float | bool):
        return [f"{qualified} = {value!r}"]
    if isinstance(value, dict | tuple | list | frozenset | set):
        return [f"{qualified}: {type(value).__name__}"]
    return [f"{qualified}: alias {_clean(repr(value))}"]  # a type alias: a union, a Literal


def _fields(cls: type) -> str:
    # each field by the type it names, always: an attrs field holds the source's words
    # (``Extra``) until something resolves it in place (``attrs.resolve_types``, which
    # cattrs runs when it builds a codec), so its ``type`` depends on what ran before
    hints = typing.get_type_hints(cls)
    out: list[str] = []
    starred = False
    for f in attrs.fields(cls):
        if f.kw_only and not starred:
            out.append("*")
            starred = True
        text = f"{f.alias or f.name}: {_annotation(hints.get(f.name, f.type))}"
        if f.default is not attrs.NOTHING:
            text += f" = {_default(f.default)}"
        out.append(text if f.init else f"[{text}, not in __init__]")
    return ", ".join(out)


def _members(qualified: str, cls: type) -> list[str]:
    """The public methods and properties a class of golem_core defines or inherits from
    another class of golem_core."""
    out: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if not base.__module__.startswith("golem_core"):
            continue
        for name, member in vars(base).items():
            if name.startswith("_"):
                continue
            if isinstance(member, property):
                hint = inspect.signature(member.fget).return_annotation if member.fget else None
                out[name] = f"{qualified}.{name}: property {_annotation(hint)}"
            elif isinstance(member, classmethod | staticmethod) or inspect.isfunction(member):
                kind = "classmethod " if isinstance(member, classmethod) else ""
                out[name] = f"{qualified}.{name}: {kind}{_signature(getattr(cls, name))}"
    return list(out.values())


def _signature(value: Any) -> str:
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return "(...)"
    params = []
    for p in signature.parameters.values():
        text = str(p.replace(annotation=inspect.Parameter.empty, default=inspect.Parameter.empty))
        if p.annotation is not inspect.Parameter.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not inspect.Parameter.empty:
            text += f" = {_default(p.default)}"
        params.append(text)
    shown = _with_markers(params, signature)
    returns = signature.return_annotation
    tail = "" if returns is inspect.Signature.empty else f" -> {_annotation(returns)}"
    return f"({shown}){tail}"


def _with_markers(params: list[str], signature: inspect.Signature) -> str:
    """The parameters with ``*`` before the first keyword-only one and ``/`` after the
    positional-only ones, as ``inspect`` writes them."""
    kinds = [p.kind for p in signature.parameters.values()]
    out: list[str] = []
    for i, (text, kind) in enumerate(zip(params, kinds, strict=True)):
        before = kinds[i - 1] if i else None
        if kind is inspect.Parameter.KEYWORD_ONLY and before not in (
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.VAR_POSITIONAL,
        ):
            out.append("*")
        out.append(text)
        after = kinds[i + 1] if i + 1 < len(kinds) else None
        if kind is inspect.Parameter.POSITIONAL_ONLY and after is not kind:
            out.append("/")
    return ", ".join(out)


def _annotation(value: object) -> str:
    if value is None or value is inspect.Parameter.empty:
        return "?"
    if isinstance(value, str):
        return value
    return _clean(inspect.formatannotation(value))


def _default(value: object) -> str:
    if isinstance(value, attrs.Factory):
        factory = value.factory
        return f"factory({getattr(factory, '__qualname__', type(factory).__name__)})"
    if isinstance(value, frozenset | set):
        return f"{type(value).__name__}({sorted(map(repr, value))})"
    return _clean(repr(value))


def _clean(text: str) -> str:
    """``text`` without what differs between two runs (addresses)."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)


def unreleased(changelog: str) -> str:
    """The changelog's top section: from ``## Unreleased`` to the next ``## `` heading."""
    match = re.search(r"^## Unreleased\b.*?(?=^## |\Z)", changelog, re.M | re.S)
    return match.group(0) if match else ""


def _named(key: str, text: str) -> bool:
    """Whether ``text`` names ``key`` in backticks: whole, or without its module
    (`` `start_run` ``, `` `Message.user` ``), alone or with what follows
    (`` `RunConfig(max_cost=...)` ``)."""
    module = next(
        (m for m in sorted(EMBEDDER_MODULES, key=len, reverse=True) if key.startswith(m + ".")),
        "",
    )
    forms = {key, key[len(module) + 1 :] if module else key}
    return any(re.search(rf"`{re.escape(form)}(?!\w)[^`\n]*`", text) for form in forms)


def surface_problems(current: list[str], listed: list[str], changelog: str) -> list[str]:
    """What is wrong between the surface as it is and as listed, given the changelog."""
    now = {surface_key(line): line for line in current}
    was = {surface_key(line): line for line in listed}
    out: list[str] = []
    if listed != surface_order(list(dict.fromkeys(listed))) or len(was) != len(listed):
        out.append(f"{SURFACE.name} is not in order or repeats a name: run `{WRITE}`")
    top = unreleased(changelog)
    changed = sorted(k for k in set(now) & set(was) if now[k] != was[k])
    silent = [k for k in changed if not _named(k, top)]
    if silent:
        detail = "; ".join(f"{was[k]}  ->  {now[k]}" for k in silent)
        out.append(
            f"embedder signatures changed without a changelog entry: {', '.join(silent)}"
            f" ({detail}). Add a line to '## Unreleased' in CHANGELOG.md naming each in"
            f" backticks and how to adapt, then run `{WRITE}`"
        )
    elif changed:
        out.append(f"changed signatures are in the changelog; update the list: run `{WRITE}`")
    gone = sorted(set(was) - set(now))
    missing = unannounced(gone, changelog)
    if missing:
        out.append(
            f"embedder names removed without a changelog entry: {', '.join(missing)}. Add a"
            " line under '### Removed' of '## Unreleased' in CHANGELOG.md naming each in"
            f" backticks, then run `{WRITE}`"
        )
    elif gone:
        out.append(f"removed names are in the changelog; update the list: run `{WRITE}`")
    new = sorted(set(now) - set(was))
    if new:
        out.append(f"embedder names added ({', '.join(new)}): update the list: run `{WRITE}`")
    return out


def _fresh_surface() -> list[str]:
    """``embedder_surface()`` as a new interpreter sees it, as ``--write`` does: in this
    process earlier tests may have rewritten annotations in place (``attrs.resolve_types``
    and the like), and the listing must not depend on which tests ran before."""
    code = (
        "import sys; sys.path.insert(0, 'tests');"
        " import test_changelog as t; print('\\n'.join(t.embedder_surface()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_every_embedder_signature_is_listed_and_every_change_announced() -> None:
    surface = _fresh_surface()
    listed = SURFACE.read_text(encoding="utf-8")
    found = surface_problems(surface, listed_names(listed), CHANGELOG.read_text())
    differ = sorted(set(surface) - set(listed_names(listed)))[:5]
    assert found == [], "\n".join([*found, "first lines that differ:", *differ])


def test_a_changed_signature_fails_until_the_unreleased_section_names_it() -> None:
    listed = [
        "golem_core.loop.receive(state: RunState, outcome: LoopOutcome) -> RunState",
        "golem_core.loop.start_run(config: RunConfig) -> RunState",
    ]
    current = [
        "golem_core.loop.receive(state: RunState, result: LoopOutcome) -> RunState",
        "golem_core.loop.start_run(config: RunConfig) -> RunState",
    ]
    old = "## 0.3.0\n\n- `receive` takes an outcome.\n"
    for silent in ("", "## Unreleased\n\n- `receiver` is new.\n\n" + old):
        (problem,) = surface_problems(current, listed, silent)
        assert problem.startswith(
            "embedder signatures changed without a changelog entry: golem_core.loop.receive ("
            "golem_core.loop.receive(state: RunState, outcome: LoopOutcome)"
        ), problem
    for announced in (
        "- `receive(state, result)`: the outcome parameter is `result`.",
        "- `golem_core.loop.receive` renamed a parameter.",
    ):
        assert surface_problems(current, listed, f"## Unreleased\n\n{announced}\n\n{old}") == [
            f"changed signatures are in the changelog; update the list: run `{WRITE}`"
        ]
    assert surface_problems(current, current, "") == []


def test_a_removed_member_fails_until_a_removal_line_names_it() -> None:
    listed = ["golem_core.Message.user: classmethod (text: str) -> Message"]
    (problem,) = surface_problems([], listed, "## Unreleased\n\n- `Message.user` is odd.\n")
    assert problem.startswith("embedder names removed without a changelog entry")
    assert surface_problems([], listed, "## Unreleased\n\n### Removed\n\n- `user`.\n") == [
        f"removed names are in the changelog; update the list: run `{WRITE}`"
    ]


def test_the_surface_sees_a_renamed_parameter_a_field_and_a_member() -> None:
    @attrs.frozen
    class Config:
        run_id: str
        limit: int = attrs.field(default=3, kw_only=True)

        @property
        def twice(self) -> int:
            return 2 * self.limit

    def start(config: Config, prompt: str | None, *, now: object = None) -> Config:
        return config

    def start_renamed(config: Config, text: str | None, *, now: object = None) -> Config:
        return config

    Config.__module__ = start.__module__ = start_renamed.__module__ = "golem_core.loop"
    assert _describe("m.Config", Config) == [
        "m.Config(run_id: str, *, limit: int = 3)",
        "m.Config.twice: property int",
    ]
    assert _describe("m.start", start) == [
        "m.start(config: Config, prompt: str | None, *, now: object = None) -> Config"
    ]
    assert _describe("m.start", start) != _describe("m.start", start_renamed)


def test_the_surface_lists_the_loop_protocol() -> None:
    keys = {surface_key(line) for line in embedder_surface()}
    for name in ("start_run", "next_command", "receive", "resume_run", "RunConfig", "Answered"):
        assert f"golem_core.loop.{name}" in keys
    assert "golem_core.Message.tool_result" in keys
    assert "golem_core.loop.RunState.messages" in keys


def _write() -> None:
    """Write both lists, refusing while a removal or a changed signature is unannounced
    (the rule holds when the lists are written, not only when they are compared)."""
    changelog = CHANGELOG.read_text(encoding="utf-8")
    names = public_names()
    surface = embedder_surface()
    unsaid = [
        p
        for p in problems(names, listed_names(LIST.read_text(encoding="utf-8")), changelog)
        + surface_problems(surface, listed_names(SURFACE.read_text(encoding="utf-8")), changelog)
        if "without a changelog entry" in p
    ]
    if unsaid:
        sys.exit("not written:\n" + "\n".join(unsaid))
    header = (
        "# Every public name of golem_core and golem_shell (module.name), one a line.\n"
        f"# Written by `{WRITE}`; a name removed from here must be\n"
        "# named under '### Removed' in CHANGELOG.md (tests/test_changelog.py).\n"
    )
    LIST.write_text(header + "".join(f"{n}\n" for n in names), encoding="utf-8")
    print(f"{LIST.relative_to(ROOT)}: {len(names)} names")
    _write_surface(surface)


def _write_surface(surface: list[str]) -> None:
    header = (
        "# What an embedder relies on (docs/guides/embedding.md): every name of golem_core and\n"
        "# golem_core.loop with its signature, and each class's public methods and properties.\n"
        f"# Written by `{WRITE}`; a signature that changes must be\n"
        "# named in CHANGELOG.md's Unreleased section (tests/test_changelog.py).\n"
    )
    SURFACE.write_text(header + "".join(f"{line}\n" for line in surface), encoding="utf-8")
    print(f"{SURFACE.relative_to(ROOT)}: {len(surface)} lines")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {WRITE}")
    _write()
