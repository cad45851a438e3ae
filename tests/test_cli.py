"""The golem command: history check/normalize/sanitize/trim/budget and schema."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import attrs
import jsonschema
import pytest
from golden_values import GOLDEN
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples  # properties/profiles.py: the loaded profile's count
from returns.result import Success

from golem_core import (
    Message,
    TextPart,
    ToolCallPart,
    URLPart,
    check_pairing,
    decode_history,
    encode_history,
    normalize_history,
    sanitize_history,
)
from golem_core.testing import valid_histories
from golem_shell.cli import history_schema, main

GOLDEN_FILES = sorted((Path(__file__).parent / "golden").glob("v*/*.json"))
IDS = [f"{p.parent.name}/{p.stem}" for p in GOLDEN_FILES]

BROKEN = (
    Message.system("you are helpful"),
    Message.user("weather?", URLPart("javascript:alert(1)", "image")),
    Message.assistant(None, tool_calls=[ToolCallPart("c1", "get_weather", '{"city":"Oslo"}')]),
    Message.user("still there?"),
    Message.tool_result("c9", "get_weather", "orphan"),
)


def run(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *argv: str,
    stdin: bytes | None = None,
) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture
def broken_file(tmp_path: Path) -> Path:
    path = tmp_path / "broken.json"
    path.write_bytes(encode_history(BROKEN))
    return path


# -- golden files ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=IDS)
def test_normalize_round_trips_every_golden_file(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    value = GOLDEN[path.stem]
    code, out, err = run(capsys, monkeypatch, "history", "normalize", "--indent", "2", str(path))
    assert code == 0
    repaired, repair = normalize_history(value)
    assert decode_history(out) == Success(repaired)
    if not repair.changed:
        assert out.encode() == path.read_bytes()  # byte for byte: the file's own format
        assert err.endswith("(unchanged)\n")
    code, out, _ = run(capsys, monkeypatch, "history", "normalize", "-", stdin=path.read_bytes())
    assert code == 0
    assert out.encode() == encode_history(repaired) + b"\n"


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=IDS)
def test_check_passes_exactly_the_valid_golden_files(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "history", "check", "--json", str(path))
    report = json.loads(out)
    valid = check_pairing(GOLDEN[path.stem]) == ()
    assert (code, report["ok"]) == ((0, True) if valid else (1, False))
    assert report["messages"] == len(GOLDEN[path.stem])


def test_the_schema_is_valid_and_validates_every_golden_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "schema")
    assert code == 0
    schema = json.loads(out)
    assert schema == history_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in GOLDEN_FILES:
        errors = [e.message for e in validator.iter_errors(json.loads(path.read_bytes()))]
        assert errors == [], path.name


@pytest.mark.parametrize(
    "bad",
    [
        {"parts": []},
        {"role": "wizard", "parts": []},
        {"role": "user"},
        {"role": "user", "parts": [{"text": "no type"}]},
        {"role": "user", "parts": [{"type": "text"}]},
        {"role": "user", "parts": [{"type": "url", "url": "https://x", "kind": "hologram"}]},
        {"role": "user", "parts": [{"type": "data", "data": "AAAA", "kind": "image"}]},
        {
            "role": "user",
            "parts": [{"type": "data", "data": "$$", "kind": "image", "mediaType": "x"}],
        },
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c", "arguments": "{}"}]},
        {"role": "tool", "parts": [], "failed": "yes"},
        {"role": "assistant", "parts": [], "usage": {"inputTokens": -1}},
    ],
)
def test_the_schema_refuses_what_decode_refuses(bad: dict[str, object]) -> None:
    validator = jsonschema.Draft202012Validator(history_schema())
    assert not validator.is_valid([bad])
    assert not isinstance(decode_history(json.dumps([bad])), Success)


def test_the_schema_keeps_unknown_fields_and_part_types() -> None:
    validator = jsonschema.Draft202012Validator(history_schema())
    newer = [{"role": "user", "parts": [{"type": "hologram", "x": 1}], "mood": "calm"}]
    assert validator.is_valid(newer)


# -- check ------------------------------------------------------------------------------------


def test_check_lists_every_problem_and_fails(
    broken_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "history", "check", str(broken_file))
    assert code == 1
    assert "message 2: tool call 'c1' ('get_weather') has no result" in out
    assert "message 4: the result of tool call 'c9' answers no earlier call" in out
    assert out.splitlines()[-1] == "check: 5 messages, 2 pairing problem(s): FAILED"


def test_check_json_report(
    broken_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "history", "check", "--json", str(broken_file))
    report = json.loads(out)
    assert code == 1
    assert report["ok"] is False
    assert [(p["messageIndex"], p["kind"]) for p in report["problems"]] == [
        (2, "dangling"),
        (4, "orphan"),
    ]
    assert "untrusted" not in report


def test_check_untrusted_fails_on_system_prompts_and_unsafe_urls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    valid = tmp_path / "valid.json"
    valid.write_bytes(encode_history(BROKEN[:2]))
    assert run(capsys, monkeypatch, "history", "check", str(valid))[0] == 0
    code, out, _ = run(capsys, monkeypatch, "history", "check", "--untrusted", "--json", str(valid))
    report = json.loads(out)
    assert code == 1
    assert report["untrusted"] == {
        "systemPrompts": 1,
        "unsafeParts": [{"messageIndex": 1, "kind": "image", "scheme": "javascript"}],
    }


# -- rewriting ---------------------------------------------------------------------------------


def test_normalize_writes_the_repaired_history_and_reports_on_stderr(
    broken_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, monkeypatch, "history", "normalize", "--json", str(broken_file))
    assert code == 0
    repaired = decode_history(out).unwrap()
    assert check_pairing(repaired) == ()
    report = json.loads(err)
    assert report["messagesIn"] == 5
    assert report["messagesOut"] == len(repaired)
    assert [e["reason"] for e in report["repair"]["dropped"]] == ["orphan"]
    assert [e["callId"] for e in report["repair"]["synthesized"]] == ["c1"]


def test_sanitize_to_a_file(
    broken_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = tmp_path / "clean.json"
    code, out, err = run(
        capsys, monkeypatch, "history", "sanitize", "-o", str(target), str(broken_file)
    )
    assert (code, out) == (0, "")
    clean = decode_history(target.read_bytes()).unwrap()
    assert [m.role.value for m in clean] == ["user", "assistant", "tool", "user"]
    assert "dropped 1 system message(s)" in err
    assert "message 1: dropped image URL with scheme 'javascript'" in err


def test_sanitize_keeps_an_awaited_call_open(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    paused = encode_history(BROKEN[2:3])
    code, out, _ = run(
        capsys, monkeypatch, "history", "sanitize", "--awaiting", "c1", "-", stdin=paused
    )
    assert code == 0
    assert decode_history(out).unwrap() == BROKEN[2:3]


def test_trim_and_its_refusal(
    broken_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    history = (Message.user("a"), Message.assistant("b"), Message.user("c"), Message.assistant("d"))
    data = encode_history(history)
    code, out, err = run(
        capsys, monkeypatch, "history", "trim", "--max-messages", "2", "-", stdin=data
    )
    assert code == 0
    assert decode_history(out).unwrap() == history[2:]
    assert err == "trim: 4 messages in, 2 out (changed)\n"
    code, out, err = run(
        capsys, monkeypatch, "history", "trim", "--json", "--max-messages", "1", str(broken_file)
    )
    assert (code, out) == (1, "")
    report = json.loads(err)
    assert report["ok"] is False
    assert "left no message that can open a request" in report["error"]


def test_budget_with_the_approximate_counter(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    history = (Message.user("a" * 400), Message.assistant("b"), Message.user("c"))
    code, out, _ = run(
        capsys,
        monkeypatch,
        "history",
        "budget",
        "--max-tokens",
        "50",
        "-",
        stdin=encode_history(history),
    )
    assert code == 0
    assert decode_history(out).unwrap() == history[1:]  # an answer without calls can open


def test_budget_refuses_an_unknown_counter(
    broken_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["history", "budget", "--max-tokens", "9", str(broken_file)]
    code, _, err = run(capsys, monkeypatch, *args[:-1], "--counter", "bogus", args[-1])
    assert code == 2
    assert "--counter 'bogus': expected 'approximate', 'tiktoken'" in err
    code, _, err = run(capsys, monkeypatch, *args[:-1], "--counter", "tiktoken:nope", args[-1])
    assert code == 2
    assert err.startswith("golem: --counter tiktoken:nope: ")


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b'[{"role":"user","parts":[{"type":"url","url":1,"kind":"image"}]}]',
            "at [0].parts[0].url",
        ),
        (b'{"role":"user"}', "expected an array of messages"),
        (b"[{]", "not JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b'[{"role":"user","parts":[],"x":NaN}]', "not standard JSON"),
    ],
)
def test_bad_json_is_named_with_its_path_and_exits_2(
    data: bytes, message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for action in ("check", "normalize"):
        code, out, err = run(capsys, monkeypatch, "history", action, "-", stdin=data)
        assert (code, out) == (2, "")
        assert err.startswith("golem: standard input: invalid history JSON")
        assert message in err


def test_a_missing_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nope.json"
    code, _, err = run(capsys, monkeypatch, "history", "check", str(missing))
    assert code == 2
    assert err == f"golem: cannot read {missing}: No such file or directory\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["history", "trim", "-"],
        ["history", "trim", "--max-messages", "0", "-"],
        ["history", "explode", "-"],
        [],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err
    assert "Traceback" not in err


def test_an_unexpected_error_is_one_line(
    broken_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(history: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr("golem_shell.cli.check_pairing", explode)
    code, _, err = run(capsys, monkeypatch, "history", "check", str(broken_file))
    assert code == 3
    assert err.startswith("golem: internal error: RuntimeError: boom")
    assert len(err.splitlines()) == 1


# -- the installed command -----------------------------------------------------------------------


def test_the_console_script_runs_as_a_process(broken_file: Path) -> None:
    command = [sys.executable, "-m", "golem_shell.cli", "history", "normalize", "-"]
    done = subprocess.run(command, input=broken_file.read_bytes(), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    assert check_pairing(decode_history(done.stdout).unwrap()) == ()
    check = subprocess.run(
        [sys.executable, "-m", "golem_shell.cli", "history", "check", str(broken_file)],
        capture_output=True,
        check=False,
    )
    assert check.returncode == 1
    assert b"Traceback" not in check.stderr


def test_the_console_script_is_declared() -> None:
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "golem"]
    assert script.value == "golem_shell.cli:main"


# -- provider-shaped input and the empty history (issue 37 item 3) ---------------------------

OPENAI_CHAT = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "weather in Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "rain"},
]
ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 256,
    "system": "be brief",
    "messages": [{"role": "user", "content": [{"type": "text", "text": "weather in Oslo?"}]}],
}
SHAPES = [
    (OPENAI_CHAT, "an OpenAI Chat Completions messages list"),
    ({"model": "gpt-4.1", "messages": OPENAI_CHAT}, "an OpenAI Chat Completions request body"),
    (ANTHROPIC_BODY, "an Anthropic Messages request body"),
    (
        ANTHROPIC_BODY["messages"],
        "a provider's messages list (OpenAI Chat Completions or Anthropic Messages)",
    ),
    (
        [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
            }
        ],
        "an Anthropic Messages messages list",
    ),
    ({"model": "gpt-4.1", "input": "hi"}, "an OpenAI Responses request body"),
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, "a Gemini request body"),
    ([{"role": "model", "parts": [{"text": "hi"}]}], "a Gemini contents list"),
    (
        [
            {"id": "m1", "role": "user", "content": "hi"},
            {"id": "m2", "role": "tool", "content": "x", "toolCallId": "c1"},
        ],
        "AG-UI messages",
    ),
    (
        [
            {
                "id": "m1",
                "role": "assistant",
                "parts": [{"type": "step-start"}, {"type": "text", "text": "hi"}],
            }
        ],
        "Vercel AI SDK UI messages",
    ),
]


@pytest.mark.parametrize(("value", "named"), SHAPES, ids=[s[1] for s in SHAPES])
def test_a_provider_shaped_history_is_named_for_what_it_is(
    value: object, named: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = json.dumps(value).encode()
    code, out, err = run(capsys, monkeypatch, "history", "check", "-", stdin=data)
    assert (code, out) == (2, "")
    assert f"this looks like {named}, not golem history" in err, err
    if "Vercel" not in named:  # (UI messages decode: their parts read as unknown ones)
        assert "invalid history JSON" in err  # the decoder's own finding is still given
    if named in ("AG-UI messages", "Vercel AI SDK UI messages"):
        assert "golem_shell.ui." in err  # golem converts these: say with what
    else:
        assert "golem has no converter" in err and "golem schema" in err


def test_the_empty_history_is_valid_but_called_empty(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "history", "check", "-", stdin=b"[]")
    assert code == 0
    assert "provider-valid" not in out
    assert out.strip() == "check: 0 messages, empty (valid, but nothing to send a provider)"


# -- valid input with lone surrogates at the command line (correctness round 3) ------------
# Issue 28, item 7 at the command line: valid input holding lone surrogates (JSON allows
# ``"\ud800"``) with ``--indent`` or ``--json`` never exits 3 and never writes part of its
# output; what it writes reads back as the same values.


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


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
