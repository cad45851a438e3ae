"""Issue 28, item 7 at the command line: valid input holding lone surrogates (JSON allows
``"\\ud800"``) with ``--indent`` or ``--json`` never exits 3 and never writes part of its
output; what it writes reads back as the same values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.result import Success

from golem_core import (
    Message,
    TextPart,
    ToolCallPart,
    decode_history,
    encode_history,
    normalize_history,
    sanitize_history,
)
from golem_core.testing import valid_histories

SURROGATE_HISTORY = (
    Message.user("weather in Z\udc81rich?"),
    Message.assistant(None, tool_calls=[ToolCallPart("call_\ud800", "get_weather", "{}")]),
    Message.tool_result("call_\ud800", "get_weather", "sunny \udfff"),
    Message.assistant(None, tool_calls=[ToolCallPart("orphan_\udc00", "get_weather", "{}")]),
)

COMMANDS = [
    ["check", "--json"],
    ["check"],
    ["normalize", "--json", "--indent", "2"],
    ["normalize", "--indent", "0"],
    ["sanitize", "--json", "--indent", "4"],
    ["trim", "--max-messages", "3", "--json", "--indent", "2"],
    ["budget", "--max-tokens", "1000", "--json", "--indent", "2"],
]


def golem(args: list[str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "golem_shell.cli", "history", *args, "-"]
    return subprocess.run(command, input=data, capture_output=True, check=False, timeout=60)


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_lone_surrogates_with_indent_and_json_as_a_process(args: list[str]) -> None:
    data = encode_history(SURROGATE_HISTORY)
    assert decode_history(data) == Success(SURROGATE_HISTORY)  # valid input
    done = golem(args, data)
    assert done.returncode in (0, 1), done.stderr
    assert b"internal error" not in done.stderr and b"Traceback" not in done.stderr
    done.stdout.decode("utf-8")  # valid UTF-8, all of it
    done.stderr.decode("utf-8")
    if args[0] == "check":
        if "--json" in args:
            report = json.loads(done.stdout)
            assert report["problems"][0]["callId"] == "orphan_\udc00"  # the same value
        return
    out = decode_history(done.stdout).unwrap()
    if args[0] == "normalize":
        assert out == normalize_history(SURROGATE_HISTORY)[0]
    if args[0] == "sanitize":
        assert out == sanitize_history(SURROGATE_HISTORY)[0]
    if "--json" in args:
        json.loads(done.stderr)  # the report, whole


def test_a_history_file_and_an_output_file(tmp_path: Path) -> None:
    source, target = tmp_path / "in.json", tmp_path / "out.json"
    source.write_bytes(encode_history(SURROGATE_HISTORY))
    command = [sys.executable, "-m", "golem_shell.cli", "history", "normalize", "--json"]
    done = subprocess.run(
        [*command, "--indent", "2", "-o", str(target), str(source)],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert decode_history(target.read_bytes()) == Success(normalize_history(SURROGATE_HISTORY)[0])


surrogates = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2)


@st.composite
def planted(draw: st.DrawFn) -> tuple[Message, ...]:
    """A valid history with lone surrogates in texts, call ids and tool names."""
    out: list[Message] = []
    ids: dict[str, str] = {}
    for m in draw(valid_histories(max_turns=3)):
        parts = []
        for p in m.parts:
            if isinstance(p, TextPart) and draw(st.booleans()):
                p = attrs.evolve(p, text=p.text + draw(surrogates))
            elif isinstance(p, ToolCallPart) and p.id is not None:
                ids.setdefault(p.id, p.id + draw(surrogates))
                p = attrs.evolve(p, id=ids[p.id])
            parts.append(p)
        call_id = m.tool_call_id
        if call_id is not None:
            call_id = ids.get(call_id, call_id)
        out.append(attrs.evolve(m, parts=tuple(parts), tool_call_id=call_id))
    return tuple(out)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(planted(), st.sampled_from(COMMANDS))
def test_every_command_takes_every_history_with_lone_surrogates(
    history: tuple[Message, ...], args: list[str]
) -> None:
    from golem_shell.cli import main

    data = encode_history(history)
    code, out, err = _run_in_process(main, args, data)
    assert code in (0, 1), err
    assert b"internal error" not in err
    if args[0] != "check" and code == 0:
        decode_history(out).unwrap()
    elif args[0] != "check":  # only a processor may refuse: its cut left nothing to send
        assert args[0] in ("trim", "budget") and out == b"", (args, out)
        assert "--json" not in args or json.loads(err)["ok"] is False
    if "--json" in args:
        json.loads(out if args[0] == "check" else err)


def _run_in_process(main: object, args: list[str], data: bytes) -> tuple[int, bytes, bytes]:
    """``main`` with standard streams as byte buffers (what a pipe would receive)."""
    import io
    from unittest import mock

    def stream(initial: bytes = b"") -> io.TextIOWrapper:
        return io.TextIOWrapper(io.BytesIO(initial), encoding="utf-8")

    stdin, stdout, stderr = stream(data), stream(), stream()
    with (
        mock.patch.object(sys, "stdin", stdin),
        mock.patch.object(sys, "stdout", stdout),
        mock.patch.object(sys, "stderr", stderr),
    ):
        code = main(["history", *args, "-"])  # type: ignore[operator]
    stdout.flush()
    stderr.flush()
    out = stdout.buffer.getvalue()  # type: ignore[attr-defined]
    err = stderr.buffer.getvalue()  # type: ignore[attr-defined]
    return code, out, err


# -- issue 28, item 8: budget --counter tiktoken offline ------------------------------------


def offline_env(tmp_path: Path) -> dict[str, str]:
    """An empty tiktoken cache, and every HTTPS request refused (a proxy on a closed port)."""
    import os

    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(
        TIKTOKEN_CACHE_DIR=str(tmp_path / "tiktoken-cache"),
        HTTPS_PROXY="http://127.0.0.1:9",
        HTTP_PROXY="http://127.0.0.1:9",
        NO_PROXY="",
    )
    return env


def test_budget_with_tiktoken_offline_is_a_clear_error_exit_2(tmp_path: Path) -> None:
    pytest.importorskip("tiktoken")
    command = [sys.executable, "-m", "golem_shell.cli", "history", "budget", "--max-tokens"]
    done = subprocess.run(
        [*command, "10", "--counter", "tiktoken", "-"],
        input=encode_history(SURROGATE_HISTORY),
        capture_output=True,
        check=False,
        timeout=120,
        env=offline_env(tmp_path),
    )
    assert done.returncode == 2, done.stderr
    err = done.stderr.decode()
    assert err.startswith("golem: --counter tiktoken: tiktoken cannot load the encoding")
    assert "TIKTOKEN_CACHE_DIR" in err and "internal error" not in err
    assert done.stdout == b""  # nothing written


def test_tiktoken_counter_offline_raises_an_oserror_that_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tiktoken")
    from golem_shell import tiktoken_counter

    for key, value in offline_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(OSError, match="cannot load the encoding 'cl100k_base'"):
        tiktoken_counter("cl100k_base")
