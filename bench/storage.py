"""Storage that stays bounded: bytes per stored message beside the peers, and the bytes of a
database over a steady churn of conversations (issue 47 item 2).

Over 600 lines because each of the five ways of keeping a conversation (four libraries and
golem's durable runs) is a class here, beside the one churn they all go through.

``python -m bench.storage`` stores the same conversations (``bench.workload``: 5-message
turns, a user message, an assistant message calling two tools, their results and an
answer) four ways, each in its own SQLite file in a temporary directory, as each library
documents keeping a conversation:

- **golem**: ``SQLiteHistoryStore.append`` once per turn (WAL, every row sealed and
  chained, a signed head per branch);
- **LangGraph**: a ``StateGraph`` over ``MessagesState`` with a model node and a tools
  node (the loop ``create_react_agent`` builds), compiled with
  ``langgraph.checkpoint.sqlite.SqliteSaver``, one ``invoke`` per turn on the
  conversation's ``thread_id`` (a checkpoint per super-step: 4 per turn);
- **OpenAI Agents SDK**: ``agents.SQLiteSession.add_items`` once per turn with the turn's
  Responses input items (what ``Runner.run(..., session=)`` adds at a run's end);
- **pydantic-ai**: no store of its own; its documented way,
  ``ModelMessagesTypeAdapter.dump_json(result.new_messages())`` appended as a row per turn
  (the cheapest of its recipes: storing ``all_messages_json()`` per turn grows faster).

Two measures, both read from SQLite itself after ``PRAGMA wal_checkpoint(TRUNCATE)``:
``used`` bytes are ``(page_count - freelist_count) * page_size`` (what the rows hold),
``file`` bytes are the database file (SQLite reuses freed pages; it does not shrink).

1. **Bytes per stored message** (``--conversations`` x ``--turns``): used bytes over the
   number of messages stored, per library, and its ratio to golem's.
2. **Churn** (``--live`` conversations at a time, ``--total`` in all, each deleted after
   ``--turns`` turns, one turn at a time round-robin, the first generation staggered so
   the live set holds about the same number of messages throughout): used and file bytes
   sampled ``--samples`` times. **Flat** when, after the first generation, the largest
   sample is at most 1.2x the first sample of the steady state. A deletion is each
   library's own: golem ``delete``, LangGraph ``SqliteSaver.delete_thread``, the Agents
   SDK ``clear_session``, pydantic-ai's rows deleted.

3. **Durable churn** (``--durable-live``, ``--durable-total``, ``--durable-turns``, smaller:
   each turn is a durable run): ``DurableGolem``, golem's durable storage (DBOS's system
   database, the blob store, the history store) under the same churn, finished runs
   forgotten by age (``DurableAgent.forget``) every ``--forget-every`` turns.

``--quick`` (the smoke test): 4 conversations x 5 turns, churn of 3 live, 9 in all
(durable: 3 live, 6 in all, 4 turns).
``--write PATH`` records the section ``storage`` of ``PATH``'s JSON and renders ``PATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Protocol

from bench.convert import to_golem
from bench.workload import NeutralMessage, conversation

__all__ = [
    "SYSTEMS", "DurableGolem", "Make", "Stored", "churn", "durable_churn", "main", "per_message",
    "render",
]  # fmt: skip

FLAT_LIMIT = 1.2
TURN = 5  # messages per workload turn


class Stored(Protocol):
    """One library's way of keeping conversations, in its own SQLite file."""

    name: str
    path: Path

    def append_turn(self, cid: str, turn: Sequence[NeutralMessage]) -> None: ...

    def delete(self, cid: str) -> None: ...

    def close(self) -> None: ...


def _turns(seed: int, turns: int) -> list[list[NeutralMessage]]:
    """``turns`` workload turns of conversation ``seed`` (its system message folded into
    the first turn's messages, as a first turn carries it)."""
    messages = conversation(1 + turns * TURN, seed=seed)
    out = [messages[1 + k * TURN : 1 + (k + 1) * TURN] for k in range(turns)]
    out[0] = [messages[0], *out[0]]
    return out


def _sizes(path: Path) -> tuple[int, int]:
    """``(used, file)`` bytes of the SQLite database at ``path``, after a checkpoint."""
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        page = connection.execute("PRAGMA page_size").fetchone()[0]
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        free = connection.execute("PRAGMA freelist_count").fetchone()[0]
    connection.close()
    return (pages - free) * page, path.stat().st_size


class Golem:
    name = "golem"

    def __init__(self, path: Path) -> None:
        from golem_shell.store import SQLiteHistoryStore

        self.path = path
        self._store = SQLiteHistoryStore(path)
        self._length: dict[str, int] = {}

    def append_turn(self, cid: str, turn: Sequence[NeutralMessage]) -> None:
        length = self._length.get(cid, 0)
        self._length[cid] = self._store.append_sync("bench", cid, to_golem(turn), length)

    def delete(self, cid: str) -> None:
        self._store.delete_sync("bench", cid)
        self._length.pop(cid, None)

    def close(self) -> None:
        self._store.close()


class LangGraph:
    name = "LangGraph"

    def __init__(self, path: Path) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, MessagesState, StateGraph

        from bench.peers import load_peers

        peers = load_peers()
        assert peers.langchain is not None, "langchain-core (the bench extra)"
        self._convert = peers.langchain.convert
        self.path = path
        self._connection = sqlite3.connect(path, check_same_thread=False)
        self._saver = SqliteSaver(self._connection)
        self._script: list[Any] = []

        def model(state):  # type: ignore[no-untyped-def]  # langgraph reads hints at runtime
            return {"messages": [self._script.pop(0)]}

        def tools(state):  # type: ignore[no-untyped-def]
            out = []
            while self._script and type(self._script[0]).__name__ == "ToolMessage":
                out.append(self._script.pop(0))
            return {"messages": out}

        def route(state):  # type: ignore[no-untyped-def]
            last = state["messages"][-1]
            return "tools" if getattr(last, "tool_calls", None) else END

        graph = StateGraph(MessagesState)
        graph.add_node("model", model)
        graph.add_node("tools", tools)
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", route, ["tools", END])
        graph.add_edge("tools", "model")
        self._graph = graph.compile(checkpointer=self._saver)

    def append_turn(self, cid: str, turn: Sequence[NeutralMessage]) -> None:
        converted = self._convert(turn)
        split = next(i for i, m in enumerate(turn) if m["role"] == "assistant")
        self._script = converted[split:]
        config = {"configurable": {"thread_id": cid}}
        self._graph.invoke({"messages": converted[:split]}, config)
        assert not self._script, "the scripted turn was not consumed"

    def delete(self, cid: str) -> None:
        self._saver.delete_thread(cid)

    def close(self) -> None:
        self._connection.close()


def _responses_items(turn: Sequence[NeutralMessage]) -> list[dict[str, Any]]:
    """The Responses input items of a workload turn (what the Agents SDK stores)."""
    items: list[dict[str, Any]] = []
    for m in turn:
        if m["role"] in ("system", "user"):
            items.append({"role": m["role"], "content": m["text"]})
        elif m["role"] == "tool":
            out = {"type": "function_call_output", "call_id": m["tool_call_id"]}
            items.append({**out, "output": m["text"]})
        else:
            if m["text"]:
                items.append({
                    "type": "message", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": m["text"], "annotations": []}],
                })  # fmt: skip
            items += [
                {"type": "function_call", "call_id": c["id"], "name": c["name"],
                 "arguments": c["arguments"]}
                for c in m["tool_calls"]
            ]  # fmt: skip
    return items


class AgentsSDK:
    name = "OpenAI Agents SDK"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sessions: dict[str, Any] = {}
        self._loop = asyncio.new_event_loop()

    def _session(self, cid: str) -> Any:
        from agents import SQLiteSession

        if cid not in self._sessions:
            self._sessions[cid] = SQLiteSession(cid, self.path)
        return self._sessions[cid]

    def append_turn(self, cid: str, turn: Sequence[NeutralMessage]) -> None:
        self._loop.run_until_complete(self._session(cid).add_items(_responses_items(turn)))

    def delete(self, cid: str) -> None:
        session = self._sessions.pop(cid)
        self._loop.run_until_complete(session.clear_session())
        session.close()

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()
        self._loop.close()


class PydanticAI:
    name = "pydantic-ai"

    def __init__(self, path: Path) -> None:
        from bench.peers import load_peers

        peers = load_peers()
        assert peers.pydantic_ai is not None, "pydantic-ai-slim (the bench extra)"
        self._peer = peers.pydantic_ai
        self.path = path
        self._connection = sqlite3.connect(path)
        self._connection.execute("PRAGMA journal_mode = WAL")
        self._connection.execute(
            "CREATE TABLE messages (conversation TEXT, turn INTEGER, json BLOB,"
            " PRIMARY KEY (conversation, turn))"
        )
        self._turn: dict[str, int] = {}

    def append_turn(self, cid: str, turn: Sequence[NeutralMessage]) -> None:
        k = self._turn.get(cid, 0)
        data = self._peer.encode(self._peer.convert(turn))
        with self._connection:
            self._connection.execute("INSERT INTO messages VALUES (?, ?, ?)", (cid, k, data))
        self._turn[cid] = k + 1

    def delete(self, cid: str) -> None:
        with self._connection:
            self._connection.execute("DELETE FROM messages WHERE conversation = ?", (cid,))
        self._turn.pop(cid, None)

    def close(self) -> None:
        self._connection.close()


Make = Callable[[Path], Stored]
SYSTEMS: tuple[Make, ...] = (Golem, LangGraph, AgentsSDK, PydanticAI)


def _systems(folder: Path, tag: str) -> Iterator[Stored]:
    for make in SYSTEMS:
        yield make(folder / f"{make.__name__.lower()}-{tag}.sqlite")


def per_message(conversations: int, turns: int) -> list[dict[str, Any]]:
    """Used and file bytes per stored message, per library, on the same conversations."""
    scripts = [_turns(seed, turns) for seed in range(conversations)]
    messages = sum(len(m) for script in scripts for m in script)
    rows = []
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        for system in _systems(Path(folder), "once"):
            stack.callback(system.close)
            for k in range(turns):
                for c, script in enumerate(scripts):
                    system.append_turn(f"c{c}", script[k])
            used, file = _sizes(system.path)
            rows.append({"library": system.name, "messages": messages, "used": used,
                         "file": file})  # fmt: skip
    return rows


def churn(live: int, total: int, turns: int, samples: int) -> list[dict[str, Any]]:
    """Bytes over a steady churn, per library: ``live`` conversations at a time, each
    deleted after ``turns`` turns, ``total`` in all; the first generation staggered."""
    scripts = [_turns(seed, turns) for seed in range(min(total, 16))]  # texts repeat
    plan = _plan(live, total, turns)
    steps = sum(n for slot in plan for _, n in slot)
    every = max(1, steps // samples)
    out = []
    with tempfile.TemporaryDirectory() as folder:
        for system in _systems(Path(folder), "churn"):
            out.append(_churn_one(system, plan, scripts, every, turns * live))
    return out


def _plan(live: int, total: int, turns: int) -> list[list[tuple[int, int]]]:
    """Per slot of the live set, its conversations and their turns: slot k's first one
    ends early, so the live set's size is steady from the start."""
    plan = [[(k, turns * (k + 1) // live)] for k in range(live)]
    started = live
    while started < total:
        for k in range(live):
            if started < total:
                plan[k].append((started, turns))
                started += 1
    return plan


def _churn_one(
    system: Stored, plan: list[list[tuple[int, int]]], scripts: list[Any], every: int, warm: int
) -> dict[str, Any]:
    """One library's curve over the churn ``plan`` (sampled every ``every`` turns); the
    steady state starts after ``warm`` turns."""
    sizes: Callable[[], tuple[int, int]] = getattr(system, "sizes", lambda: _sizes(system.path))
    live = len(plan)
    curve: list[dict[str, int]] = []
    positions = [0] * live  # which conversation of the slot, and its turn
    done = [0] * live
    step = 0
    try:
        while any(positions[k] < len(plan[k]) for k in range(live)):
            for k in range(live):
                if positions[k] >= len(plan[k]):
                    continue
                conv, length = plan[k][positions[k]]
                script = scripts[conv % len(scripts)]
                system.append_turn(f"c{conv}", script[done[k]])
                done[k] += 1
                if done[k] == length:
                    system.delete(f"c{conv}")
                    positions[k] += 1
                    done[k] = 0
                step += 1
                if step % every == 0:
                    used, file = sizes()
                    curve.append({"turns": step, "used": used, "file": file})
        if not curve or curve[-1]["turns"] != step:  # the end, always sampled
            used, file = sizes()
            curve.append({"turns": step, "used": used, "file": file})
    finally:
        system.close()
    steady = [p for p in curve if p["turns"] >= warm]
    first = steady[0]["used"] if steady else None
    peak = max((p["used"] for p in steady), default=None)
    ratio = peak / first if first else None
    return {"library": system.name, "curve": curve, "steady_first": first,
            "steady_peak": peak, "ratio": ratio,
            "flat": ratio is not None and ratio <= FLAT_LIMIT}  # fmt: skip


class DurableGolem:
    """Each turn a durable run on DBOS (SQLite system database; blobs in a ``SQLiteBlobs``
    file), its new messages appended to a ``SQLiteHistoryStore`` given the blobs; a
    deletion is the store's ``delete`` (which releases the conversation's blobs); every
    ``forget_every`` turns, ``DurableAgent.forget`` of the runs finished ``age`` seconds
    ago. Its bytes are the three files' together."""

    name = "golem durable (DBOS)"

    def __init__(self, folder: Path, forget_every: int = 20, age: float = 2.0) -> None:
        import dbos

        from golem_shell.durable import SQLiteBlobs
        from golem_shell.store import SQLiteHistoryStore

        self.paths = [folder / "dbos.sqlite", folder / "blobs.sqlite", folder / "store.sqlite"]
        self.path = self.paths[0]
        self.blobs = SQLiteBlobs(self.paths[1])
        self._store = SQLiteHistoryStore(self.paths[2], blobs=self.blobs)
        self._agent = _durable_agent()
        self._agent.blobs = self.blobs
        self._forget_every, self._age, self._turns = forget_every, age, 0
        self._history: dict[str, list[Any]] = {}
        self._loop = asyncio.new_event_loop()
        dbos.DBOS(config={"name": "golem-bench-storage", "log_level": "WARNING",
                          "system_database_url": f"sqlite:///{self.path}",
                          "serializer": dbos.DBOSPortableJSONSerializer()})  # fmt: skip
        dbos.DBOS.launch()

    def append_turn(self, cid: str, turn: Sequence[NeutralMessage]) -> None:
        messages = to_golem(turn)
        history = self._history.get(cid, [])
        if messages[0].role.value == "system":
            history, messages = [messages[0]], messages[1:]
        _SCRIPT[:] = messages[1:]
        run = self._agent.run(messages[0].text, history=history, conversation_id=cid)
        result = self._loop.run_until_complete(run)
        assert not _SCRIPT, "the scripted turn was not consumed"
        self._store.append_sync("bench", cid, result.messages[len(self._history.get(cid, [])) :],
                                len(self._history.get(cid, [])))  # fmt: skip
        self._history[cid] = list(result.messages)
        self._turns += 1
        if self._turns % self._forget_every == 0:
            forget = self._agent.forget(self._age, grace=self._age, keep_notes=self._age)
            self._loop.run_until_complete(forget)

    def delete(self, cid: str) -> None:
        self._store.delete_sync("bench", cid)
        self._history.pop(cid, None)

    def sizes(self) -> tuple[int, int]:
        both = [_sizes(p) for p in self.paths]
        self.parts = {"dbos": both[0][0], "blobs": both[1][0], "store": both[2][0]}
        return sum(u for u, _ in both), sum(f for _, f in both)

    def close(self) -> None:
        import dbos

        dbos.DBOS.destroy()
        self._store.close()
        self._loop.close()


_SCRIPT: list[Any] = []  # the rest of the turn a durable run plays back
_AGENT: list[Any] = []


def _durable_agent() -> Any:
    """The bench's ``DurableAgent`` (one per process: DBOS registers it by name): its model
    answers with the scripted turn's messages, its tools with the scripted results."""
    if _AGENT:
        return _AGENT[0]
    from golem_shell import Agent, FunctionModel, tool
    from golem_shell.durable import DurableAgent

    def model(request: Any) -> Any:
        return _SCRIPT.pop(0)

    @tool
    def get_weather(city: str, unit: str) -> str:
        """The weather in ``city``."""
        return str(_SCRIPT.pop(0).text)

    @tool
    def search(query: str, limit: int) -> str:
        """Search for ``query``."""
        return str(_SCRIPT.pop(0).text)

    agent = Agent(FunctionModel(model), tools=[get_weather, search])
    _AGENT.append(DurableAgent(agent, name="bench-storage"))
    return _AGENT[0]


def durable_churn(
    live: int, total: int, turns: int, samples: int, forget_every: int, age: float
) -> dict[str, Any]:
    """``churn`` of ``DurableGolem`` (its own, smaller sizes: a turn is a durable run)."""
    scripts = [_turns(seed, turns) for seed in range(min(total, 16))]
    plan = _plan(live, total, turns)
    every = max(1, sum(n for slot in plan for _, n in slot) // samples)
    with tempfile.TemporaryDirectory() as folder:
        system = DurableGolem(Path(folder), forget_every, age)
        row = _churn_one(system, plan, scripts, every, turns * live)
    return {**row, "live": live, "total": total, "turns": turns, "forget_every": forget_every,
            "age": age, "parts": system.parts}  # fmt: skip


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("golem-agents", "langgraph", "langgraph-checkpoint-sqlite", "openai-agents",
                 "pydantic-ai-slim"):  # fmt: skip
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def main(argv: Sequence[str] | None = None) -> int:
    from bench.report import add_write_option

    parser = argparse.ArgumentParser(prog="python -m bench.storage", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a few conversations (smoke)")
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--turns", type=int, default=50, help="turns per conversation")
    parser.add_argument("--live", type=int, default=50, help="churn: conversations at once")
    parser.add_argument("--total", type=int, default=400, help="churn: conversations in all")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--durable-live", type=int, default=20, help="durable churn: live")
    parser.add_argument("--durable-total", type=int, default=80, help="durable churn: in all")
    parser.add_argument("--durable-turns", type=int, default=30, help="durable churn: turns")
    parser.add_argument("--forget-every", type=int, default=20, help="durable: turns a forget")
    parser.add_argument("--age", type=float, default=2.0, help="durable: forget's age (s)")
    add_write_option(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.conversations, args.turns, args.live, args.total = 4, 5, 3, 9
        args.durable_live, args.durable_total, args.durable_turns = 3, 6, 4
    durable = (args.durable_live, args.durable_total, args.durable_turns)
    data = {
        "conversations": args.conversations,
        "turns": args.turns,
        "live": args.live,
        "total": args.total,
        "versions": _versions(),
        "per_message": per_message(args.conversations, args.turns),
        "churn": churn(args.live, args.total, args.turns, args.samples),
        "durable": durable_churn(*durable, args.samples, args.forget_every, args.age),
    }
    for row in data["per_message"]:
        print(json.dumps({"kind": "per_message", **row}))
    for row in [*data["churn"], data["durable"]]:
        print(json.dumps({"kind": "churn", **{k: v for k, v in row.items() if k != "curve"}}))
    if args.write is not None:
        from bench.report import machine, recorded_command, write_section

        data["command"] = recorded_command("python -m bench.storage", argv)
        data["machine"] = machine()
        write_section(args.write, "storage", data)
    return 0


def _kib(n: int | None) -> str:
    return "-" if n is None else f"{n / 1024:,.0f}"


def render(data: dict[str, Any]) -> str:
    """The ``storage`` section of ``bench/results.md``."""
    m = data["machine"]
    rows = data["per_message"]
    golem = next(r for r in rows if r["library"] == "golem")
    base = golem["used"] / golem["messages"]
    versions = ", ".join(f"{k} {v}" for k, v in data["versions"].items())
    lines = [
        f"## Storage per message and over a churn (`{data['command']}`)",
        "",
        f"{m['nproc']} cores, Python {m['python']}; {versions}. Each library keeps the same"
        f" {data['conversations']:,} conversations of {data['turns']} turns (5 messages a"
        " turn) in its own SQLite file, as its documentation does (see `bench/storage.py`);"
        " bytes are SQLite's own count after a checkpoint: used = pages holding rows, file"
        " = the file (issue 47 item 2).",
        "",
        "| library | messages | used KiB | bytes per message | x golem | file KiB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        each = r["used"] / r["messages"]
        lines.append(
            f"| {r['library']} | {r['messages']:,} | {_kib(r['used'])} | {each:,.0f}"
            f" | {each / base:.2f} | {_kib(r['file'])} |"
        )
    lines += [
        "",
        f"Churn: {data['live']} conversations live at a time, {data['total']:,} in all, each"
        f" deleted after {data['turns']} turns (the library's own delete). Flat: after the"
        f" first generation, the largest used size at most {FLAT_LIMIT}x the first.",
        "",
        "| library | steady first KiB | steady peak KiB | peak / first | flat | file KiB at"
        " the end |",
        "|---|---:|---:|---:|---|---:|",
    ]
    durable = data.get("durable")
    for r in [*data["churn"], *([durable] if durable else [])]:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        end = r["curve"][-1]["file"] if r["curve"] else None
        lines.append(
            f"| {r['library']} | {_kib(r['steady_first'])} | {_kib(r['steady_peak'])}"
            f" | {ratio} | {'yes' if r['flat'] else 'NO'} | {_kib(end)} |"
        )
    lines += ["", "Used KiB over the churn (turns so far: one column per library):", ""]
    names = [r["library"] for r in data["churn"]]
    lines += ["| turns | " + " | ".join(names) + " |", "|---:|" + "---:|" * len(names)]
    curves = [r["curve"] for r in data["churn"]]
    for i, point in enumerate(curves[0]):
        cells = [_kib(c[i]["used"]) if i < len(c) else "-" for c in curves]
        lines.append(f"| {point['turns']:,} | " + " | ".join(cells) + " |")
    if durable:
        lines += _render_durable(durable)
    return "\n".join(lines) + "\n"


def _render_durable(d: dict[str, Any]) -> list[str]:
    parts = ", ".join(f"{k} {_kib(v)} KiB" for k, v in d["parts"].items())
    lines = [
        "",
        f"golem durable (DBOS), at its own size (a turn is a durable run: {d['live']}"
        f" conversations live, {d['total']} in all, {d['turns']} turns each, scaled down so"
        " this part takes minutes on 2 busy cores; LangGraph's churn takes most of the"
        " command's time): each turn a `DurableAgent` run on DBOS"
        " (SQLite system database) whose model and tools play the workload's turn back,"
        " blobs in a `SQLiteBlobs` file, the new messages appended to a"
        " `SQLiteHistoryStore(..., blobs=)`; a conversation is deleted from the store"
        f" (releasing its blobs) after its turns, and every {d['forget_every']} turns"
        f" `forget(older_than={d['age']:g} s, grace={d['age']:g} s, keep_notes={d['age']:g}"
        " s)` deletes finished runs' records and collects. Used bytes are the three files'"
        f" together (at the end, after the last deletion: {parts}; the runs of the last"
        " seconds are not forgotten yet, nor the blobs unheld within the grace).",
        "",
        "| turns | used KiB | file KiB |",
        "|---:|---:|---:|",
    ]
    lines += [f"| {p['turns']:,} | {_kib(p['used'])} | {_kib(p['file'])} |" for p in d["curve"]]
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
