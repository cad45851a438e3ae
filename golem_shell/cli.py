"""The ``golem`` command: validate and repair stored histories without writing Python.

Owns the console script (``golem = "golem_shell.cli:main"``)::

    golem history check     [--untrusted] [--json] FILE
    golem history normalize [--json] [-o OUT] [--indent N] FILE
    golem history sanitize  [--awaiting ID ...] [--json] [-o OUT] [--indent N] FILE
    golem history trim      --max-messages N [--json] [-o OUT] [--indent N] FILE
    golem history budget    --max-tokens N [--counter NAME] [--json] [-o OUT] [--indent N] FILE
    golem schema
    golem migrate-store --owner OWNER [--table T] [--prefix P] [--signing-key-env VAR ...]
                        [--json] DATABASE

``FILE`` is a history in golem's JSON contract, or ``-`` for standard input. The
commands that rewrite a history write it to standard output (or ``-o OUT``), compact
unless ``--indent`` is given, and their report to standard error; ``check`` writes its
report to standard output. A report is one human line per finding, or one JSON object
with ``--json``. ``schema`` prints the JSON Schema (draft 2020-12) of the contract.
``migrate-store`` moves a golem 0.2 store (an SQLite file or a PostgreSQL URL) into
today's tables (``golem_shell.store._migrate``; docs/guides/migrating.md).

Exit status (ADR 0045): 0 success; 1 a check failed (``check`` found a problem) or a
processor refused (``trim``/``budget`` left nothing that can open a request); 2 the
command line or the input is wrong (unreadable file, invalid JSON, named by path);
3 an unexpected error inside golem (reported in one line, never as a traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from importlib import resources
from typing import IO, Any, Final, NoReturn

from returns.result import Failure, Success

from golem_core import (
    HistoryRepair,
    Message,
    PairingProblem,
    RepairEntry,
    SanitizeReport,
    TokenCounter,
    approximate_tokens,
    budget_history,
    check_pairing,
    decode_history,
    encode_history,
    normalize_history,
    sanitize_history,
    trim_history,
)
from golem_shell.context._foreign_history import describe_foreign_history

__all__ = ["history_schema", "main"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERNAL: Final = 3

_SCHEMA_FILE: Final = "history.schema.json"


def history_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of golem's history JSON, as ``golem schema`` prints it.

    Generated from the codec's field table (``golem_shell.context._history_schema``), it accepts
    exactly what ``decode_history`` accepts (unknown fields and part types included: the
    contract is additive), except what a schema cannot say: a timestamp
    ``datetime.fromisoformat`` cannot read, an integer written as ``1.0``, unknown fields
    nested too deeply.
    """
    loaded: dict[str, Any] = json.loads(_schema_text())
    return loaded


def _schema_text() -> str:
    return resources.files("golem_shell").joinpath(_SCHEMA_FILE).read_text(encoding="utf-8")


class _InputError(Exception):
    """Internal: the input cannot be used; the message names it (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


# -- reading and writing --------------------------------------------------------------------


def _read(source: str) -> tuple[Message, ...]:
    name = "standard input" if source == "-" else source
    try:
        if source == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(source, "rb") as f:
                data = f.read()
    except OSError as e:
        raise _InputError(f"cannot read {name}: {e.strerror or e}") from None
    decoded = decode_history(data)
    if isinstance(decoded, Failure):
        shape = describe_foreign_history(data, decoded=False)
        message = decoded.failure().message
        if shape is not None:
            raise _InputError(f"{name}: {shape} [{message}]")
        raise _InputError(f"{name}: {message}")
    shape = describe_foreign_history(data, decoded=True)
    if shape is not None:
        raise _InputError(f"{name}: {shape}")
    return decoded.value_or(())


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8. A lone surrogate (valid input: JSON allows ``"\\ud800"``) has no
    UTF-8 form: it is written as its escape ``\\ud800``, which in JSON text is the same
    value and in a report line reads as it does in Python. Total."""
    return text.encode("utf-8", "backslashreplace")


def _history_bytes(history: Sequence[Message], indent: int | None) -> bytes:
    encoded = encode_history(history)
    if indent is None:
        return encoded + b"\n"
    pretty = json.dumps(json.loads(encoded), indent=indent, ensure_ascii=False)
    return _utf8(pretty + "\n")


def _emit(stream: IO[str], data: bytes) -> None:
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()
        buffer.write(data)
        buffer.flush()
    else:  # a text-only stream (a test's StringIO)
        stream.write(data.decode("utf-8"))


def _write_history(history: Sequence[Message], args: argparse.Namespace) -> None:
    data = _history_bytes(history, args.indent)
    if args.output in (None, "-"):
        _emit(sys.stdout, data)
        return
    try:
        with open(args.output, "wb") as f:
            f.write(data)
    except OSError as e:
        raise _InputError(f"cannot write {args.output}: {e.strerror or e}") from None


def _report(args: argparse.Namespace, data: dict[str, Any], lines: list[str]) -> bytes:
    """The report as bytes, built before anything is written (so a command writes all of
    its output or none)."""
    if args.json:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
    else:
        text = "".join(f"{line}\n" for line in lines)
    return _utf8(text)


# -- reports as JSON and as lines ------------------------------------------------------------


def _entry(e: RepairEntry) -> dict[str, Any]:
    return {
        "messageIndex": e.message_index,
        "callId": e.call_id,
        "toolName": e.tool_name,
        "reason": e.reason,
    }


def _repair_json(r: HistoryRepair) -> dict[str, Any]:
    return {
        "changed": r.changed,
        "synthesized": [_entry(e) for e in r.synthesized],
        "dropped": [_entry(e) for e in r.dropped],
        "moved": [_entry(e) for e in r.moved],
        "truncated": [_entry(e) for e in r.truncated],
        "reused": [_entry(e) for e in r.reused],
        "empty": list(r.empty),
    }


_REPAIR_WORDS: Final = (
    ("synthesized", "synthesized a result for"),
    ("dropped", "dropped"),
    ("moved", "moved"),
    ("truncated", "note: arguments not a JSON object in"),
    ("reused", "note: reused call id in"),
)


def _repair_lines(r: HistoryRepair) -> list[str]:
    lines: list[str] = []
    for name, words in _REPAIR_WORDS:
        for e in getattr(r, name):
            what = "result" if name in ("dropped", "moved") else "call"
            lines.append(
                f"message {e.message_index}: {words} {what} {e.call_id!r} "
                f"({e.tool_name!r}, {e.reason})"
            )
    lines.extend(f"message {i}: note: holds nothing a provider accepts" for i in r.empty)
    return lines


def _problem_json(p: PairingProblem) -> dict[str, Any]:
    return {
        "messageIndex": p.message_index,
        "callId": p.call_id,
        "toolName": p.tool_name,
        "kind": p.kind,
        "message": p.message,
    }


def _sanitize_json(r: SanitizeReport) -> dict[str, Any]:
    return {
        "changed": r.changed,
        "systemPrompts": r.system_prompts,
        "unsafeParts": [
            {"messageIndex": u.message_index, "kind": u.kind, "scheme": u.scheme}
            for u in r.unsafe_parts
        ],
        "emptied": list(r.emptied),
        "repair": _repair_json(r.repair),
    }


def _sanitize_lines(r: SanitizeReport) -> list[str]:
    lines = []
    if r.system_prompts:
        lines.append(f"dropped {r.system_prompts} system message(s)")
    lines.extend(
        f"message {u.message_index}: dropped {u.kind} URL with scheme {u.scheme!r}"
        for u in r.unsafe_parts
    )
    lines.extend(f"message {i}: removed, empty after dropping unsafe parts" for i in r.emptied)
    return lines + _repair_lines(r.repair)


def _counts(command: str, before: int, after: int) -> dict[str, Any]:
    return {"command": command, "messagesIn": before, "messagesOut": after}


def _summary_line(command: str, before: int, after: int, changed: bool) -> str:
    change = "changed" if changed else "unchanged"
    return f"{command}: {before} messages in, {after} out ({change})"


# -- the commands ----------------------------------------------------------------------------


def _check(args: argparse.Namespace) -> int:
    history = _read(args.file)
    problems = check_pairing(history)
    _, repair = normalize_history(history)
    data: dict[str, Any] = {
        "command": "check",
        "messages": len(history),
        "problems": [_problem_json(p) for p in problems],
        "truncated": [_entry(e) for e in repair.truncated],
        "reused": [_entry(e) for e in repair.reused],
        "empty": list(repair.empty),
    }
    lines = [p.message for p in problems]
    ok = not problems
    if args.untrusted:
        _, sanitized = sanitize_history(history)
        untrusted = bool(sanitized.system_prompts or sanitized.unsafe_parts)
        ok = ok and not untrusted
        data["untrusted"] = {
            "systemPrompts": sanitized.system_prompts,
            "unsafeParts": [
                {"messageIndex": u.message_index, "kind": u.kind, "scheme": u.scheme}
                for u in sanitized.unsafe_parts
            ],
        }
        if sanitized.system_prompts:
            lines.append(f"{sanitized.system_prompts} system message(s) in an untrusted history")
        lines.extend(
            f"message {u.message_index}: unsafe {u.kind} URL (scheme {u.scheme!r})"
            for u in sanitized.unsafe_parts
        )
    data["ok"] = ok
    lines.extend(
        line for line in _repair_lines(repair) if line.split(": ", 1)[1].startswith("note:")
    )
    if problems:
        verdict = f"{len(problems)} pairing problem(s)"
    elif not history:
        verdict = "empty (valid, but nothing to send a provider)"
    else:
        verdict = "provider-valid"
    lines.append(f"check: {len(history)} messages, {verdict}{'' if ok else ': FAILED'}")
    _emit(sys.stdout, _report(args, data, lines))
    return EXIT_OK if ok else EXIT_FAILED


def _normalize(args: argparse.Namespace) -> int:
    history = _read(args.file)
    out, repair = normalize_history(history)
    data = {**_counts("normalize", len(history), len(out)), "repair": _repair_json(repair)}
    lines = [
        *_repair_lines(repair),
        _summary_line("normalize", len(history), len(out), repair.changed),
    ]
    report = _report(args, data, lines)
    _write_history(out, args)
    _emit(sys.stderr, report)
    return EXIT_OK


def _sanitize(args: argparse.Namespace) -> int:
    history = _read(args.file)
    out, found = sanitize_history(history, awaiting=tuple(args.awaiting))
    data = {**_counts("sanitize", len(history), len(out)), "report": _sanitize_json(found)}
    lines = [
        *_sanitize_lines(found),
        _summary_line("sanitize", len(history), len(out), found.changed),
    ]
    report = _report(args, data, lines)
    _write_history(out, args)
    _emit(sys.stderr, report)
    return EXIT_OK


def _counter(name: str) -> TokenCounter:
    if name == "approximate":
        return approximate_tokens
    if name == "tiktoken" or name.startswith("tiktoken:"):
        from golem_shell.context._tokens import tiktoken_counter

        encoding = name.partition(":")[2] or "o200k_base"
        try:
            return tiktoken_counter(encoding)
        except (ImportError, ValueError, OSError) as e:  # OSError: offline on first use
            raise _InputError(f"--counter {name}: {e}") from None
    raise _InputError(
        f"--counter {name!r}: expected 'approximate', 'tiktoken' or 'tiktoken:<encoding>'"
    )


def _bounded(command: str, make: Callable[[], Any], args: argparse.Namespace) -> int:
    history = _read(args.file)
    processor = make()
    match processor(history):
        case Success(out):
            data = {**_counts(command, len(history), len(out)), "ok": True}
            line = _summary_line(command, len(history), len(out), len(out) != len(history))
            report = _report(args, data, [line])
            _write_history(out, args)
            _emit(sys.stderr, report)
            return EXIT_OK
        case Failure(error):
            data = {**_counts(command, len(history), 0), "ok": False, "error": str(error)}
            _emit(sys.stderr, _report(args, data, [f"{command}: {error}"]))
            return EXIT_FAILED
    raise AssertionError("unreachable")  # pragma: no cover


def _trim(args: argparse.Namespace) -> int:
    return _bounded("trim", lambda: trim_history(args.max_messages), args)


def _budget(args: argparse.Namespace) -> int:
    counter = _counter(args.counter)
    return _bounded("budget", lambda: budget_history(counter, args.max_tokens), args)


def _schema(args: argparse.Namespace) -> int:
    _emit(sys.stdout, _schema_text().encode("utf-8"))
    return EXIT_OK


# -- the parser ------------------------------------------------------------------------------


def _migrate_store(args: argparse.Namespace) -> int:
    from golem_shell._errors import UsageError
    from golem_shell.store import HistoryStoreError
    from golem_shell.store._migrate import migrate_store

    keys: list[bytes] = []
    for name in args.signing_key_env:
        value = os.environb.get(name.encode())
        if not value:
            raise _InputError(f"--signing-key-env {name}: the variable is not set or empty")
        keys.append(value)
    try:
        done = migrate_store(
            args.database,
            owner=args.owner,
            table=args.table,
            prefix=args.prefix,
            signing_keys=keys or None,
        )
    except (UsageError, ValueError) as e:
        raise _InputError(str(e)) from None
    except HistoryStoreError as e:
        sys.stderr.write(f"golem: {e}\n")
        return EXIT_FAILED
    data = {
        "database": done.database,
        "kept_as": done.kept_as,
        "moved": [list(c) for c in done.conversations],
        "messages": done.messages,
        "skipped": [list(c) for c in done.skipped],
    }
    line = (
        f"moved {len(done.conversations)} conversation(s), {done.messages} message(s); "
        f"{len(done.skipped)} moved before; the 0.2 rows stay in table {done.kept_as} "
        "(drop it once you have checked the result)"
    )
    _emit(sys.stdout, _report(args, data, [line]))
    return EXIT_OK


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _indent(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not 0 <= value <= 16:
        raise argparse.ArgumentTypeError(f"must be between 0 and 16, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="golem",
        description="Validate, repair and bound stored golem histories (JSON).",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    history = commands.add_parser("history", help="check or rewrite a history file")
    actions = history.add_subparsers(dest="action", required=True, parser_class=_Parser)

    def add(name: str, help: str, run: Callable[[argparse.Namespace], int]) -> Any:
        sub = actions.add_parser(name, help=help, description=help)
        sub.add_argument("file", metavar="FILE", help="a history JSON file, or - for stdin")
        sub.add_argument("--json", action="store_true", help="print the report as JSON")
        sub.set_defaults(run=run)
        if name != "check":
            sub.add_argument("-o", "--output", metavar="OUT", help="write the history here")
            sub.add_argument(
                "--indent", type=_indent, metavar="N", help="pretty-print with N spaces"
            )
        return sub

    check = add("check", "exit 1 unless the history is provider-valid", _check)
    check.add_argument(
        "--untrusted",
        action="store_true",
        help="also fail on system messages and unsafe URLs (history from a stranger)",
    )
    add("normalize", "repair tool-call pairing", _normalize)
    sanitize = add("sanitize", "strip what an untrusted history may not assert", _sanitize)
    sanitize.add_argument(
        "--awaiting",
        action="append",
        default=[],
        metavar="ID",
        help="a call id the server vouches is awaiting a deferred answer (repeatable)",
    )
    trim = add("trim", "keep the newest messages, on a request boundary", _trim)
    trim.add_argument("--max-messages", type=_positive, required=True, metavar="N")
    budget = add("budget", "keep the newest messages that fit a token budget", _budget)
    budget.add_argument("--max-tokens", type=_positive, required=True, metavar="N")
    budget.add_argument(
        "--counter",
        default="approximate",
        metavar="NAME",
        help="approximate (default), tiktoken, or tiktoken:<encoding>",
    )
    schema = commands.add_parser("schema", help="print the JSON Schema of the history contract")
    schema.set_defaults(run=_schema)
    migrate = commands.add_parser(
        "migrate-store",
        help="move a golem 0.2 store (one table, no owners) into today's tables",
        description="Move the conversations of a golem 0.2 store into today's tables, "
        "under one owner. Safe to run again; the 0.2 table is kept (renamed to <table>_v02 "
        "when today's tables need its name).",
    )
    migrate.add_argument("database", metavar="DATABASE", help="an SQLite file or a PostgreSQL URL")
    migrate.add_argument("--owner", required=True, help="the owner every conversation moves to")
    migrate.add_argument("--table", default="golem_messages", help="the 0.2 table's name")
    migrate.add_argument("--prefix", default="golem", help="today's table prefix (table=)")
    migrate.add_argument(
        "--signing-key-env",
        action="append",
        default=[],
        metavar="VAR",
        help="an environment variable holding a store signing key (repeatable, newest first)",
    )
    migrate.add_argument("--json", action="store_true", help="print the report as JSON")
    migrate.set_defaults(run=_migrate_store)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``golem`` command with ``argv`` (default: the process's arguments).

    Returns:
        The exit status (see the module's header). Never raises, except ``SystemExit``
        from ``--help`` and usage errors (status 2).
    """
    args = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except _InputError as e:
        sys.stderr.write(f"golem: {e}\n")
        return EXIT_USAGE
    except BrokenPipeError:  # the reader went away (golem ... | head): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the flush at exit fails quietly
        return EXIT_OK
    except KeyboardInterrupt:
        sys.stderr.write("golem: interrupted\n")
        return 130
    except Exception as e:
        sys.stderr.write(
            f"golem: internal error: {type(e).__name__}: {e} "
            "(please report it with the input that caused it)\n"
        )
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
