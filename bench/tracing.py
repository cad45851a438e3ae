"""What observing a run costs: ``agent.run`` with tracing off, on, and before it existed.

``python -m bench.tracing`` times the two offline runs of ``python -m bench``
(``agent_run_text``: one text answer; ``agent_run_1tool``: one tool round trip) in one
process, interleaved (``bench/timing.py``), under:

- ``off``: nothing listens (opentelemetry installed, ``instrument()`` not called): the
  driver's hooks are ``is None`` checks;
- ``on_event``: a no-op ``on_event`` handler (events built and delivered);
- ``otel_noop``: ``instrument()`` with the API's default (no SDK configured: spans are
  non-recording);
- ``otel_sdk``: ``instrument()`` with an SDK tracer provider and meter provider that
  record every span (no exporter).

``--baseline REV`` also times ``off`` against golem as of git revision ``REV`` (before
events existed), or ``--baseline-tree DIR`` against the packages in ``DIR``: the same
ops run in child processes that alternate between the two trees, ``--rounds`` times
each, and the medians of their medians are compared. The target: tracing off costs
under 5% of ``agent.run`` overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.timing import CLOCKS, Record, measure_async

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
OPS = ("agent_run_text", "agent_run_1tool")


def _agents() -> tuple[Any, Any]:
    from golem_core import Message, ModelRequest, Role, ToolCallPart
    from golem_shell import Agent, FunctionModel

    def text_model(request: ModelRequest) -> str:
        return "done"

    def tool_model(request: ModelRequest) -> Message | str:
        last = request.messages[-1]
        if last.role is Role.TOOL and last.tool_name == "ping":
            return "done"
        return Message.assistant(tool_calls=[ToolCallPart("ping_1", "ping", '{"x": 1}')])

    def ping(x: int) -> str:
        """Trivial tool."""
        return f"pong {x}"

    return Agent(FunctionModel(text_model)), Agent(FunctionModel(tool_model), tools=[ping])


async def _off_only(repeat: int, min_repeat_s: float, clock: str) -> list[Record]:
    text, tool = _agents()
    ops = [
        ("golem", "agent_run_text", 0, lambda: text.run("hi")),
        ("golem", "agent_run_1tool", 0, lambda: tool.run("hi")),
    ]
    return await measure_async(ops, repeat, min_repeat_s, CLOCKS[clock])


def _noop(_: object) -> None:
    return None


async def _modes(repeat: int, min_repeat_s: float, clock: str) -> list[Record]:
    """Every mode in one process; tracing is switched per call, so rounds interleave."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

    from golem_shell.observe import _observe, _otel

    text, tool = _agents()
    setups = {  # built once: instrument() itself is not what is measured
        "otel_noop": _otel.Instrumentation(
            tracer_provider=None, meter_provider=None, capture_content=False
        ),
        "otel_sdk": _otel.Instrumentation(
            tracer_provider=TracerProvider(),
            meter_provider=MeterProvider(),
            capture_content=False,
        ),
    }

    def mode(name: str, agent: Any) -> Any:
        async def call() -> Any:
            if name == "off":
                return await agent.run("hi")
            if name == "on_event":
                return await agent.run("hi", on_event=_noop)
            _observe._tracing = setups[name]
            try:
                return await agent.run("hi")
            finally:
                _observe._tracing = None

        return call

    ops = [
        ("golem-" + m, op, 0, mode(m, agent))
        for m in ("off", "on_event", "otel_noop", "otel_sdk")
        for op, agent in (("agent_run_text", text), ("agent_run_1tool", tool))
    ]
    return await measure_async(ops, repeat, min_repeat_s, CLOCKS[clock])


HISTORY_SIZES = (10, 100, 1_000)


async def history_ops(repeat: int, min_repeat_s: float, clock: Any) -> list[Record]:
    """One tool round trip (two requests) after a history of 10, 100 and 1,000 messages,
    with OpenTelemetry off and with an SDK tracer provider recording every span with
    content captured (``capture_content=True``: every request's span holds the whole
    history as ``gen_ai.input.messages``). ``python -m bench`` judges the tracing cost
    per request (traced minus off, halved) at each size against its cost at 10."""
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:  # without the SDK there is nothing to measure
        return []

    from bench.convert import to_golem
    from bench.workload import conversation
    from golem_shell.observe import _observe, _otel

    _, tool = _agents()
    setup = _otel.Instrumentation(
        tracer_provider=TracerProvider(), meter_provider=MeterProvider(), capture_content=True
    )

    def traced(history: Any) -> Any:
        async def call() -> Any:
            _observe._tracing = setup
            try:
                return await tool.run_with_history(history, "hi")
            finally:
                _observe._tracing = None

        return call

    ops: list[tuple[str, str, int, Any]] = []
    for n in HISTORY_SIZES:
        history = to_golem(conversation(n))
        ops.append(
            ("golem", "run_history_otel_off", n, lambda h=history: tool.run_with_history(h, "hi"))
        )
        ops.append(("golem", "run_history_otel_content", n, traced(history)))
    return await measure_async(ops, repeat, min_repeat_s, clock)


def _child(args: argparse.Namespace) -> int:
    records = asyncio.run(_off_only(args.repeat, args.min_repeat_s, args.clock))
    print(json.dumps({r.op: r.median_s for r in records}))
    return 0


def _export(rev: str, into: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "golem_core", "golem_shell"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def _run_child(tree: Path, args: argparse.Namespace) -> dict[str, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(ROOT)])
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.tracing",
            "--child",
            "--repeat",
            str(args.repeat),
            "--clock",
            args.clock,
            "--min-repeat-s",
            str(args.min_repeat_s),
        ],
        env=env,
        cwd=str(tree),
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _baseline(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        before, after = Path(tmp, "before"), Path(tmp, "after")
        before.mkdir()
        after.mkdir()
        if args.baseline_tree:
            for package in ("golem_core", "golem_shell"):
                src = Path(args.baseline_tree, package)
                subprocess.run(["cp", "-r", str(src), str(before)], check=True)
        else:
            _export(args.baseline, before)
        for package in ("golem_core", "golem_shell"):  # the working tree, as it is now
            subprocess.run(["cp", "-r", str(ROOT / package), str(after)], check=True)
        samples: dict[str, dict[str, list[float]]] = {
            "before": {op: [] for op in OPS},
            "off": {op: [] for op in OPS},
        }
        for _ in range(args.rounds):
            for name, tree in (("before", before), ("off", after)):
                for op, seconds in _run_child(tree, args).items():
                    samples[name][op].append(seconds)
    return {
        name: {op: statistics.median(values) for op, values in ops.items()}
        for name, ops in samples.items()
    }


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tracing", description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--min-repeat-s", type=float, default=0.02)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    parser.add_argument("--baseline", help="git revision to compare 'off' with (e.g. HEAD~3)")
    parser.add_argument(
        "--baseline-tree", help="a directory holding golem_core/ and golem_shell/ to compare with"
    )
    parser.add_argument("--rounds", type=int, default=5, help="child processes per tree")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args)

    records = asyncio.run(_modes(args.repeat, args.min_repeat_s, args.clock))
    by = {(r.lib.removeprefix("golem-"), r.op): r.median_s for r in records}
    print(f"clock: {args.clock}; microseconds per agent.run (median of {args.repeat} repeats)")
    print("| op | off | on_event | otel_noop | otel_sdk |")
    print("|---|---:|---:|---:|---:|")
    for op in OPS:
        off = by[("off", op)]
        cells = [_us(off)] + [
            f"{_us(by[(m, op)])} ({by[(m, op)] / off:.2f}x)"
            for m in ("on_event", "otel_noop", "otel_sdk")
        ]
        print(f"| {op} | " + " | ".join(cells) + " |")
    if args.baseline or args.baseline_tree:
        medians = _baseline(args)
        what = args.baseline_tree or args.baseline
        print()
        print(f"tracing off vs {what} (median of {args.rounds} child processes each)")
        print("| op | before | off | off/before |")
        print("|---|---:|---:|---:|")
        for op in OPS:
            before, off = medians["before"][op], medians["off"][op]
            print(f"| {op} | {_us(before)} | {_us(off)} | {off / before:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
