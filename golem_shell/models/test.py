"""``TestModel``: an offline model that exercises an agent with no script at all.

Owns answering a request from its tool definitions alone: the first answer of a run
calls every tool once with arguments generated from the tool's JSON Schema; the next
gives the final answer: a valid structured output (the ``final_result`` tool, or JSON
text when the request carries an ``output_schema``) or a text that reports what the
tools returned. ``example_from_schema`` (the generator) is public for tests of your own.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from golem_core import (
    Message,
    ModelRequest,
    Role,
    StreamDone,
    StreamEvent,
    TextPart,
    ToolCallPart,
    ToolDefinition,
)
from golem_shell.models.function import _with_usage, deltas_of
from golem_shell.tools._output import OUTPUT_TOOL_NAME

__all__ = ["TestModel", "example_from_schema"]

_MAX_DEPTH = 6
_FORMATS = {
    "date-time": "2024-01-02T03:04:05+00:00",
    "date": "2024-01-02",
    "time": "03:04:05",
    "uuid": "12345678-1234-4678-9234-567812345678",
    "email": "someone@example.com",
    "uri": "https://example.com/",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "duration": "P1D",
}
_PATTERN_CANDIDATES = (
    "1.5",
    "1",
    "12",
    "1234",
    "12345",
    "a",
    "A",
    "abc",
    "a1",
    "x_1",
    "2024-01-02",
)


def example_from_schema(schema: dict[str, Any], *, seed: int = 0) -> Any:
    """A JSON value valid under ``schema`` (the subset golem and pydantic write).

    Deterministic for a given ``seed``; different seeds vary enum choices, union
    options, numbers and booleans. Understands ``type`` (also lists of types),
    ``properties``/``required``/``additionalProperties``, ``items``/``prefixItems`` and
    item counts, ``enum``, ``const``, ``anyOf``/``oneOf``/``allOf``, local ``$ref`` into
    ``$defs``, string ``format`` and length, numeric bounds. A ``pattern`` is met only
    when one of a few stock strings matches it.
    """
    return _Generator(schema, random.Random(seed)).value(schema, 0)


class _Generator:
    def __init__(self, root: dict[str, Any], rng: random.Random) -> None:
        self.root = root
        self.rng = rng

    def resolve(self, ref: str) -> dict[str, Any]:
        node: Any = self.root
        for key in ref.removeprefix("#/").split("/"):
            node = node.get(key, {}) if isinstance(node, dict) else {}
        return node if isinstance(node, dict) else {}

    def value(self, schema: Any, depth: int) -> Any:
        if not isinstance(schema, dict):
            return None
        if "$ref" in schema:
            return self.value(self.resolve(schema["$ref"]), depth + 1)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return self.rng.choice(list(schema["enum"]))
        for key in ("anyOf", "oneOf"):
            if schema.get(key):
                return self.value(self.option(schema[key], depth), depth)
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                merged.update(self.resolve(part["$ref"]) if "$ref" in part else part)
            merged.update({k: v for k, v in schema.items() if k != "allOf"})
            return self.value(merged, depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"] or ["null"]
            kind = kinds[0]
        if kind is None:
            if "properties" in schema:
                kind = "object"
            elif "items" in schema or "prefixItems" in schema:
                kind = "array"
            else:
                return "test"
        return self.typed(kind, schema, depth)

    def option(self, options: list[Any], depth: int) -> Any:
        null = [o for o in options if isinstance(o, dict) and o.get("type") == "null"]
        if depth >= _MAX_DEPTH and null:
            return null[0]
        rest = [o for o in options if o not in null] or null
        return self.rng.choice(rest)

    def typed(self, kind: str, schema: dict[str, Any], depth: int) -> Any:
        if kind == "null":
            return None
        if kind == "boolean":
            return self.rng.choice([True, False])
        if kind == "integer":
            low, high = self.bounds(schema, integer=True)
            return self.rng.randint(low, high)
        if kind == "number":
            low, high = self.bounds(schema, integer=False)
            return round(self.rng.uniform(low, high), 3) if low < high else float(low)
        if kind == "string":
            return self.string(schema)
        if kind == "array":
            return self.array(schema, depth)
        if kind == "object":
            return self.object(schema, depth)
        return "test"

    def bounds(self, schema: dict[str, Any], *, integer: bool) -> tuple[Any, Any]:
        step = 1 if integer else 0.001
        high = schema.get("maximum")
        if high is None and "exclusiveMaximum" in schema:
            high = schema["exclusiveMaximum"] - step
        low = schema.get("minimum")
        if low is None and "exclusiveMinimum" in schema:
            low = schema["exclusiveMinimum"] + step
        if low is None:
            low = 0 if high is None else min(0, high - 10)
        if high is None:
            high = low + 10
        if integer:
            low, high = int(-(-low // 1)), int(high // 1)
        return low, max(low, high)

    def string(self, schema: dict[str, Any]) -> str:
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            return _FORMATS[fmt]
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            for candidate in _PATTERN_CANDIDATES:
                try:
                    if re.search(pattern, candidate):
                        return candidate
                except re.error:
                    break
        low = int(schema.get("minLength", 1))
        high = int(schema.get("maxLength", max(low, 8)))
        letters = "abcdefghijklmnopqrstuvwxyz"
        length = max(low, min(high, self.rng.randint(1, 8)))
        return "".join(letters[(i * 7 + self.rng.randrange(26)) % 26] for i in range(length))

    def array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        if "prefixItems" in schema:
            return [self.value(s, depth + 1) for s in schema["prefixItems"]]
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", low + 2))
        count = low if depth >= _MAX_DEPTH else max(low, min(high, 1 if depth < 3 else 0))
        items = schema.get("items", {})
        return [self.value(items, depth + 1) for _ in range(count)]

    def object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        properties = schema.get("properties", {})
        required = set(schema.get("required", ()))
        out: dict[str, Any] = {}
        for name, sub in properties.items():
            if name in required or depth < 2:
                out[name] = self.value(sub, depth + 1)
        extra = schema.get("additionalProperties")
        if not properties and isinstance(extra, dict) and depth < 3:
            out["key"] = self.value(extra, depth + 1)
        return out


class TestModel:
    """An offline model that answers from the request alone: no script, no network.

    In each run it first calls every tool it is offered once (all of them, or those
    named in ``call_tools``), with arguments generated from each tool's JSON Schema
    (``example_from_schema``). Once the tools have answered it gives the final answer:

    - structured output: a call of the ``final_result`` tool with a generated valid
      value, or (native mode, the request has an ``output_schema``) that JSON as text;
      ``output`` (a JSON value, e.g. ``{"city": "Oslo"}``) replaces the generated one;
    - text output: ``output_text``, else a JSON object of what each tool returned, else
      ``"success (no tool calls)"``.

    A rejected output gets a fresh attempt with the next seed. ``requests`` records every
    request. Each answer reports an estimated usage (``estimate_usage``, counted as
    pydantic-ai's ``TestModel`` counts), so token and cost limits fire offline. For tests,
    demos and type-checking an agent's wiring offline.

    Args:
        call_tools: ``"all"`` or the names of the tools to call.
        output_text: the text answer of a text-output run.
        output: the structured output (as JSON) instead of a generated one.
        seed: varies the generated values (deterministic for a seed).
    """

    __test__ = False  # not a pytest test class
    supports_native_output = True

    def __init__(
        self,
        *,
        call_tools: Sequence[str] | Literal["all"] = "all",
        output_text: str | None = None,
        output: Any = None,
        seed: int = 0,
        name: str = "test",
    ) -> None:
        self.call_tools = call_tools if call_tools == "all" else tuple(call_tools)
        self.output_text = output_text
        self.output = output
        self.seed = seed
        self._name = name
        self._next_call = 0
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"TestModel(call_tools={self.call_tools!r}, seed={self.seed})"

    async def request(self, request: ModelRequest) -> Message:
        self.requests.append(request)
        return _with_usage(request, self._answer(request))

    async def request_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        message = await self.request(request)
        for delta in deltas_of(message):
            yield delta
        yield StreamDone(message)

    # -- deciding the answer ----------------------------------------------------------

    def _answer(self, request: ModelRequest) -> Message:
        run = _this_run(request)
        tools = [
            t
            for t in request.tools
            if t.name != OUTPUT_TOOL_NAME
            and (self.call_tools == "all" or t.name in self.call_tools)
        ]
        names = {t.name for t in tools}
        called = any(
            isinstance(p, ToolCallPart) and p.name in names
            for m in run
            if m.role is Role.ASSISTANT
            for p in m.parts
        )
        if tools and not called:
            return Message.assistant(
                tool_calls=[self._call(t, self.seed) for t in tools],
            )
        attempt = sum(
            1
            for m in run
            if m.role is Role.ASSISTANT
            and not any(isinstance(p, ToolCallPart) and p.name in names for p in m.parts)
        )
        seed = self.seed + attempt
        if request.output_schema is not None:
            value = self._output_value(request.output_schema, seed)
            return Message.assistant(json.dumps(value, ensure_ascii=False))
        output_tool = next((t for t in request.tools if t.name == OUTPUT_TOOL_NAME), None)
        if output_tool is not None:
            return Message.assistant(tool_calls=[self._call(output_tool, seed, output=True)])
        if self.output_text is not None:
            return Message.assistant(self.output_text)
        results = {m.tool_name: m.text for m in run if m.role is Role.TOOL and m.tool_name}
        if results:
            return Message.assistant(json.dumps(results, ensure_ascii=False))
        return Message.assistant("success (no tool calls)")

    def _output_value(self, definition: ToolDefinition, seed: int) -> Any:
        if self.output is None:
            return example_from_schema(definition.parameters, seed=seed)
        properties = definition.parameters.get("properties", {})
        if set(properties) == {"response"} and not (
            isinstance(self.output, dict) and set(self.output) == {"response"}
        ):
            return {"response": self.output}  # a wrapped (non-object) output type
        return self.output

    def _call(self, definition: ToolDefinition, seed: int, *, output: bool = False) -> ToolCallPart:
        self._next_call += 1
        arguments = (
            self._output_value(definition, seed)
            if output
            else example_from_schema(definition.parameters, seed=seed)
        )
        return ToolCallPart(
            f"test_call_{self._next_call}",
            definition.name,
            json.dumps(arguments, ensure_ascii=False),
        )


def _this_run(request: ModelRequest) -> list[Message]:
    """The messages of the run making ``request``: those stamped with its run id, else
    everything from the last user prompt on."""
    if request.run_id is not None:
        mine = [m for m in request.messages if m.run_id == request.run_id]
        if mine:
            return mine
    last_user = max(
        (i for i, m in enumerate(request.messages) if m.role is Role.USER and _is_prompt(m)),
        default=0,
    )
    return list(request.messages[last_user:])


def _is_prompt(message: Message) -> bool:
    return any(isinstance(p, TextPart) for p in message.parts)
