"""Native structured output that providers refuse (issue 33, item 11; ADR 0120).

Every body golem builds for ``output_mode="native"``, for a table of output types x
provider models x (with a tool, without), is checked against each provider's
documented structured-output rules (``violations``: one rule per documented limit)
and, where the official SDK is installed (the ``test`` extra), against its request
types. Each provider either gets a body it accepts, or the run uses the tool (a local
fallback, ``Output.fallback``), or the encoder refuses locally with a clear error.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import re
from typing import Any, Literal, NotRequired, TypedDict

import attrs
import pytest
from returns.result import Failure, Success

from golem_core import Message, ModelRequest, Role, TextPart, ToolDefinition
from golem_core.wire import anthropic as anthropic_wire
from golem_core.wire import gemini as gemini_wire
from golem_core.wire._cache import strip_cache_markers
from golem_shell import UsageError
from golem_shell.models import AnthropicModel, GeminiModel, OpenAIModel, OpenAIResponsesModel
from golem_shell.tools._output import Output

# -- the output types --------------------------------------------------------------------


@attrs.define
class Point:
    """A point."""

    x: int
    y: int


@attrs.define
class Node:
    value: int
    children: list[Node]


@attrs.define
class Chain:
    name: str
    next: Chain | None = None


class Tree(TypedDict):
    label: str
    kids: list[Tree]


class Loose(TypedDict, total=False):
    a: int
    b: str


class Mixed(TypedDict):
    kind: Literal["x", "y"]
    note: NotRequired[str]


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@attrs.define
class Event:
    when: dt.datetime
    color: Color
    tags: list[list[str]]
    score: float | None = None
    flag: Literal[True, None] = None


@attrs.define
class Wide:
    a: int | str
    b: tuple[int, str]
    c: dict[str, Point]


OUTPUT_TYPES: dict[str, Any] = {
    "dict[str, int]": dict[str, int],
    "dict": dict,
    "Point": Point,
    "recursive attrs": Node,
    "recursive optional attrs": Chain,
    "recursive TypedDict": Tree,
    "TypedDict total=False": Loose,
    "Literal + NotRequired": Mixed,
    "union": int | str,
    "Literal": Literal["a", "b", 3],
    "nested lists": list[list[int]],
    "optional fields, enum, datetime": Event,
    "union, tuple, open map of classes": Wide,
    "list of classes": list[Point],
    "Optional class": Point | None,
}

# -- the models --------------------------------------------------------------------------

KEY = {"api_key": "sk-x"}
MODELS: dict[str, Any] = {
    "openai:gpt-4o-mini": OpenAIModel("gpt-4o-mini", **KEY, base_url="http://127.0.0.1:9/v1"),
    "responses:gpt-4.1": OpenAIResponsesModel("gpt-4.1", **KEY, base_url="http://127.0.0.1:9/v1"),
    "anthropic:claude-sonnet-4-5": AnthropicModel(
        "claude-sonnet-4-5", **KEY, base_url="http://127.0.0.1:9"
    ),
    "anthropic:claude-haiku-4-5": AnthropicModel(
        "claude-haiku-4-5", **KEY, base_url="http://127.0.0.1:9"
    ),
    "anthropic:claude-sonnet-4-0": AnthropicModel(
        "claude-sonnet-4-0", **KEY, base_url="http://127.0.0.1:9"
    ),
    "gemini:gemini-2.5-flash": GeminiModel("gemini-2.5-flash", **KEY),
    "gemini:gemini-2.0-flash": GeminiModel("gemini-2.0-flash", **KEY),
    "gemini:gemini-3-pro-preview": GeminiModel("gemini-3-pro-preview", **KEY),
}

TOOL = ToolDefinition(
    "lookup",
    "Look something up.",
    {
        "type": "object",
        "properties": {"key": {"type": "string"}},
        "required": ["key"],
        "additionalProperties": False,
    },
)
PROMPT = (Message(Role.USER, (TextPart("Go."),)),)


def request_for(output: Output, *, with_tool: bool) -> ModelRequest:
    tools = ((TOOL,) if with_tool else ()) + (
        (output.definition,) if output.definition is not None else ()
    )
    return ModelRequest(
        messages=PROMPT,
        tools=tools,
        tool_choice_required=output.definition is not None and not with_tool,
        output_schema=output.native,
    )


def encode(name: str, request: ModelRequest) -> dict[str, Any]:
    """The body the model's adapter sends (the Gemini codec is given the model name, as
    its adapter gives it)."""
    model = MODELS[name]
    if name.startswith("gemini:"):
        match gemini_wire.encode_request(request, model=model.model_name):
            case Success(body):
                return dict(body)
            case Failure(error):
                raise UsageError(error.message)
    parsed: dict[str, Any] = strip_cache_markers(json.loads(model._body(request, stream=False)))
    return parsed


# -- the documented rules: one function per limit ------------------------------------------


def nodes(schema: Any, path: str = "$") -> list[tuple[str, dict[str, Any]]]:
    """Every subschema (``$defs`` included) with its path."""
    out: list[tuple[str, dict[str, Any]]] = []
    if not isinstance(schema, dict):
        return out
    out.append((path, schema))
    for name, sub in (schema.get("properties") or {}).items():
        out += nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        out += nodes(schema["items"], f"{path}[]")
    for key in ("anyOf", "allOf", "oneOf", "prefixItems"):
        for k, sub in enumerate(schema.get(key) or ()):
            out += nodes(sub, f"{path}.{key}[{k}]")
    if isinstance(schema.get("additionalProperties"), dict):
        out += nodes(schema["additionalProperties"], f"{path}.additionalProperties")
    for key in ("$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items():
            out += nodes(sub, f"{path}.{key}.{name}")
    return out


def is_object(node: dict[str, Any]) -> bool:
    return node.get("type") == "object" or "properties" in node


def cycles(schema: Any) -> set[str]:
    """Definitions that reach themselves through ``$ref`` (computed here, independently
    of golem's own ``recursive_defs``)."""
    defs = {**(schema.get("$defs") or {}), **(schema.get("definitions") or {})}
    refs = {
        n: set(re.findall(r'"#/(?:\$defs|definitions)/([^"]+)"', json.dumps(d)))
        for n, d in defs.items()
    }
    found = set()
    for name in defs:
        frontier, seen = set(refs[name]), set()
        while frontier:
            other = frontier.pop()
            if other == name:
                found.add(name)
                break
            if other not in seen:
                seen.add(other)
                frontier |= refs.get(other, set())
    return found


# OpenAI: https://platform.openai.com/docs/guides/structured-outputs (supported schemas)
OPENAI_STRICT_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "$defs", "$ref", "description", "title", "format", "pattern", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip
OPENAI_FORMATS = {
    "date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid",
}  # fmt: skip


def openai_rules(spec: dict[str, Any]) -> list[str]:
    bad: list[str] = []
    if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", spec.get("name", "")):
        bad.append(f"name {spec.get('name')!r} must match ^[a-zA-Z0-9_-]{{1,64}}$")
    schema = spec["schema"]
    if spec.get("strict") is not True:
        return bad  # without strict, any JSON Schema is taken (and not enforced)
    if schema.get("type") != "object":
        bad.append("strict: the root must be an object")
    for path, node in nodes(schema):
        if set(node) - OPENAI_STRICT_KEYWORDS:
            bad.append(f"strict: {path} uses {sorted(set(node) - OPENAI_STRICT_KEYWORDS)}")
        if is_object(node) and node.get("additionalProperties") is not False:
            bad.append(f"strict: {path} must set additionalProperties: false")
        if is_object(node) and sorted(node.get("required", [])) != sorted(
            node.get("properties", {})
        ):
            bad.append(f"strict: {path} must list every property as required")
        if "format" in node and node["format"] not in OPENAI_FORMATS:
            bad.append(f"strict: {path} format {node['format']!r} is not supported")
        if len(node.get("enum", ())) > 1000:
            bad.append(f"strict: {path} has more than 1000 enum values")
        if path.count(".properties") > 10 or path.count(".") > 10 + path.count("$defs"):
            bad.append(f"strict: {path} nests deeper than 10 levels")
    return bad


# Anthropic: https://docs.claude.com/en/docs/build-with-claude/structured-outputs
# (JSON Schema limitations; schema complexity limits)
ANTHROPIC_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "minItems", "enum",
    "const", "anyOf", "allOf", "$ref", "$defs", "definitions", "description", "title",
    "default", "format", "pattern",
}  # fmt: skip
ANTHROPIC_FORMATS = {
    "date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid",
}  # fmt: skip


def anthropic_rules(model: str, output_config: dict[str, Any]) -> list[str]:
    bad: list[str] = []
    if not anthropic_wire.supports_structured_output(model):
        bad.append(f"{model} has no structured outputs (Claude 4.5 and later)")
    fmt = output_config["format"]
    if fmt.get("type") != "json_schema":
        bad.append("format.type must be json_schema")
    schema = fmt["schema"]
    if cycles(schema):
        bad.append(f"recursive schemas are not supported ({sorted(cycles(schema))})")
    optional = unions = 0
    for path, node in nodes(schema):
        if set(node) - ANTHROPIC_KEYWORDS:
            bad.append(f"{path} uses unsupported {sorted(set(node) - ANTHROPIC_KEYWORDS)}")
        if is_object(node) and node.get("additionalProperties") is not False:
            bad.append(f"{path}: additionalProperties must be false")
        if node.get("minItems", 0) not in (0, 1):
            bad.append(f"{path}: minItems other than 0 or 1")
        if "format" in node and node["format"] not in ANTHROPIC_FORMATS:
            bad.append(f"{path}: format {node['format']!r} is not supported")
        if any(isinstance(v, dict | list) for v in node.get("enum", ())):
            bad.append(f"{path}: complex types in enum")
        if isinstance(node.get("$ref"), str) and not node["$ref"].startswith("#"):
            bad.append(f"{path}: external $ref")
        if not {"type", "anyOf", "allOf", "enum", "const", "$ref"} & set(node):
            bad.append(f"{path}: a schema without a type")
        for name, sub in (node.get("properties") or {}).items():
            optional += name not in node.get("required", ())
            unions += isinstance(sub, dict) and (
                "anyOf" in sub or isinstance(sub.get("type"), list)
            )
    if optional > 24:
        bad.append(f"{optional} optional properties (limit 24)")
    if unions > 16:
        bad.append(f"{unions} union-typed properties (limit 16)")
    return bad


# Gemini: https://ai.google.dev/gemini-api/docs/structured-output (responseJsonSchema;
# structured outputs with tools: Gemini 3 only)
def gemini_rules(model: str, body: dict[str, Any]) -> list[str]:
    bad: list[str] = []
    config = body.get("generationConfig", {})
    tools = body.get("tools", [])
    if "responseJsonSchema" in config and config.get("responseMimeType") != "application/json":
        bad.append("responseJsonSchema needs responseMimeType application/json")
    if "responseJsonSchema" in config and "responseSchema" in config:
        bad.append("responseSchema must be omitted when responseJsonSchema is set")
    json_out = config.get("responseMimeType") == "application/json"
    major = re.search(r"gemini-(\d+)", model)
    before_3 = major is None or int(major.group(1)) < 3
    if json_out and before_3 and any("functionDeclarations" in t for t in tools):
        bad.append(f"{model}: function calling with responseMimeType application/json")
    schema = config.get("responseJsonSchema")
    if schema is None:
        return bad
    recursive = cycles(schema)
    for path, node in nodes(schema):
        if any(
            not isinstance(v, str | int | float) or isinstance(v, bool)
            for v in node.get("enum", ())
        ):
            bad.append(f"{path}: enum values must be strings or numbers")
        if "$ref" in node and any(not k.startswith("$") for k in node):
            bad.append(f"{path}: keywords beside $ref")
        for name in node.get("required", ()):
            sub = json.dumps((node.get("properties") or {}).get(name))
            if any(f'"#/$defs/{r}"' in sub for r in recursive):
                bad.append(f"{path}.{name}: a cyclic reference in a required property")
    return bad


def violations(name: str, body: dict[str, Any]) -> list[str]:
    provider, model = name.split(":", 1)
    if provider == "openai":
        fmt = body.get("response_format")
        return [] if fmt is None else openai_rules(fmt["json_schema"])
    if provider == "responses":
        fmt = body.get("text", {}).get("format")
        return [] if fmt is None else openai_rules(fmt)
    if provider == "anthropic":
        config = body.get("output_config")
        return [] if config is None else anthropic_rules(model, config)
    return gemini_rules(model, body)


# -- the table -----------------------------------------------------------------------------

CASES = [(t, m, with_tool) for t in OUTPUT_TYPES for m in MODELS for with_tool in (False, True)]


@pytest.mark.parametrize(("type_name", "model_name", "with_tool"), CASES)
def test_every_native_body_meets_the_providers_documented_rules(
    type_name: str, model_name: str, with_tool: bool
) -> None:
    output = Output(OUTPUT_TYPES[type_name], "native", MODELS[model_name])
    body = encode(model_name, request_for(output, with_tool=with_tool))
    assert violations(model_name, body) == []
    native = output.mode == "native"
    if model_name.startswith(("openai", "responses")):
        assert native  # OpenAI takes every schema golem writes (strict only when it can)
    if model_name.startswith("anthropic"):
        assert native == ("output_config" in body)
    if model_name.startswith("gemini"):
        config = body.get("generationConfig", {})
        system = json.dumps(body.get("systemInstruction", {}))
        # native: either the schema constrains the answer, or (before 3, with tools)
        # it travels in the instructions
        assert ("responseJsonSchema" in config) != ("JSON Schema" in system)


def test_the_table_holds_what_providers_refused() -> None:
    """The cases issue 33 found are in the table, and each has its answer."""
    anthropic = MODELS["anthropic:claude-sonnet-4-5"]
    for tp in (dict[str, int], Node, Tree, Wide):
        output = Output(tp, "native", anthropic)
        assert output.mode == "tool" and output.fallback is not None
    assert "open map" in (Output(dict[str, int], "native", anthropic).fallback or "")
    assert "recursive" in (Output(Node, "native", anthropic).fallback or "")
    assert Output(Point, "native", anthropic).mode == "native"
    gemini = Output(Point, "native", MODELS["gemini:gemini-2.5-flash"])
    body = encode("gemini:gemini-2.5-flash", request_for(gemini, with_tool=True))
    assert "responseMimeType" not in body.get("generationConfig", {})
    assert "functionDeclarations" in body["tools"][0]
    three = encode("gemini:gemini-3-pro-preview", request_for(gemini, with_tool=True))
    assert three["generationConfig"]["responseMimeType"] == "application/json"


def test_anthropic_refuses_locally_a_schema_it_cannot_take() -> None:
    """A native schema that reaches the Anthropic encoder anyway (a run whose model was
    overridden, a hand-made request) is refused before it is sent, saying why."""
    schema = Output(dict[str, int], "tool", None).definition
    assert schema is not None
    request = ModelRequest(messages=PROMPT, output_schema=schema)
    result = anthropic_wire.encode_request(request, model="claude-sonnet-4-5", stream=False)
    assert isinstance(result, Failure)
    message = result.failure().message
    assert "open map" in message and "output_mode='tool'" in message
    with pytest.raises(UsageError, match="recursive"):
        MODELS["anthropic:claude-sonnet-4-5"]._body(
            ModelRequest(messages=PROMPT, output_schema=Output(Node, "tool", None).definition),
            stream=False,
        )


def test_gemini_without_a_model_name_keeps_tools_and_prompts_for_the_schema() -> None:
    output = Output(Point, "native", MODELS["gemini:gemini-2.5-flash"])
    request = request_for(output, with_tool=True)
    body = gemini_wire.encode_request(request).unwrap()
    assert "responseMimeType" not in body.get("generationConfig", {})
    assert '"x"' in body["systemInstruction"]["parts"][-1]["text"]
    assert gemini_rules("gemini-2.5-flash", body) == []
    alone = gemini_wire.encode_request(request_for(output, with_tool=False)).unwrap()
    assert alone["generationConfig"]["responseMimeType"] == "application/json"


# -- the official SDK types ------------------------------------------------------------------


@pytest.mark.parametrize(("type_name", "model_name", "with_tool"), CASES)
def test_every_native_body_validates_against_the_official_sdk(
    type_name: str, model_name: str, with_tool: bool
) -> None:
    from pydantic import TypeAdapter

    output = Output(OUTPUT_TYPES[type_name], "native", MODELS[model_name])
    body = json.loads(json.dumps(encode(model_name, request_for(output, with_tool=with_tool))))
    provider = model_name.split(":", 1)[0]
    if provider == "openai":
        pytest.importorskip("openai")
        from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

        TypeAdapter(CompletionCreateParamsNonStreaming).validate_python(body)
    elif provider == "responses":
        pytest.importorskip("openai")
        from openai.types.responses.response_create_params import (
            ResponseCreateParamsNonStreaming,
        )

        TypeAdapter(ResponseCreateParamsNonStreaming).validate_python(body)
    elif provider == "anthropic":
        pytest.importorskip("anthropic")
        from anthropic.lib._parse._transform import transform_schema
        from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

        TypeAdapter(MessageCreateParamsNonStreaming).validate_python(body)
        if "output_config" in body:  # the SDK's own shaping takes it and changes no rule
            schema = body["output_config"]["format"]["schema"]
            shaped = transform_schema(schema)
            shaped_config = {"format": {"type": "json_schema", "schema": shaped}}
            assert anthropic_rules(model_name.split(":", 1)[1], shaped_config) == []
    else:
        pytest.importorskip("google.genai")
        from google.genai import types

        if "generationConfig" in body:
            types.GenerationConfig.model_validate_json(json.dumps(body["generationConfig"]))
        for tool in body.get("tools", []):
            types.Tool.model_validate_json(json.dumps(tool))
        if "systemInstruction" in body:
            types.Content.model_validate_json(json.dumps(body["systemInstruction"]))
