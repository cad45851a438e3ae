"""Offline: build a conversation, store it as JSON, load it back (no key, no network)."""

from __future__ import annotations

from golem_core import Message, ToolCallPart, decode_history, encode_history


def main() -> None:
    history = (
        Message.user("What's the weather in Paris?"),
        Message.assistant(tool_calls=[ToolCallPart("call_1", "get_weather", '{"city":"Paris"}')]),
        Message.tool_result("call_1", "get_weather", "18 C, clear"),
        Message.assistant("It is 18 C and clear in Paris."),
    )
    stored = encode_history(history)
    print(stored.decode())
    loaded = decode_history(stored).unwrap()
    print("round trip equal:", loaded == history)


if __name__ == "__main__":
    main()
