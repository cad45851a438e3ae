"""The peers' strategies in ``python -m bench.compaction``: each library's requests as golem
messages.

Owns langchain-core's ``trim_messages`` (``langchain_trace``), pydantic-ai's keep-recent
history processor in an ``Agent`` run per turn (``pydantic_ai_trace``) and the OpenAI Agents
SDK's ``OpenAIResponsesCompactionSession`` against the simulated compaction server
(``agents_sdk_trace``), with the conversions of what each sent into golem messages, so that
``bench/compaction.py`` measures them all with one counter (``bench/compaction_trace.py``).
A peer that is not installed gives ``None``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from bench import cache
from bench.compaction_trace import Recorder, Trace, compact_server, count, mock_client
from golem_core import Message, Role, TextPart, ToolCallPart
from golem_core.wire.openai_responses import COMPACTION_CONTENT_KEY

__all__ = ["agents_sdk_trace", "langchain_trace", "pydantic_ai_trace"]

Turn = cache.Turn


# -- langchain-core ------------------------------------------------------------------------


def langchain_trace(conversation: Sequence[Turn], budget: int) -> Trace | None:
    trims = cache.langchain_trims(conversation, budget, count)
    if trims is None:
        return None
    trace = Trace("langchain-core trim_messages (strategy=last)")
    trace.requests += [tuple(m for _, m in kept) for _, kept in trims]
    return trace


# -- pydantic-ai ---------------------------------------------------------------------------


def _recipe_n(conversation: Sequence[Turn], budget: int) -> int:
    """The largest N for which ``messages[-N:]`` keeps every request within the budget
    (pydantic-ai holds a turn as four messages: prompt, calls, returns, answer)."""
    sizes: list[int] = []
    ends: list[int] = []
    for turn in conversation:
        (user,), (calls, *results), (answer,) = cache.turn_messages(turn)
        sizes += [count(user), count(calls), sum(count(r) for r in results), count(answer)]
        ends += [len(sizes) - 3, len(sizes) - 1]
    return cache.recipe_n(sizes, ends, budget)


def _from_pydantic_ai(messages: Sequence[Any]) -> tuple[Message, ...]:
    from pydantic_ai import messages as pm

    out: list[Message] = []
    for message in messages:
        if isinstance(message, pm.ModelRequest):
            for part in message.parts:
                if isinstance(part, pm.UserPromptPart):
                    out.append(Message.user(str(part.content)))
                elif isinstance(part, pm.ToolReturnPart):
                    out.append(
                        Message.tool_result(part.tool_call_id, part.tool_name, str(part.content))
                    )
        else:
            calls = [
                ToolCallPart(p.tool_call_id, p.tool_name, p.args_as_json_str())
                for p in message.parts
                if isinstance(p, pm.ToolCallPart)
            ]
            text = "".join(p.content for p in message.parts if isinstance(p, pm.TextPart))
            out.append(Message.assistant(text or None, tool_calls=calls))
    return tuple(out)


async def pydantic_ai_trace(conversation: Sequence[Turn], budget: int) -> Trace | None:
    try:
        from pydantic_ai import Agent, RunContext
        from pydantic_ai import messages as pm
        from pydantic_ai.capabilities import ProcessHistory
        from pydantic_ai.models.function import AgentInfo, FunctionModel
    except ImportError:
        return None
    n = _recipe_n(conversation, budget)
    trace = Trace(
        f"pydantic-ai Agent, ProcessHistory(keep_recent_messages) (N={n})",
        note=f"messages[-{n}:]",
    )
    current: list[Turn] = []
    results: dict[str, str] = {}

    def model(messages: list[Any], info: AgentInfo) -> Any:
        trace.requests.append(_from_pydantic_ai(messages))
        turn = current[-1]
        if any(isinstance(p, pm.ToolReturnPart) for p in messages[-1].parts):
            return pm.ModelResponse(parts=[pm.TextPart(turn.answer)])
        return pm.ModelResponse(
            parts=[pm.ToolCallPart(name, args, tool_call_id=i) for i, name, args in turn.calls]
        )

    agent = Agent(FunctionModel(model), capabilities=[ProcessHistory(cache.keep_recent(n))])

    async def lookup(ctx: RunContext[None], q: str) -> str:
        return results[ctx.tool_call_id or ""]

    async def search(ctx: RunContext[None], q: str) -> str:
        return results[ctx.tool_call_id or ""]

    for tool in (lookup, search):
        # real types, not this module's postponed strings: pydantic-ai reads them
        tool.__annotations__ = {"ctx": RunContext[None], "q": str, "return": str}
        agent.tool(cast(Any, tool))
    history: list[Any] = []
    for turn in conversation:
        current.append(turn)
        results.update({i: text for (i, _, _), text in zip(turn.calls, turn.results, strict=True)})
        run = await agent.run(turn.prompt, message_history=history)
        history = run.all_messages()
    return trace


# -- the OpenAI Agents SDK -----------------------------------------------------------------


def _from_responses_items(items: Sequence[dict[str, Any]]) -> tuple[Message, ...]:
    out: list[Message] = []
    names: dict[str, str] = {}
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            names[item["call_id"]] = item["name"]
            call = ToolCallPart(item["call_id"], item["name"], item["arguments"])
            if out and out[-1].role is Role.ASSISTANT and out[-1].tool_calls and not out[-1].text:
                out[-1] = Message.assistant(None, tool_calls=(*out[-1].tool_calls, call))
            else:
                out.append(Message.assistant(None, tool_calls=[call]))
        elif kind == "function_call_output":
            call_id = item["call_id"]
            out.append(Message.tool_result(call_id, names.get(call_id, ""), str(item["output"])))
        elif kind == "compaction":
            extra = ((COMPACTION_CONTENT_KEY, json.dumps(item["encrypted_content"])),)
            out.append(Message(Role.ASSISTANT, (TextPart("", extra=extra),)))
        else:
            content = item["content"]
            text = content if isinstance(content, str) else "".join(c["text"] for c in content)
            role = Role.USER if item["role"] == "user" else Role.ASSISTANT
            out.append(Message.user(text) if role is Role.USER else Message.assistant(text))
    return tuple(out)


def _turn_items(turn: Turn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    user = {"role": "user", "content": turn.prompt}
    calls = [
        {"type": "function_call", "call_id": i, "name": name, "arguments": args}
        for i, name, args in turn.calls
    ]
    outputs = [
        {"type": "function_call_output", "call_id": i, "output": text}
        for (i, _, _), text in zip(turn.calls, turn.results, strict=True)
    ]
    return [user], calls + outputs, {"role": "assistant", "content": turn.answer}


async def agents_sdk_trace(
    conversation: Sequence[Turn], budget: int, *, by_tokens: bool
) -> Trace | None:
    try:
        import httpx2
        from agents import SQLiteSession
        from agents.memory import OpenAIResponsesCompactionSession
        from openai import AsyncOpenAI
    except ImportError:
        return None
    recorder = Recorder()

    def over_budget(context: dict[str, Any]) -> bool:
        items = context["session_items"]
        return sum(count(m) for m in _from_responses_items(items)) > budget

    trigger = "tokens over the budget" if by_tokens else "its default, 10 candidate items"
    trace = Trace(f"OpenAI Agents SDK OpenAIResponsesCompactionSession ({trigger})")
    async with mock_client(httpx2, compact_server(recorder)) as http:
        client = AsyncOpenAI(
            api_key="sk-bench", base_url="http://compact.invalid/v1", http_client=http
        )
        session = OpenAIResponsesCompactionSession(
            "bench",
            SQLiteSession("bench"),
            client=client,
            model="gpt-5",
            compaction_mode="input",
            should_trigger_compaction=over_budget if by_tokens else None,
        )
        for t, turn in enumerate(conversation, 1):
            recorder.turn = t
            stored: list[Any] = list(await session.get_items())
            user, exchange, answer = _turn_items(turn)
            trace.requests.append(_from_responses_items([*stored, *user]))
            trace.requests.append(_from_responses_items([*stored, *user, *exchange]))
            await session.add_items(cast(Any, [*user, *exchange, answer]))
            await session.run_compaction()
        session.underlying_session.close()  # type: ignore[attr-defined]
    trace.calls = list(recorder.calls)
    return trace
