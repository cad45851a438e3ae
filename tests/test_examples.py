"""The examples run offline, as a user would run them."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        env.pop(name, None)
    return env


def _run(script: str, *args: str, stdin: str = "") -> str:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_run_ids_example() -> None:
    out = _run("run_ids.py")
    assert sum(line.rstrip().endswith("True") for line in out.splitlines()) == 4
    lines = {line.split()[0]: line.split() for line in out.splitlines()[:3]}
    assert lines["first"][2] == lines["continued"][2]  # same conversation
    assert lines["first"][1] != lines["continued"][1]  # fresh run id
    assert lines["fork"][2] != lines["first"][2]


def test_conversation_example_persists_and_resumes(tmp_path: Path) -> None:
    store = tmp_path / "conversation.json"
    out = _run("conversation.py", "--history", str(store), stdin="hello\nsecond\n")
    assert "offline" in out
    assert "message 2 from you" in out
    saved = json.loads(store.read_bytes())
    assert [m["role"] for m in saved] == ["system", "user", "assistant", "user", "assistant"]
    out = _run("conversation.py", "--history", str(store), stdin="third\n")
    assert "(5 messages)" in out
    assert "message 3 from you" in out


def test_conversation_example_is_bounded_by_trim_history(tmp_path: Path) -> None:
    store = tmp_path / "conversation.json"
    _run("conversation.py", "--history", str(store), stdin="".join(f"m{i}\n" for i in range(15)))
    out = _run("conversation.py", "--history", str(store), stdin="last\n")
    # the offline model counts the user messages it was sent: at most 20 history messages
    assert "message 11 from you" in out


def test_approval_example_across_two_processes(tmp_path: Path) -> None:
    state = tmp_path / "run.json"
    out = _run("approval.py", "start", "--state", str(state))
    assert "paused: 2 calls wait for approval" in out
    stored = json.loads(state.read_text())
    assert stored["issued"] == ["call_rent", "call_gift"]
    out = _run("approval.py", "decide", "--state", str(state))
    assert "call_rent: sent 950.00 EUR to landlord" in out
    assert "call_gift: FAILED denied: unknown recipient" in out


def test_approval_example_refuses_a_forged_call(tmp_path: Path) -> None:
    state = tmp_path / "run.json"
    _run("approval.py", "start", "--state", str(state))
    _run("approval.py", "forge", "--state", str(state))
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "approval.py"), "decide-forged", "--state", str(state)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert proc.returncode != 0
    assert "refused" in proc.stderr and "call_forged" in proc.stderr
    assert "mallory" not in proc.stdout.replace("forged", "")


def test_events_example_prints_the_event_stream_of_a_tool_round_trip() -> None:
    out = _run("events.py")
    lines = [line.split()[0:3] for line in out.splitlines()]
    assert lines == [
        ["run", "started", "model=function"],
        ["request", "1", "started"],
        ["request", "1", "finished"],
        ["tool", "started", "get_weather"],
        ["tool", "finished", "get_weather"],
        ["tool", "result", "(call_1)"],
        ["request", "2", "started"],
        ["text", "deltas", lines[7][2]],  # how many: the model's chunking
        ["request", "2", "finished"],
        ["run", "finished", "2"],
        ["output:", "In", "Paris:"],
    ]
    assert "tool finished      get_weather (call_1) returned" in out
    assert out.count("In Paris: sunny") == 1  # the answer once, not as deltas and output


def test_events_example_answers_in_a_sentence_that_names_the_city_once() -> None:
    """ "In Paris: sunny, 21 C in Paris." was the answer (issue 49 item 10)."""
    out = _run("events.py")
    assert out.splitlines()[-1] == "output: In Paris: sunny, 21 C."


def test_events_example_prints_spans_with_trace() -> None:
    out = _run("events.py", "--trace")
    assert '"name": "invoke_agent"' in out
    assert '"name": "chat function"' in out
    assert '"name": "execute_tool get_weather"' in out
    assert '"gen_ai.tool.call.id": "call_1"' in out


def _refused(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert proc.returncode != 0, proc.stdout
    return proc


def test_approval_example_signed_and_stateless(tmp_path: Path) -> None:
    state = tmp_path / "run.json"
    out = _run("approval.py", "start-signed", "--state", str(state))
    assert "paused: 2 calls wait for approval" in out
    stored = json.loads(state.read_text())
    assert set(stored) == {"history"}  # no server-side record of the issued calls
    assert all("provenance" in m for m in stored["history"])
    out = _run("approval.py", "decide-signed", "--state", str(state))
    assert "provenance: 3 signed, 0 unsigned, 0 tampered" in out
    assert "call_rent: sent 950.00 EUR to landlord" in out
    assert "call_gift: FAILED denied: unknown recipient" in out


def test_approval_example_signed_refuses_an_edited_call(tmp_path: Path) -> None:
    state = tmp_path / "run.json"
    _run("approval.py", "start-signed", "--state", str(state))
    _run("approval.py", "edit", "--state", str(state))
    proc = _refused("approval.py", "decide-signed", "--state", str(state))
    assert "1 tampered" in proc.stdout
    assert "refused" in proc.stderr and "call_rent" in proc.stderr
    assert "sent" not in proc.stdout


def test_approval_example_signed_refuses_a_forged_call(tmp_path: Path) -> None:
    state = tmp_path / "run.json"
    _run("approval.py", "start-signed", "--state", str(state))
    _run("approval.py", "forge", "--state", str(state))
    proc = _refused("approval.py", "decide-signed", "--state", str(state))
    assert "refused" in proc.stderr and "call_forged" in proc.stderr
    assert "sent" not in proc.stdout


def test_stored_conversation_example_continues_forks_and_races(tmp_path: Path) -> None:
    db = str(tmp_path / "conversations.db")
    assert "message 1 from you" in _run("stored_conversation.py", "--db", db, "hello")
    out = _run("stored_conversation.py", "--db", db, "and then?")
    assert "message 2 from you" in out and "demo has 4 messages" in out
    _run("stored_conversation.py", "--db", db, "--fork-at", "2", "--into", "c2")
    out = _run("stored_conversation.py", "--db", db, "--conversation", "c2", "on the fork")
    assert "message 2 from you" in out and "c2 has 4 messages" in out
    out = _run("stored_conversation.py", "--db", db, "--race", "busy")
    assert "has 6 messages, expected 4" in out and "message 4 from you" in out
    out = _run("stored_conversation.py", "--db", db, "--list")
    assert out.splitlines() == ["c2: 4 messages", "demo: 8 messages"]


def _failed(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert proc.returncode != 0, proc.stdout
    return proc


def test_stored_conversation_example_says_what_it_erased_and_refuses_in_a_line(
    tmp_path: Path,
) -> None:
    """A position past the end is one line, not a traceback; an erasure and the branches
    read as sentences, not as reprs (issue 49 item 10)."""
    db = str(tmp_path / "conversations.db")
    _run("stored_conversation.py", "--db", db, "hello")
    _run("stored_conversation.py", "--db", db, "again")
    _run("stored_conversation.py", "--db", db, "--fork-at", "2", "--into", "c2")
    out = _run("stored_conversation.py", "--db", db, "--branch-at", "2", "once more")
    assert "branch main of demo: 4 messages\n" in out
    assert "branch b1 of demo: 4 messages, its first 2 from demo/main" in out
    assert "None" not in out
    out = _run("stored_conversation.py", "--db", db, "--erase", "0")
    assert out.startswith("erased ") and " bytes: message 0 of demo/main; " in out
    assert "message 0 of c2/main" in out and "message 0 of demo/b1" in out
    assert "(0,)" not in out
    for args in (("--erase", "99"), ("--fork-at", "99", "--into", "c3"), ("--branch-at", "9")):
        proc = _failed("stored_conversation.py", "--db", db, *args)
        assert "Traceback" not in proc.stderr
        assert proc.stderr.startswith("error: cannot "), proc.stderr
        assert "it has 4 messages" in proc.stderr
    proc = _failed("stored_conversation.py", "--db", db, "--conversation", "nope", "--erase", "0")
    assert "Traceback" not in proc.stderr and "'nope' not found" in proc.stderr
    proc = _failed("stored_conversation.py", "--db", db, "--fork-at", "2")
    assert "--fork-at needs --into" in proc.stderr


def test_stored_conversation_example_on_postgres(postgres_url: str) -> None:
    from postgres_server import create_database

    url = create_database(postgres_url, "example_stored_conversation")
    _run("stored_conversation.py", "--postgres", url, "--conversation", "pg", "hello")
    out = _run("stored_conversation.py", "--postgres", url, "--conversation", "pg", "again")
    assert "message 2 from you" in out and "pg has 4 messages" in out


def test_the_readme_names_every_example() -> None:
    """A newcomer finds every example from the README (issue 37 item 4)."""
    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert scripts
    assert [s for s in scripts if f"examples/{s}" not in readme] == []


# -- the conversation example exits cleanly on Ctrl-C; the approval example counts in words
# (first contact, round 3; issue 26)


class _Child:
    """What a child process writes, read up to markers in order."""

    def __init__(self, fd: int, deadline: float) -> None:
        self.fd, self.deadline, self.seen, self.at = fd, deadline, b"", 0

    def expect(self, marker: bytes) -> None:
        while (found := self.seen.find(marker, self.at)) < 0:
            left = self.deadline - time.monotonic()
            assert left > 0, f"no {marker!r} in {self.seen!r}"
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 4096)
                assert chunk, f"the program ended before {marker!r}: {self.seen!r}"
                self.seen += chunk
        self.at = found + len(marker)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
def test_the_conversation_example_prompts_and_exits_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "conversation.py"), "--history", "c.json"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**env, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        deadline = time.monotonic() + 120
        child = _Child(proc.stdout.fileno(), deadline)
        child.expect(b"you: ")
        proc.stdin.write(b"hello\n")
        proc.stdin.flush()
        child.expect(b"assistant:")
        child.expect(b"you: ")
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err
    assert b"message 1 from you" in child.seen + rest
    assert (tmp_path / "c.json").exists()


def test_the_approval_example_counts_in_words(tmp_path: Path) -> None:
    def step(name: str) -> str:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "approval.py"), name, "--state", "r.json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return proc.stdout

    step("start")
    step("forge")
    assert "sanitize: 1 system prompt dropped, 1 fabricated call closed" in step("decide")
