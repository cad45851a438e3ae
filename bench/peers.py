"""The peer libraries, each optional: pydantic-ai, langchain-core and orjson.

``load_peers()`` imports what is installed (the ``bench`` extra) and leaves the rest
``None``; the suite then runs golem against the stdlib baselines and the floor pass
alone. Conversions and peer ops follow the reference harness (``peers.py`` of the
project's shared bench):

- pydantic-ai: consecutive non-assistant messages form one ``ModelRequest``, each
  assistant message one ``ModelResponse``; its JSON codec is
  ``ModelMessagesTypeAdapter``; repair is ``repair_messages``; agents run on
  ``FunctionModel`` (a text answer; one ``ping`` tool round trip).
- langchain-core: one message per neutral message; ``trim_messages`` keeps the last
  half by message count (``token_counter=len``) or by approximate tokens.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.workload import NeutralMessage

__all__ = ["LangChain", "OrJSON", "Peers", "PydanticAI", "load_peers"]


@dataclass(frozen=True)
class PydanticAI:
    """pydantic-ai's message codec, repair and agent, on the workload."""

    version: str
    module: Any  # pydantic_ai.messages
    agent_type: Any
    function_model: Any

    def convert(self, messages: Sequence[NeutralMessage]) -> list[Any]:
        m = self.module
        out: list[Any] = []
        parts: list[Any] = []
        for msg in messages:
            role = msg["role"]
            if role == "assistant":
                if parts:
                    out.append(m.ModelRequest(parts=parts))
                    parts = []
                response = [m.TextPart(msg["text"])] if msg["text"] else []
                response += [
                    m.ToolCallPart(c["name"], c["arguments"], tool_call_id=c["id"])
                    for c in msg["tool_calls"]
                ]
                out.append(m.ModelResponse(parts=response))
            elif role == "tool":
                parts.append(
                    m.ToolReturnPart(
                        msg["tool_name"], msg["text"], tool_call_id=msg["tool_call_id"]
                    )
                )
            elif role == "user":
                parts.append(m.UserPromptPart(msg["text"]))
            else:
                parts.append(m.SystemPromptPart(msg["text"]))
        if parts:
            out.append(m.ModelRequest(parts=parts))
        return out

    def encode(self, history: list[Any]) -> bytes:
        result: bytes = self.module.ModelMessagesTypeAdapter.dump_json(history)
        return result

    def decode(self, data: bytes) -> list[Any]:
        result: list[Any] = self.module.ModelMessagesTypeAdapter.validate_json(data)
        return result

    def repair(self, history: list[Any]) -> list[Any]:
        result: list[Any] = self.module.repair_messages(history)
        return result

    def sanitize(self, history: list[Any]) -> list[Any]:
        """``sanitize_messages``, the client-history boundary pass (its warning silenced)."""
        result: list[Any] = self.module.sanitize_messages(history)
        return result

    def agents(self) -> tuple[Any, Any]:
        """A text agent and a one-tool agent on ``FunctionModel``, as the reference harness."""
        m = self.module

        def text_model(messages: list[Any], info: Any) -> Any:
            return m.ModelResponse(parts=[m.TextPart("done")])

        def tool_model(messages: list[Any], info: Any) -> Any:
            if any(
                isinstance(p, m.ToolReturnPart) and p.tool_name == "ping"
                for p in messages[-1].parts
            ):
                return m.ModelResponse(parts=[m.TextPart("done")])
            return m.ModelResponse(
                parts=[m.ToolCallPart("ping", '{"x": 1}', tool_call_id="ping_1")]
            )

        def ping(x: int) -> str:
            """Trivial tool."""
            return f"pong {x}"

        text_agent = self.agent_type(self.function_model(text_model))
        tool_agent = self.agent_type(self.function_model(tool_model), tools=[ping])
        return text_agent, tool_agent


@dataclass(frozen=True)
class LangChain:
    """langchain-core's ``trim_messages`` on the workload."""

    version: str
    messages: Any  # langchain_core.messages
    count_tokens: Callable[[Sequence[Any]], int]

    def convert(self, messages: Sequence[NeutralMessage]) -> list[Any]:
        lc = self.messages
        out: list[Any] = []
        for m in messages:
            role = m["role"]
            if role == "assistant":
                calls = [
                    {"id": c["id"], "name": c["name"], "args": json.loads(c["arguments"])}
                    for c in m["tool_calls"]
                ]
                out.append(lc.AIMessage(content=m["text"] or "", tool_calls=calls))
            elif role == "tool":
                out.append(
                    lc.ToolMessage(
                        content=m["text"], tool_call_id=m["tool_call_id"], name=m["tool_name"]
                    )
                )
            elif role == "user":
                out.append(lc.HumanMessage(content=m["text"]))
            else:
                out.append(lc.SystemMessage(content=m["text"]))
        return out

    def trim_count(self, history: list[Any], keep: int) -> list[Any]:
        result: list[Any] = self.messages.trim_messages(
            history,
            token_counter=len,
            max_tokens=keep,
            strategy="last",
            start_on="human",
            include_system=True,
        )
        return result

    def trim_tokens(self, history: list[Any], budget: int) -> list[Any]:
        result: list[Any] = self.messages.trim_messages(
            history,
            token_counter="approximate",
            max_tokens=budget,
            strategy="last",
            start_on="human",
            include_system=True,
        )
        return result


@dataclass(frozen=True)
class OrJSON:
    """orjson, the fastest JSON codec in Python (for scale only)."""

    version: str
    loads: Callable[[bytes], Any]
    dumps: Callable[[Any], bytes]


@dataclass(frozen=True)
class Peers:
    """The peers that could be imported; ``None`` for each one that is not installed."""

    pydantic_ai: PydanticAI | None
    langchain: LangChain | None
    orjson: OrJSON | None

    def versions(self) -> dict[str, str]:
        found = {
            "pydantic-ai-slim": self.pydantic_ai,
            "langchain-core": self.langchain,
            "orjson": self.orjson,
        }
        return {name: p.version if p is not None else "not installed" for name, p in found.items()}


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"


def _load_pydantic_ai() -> PydanticAI | None:
    try:
        import pydantic_ai.messages as messages
        from pydantic_ai import Agent
        from pydantic_ai.models.function import FunctionModel
    except ImportError:
        return None
    warnings.filterwarnings("ignore", message=".*is in beta")
    warnings.filterwarnings("ignore", message="Parts carrying the system voice")
    return PydanticAI(_version("pydantic-ai-slim"), messages, Agent, FunctionModel)


def _load_langchain() -> LangChain | None:
    try:
        import langchain_core.messages as messages
        from langchain_core.messages.utils import count_tokens_approximately
    except ImportError:
        return None
    return LangChain(_version("langchain-core"), messages, count_tokens_approximately)


def _load_orjson() -> OrJSON | None:
    try:
        import orjson
    except ImportError:
        return None
    return OrJSON(_version("orjson"), orjson.loads, orjson.dumps)


def load_peers() -> Peers:
    """Import every peer that is installed; a missing one is ``None``, never an error."""
    return Peers(_load_pydantic_ai(), _load_langchain(), _load_orjson())
