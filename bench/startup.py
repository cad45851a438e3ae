"""Start-up: what a fresh process pays before its first answer.

Each snippet runs in a fresh child process under ``python -X importtime`` (the same
overhead on both sides; run it by hand for the import tree); the figure is the wall
time of the snippet after interpreter start, the median of ``rounds`` processes,
interleaved: ``import golem_core``, ``import golem_shell``, ``golem --help`` (the CLI's
``main(["--help"])``), and the first request (import, then one ``FunctionModel``
answer), against ``import pydantic_ai`` and pydantic-ai's first ``FunctionModel`` run.

Both sides import from bytecode, as an install from a wheel does (pip compiles every
module when it installs). The children get a private ``PYTHONPYCACHEPREFIX`` (a
temporary directory) and never ``PYTHONDONTWRITEBYTECODE``, and one untimed round
writes the bytecode first: without it, golem from a source checkout (an editable
install has no ``__pycache__`` when the environment sets ``PYTHONDONTWRITEBYTECODE``, as
these machines do) was timed compiling every module, while pydantic-ai read the
bytecode pip wrote.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile

from bench.timing import Record

__all__ = ["SNIPPETS", "startup_records"]

SNIPPETS = {
    ("golem", "import_golem_core"): "import golem_core",
    ("golem", "import_golem_shell"): "import golem_shell",
    ("golem", "cli_help"): (
        "import contextlib, io\n"
        "from golem_shell.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])"
    ),
    ("golem", "first_request"): (
        "from golem_shell import Agent, FunctionModel\n"
        "Agent(FunctionModel(lambda request: 'done')).run_sync('hi')"
    ),
    ("pydantic-ai", "import_golem_core"): "import pydantic_ai",
    ("pydantic-ai", "import_golem_shell"): "import pydantic_ai",
    ("pydantic-ai", "first_request"): (
        "from pydantic_ai import Agent\n"
        "from pydantic_ai.models.function import FunctionModel, AgentInfo\n"
        "from pydantic_ai.messages import ModelResponse, TextPart\n"
        "def f(messages, info): return ModelResponse(parts=[TextPart('done')])\n"
        "Agent(FunctionModel(f)).run_sync('hi')"
    ),
}
"""What each process runs. pydantic-ai's rows sit beside golem's op they are compared
with (its ``import pydantic_ai`` against both golem imports)."""

_WALL = (
    "import time\n_t0 = time.perf_counter()\n{code}\n"
    "import sys\nsys.stderr.write(f'\\nWALL {{(time.perf_counter() - _t0) * 1e6:.0f}}\\n')"
)


def _one(code: str, env: dict[str, str]) -> float:
    """Microseconds: the wall time of the snippet after interpreter start."""
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _WALL.format(code=code)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return float(run.stderr.rsplit("WALL ", 1)[1])


def startup_records(rounds: int) -> list[Record]:
    """One record per snippet: seconds, the median over ``rounds`` fresh processes,
    after an untimed round that writes every module's bytecode (see the docstring)."""
    samples: dict[tuple[str, str], list[float]] = {k: [] for k in SNIPPETS}
    with tempfile.TemporaryDirectory(prefix="golem-bench-pyc-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        missing: set[tuple[str, str]] = set()
        for key, code in SNIPPETS.items():  # the untimed round: bytecode for both sides
            try:
                _one(code, env)
            except subprocess.CalledProcessError:
                missing.add(key)  # not installed: left out
        for _ in range(rounds):
            for key, code in SNIPPETS.items():
                if key not in missing:
                    samples[key].append(_one(code, env) / 1e6)
    return [
        Record(lib, op, 0, statistics.median(s), min(s), max(s), len(s), 1)
        for (lib, op), s in samples.items()
        if s
    ]
