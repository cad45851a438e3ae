"""The values that tests/golden/v1/*.json hold, built in code.

The golden files are never edited; this module says what each must keep decoding to.
"""

from __future__ import annotations

from datetime import UTC, datetime

from golem_core import (
    DataPart,
    Message,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
    Usage,
)

RUN = "0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b"
CONV = "0193a1b2-c3d4-7000-8000-000000000001"

GOLDEN: dict[str, tuple[Message, ...]] = {
    "roles_and_text": (
        Message.system("You are terse."),
        Message.user("Hello, wörld ✓"),
        Message.assistant("Hi."),
    ),
    "media_parts": (
        Message(
            Role.USER,
            (
                TextPart("What is in these?"),
                URLPart("https://example.com/cat.png", "image", media_type="image/png"),
                URLPart("https://example.com/a.mp3", "audio"),
                URLPart("https://example.com/v.mp4", "video", media_type="video/mp4"),
                URLPart("https://example.com/doc.pdf", "document", media_type="application/pdf"),
                DataPart(b"\x89PNG\r\n\x1a\n\x00\xff", "image", "image/png"),
                DataPart(b"%PDF-1.7", "document", "application/pdf"),
            ),
        ),
    ),
    "tool_round_trip": (
        Message.user("Weather in Paris and Oslo?"),
        Message(
            Role.ASSISTANT,
            (
                ThinkingPart("Two cities: call twice.", signature="EqQBCkgIAhABGAIiQ"),
                ThinkingPart("c2lnbmVkLXJlZGFjdGVk", redacted=True),
                ToolCallPart("call_1", "get_weather", '{"city":"Paris"}'),
                ToolCallPart("call_2", "get_weather", '{"city":"Oslo"}'),
            ),
            run_id=RUN,
            conversation_id=CONV,
            created_at=datetime(2026, 12, 2, 16, 17, 38, 123000, tzinfo=UTC),
            model="gpt-4o-mini-2024-07-18",
            usage=Usage(
                input_tokens=120,
                output_tokens=40,
                cache_read_tokens=64,
                cache_write_tokens=0,
                reasoning_tokens=12,
            ),
            finish_reason="tool_calls",
        ),
        Message.tool_result("call_1", "get_weather", "18 C, clear"),
        Message.tool_result("call_2", "get_weather", "station offline", failed=True),
        Message(
            Role.ASSISTANT,
            (TextPart("Paris is 18 C; Oslo is unknown."),),
            run_id=RUN,
            conversation_id=CONV,
            usage=Usage(input_tokens=200, output_tokens=15),
            finish_reason="stop",
        ),
    ),
    "truncated_arguments": (
        Message.user("Write the report."),
        Message(
            Role.ASSISTANT,
            (
                ToolCallPart("call_9", "write_file", '{"path":"report.md","body":"# Rep'),
                ToolCallPart(None, "no_id_call", ""),
            ),
            finish_reason="length",
        ),
    ),
    "forward_compatible": (
        Message(
            Role.USER,
            (
                TextPart("hi", extra=(("cacheControl", '{"type":"ephemeral"}'),)),
                UnknownPart(
                    "audio_transcript",
                    (("text", '"hello"'), ("confidence", "0.97")),
                ),
            ),
            extra=(("priority", '"high"'), ("labels", '["a","b"]')),
        ),
        Message(
            Role.ASSISTANT,
            (TextPart("ok"),),
            usage=Usage(input_tokens=3, output_tokens=1, extra=(("costMicros", "42"),)),
        ),
    ),
}
