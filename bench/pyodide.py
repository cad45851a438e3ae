"""golem_core's main operations in Pyodide (CPython on WebAssembly) under Node, against
CPython on the same workload in the same run: section ``pyodide`` of the report.

    python -m bench.pyodide --write bench/results.md

The workload is ``bench.workload.damaged(MESSAGES)`` (tool pairing broken in places) as a
golem history, encoded once to JSON bytes; both runtimes get the same bytes and run the
same code, ``measure`` below (this file is copied into Pyodide and run there as is):
``decode_history`` of the bytes, ``encode_history`` of the history, ``normalize_history``
(the repair and its report) and ``sanitize_history``. Each is timed as the best of
``ROUNDS`` rounds of ``LOOPS`` calls with ``time.perf_counter``. CPython runs it in a
subprocess of this interpreter with orjson blocked, so both sides take golem_core's
standard-library JSON path (Pyodide has no orjson). Pyodide is the npm ``pyodide``
package pinned in ``tests/pyodide/package.json``, run by ``tests/pyodide/run_bench.mjs``
with the wheels of ``tests/pyodide/harness.py``. Needs node and ``tests/pyodide/node_modules``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

MESSAGES = 1000
ROUNDS = 7
LOOPS = 3
OPERATIONS = ("decode_history", "encode_history", "normalize_history", "sanitize_history")


def measure(data: bytes, rounds: int = ROUNDS, loops: int = LOOPS) -> dict[str, Any]:
    """Seconds per call, best of ``rounds``, of each of ``OPERATIONS`` on ``data`` (the
    history's JSON); run identically under CPython and in Pyodide."""
    import platform

    from golem_core import decode_history, encode_history, normalize_history, sanitize_history

    history = decode_history(data).unwrap()
    ops: dict[str, Callable[[], object]] = {
        "decode_history": lambda: decode_history(data),
        "encode_history": lambda: encode_history(history),
        "normalize_history": lambda: normalize_history(history),
        "sanitize_history": lambda: sanitize_history(history),
    }
    seconds: dict[str, float] = {}
    for name in OPERATIONS:
        op = ops[name]
        op()  # warm up
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(loops):
                op()
            best = min(best, (time.perf_counter() - start) / loops)
        seconds[name] = best
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": sys.platform,
        "messages": len(history),
        "seconds": seconds,
    }


def _workload() -> bytes:
    from bench.convert import to_golem
    from bench.workload import damaged
    from golem_core import encode_history

    return encode_history(to_golem(damaged(MESSAGES, seed=0)))


def _cpython(data_path: Path) -> dict[str, Any]:
    import subprocess

    code = (
        "import sys, json, importlib.util as u; sys.modules['orjson'] = None; "
        f"s = u.spec_from_file_location('golem_bench_pyodide', {__file__!r}); "
        "m = u.module_from_spec(s); s.loader.exec_module(m); "
        f"print(json.dumps(m.measure(open({str(data_path)!r}, 'rb').read())))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def _pyodide(data_path: Path, build_dir: Path) -> dict[str, Any]:
    import importlib.util

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location(
        "golem_pyodide_harness", root / "tests" / "pyodide" / "harness.py"
    )
    assert spec is not None and spec.loader is not None
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    missing = harness.missing_runtime()
    if missing is not None:
        raise SystemExit(f"cannot run Pyodide here: {missing}")
    deps = [p for p in harness.PINNED if p.split("==")[0] in harness.CORE_DEPENDENCIES]
    wheels = [harness.golem_wheel(build_dir, root), *harness.pinned_wheels(pins=deps)]
    report: dict[str, Any] = harness.run_node(
        "run_bench.mjs",
        {"wheels": [str(w) for w in wheels], "module": __file__, "data": str(data_path)},
    )
    if "error" in report:
        raise RuntimeError(f"Pyodide bench failed: {report['error']}\n{report['stderr']}")
    return {k: v for k, v in report.items() if k not in ("stdout", "stderr", "returncode")}


def run() -> dict[str, Any]:
    """Measure both runtimes; the record of section ``pyodide``."""
    import os
    import platform
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        data_path = Path(tmp) / "history.json"
        data_path.write_bytes(_workload())
        cpython = _cpython(data_path)
        pyodide = _pyodide(data_path, Path(tmp) / "wheel")
        size = data_path.stat().st_size
    return {
        "command": "python -m bench.pyodide --write bench/results.md",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "messages": MESSAGES,
        "bytes": size,
        "rounds": ROUNDS,
        "loops": LOOPS,
        "cpython": cpython,
        "pyodide": pyodide,
    }


def render(data: dict[str, Any]) -> str:
    """This benchmark's section of the report, from its record in ``bench/results.json``."""
    cp, py = data["cpython"], data["pyodide"]
    lines = [
        "## golem_core in Pyodide vs CPython",
        "",
        f"`{data['command']}` ({data['machine']}): the same {data['messages']}-message "
        f"history with broken tool pairing ({data['bytes']:,} bytes of JSON) and the same "
        f"code in both runtimes, best of {data['rounds']} rounds of {data['loops']} calls; "
        f"CPython {cp['python']} with orjson blocked (golem_core's standard-library JSON "
        f"path, as in Pyodide), Pyodide {py['pyodide']} (Python {py['python']}) under "
        f"Node {py['node']}.",
        "",
        "| operation | CPython (ms) | Pyodide (ms) | Pyodide / CPython |",
        "|---|---:|---:|---:|",
    ]
    for name in OPERATIONS:
        a, b = cp["seconds"][name] * 1000, py["seconds"][name] * 1000
        lines.append(f"| `{name}` | {a:.2f} | {b:.2f} | {b / a:.1f}x |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.pyodide", description=__doc__)
    parser.add_argument("--write", type=Path, help="record into this report (bench/results.md)")
    args = parser.parse_args(argv)
    data = run()
    print(render(data))
    if args.write:
        from bench.report import write_section

        write_section(args.write, "pyodide", data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
