"""Recorded streams: golem's decoding and accumulation against each official SDK's.

One op per provider, on the very bytes of a recorded stream under ``tests/fixtures``:

- golem: ``SSEDecoder.feed`` (bytes to events), then the provider's ``StreamDecoder``
  (events to deltas, folded into the message), then ``finish()``: the message;
- the SDK: its own SSE decoder, its own event types built from each event's JSON, and
  its own stream accumulation: openai ``ChatCompletionStreamState`` (Chat Completions)
  and ``ResponseStreamState`` (Responses), anthropic ``accumulate_event``; google-genai
  has no accumulator, so its SSE line reader and ``GenerateContentResponse`` per chunk
  with the text and calls collected, as its documentation shows.

Every SDK is optional: without one, its op is left out.

``partial_json_backslashes`` (golem only, at n = 2k, 8k, 32k characters): what
``stream_output`` shows of a structured answer cut inside a string holding a run of
``n`` backslashes (``parse_partial``), linear in ``n`` (a backtracking search made it
quadratic: 0.29 s / 7.1 s / 91 s).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.timing import Op
from golem_core.wire import SSEDecoder, anthropic, gemini, openai, openai_responses
from golem_shell.tools._partial_json import parse_partial

__all__ = ["STREAMS", "stream_ops"]

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"

STREAMS = {
    "openai": "openai/stream_tool_calls_parallel.sse",
    "anthropic": "anthropic/stream_thinking_tool_use.sse",
    "gemini": "gemini/stream_parallel_calls.sse",
    "responses": "openai_responses/stream_reasoning_function_calls.sse",
}
"""Per provider, the recorded stream (a complete answer with tool calls)."""

_DECODERS: dict[str, Callable[[], Any]] = {
    "openai": openai.StreamDecoder,
    "anthropic": anthropic.StreamDecoder,
    "gemini": gemini.StreamDecoder,
    "responses": openai_responses.StreamDecoder,
}


def golem_stream(provider: str, data: bytes) -> object:
    decoder = _DECODERS[provider]()
    for event in SSEDecoder().feed(data):
        decoder.feed(event)
    return decoder.finish().unwrap()


def _openai_chat(data: bytes) -> object:
    from openai._models import construct_type
    from openai._streaming import SSEDecoder as OpenAISSE
    from openai.lib.streaming.chat._completions import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = ChatCompletionStreamState()
    for sse in OpenAISSE().iter_bytes(iter([data])):
        if sse.data.startswith("[DONE]"):
            break
        state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=json.loads(sse.data)))
    return state.get_final_completion()


def _openai_responses(data: bytes) -> object:
    from openai import omit
    from openai._models import construct_type
    from openai._streaming import SSEDecoder as OpenAISSE
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
    for sse in OpenAISSE().iter_bytes(iter([data])):
        if sse.data.startswith("[DONE]"):
            break
        state.handle_event(construct_type(type_=ResponseStreamEvent, value=json.loads(sse.data)))
    return state._completed_response


def _anthropic(data: bytes) -> object:
    from anthropic._models import construct_type
    from anthropic._streaming import SSEDecoder as AnthropicSSE
    from anthropic.lib.streaming._messages import accumulate_event
    from anthropic.types import RawMessageStreamEvent

    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    for sse in AnthropicSSE().iter_bytes(iter([data])):
        if sse.event in ("ping", "error"):
            continue
        event: Any = construct_type(type_=RawMessageStreamEvent, value=json.loads(sse.data))
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
    return snapshot


def _gemini(data: bytes) -> object:
    from google.genai import _api_client, types

    texts: list[str] = []
    calls: list[object] = []
    last: Any = None
    for line in _api_client._iter_sse_lines(iter([data])):
        if not line.startswith("data:"):
            continue
        chunk: Any = types.GenerateContentResponse._from_response(
            response=json.loads(line[5:]), kwargs={}
        )
        last = chunk
        for candidate in chunk.candidates or ():
            for part in (candidate.content and candidate.content.parts) or ():
                if part.text:
                    texts.append(part.text)
                if part.function_call:
                    calls.append(part.function_call)
    return "".join(texts), calls, last and last.usage_metadata


_SDKS: dict[str, tuple[str, Callable[[bytes], object]]] = {
    "openai": ("openai", _openai_chat),
    "anthropic": ("anthropic", _anthropic),
    "gemini": ("google-genai", _gemini),
    "responses": ("openai", _openai_responses),
}


def stream_ops() -> list[Op]:
    """Per provider: golem's op and, when its SDK imports and reads the stream, the SDK's."""
    ops: list[Op] = []
    for provider, path in STREAMS.items():
        data = (FIXTURES / path).read_bytes()
        name = f"stream_{provider}"
        golem_stream(provider, data)  # the stream decodes, or the benchmark stops here
        ops.append(Op("golem", name, 0, lambda p=provider, d=data: golem_stream(p, d)))
        lib, sdk = _SDKS[provider]
        try:
            sdk(data)
        except ImportError:
            continue
        ops.append(Op(f"{lib}-sdk", name, 0, lambda f=sdk, d=data: f(d)))
    for n in (2_000, 8_000, 32_000):
        cut = '"' + "\\" * n + "x"  # a string cut off after a run of n backslashes
        ops.append(Op("golem", "partial_json_backslashes", n, lambda c=cut: parse_partial(c)))
    return ops
