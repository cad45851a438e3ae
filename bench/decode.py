"""Decode at the floor, on two workloads: ``python -m bench.decode [--write bench/results.md]``.

Owns the ``decode`` section of the report (``render``). For each workload, the chat
turns of ``bench/workload.py`` (``chat``) and the agentic mix of ``bench/workload2.py``
(``agentic``: heavy-tailed sizes, thinking, images, up to eight calls per step,
metadata on every assistant message), at 1,000, 10,000 and 100,000 messages, it times
in one process, in interleaved rounds (``bench/timing.py``, CPU clock, median):

- ``json_loads``: stdlib ``json.loads`` of the very bytes golem reads (the baseline);
- ``decode``: golem's ``decode_history`` of those bytes;
- ``pydantic_ai``: pydantic-ai's ``ModelMessagesTypeAdapter.validate_json`` of its own
  encoding of the same conversation (``bench/peers.py``; left out when not installed);
- the floor of the decode, in two parts: ``parse`` (what ``decode_history`` parses with:
  orjson when installed, else ``json.loads``; the whole document at once, with the
  collector paused as the decode parses) and ``build``: ``history_from_jsonable`` on the
  already parsed value, i.e. constructing the same frozen objects from dicts.

The targets: ``decode`` at most 1.5x ``json_loads`` and at most 0.25 of ``pydantic_ai``,
at every size of both workloads; ``render`` says for each row whether they are met.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from unittest import mock

import golem_core.codec._json as codec
from bench import workload, workload2
from bench.convert import to_golem
from bench.peers import PydanticAI, load_peers
from bench.report import add_write_option, write_section
from bench.timing import CLOCKS, Op, measure
from golem_core import (
    DataPart,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    URLPart,
    Usage,
    decode_history,
    encode_history,
    history_from_jsonable,
)
from golem_core.codec._json_compiled import NATIVE_PATHS, PYTHON_PATHS

__all__ = ["main", "render", "to_golem2", "to_pydantic2"]

SIZES = (1_000, 10_000, 100_000)
REPEAT = 7
MIN_REPEAT_S = 0.05
LOADS_TARGET = 1.5
PEER_TARGET = 0.25
WORKLOADS = ("chat", "agentic")
_TIMESTAMP = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


# -- the agentic workload in each library ------------------------------------------------


def _golem_part(p: dict[str, Any]) -> Part:
    kind = p["kind"]
    if kind == "text":
        return TextPart(p["text"])
    if kind == "thinking":
        return ThinkingPart(p["text"], signature=p["signature"])
    if kind == "tool_call":
        return ToolCallPart(p["id"], p["name"], p["arguments"])
    if kind == "image_url":
        return URLPart(p["url"], "image", media_type=p["media_type"])
    if kind == "document_url":
        return URLPart(p["url"], "document", media_type=p["media_type"])
    if kind == "image_data":
        return DataPart(p["data"], "image", p["media_type"])
    raise ValueError(f"unknown part kind {kind!r}")


def to_golem2(messages: Sequence[workload2.NeutralMessage2]) -> tuple[Message, ...]:
    """The golem history of ``bench/workload2.py``'s neutral messages."""
    out: list[Message] = []
    for m in messages:
        meta = m["meta"] or {}
        usage = None
        if meta:
            usage = Usage(input_tokens=meta["input_tokens"], output_tokens=meta["output_tokens"])
        created = meta.get("created_at")
        out.append(
            Message(
                Role(m["role"]),
                tuple(_golem_part(p) for p in m["parts"]),
                tool_call_id=m["tool_call_id"],
                tool_name=m["tool_name"],
                failed=m["failed"],
                run_id=meta.get("run_id"),
                created_at=None if created is None else datetime.fromisoformat(created),
                model=meta.get("model"),
                usage=usage,
                finish_reason=meta.get("finish_reason"),
                provider=meta.get("provider"),
            )
        )
    return tuple(out)


def to_pydantic2(pa: PydanticAI, messages: Sequence[workload2.NeutralMessage2]) -> list[Any]:
    """pydantic-ai's messages for ``bench/workload2.py``: consecutive non-assistant messages
    form one ``ModelRequest`` (a failed result is ``outcome="failed"``), each assistant
    message one ``ModelResponse`` with its usage, model, provider and finish reason."""
    m = pa.module
    import pydantic_ai.usage as pa_usage

    out: list[Any] = []
    parts: list[Any] = []
    for msg in messages:
        role = msg["role"]
        if role == "assistant":
            if parts:
                out.append(m.ModelRequest(parts=parts, timestamp=_TIMESTAMP))
                parts = []
            response: list[Any] = []
            for p in msg["parts"]:
                if p["kind"] == "thinking":
                    response.append(m.ThinkingPart(p["text"], signature=p["signature"]))
                elif p["kind"] == "text":
                    response.append(m.TextPart(p["text"]))
                else:
                    response.append(m.ToolCallPart(p["name"], p["arguments"], tool_call_id=p["id"]))
            meta = msg["meta"]
            out.append(
                m.ModelResponse(
                    parts=response,
                    usage=pa_usage.RequestUsage(
                        input_tokens=meta["input_tokens"], output_tokens=meta["output_tokens"]
                    ),
                    model_name=meta["model"],
                    timestamp=datetime.fromisoformat(meta["created_at"]),
                    provider_name=meta["provider"],
                    finish_reason=meta["finish_reason"],
                    run_id=meta["run_id"],
                )
            )
        elif role == "tool":
            outcome = "failed" if msg["failed"] else "success"
            parts.append(
                m.ToolReturnPart(
                    msg["tool_name"],
                    msg["parts"][0]["text"],
                    msg["tool_call_id"],
                    timestamp=_TIMESTAMP,
                    outcome=outcome,
                )
            )
        elif role == "user":
            content: list[Any] = []
            for p in msg["parts"]:
                if p["kind"] == "text":
                    content.append(p["text"])
                elif p["kind"] == "image_url":
                    content.append(m.ImageUrl(p["url"], media_type=p["media_type"]))
                elif p["kind"] == "document_url":
                    content.append(m.DocumentUrl(p["url"], media_type=p["media_type"]))
                else:
                    content.append(m.BinaryContent(p["data"], media_type=p["media_type"]))
            single = len(content) == 1
            parts.append(m.UserPromptPart(content[0] if single else content, timestamp=_TIMESTAMP))
        else:
            parts.append(m.SystemPromptPart(msg["parts"][0]["text"], timestamp=_TIMESTAMP))
    if parts:
        out.append(m.ModelRequest(parts=parts, timestamp=_TIMESTAMP))
    return out


def _inputs(name: str, n: int, pa: PydanticAI | None) -> tuple[bytes, bytes | None]:
    """golem's bytes and pydantic-ai's bytes of workload ``name`` at ``n`` messages."""
    if name == "chat":
        neutral: Any = workload.conversation(n)
        data = encode_history(to_golem(neutral))
        peer = None if pa is None else pa.encode(pa.convert(neutral))
    else:
        neutral = workload2.conversation(n)
        data = encode_history(to_golem2(neutral))
        peer = None if pa is None else pa.encode(to_pydantic2(pa, neutral))
    return data, peer


# -- measuring ---------------------------------------------------------------------------


def _parser() -> tuple[str, Callable[[bytes], Any]]:
    try:
        import orjson
    except ImportError:
        return "json.loads", json.loads
    return "orjson", orjson.loads


def _paused(fn: Callable[[bytes], Any], data: bytes) -> Any:
    """``fn(data)`` with the cyclic collector paused, as ``decode_history`` parses."""
    gc.disable()
    try:
        return fn(data)
    finally:
        gc.enable()


def _interpreted(data: bytes) -> Any:
    """``decode_history`` with the generated Python fast decoder in place of the compiled
    one (``golem_core._native._speedups``, ADR 0149): the baseline of its speed-up, in the
    same run."""
    one, many = PYTHON_PATHS
    with (
        mock.patch.object(codec, "fast_message", one),
        mock.patch.object(codec, "fast_message_list", many),
    ):
        return decode_history(data)


def _collected(decode: Callable[[bytes], Any], data: bytes) -> Any:
    """``decode(data)``, then a full collection while the history is alive: what the
    cyclic collector costs a program that keeps a decoded history (the compiled decoder
    untracks the values it builds; ADR 0149)."""
    history = decode(data)
    gc.collect()
    return history


def measure_row(name: str, n: int, pa: PydanticAI | None, repeat: int) -> dict[str, Any]:
    """One workload at one size: every op's median seconds, in interleaved rounds."""
    data, peer = _inputs(name, n, pa)
    parser_name, parse = _parser()
    value = parse(data)
    check = decode_history(data).unwrap()
    if history_from_jsonable(value).unwrap() != check:
        raise AssertionError("the build from parsed dicts differs from decode_history")
    del check
    ops = [
        Op("stdlib", "json_loads", n, lambda: json.loads(data)),
        Op("golem", "decode", n, lambda: decode_history(data)),
        Op(parser_name, "parse", n, lambda: _paused(parse, data)),
        Op("golem", "build", n, lambda: history_from_jsonable(value)),
    ]
    if NATIVE_PATHS is not None:
        ops.append(Op("golem", "interpreted", n, lambda: _interpreted(data)))
        ops.append(Op("golem", "collect", n, lambda: _collected(decode_history, data)))
        ops.append(Op("golem", "interpreted_collect", n, lambda: _collected(_interpreted, data)))
    if pa is not None and peer is not None:
        ops.append(Op("pydantic-ai", "pydantic_ai", n, lambda: pa.decode(peer)))
    records = measure(ops, repeat, MIN_REPEAT_S, CLOCKS["cpu"])
    row: dict[str, Any] = {
        "workload": name,
        "n": n,
        "bytes": len(data),
        "peer_bytes": None if peer is None else len(peer),
        "parser": parser_name,
        "repeats": repeat,
        "compiled": NATIVE_PATHS is not None,
    }
    for r in records:
        row[f"{r.op}_s"] = r.median_s
    row.setdefault("pydantic_ai_s", None)
    row.setdefault("interpreted_s", None)
    row.setdefault("collect_s", None)
    row.setdefault("interpreted_collect_s", None)
    return row


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


# -- the report --------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f}" if seconds >= 0.01 else f"{seconds * 1e3:.2f}"


def _maybe_ms(seconds: float | None) -> str:
    return "—" if seconds is None else _ms(seconds)


def _verdict(ratio: float | None, target: float) -> str:
    if ratio is None:
        return "n/a"
    return "met" if ratio <= target else "**missed**"


def verdicts(data: dict[str, Any]) -> list[tuple[str, bool]]:
    """Each row's two targets: (label, met); a target without a peer is left out."""
    out: list[tuple[str, bool]] = []
    for row in data["rows"]:
        label = f"{row['workload']} {row['n']:,}"
        out.append(
            (f"{label} vs json.loads", row["decode_s"] / row["json_loads_s"] <= LOADS_TARGET)
        )
        if row["pydantic_ai_s"] is not None:
            ok = row["decode_s"] / row["pydantic_ai_s"] <= PEER_TARGET
            out.append((f"{label} vs pydantic-ai", ok))
    return out


def _compiled(row: dict[str, Any]) -> str:
    if "compiled" not in row:
        return "—"  # recorded before the compiled decoder existed
    return "yes" if row["compiled"] else "no"


def render(data: dict[str, Any]) -> str:
    """The ``decode`` section of the report, from its record in ``bench/results.json``."""
    versions = ", ".join(f"{k} {v}" for k, v in sorted(data["versions"].items()) if v)
    lines = [
        "## Decode on two workloads",
        "",
        f"`{data['command']}` ({data['machine']}; {versions}; CPU clock, median of "
        f"{data['repeat']} interleaved rounds). `decode_history` against stdlib `json.loads`"
        " of the same bytes and pydantic-ai's `ModelMessagesTypeAdapter.validate_json` of its"
        " own encoding of the same conversation. Workloads: `chat` is `bench/workload.py`"
        " (5-message turns, two tool calls, no metadata); `agentic` is `bench/workload2.py`"
        " (heavy-tailed sizes, thinking, images, one to eight calls per step, metadata on"
        " every assistant message). Floor: the parse `decode_history` uses (orjson when"
        " installed; the whole document, collector paused) plus `build`,"
        " `history_from_jsonable` on the already parsed value (constructing the same"
        " objects from dicts; collector paused, as in `decode_history`). The decode"
        " parses in pieces of 64 KiB, so it can come in under parse + build. `decode` builds"
        " with the compiled decoder (`golem_core._native._speedups`, ADR 0149) where the row says"
        " so; `interpreted` is the same decode with the generated Python decoder instead,"
        " measured in the same rounds. `+ gc` is a decode followed by a full `gc.collect()`"
        " while the history is alive (what the collector costs a program that keeps it; the"
        " compiled decoder leaves its values to reference counting), each decoder.",
        "",
        f"Targets: decode at most {LOADS_TARGET}x `json.loads`, and at most {PEER_TARGET} of"
        " pydantic-ai's time, at every size.",
        "",
        "| workload | messages | MB | json.loads ms | decode ms | decode / json.loads "
        f"| ≤ {LOADS_TARGET}x | pydantic-ai ms | decode / pydantic-ai | ≤ {PEER_TARGET} "
        "| parse ms | build ms | floor / json.loads | compiled | interpreted ms "
        "| interpreted / decode | decode + gc ms | interpreted + gc ms |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for row in data["rows"]:
        loads = row["json_loads_s"]
        decode = row["decode_s"]
        peer = row["pydantic_ai_s"]
        to_loads = decode / loads
        to_peer = None if peer is None else decode / peer
        floor = (row["parse_s"] + row["build_s"]) / loads
        interpreted = row.get("interpreted_s")
        lines.append(
            f"| {row['workload']} | {row['n']:,} | {row['bytes'] / 1e6:.1f} | {_ms(loads)} "
            f"| {_ms(decode)} | {to_loads:.2f} | {_verdict(to_loads, LOADS_TARGET)} "
            f"| {'—' if peer is None else _ms(peer)} "
            f"| {'—' if to_peer is None else f'{to_peer:.3f}'} "
            f"| {_verdict(to_peer, PEER_TARGET)} | {_ms(row['parse_s'])} "
            f"| {_ms(row['build_s'])} | {floor:.2f} | {_compiled(row)} "
            f"| {'—' if interpreted is None else _ms(interpreted)} "
            f"| {'—' if interpreted is None else f'{interpreted / decode:.2f}'} "
            f"| {_maybe_ms(row.get('collect_s'))} | {_maybe_ms(row.get('interpreted_collect_s'))} |"
        )
    results = verdicts(data)
    met = sum(ok for _, ok in results)
    lines += ["", f"Targets met: {met} of {len(results)}."]
    missed = [label for label, ok in results if not ok]
    if missed:
        lines.append("Missed: " + "; ".join(missed) + ".")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.decode", description=__doc__)
    parser.add_argument("--sizes", default=",".join(str(n) for n in SIZES))
    parser.add_argument("--repeat", type=int, default=REPEAT)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--no-peers", action="store_true", help="leave pydantic-ai out")
    add_write_option(parser)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    names = args.workloads.split(",")
    unknown = set(names) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; known: {WORKLOADS}")
    pa = None if args.no_peers else load_peers().pydantic_ai
    rows = []
    for name in names:
        for n in sizes:
            row = measure_row(name, n, pa, args.repeat)
            print(json.dumps({"kind": "decode", **row}), flush=True)
            rows.append(row)
    command = "python -m bench.decode"
    if args.sizes != ",".join(str(n) for n in SIZES):
        command += f" --sizes {args.sizes}"
    if args.repeat != REPEAT:
        command += f" --repeat {args.repeat}"
    if args.workloads != ",".join(WORKLOADS):
        command += f" --workloads {args.workloads}"
    if args.no_peers:
        command += " --no-peers"
    data = {
        "command": command,
        "machine": f"Python {platform.python_version()}, {platform.machine()}",
        "repeat": args.repeat,
        "versions": {
            "orjson": _version("orjson"),
            "pydantic-ai-slim": None if pa is None else pa.version,
        },
        "rows": rows,
    }
    print(render(data))
    if args.write is not None:
        write_section(args.write, "decode", data)
    return 0 if all(ok for _, ok in verdicts(data)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
