"""Inside Pyodide: watch golem_core for effects, import all of it, run its suite with pytest.

``run_suite.mjs`` runs this file in Pyodide after installing the wheels and copying the
suite to ``/suite``; ``main(config)`` returns the report as JSON (``ok`` and counts, the
import errors, the effects seen). It owns the judgement of the Pyodide job: the run fails
(``ok`` false) when

- a module of golem_core cannot be imported here (every module is imported, not only
  those the suite uses), or a test file cannot be collected;
- golem_core performs an effect: while the suite runs, an audit hook (``sys.addaudithook``)
  records every audited effect (files opened, sockets, processes, ``os.system``, file
  system changes, ``time.sleep``, ...) and ``sys.monitoring`` records every call golem_core
  code makes to a clock, an entropy source or the environment (``time.time``,
  ``datetime.now``, ``random.*``, ``os.urandom``, ``uuid.uuid4``, ``os.getenv``, ...).
  An effect is golem_core's when the nearest frame that is neither the standard library
  nor one of golem_core's dependencies (attrs, cattrs, returns, typing_extensions) is
  golem_core code: an effect of Hypothesis or pytest, or of a test's own callback, is not;
- a test fails, or nothing ran.
"""

from __future__ import annotations

import json
import os
import site
import sys
import sysconfig
from types import CodeType, FrameType
from typing import Any

CORE = "golem_core"
DEPENDENCIES = ("attr", "attrs", "cattr", "cattrs", "returns", "typing_extensions")

AUDITED = (
    "open",
    "os.",
    "shutil.",
    "socket.",
    "subprocess.",
    "time.sleep",
    "urllib.",
    "http.client.",
    "webbrowser.",
    "ctypes.",
    "sqlite3.",
    "tempfile.",
    "glob.",
    "pathlib.",
)
"""Audit events that are effects (prefixes); ``os.`` covers ``os.system``, ``os.exec``,
``os.spawn``, ``os.fork``, ``os.remove``, ``os.listdir``, ``os.putenv``, ..."""

_site = os.path.normpath(site.getsitepackages()[0]) + "/"
_stdlib = tuple(
    {os.path.normpath(sysconfig.get_paths()["stdlib"]) + "/", "<frozen "}
    | {os.path.normpath(p) + "/" for p in sys.path if p.endswith(".zip")}
)
"""Where the standard library's code lives (Pyodide's is in ``/lib/python314.zip``)."""


def _kind(filename: str) -> str:
    """``core``, ``dependency``, ``stdlib`` or ``other`` for a code object's file."""
    if filename.startswith(_site):
        top = filename[len(_site) :].split("/", 1)[0].removesuffix(".py")
        if top == CORE:
            return "core"
        return "dependency" if top in DEPENDENCIES else "other"
    if filename.startswith(_stdlib):
        return "stdlib"
    return "other"


_kinds: dict[str, str] = {}


def _kind_of(code: CodeType) -> str:
    name = code.co_filename
    kind = _kinds.get(name)
    if kind is None:
        kind = _kinds[name] = _kind(name)
    return kind


def _owner(frame: FrameType | None) -> FrameType | None:
    """The nearest frame that is not the standard library, a dependency or this file; None
    when the import system comes first (loading a module reads files: not an effect of
    the module that imports)."""
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith("<frozen importlib"):
            return None
        if code.co_filename != __file__ and _kind_of(code) not in ("stdlib", "dependency"):
            return frame
        frame = frame.f_back
    return None


class Guard:
    """Records golem_core's effects while ``active``."""

    def __init__(self) -> None:
        self.effects: list[dict[str, Any]] = []
        self.active = False
        self._banned: dict[Any, str] = {}
        self._no_arg_banned: dict[Any, str] = {}

    # -- the audit hook ---------------------------------------------------------------------

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active or not event.startswith(AUDITED):
            return
        try:
            owner = _owner(sys._getframe(1))
            if owner is not None and _kind_of(owner.f_code) == "core":
                self._record(event, repr(args)[:200], owner)
        except Exception as e:  # a hook must never raise into the audited call
            self.effects.append({"event": "guard error", "args": repr(e)})

    # -- sys.monitoring: calls golem_core makes to clocks, entropy, the environment ---------

    def ban(self) -> None:
        import datetime
        import random
        import secrets
        import time
        import uuid

        for module, names in (
            (time, ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter",
                    "perf_counter_ns", "process_time", "process_time_ns", "thread_time",
                    "thread_time_ns", "sleep", "clock_gettime", "clock_gettime_ns")),
            (random, ("random", "randint", "randrange", "choice", "choices", "shuffle",
                      "sample", "uniform", "getrandbits", "randbytes", "gauss", "seed",
                      "Random", "SystemRandom")),
            (secrets, ("token_bytes", "token_hex", "token_urlsafe", "randbelow", "choice",
                       "randbits")),
            (uuid, ("uuid1", "uuid4", "getnode")),
            (os, ("urandom", "getrandom", "getenv", "getpid", "getcwd", "listdir", "scandir",
                  "stat", "system")),
        ):  # fmt: skip
            for name in names:
                if hasattr(module, name):
                    self._banned[getattr(module, name)] = f"{module.__name__}.{name}"
        for owner in (datetime.datetime, datetime.date):
            for name in ("now", "utcnow", "today"):
                if hasattr(owner, name):
                    self._banned[getattr(owner, name)] = f"{owner.__name__}.{name}"
        self._banned[os.environ.get] = "os.environ.get"
        for name in ("localtime", "gmtime", "ctime", "asctime"):  # the clock when given no time
            self._no_arg_banned[getattr(time, name)] = f"time.{name}()"

        monitoring = sys.monitoring
        tool = monitoring.DEBUGGER_ID
        monitoring.use_tool_id(tool, "golem-pyodide-guard")
        monitoring.register_callback(tool, monitoring.events.CALL, self._call)
        monitoring.set_events(tool, monitoring.events.CALL)

    def _call(self, code: CodeType, offset: int, callable_: Any, arg0: Any) -> Any:
        if _kind_of(code) != "core":
            return sys.monitoring.DISABLE  # this call site is not golem_core's: never again
        if not self.active:
            return None
        try:
            name = self._banned.get(callable_)
            if name is None and arg0 is sys.monitoring.MISSING:
                name = self._no_arg_banned.get(callable_)
        except TypeError:  # an unhashable callable
            return None
        if name is not None:
            self._record(f"call {name}", "", sys._getframe(1))
        return None

    def _record(self, event: str, detail: str, frame: FrameType) -> None:
        where = f"{frame.f_code.co_filename.split('site-packages/')[-1]}:{frame.f_lineno}"
        where += f" in {frame.f_code.co_qualname}"
        test = os.environ.get("PYTEST_CURRENT_TEST", "")
        self.effects.append({"event": event, "args": detail, "where": where, "test": test})


def _import_all() -> tuple[list[str], list[str]]:
    """Import every module of golem_core; the names imported and the failures."""
    import importlib
    import pkgutil
    import traceback

    imported: list[str] = []
    failed: list[str] = []
    package = importlib.import_module(CORE)
    for info in pkgutil.walk_packages(package.__path__, CORE + "."):
        try:
            importlib.import_module(info.name)
            imported.append(info.name)
        except Exception:  # every failure is reported, with its traceback
            failed.append(f"{info.name}: {traceback.format_exc(limit=-3)}")
    return [CORE, *imported], failed


class _Counter:
    """A pytest plugin: counts outcomes and keeps each failure's report."""

    def __init__(self) -> None:
        self.counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
        self.failures: list[str] = []
        self.collected = 0

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        self.collected = len(items)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.counts["errors"] += 1
            self.failures.append(f"collecting {report.nodeid}:\n{report.longreprtext[-3000:]}")

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or report.outcome != "passed":
            if report.outcome == "failed":
                key = "failed" if report.when == "call" else "errors"
                self.counts[key] += 1
                self.failures.append(
                    f"{report.nodeid} ({report.when}):\n{report.longreprtext[-3000:]}"
                )
            elif report.outcome == "skipped":
                self.counts["skipped"] += 1
            elif report.when == "call":
                self.counts["passed"] += 1


def main(config_json: str) -> str:
    """Run the suite described by ``config_json`` (``files``: test paths under ``/suite``,
    ``pytest_args``); the report, as JSON."""
    config = json.loads(config_json)
    guard = Guard()
    if config.get("guard", True):
        sys.addaudithook(guard.audit)
        guard.ban()
        guard.active = True
    modules, import_errors = _import_all()

    import pytest

    counter = _Counter()
    os.chdir("/suite")
    args = [
        *config["files"],
        "-p",
        "no:cacheprovider",
        "-p",
        "no:faulthandler",
        *config.get("pytest_args", []),
    ]
    exit_code = int(pytest.main(args, plugins=[counter]))
    guard.active = False

    from hypothesis import settings

    ran = counter.counts["passed"] + counter.counts["failed"]
    ok = exit_code == 0 and not import_errors and not guard.effects and ran > 0
    return json.dumps(
        {
            "ok": ok,
            "exit_code": exit_code,
            "python": sys.version.split()[0],
            "platform": sys.platform,
            "hypothesis_profile": settings._current_profile,
            "max_examples": settings.default.max_examples,
            "collected": counter.collected,
            **counter.counts,
            "failures": counter.failures[:20],
            "modules_imported": len(modules),
            "import_errors": import_errors,
            "effects": guard.effects[:50],
            "effect_count": len(guard.effects),
        }
    )
