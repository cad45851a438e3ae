"""A conversation stored in SQLite (or PostgreSQL), one turn per invocation.

    python examples/stored_conversation.py "hello"                  # conversations.db, "demo"
    python examples/stored_conversation.py --conversation c1 "and then?"
    python examples/stored_conversation.py --fork-at 2 --into c2    # c2: c1's first 2 messages
    python examples/stored_conversation.py --list
    python examples/stored_conversation.py --branch-at 2 "say it again"  # a branch: regenerate
    python examples/stored_conversation.py --erase 0                 # message 0 becomes a tombstone
    python examples/stored_conversation.py --race "two workers"     # a lost compare-and-set
    python examples/stored_conversation.py --postgres postgresql://user:pw@host/db "hello"

The store is not a session: the application wires it around a run in three lines (load,
run with the history, append what the run added at the length it loaded). Every call
names the owner (``--owner``): another owner's conversation ids are simply not there. Of two runs
that loaded the same history only one can append; the other gets ``HistoryConflict`` and
reloads (``--race`` shows it). Uses OpenAI when OPENAI_API_KEY or OPENAI_BASE_URL is set,
Anthropic when ANTHROPIC_API_KEY is set, and an offline model otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from golem_core import ModelRequest, Role
from golem_shell import Agent, FunctionModel, Model, UsageError, infer_model
from golem_shell.store import (
    BranchInfo,
    HistoryConflict,
    HistoryNotFound,
    HistoryStore,
    PostgresHistoryStore,
    Receipt,
    SQLiteHistoryStore,
)


def offline_reply(request: ModelRequest) -> str:
    turns = sum(1 for m in request.messages if m.role is Role.USER)
    return f"(offline model) You said {request.messages[-1].text!r}: message {turns} from you."


def choose_model() -> Model:
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
        return infer_model("openai:" + os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    if os.environ.get("ANTHROPIC_API_KEY"):
        return infer_model("anthropic:" + os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"))
    return FunctionModel(offline_reply, name="offline")


async def turn(
    agent: Agent[None, str],
    store: HistoryStore,
    owner: str,
    cid: str,
    prompt: str,
    branch: str = "main",
) -> str:
    """One turn of a stored conversation: the three lines, and nothing else."""
    history = await store.load(owner, cid, branch=branch)
    result = await agent.run_with_history(history, prompt, conversation_id=cid)
    await store.append(owner, cid, result.new_messages, len(history), branch=branch)
    return result.output


async def race(
    agent: Agent[None, str], store: HistoryStore, owner: str, cid: str, prompt: str
) -> None:
    """Two workers load the same history and both run; the second append loses."""
    history = await store.load(owner, cid)
    first = await agent.run_with_history(history, prompt + " (worker 1)", conversation_id=cid)
    second = await agent.run_with_history(history, prompt + " (worker 2)", conversation_id=cid)
    await store.append(owner, cid, first.new_messages, expected_length=len(history))
    print("worker 1 appended")
    try:
        await store.append(owner, cid, second.new_messages, expected_length=len(history))
    except HistoryConflict as conflict:
        print(f"worker 2: {conflict}")
        print("worker 2 reloads and runs again:", await turn(agent, store, owner, cid, prompt))


def describe_branch(cid: str, info: BranchInfo) -> str:
    """``branch b1 of c1: 5 messages, its first 2 from c1/main`` (a root branch: no parent)."""
    line = f"branch {info.name} of {cid}: {info.length} messages"
    if info.parent is None:
        return line
    parent_cid, parent_branch = info.parent
    return f"{line}, its first {info.at} from {parent_cid}/{parent_branch}"


def describe_erasure(receipt: Receipt) -> str:
    """``erased 174 bytes: message 0 of demo/main, message 0 of c2/main`` (a fork or a
    branch shares the message: it is gone there too)."""
    views = sorted(receipt.erased, key=lambda view: -view.bytes)  # where it was stored first
    where = [
        f"{'message' if len(v.positions) == 1 else 'messages'}"
        f" {', '.join(map(str, v.positions))} of {v.conversation_id}/{v.branch}"
        for v in views
    ]
    return f"erased {receipt.bytes} bytes: {'; '.join(where) or 'nothing (erased already)'}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prompt", nargs="?")
    parser.add_argument("--db", default="conversations.db", help="the SQLite file")
    parser.add_argument("--postgres", help="a PostgreSQL URL instead of --db")
    parser.add_argument("--owner", default="me", help="whose conversations (a user, a tenant)")
    parser.add_argument("--conversation", default="demo")
    parser.add_argument("--branch-at", type=int, help="start a branch here, then run on it")
    parser.add_argument("--erase", type=int, help="erase the message at this position")
    parser.add_argument("--fork-at", type=int)
    parser.add_argument("--into", help="the new conversation of --fork-at")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--race", action="store_true")
    args = parser.parse_args()
    if args.fork_at is not None and not args.into:
        parser.error("--fork-at needs --into, the new conversation's id")

    store = PostgresHistoryStore(args.postgres) if args.postgres else SQLiteHistoryStore(args.db)
    agent = Agent(choose_model(), instructions="You are a friendly, concise assistant.")
    async with store:
        owner, cid = args.owner, args.conversation
        if args.list:
            for name in await store.list_conversations(owner):
                print(f"{name}: {len(await store.load(owner, name))} messages")
        elif args.fork_at is not None:
            await store.fork(owner, cid, args.fork_at, args.into)
            print(f"forked {cid} at {args.fork_at} into {args.into}")
        elif args.branch_at is not None:
            branch = await store.branch(owner, cid, args.branch_at)
            print("assistant:", await turn(agent, store, owner, cid, args.prompt or "hi", branch))
            for info in await store.branches(owner, cid):
                print(describe_branch(cid, info))
        elif args.erase is not None:
            print(describe_erasure(await store.erase(owner, cid, args.erase)))
        elif args.race:
            await race(agent, store, owner, cid, args.prompt or "hi")
        else:
            print("assistant:", await turn(agent, store, owner, cid, args.prompt or "hi"))
            print(f"stored: {cid} has {len(await store.load(owner, cid))} messages")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except (UsageError, HistoryNotFound) as error:  # a position past the end, an unknown id
        sys.exit(f"error: {error}")
