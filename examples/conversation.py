"""An interactive chat loop whose conversation persists as JSON between runs.

    python examples/conversation.py [--history conversation.json]

Uses OpenAI when OPENAI_API_KEY or OPENAI_BASE_URL is set (OPENAI_MODEL, default
gpt-4o-mini; any OpenAI-compatible server such as Ollama or llama.cpp via
OPENAI_BASE_URL), Anthropic when ANTHROPIC_API_KEY is set (ANTHROPIC_MODEL, default
claude-sonnet-4-5), Gemini when GOOGLE_API_KEY or GEMINI_API_KEY is set (GEMINI_MODEL,
default gemini-2.5-flash), and an offline model otherwise. Every run is bounded to the newest
20 messages of history. Type a message at the ``you:`` prompt and press enter; an empty
line, end of input (Ctrl-D) or Ctrl-C quits. The conversation is stored after every turn,
so a later start resumes it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from golem_core import (
    HistoryDecodeError,
    Message,
    ModelRequest,
    Role,
    decode_history_or_raise,
    encode_history,
    trim_history,
)
from golem_shell import Agent, FunctionModel, Model, RunError, infer_model


def offline_reply(request: ModelRequest) -> str:
    turns = sum(1 for m in request.messages if m.role is Role.USER)
    last = request.messages[-1].text
    return f"(offline model) You said {last!r}. That is message {turns} from you I can see."


def choose_model() -> tuple[Model, str]:
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
        name = "openai:" + os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
        return infer_model(name), name
    if os.environ.get("ANTHROPIC_API_KEY"):
        name = "anthropic:" + os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")
        return infer_model(name), name
    if os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY"):
        name = "google:" + os.environ.get("GEMINI_MODEL", "gemini-2.5-flash")
        return infer_model(name), name
    return FunctionModel(offline_reply, name="offline"), "offline (no API key set)"


def load(path: Path) -> tuple[Message, ...]:
    if not path.exists():
        return ()
    try:
        return decode_history_or_raise(path.read_bytes())
    except HistoryDecodeError as error:  # names the JSON path and what was wrong
        sys.exit(f"cannot resume {path}: {error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=Path, default=Path("conversation.json"))
    args = parser.parse_args()
    model, label = choose_model()
    agent = Agent(
        model,
        instructions="You are a friendly, concise assistant.",
        history_processor=trim_history(20),
    )
    history = load(args.history)
    print(f"model: {label}; history: {args.history} ({len(history)} messages)")
    print("type a message and press enter; an empty line, Ctrl-D or Ctrl-C quits")
    while True:
        try:
            prompt = input("you: ").strip()
        except (EOFError, KeyboardInterrupt):
            print()
            break
        if not prompt:
            break
        try:
            result = agent.run_with_history_sync(history, prompt)
        except KeyboardInterrupt:  # the run is cancelled; the stored history keeps every turn
            print("\ninterrupted: this turn was not stored")
            break
        except RunError as e:
            print(f"error: {e}")
            if e.partial is not None:
                history = e.partial.messages
            continue
        history = result.messages
        args.history.write_bytes(encode_history(history))
        print(f"assistant: {result.output}")


if __name__ == "__main__":
    main()
