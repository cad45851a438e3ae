"""Issue 37 item 7: the sdist and the wheel are real.

Built here the way ``python -m build`` builds them (the sdist first, the wheel from the
unpacked sdist), without build isolation so that nothing is fetched: ``build``,
``hatchling`` and ``twine`` are in the ``test`` extra. Checked: ``twine check --strict``;
the wheel holds every module and the package data (both ``py.typed``, the history
schema) and the ``golem`` console script; the sdist holds every file git tracks and
nothing git ignores (``tests/js/node_modules``); the wheel's files alone, unpacked away
from the clone, run ``golem --help``, ``golem schema`` and an offline agent run.
``.ci/run`` also installs the wheel into an empty venv (dependencies from the index).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def git_files(*args: str) -> set[str]:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return {line for line in done.stdout.splitlines() if (ROOT / line).is_file()}


def test_twine_check_passes(dist: Path) -> None:
    files = [str(p) for p in sorted(dist.iterdir())]
    assert len(files) == 2, files
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_wheel_holds_every_module_the_package_data_and_the_command(dist: Path) -> None:
    wheel = zipfile.ZipFile(one(dist, "*.whl"))
    names = set(wheel.namelist())
    for data in ("golem_core/py.typed", "golem_shell/py.typed", "golem_shell/history.schema.json"):
        assert data in names, data
    if (ROOT / ".git").exists():
        tracked = git_files("ls-files", "golem_core", "golem_shell")
        assert tracked - names == set()
    assert not [n for n in names if n.startswith(("tests/", "docs/", "bench/"))]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    info = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "golem = golem_shell.cli:main" in wheel.read(info).decode()
    metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert f"Name: {project['name']}" in metadata
    assert f"Version: {project['version']}" in metadata
    for requirement in project["dependencies"]:
        assert f"Requires-Dist: {requirement}" in metadata, requirement
    assert "Description-Content-Type: text/markdown" in metadata


def test_the_wheel_holds_the_compiled_decoder_and_is_tagged_for_this_interpreter(
    dist: Path,
) -> None:
    """hatch_build.py compiles ``golem_core/_native/_speedups.c`` (a C compiler is on every machine
    here; ``GOLEM_REQUIRE_SPEEDUPS=1`` in ``.ci/run``; ADR 0149)."""
    wheel = one(dist, "*.whl")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    assert f"golem_core/_native/_speedups{suffix}" in zipfile.ZipFile(wheel).namelist()
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert wheel.name.startswith(f"golem_agents-0.1.0-{tag}-{tag}-"), wheel.name


def test_the_sdist_holds_what_git_tracks_and_nothing_it_ignores(dist: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    with tarfile.open(one(dist, "*.tar.gz")) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    files = {n for n in names if not n.endswith("/")} - {"PKG-INFO"}
    tracked = git_files("ls-files")
    untracked = git_files("ls-files", "--others", "--exclude-standard")
    assert tracked - files == set()
    ignored = sorted(files - tracked - untracked)
    assert ignored == [], ignored[:20]  # e.g. tests/js/node_modules after npm ci
    assert {"CHANGELOG.md", "README.md", "pyproject.toml"} <= files


def test_the_wheels_files_alone_run_the_command_and_an_offline_agent(
    dist: Path, tmp_path: Path
) -> None:
    unpacked = tmp_path / "site"
    zipfile.ZipFile(one(dist, "*.whl")).extractall(unpacked)
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(unpacked)  # ahead of the clone's editable install

    def run(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [sys.executable, *args], cwd=away, env=env, input=stdin, capture_output=True,
            text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "migrate-store" in run("-m", "golem_shell.cli", "--help")
    schema = json.loads(run("-m", "golem_shell.cli", "schema"))
    assert schema["$schema"].startswith("https://json-schema.org/")
    script = (
        "import golem_core, golem_shell\n"
        "from golem_shell import Agent, TestModel\n"
        "print(golem_shell.__file__)\n"
        "from golem_core._native import _speedups\n"
        "from golem_core.codec._json_compiled import NATIVE_PATHS\n"
        "assert NATIVE_PATHS and _speedups.__file__.startswith(golem_core.__path__[0])\n"
        "agent = Agent(TestModel())\n"
        "@agent.tool_plain\n"
        "def add(a: int, b: int) -> int:\n"
        "    '''Add two numbers.'''\n"
        "    return a + b\n"
        "result = agent.run_sync('add two numbers')\n"
        "print(result.output)\n"
        "print(golem_core.encode_history(result.messages).decode())\n"
    )
    where, output, history = run("-c", script).splitlines()
    assert where.startswith(str(unpacked)), where  # the wheel's code ran, not the clone's
    assert "add" in json.loads(output)  # TestModel called the tool, then answered
    run("-m", "golem_shell.cli", "history", "check", "-", stdin=history)  # exit 0: valid
