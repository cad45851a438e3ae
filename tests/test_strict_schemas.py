"""Strict schemas (issue 37, item 5; ADR 0130) and a plain-text answer equal to a
``Literal`` output value (issue 37, item 3).

OpenAI (Chat and Responses) gets ``strict: true`` for tools and native structured output
wherever the schema can be made to qualify (objects closed, every property required,
optional ones nullable, unsupported keywords moved into the description) and ``strict:
false`` with the schema unchanged where it cannot; a ``null`` the model writes for an
optional property means "not given". Anthropic tools get ``strict: true`` on the models
that have structured outputs, within the request's documented budget; Gemini gets
``enum`` where pydantic writes ``const``. ``typing_extensions.TypedDict`` is described
like ``typing.TypedDict``.
"""

from __future__ import annotations

import enum
import json
from typing import Any, Literal

import attrs
import httpx
import pydantic
import pytest
import typing_extensions as te

from golem_core import Message, ModelRequest, ToolCallPart, ToolDefinition
from golem_core.loop import OutputInvalid, OutputValid
from golem_core.wire import anthropic as anthropic_wire
from golem_core.wire import gemini as gemini_wire
from golem_core.wire import openai as openai_wire
from golem_core.wire import openai_responses as responses_wire
from golem_shell import Agent, Tool
from golem_shell.models import OpenAIModel
from golem_shell.tools._output import Output
from golem_shell.tools._schema import json_schema, validate
from golem_shell.tools._tools import RunContext

pytestmark = pytest.mark.anyio

# -- types ---------------------------------------------------------------------------------


class Person(pydantic.BaseModel):
    """A person."""

    name: str = pydantic.Field(pattern=r"^[A-Z]")
    age: int = pydantic.Field(ge=0)
    nickname: str | None = None
    email: str = "none"


@attrs.frozen
class Point:
    x: int
    y: float = 0.0


class Cat(pydantic.BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(pydantic.BaseModel):
    kind: Literal["dog"]
    good: bool


class Pet(pydantic.BaseModel):
    pet: Cat | Dog = pydantic.Field(discriminator="kind")


class Movie(te.TypedDict):
    title: str
    year: te.NotRequired[int]


def nodes(schema: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        out.append(schema)
        for value in schema.values():
            out += nodes(value) if isinstance(value, dict | list) else []
    elif isinstance(schema, list):
        for value in schema:
            out += nodes(value)
    return out


def assert_strict_shape(schema: dict[str, Any]) -> None:
    for node in nodes(schema):
        if node.get("type") == "object" and isinstance(node.get("properties"), dict):
            assert node["additionalProperties"] is False, node
            assert sorted(node["required"]) == sorted(node["properties"]), node
        assert "default" not in node, node


def chat_body(request: ModelRequest) -> dict[str, Any]:
    return openai_wire.encode_request(request, model="gpt-4o-mini", stream=False).unwrap()


def responses_body(request: ModelRequest) -> dict[str, Any]:
    return responses_wire.encode_request(request, model="gpt-4.1", stream=False).unwrap()


def native(tp: Any) -> ToolDefinition:
    output = Output(tp, "native", OpenAIModel("gpt-4o-mini", api_key="k"))
    assert output.native is not None
    return output.native


PROMPT = (Message.user("go"),)

# -- OpenAI: structured output -------------------------------------------------------------


def test_a_pydantic_output_goes_to_chat_strict_with_the_schema_made_to_qualify() -> None:
    body = chat_body(ModelRequest(PROMPT, output_schema=native(Person)))
    spec = body["response_format"]["json_schema"]
    assert spec["strict"] is True
    schema = spec["schema"]
    assert_strict_shape(schema)
    assert schema["required"] == ["name", "age", "nickname", "email"]
    # supported keywords stay, defaults move into the description, optional is nullable
    assert schema["properties"]["name"]["pattern"] == "^[A-Z]"
    assert schema["properties"]["age"]["minimum"] == 0
    email = schema["properties"]["email"]
    assert {"type": "null"} in email["anyOf"] and '"none"' in email["description"]
    assert all("default" not in node for node in nodes(schema))


def test_a_pydantic_output_goes_to_responses_strict() -> None:
    body = responses_body(ModelRequest(PROMPT, output_schema=native(Person)))
    fmt = body["text"]["format"]
    assert fmt["strict"] is True
    assert_strict_shape(fmt["schema"])


def test_an_attrs_output_with_a_default_is_strict_and_a_tuple_becomes_items() -> None:
    body = chat_body(ModelRequest(PROMPT, output_schema=native(Point)))
    assert body["response_format"]["json_schema"]["strict"] is True
    pair = chat_body(ModelRequest(PROMPT, output_schema=native(tuple[int, str])))
    spec = pair["response_format"]["json_schema"]
    assert spec["strict"] is True
    response = spec["schema"]["properties"]["response"]
    assert "prefixItems" not in response and response["minItems"] == response["maxItems"] == 2
    assert "prefixItems" in response["description"]


@pytest.mark.parametrize("tp", [dict[str, int], dict, list, Any])
def test_a_schema_that_cannot_qualify_is_sent_unchanged_with_strict_false(tp: Any) -> None:
    definition = native(tp)
    request = ModelRequest(PROMPT, output_schema=definition)
    chat = chat_body(request)["response_format"]["json_schema"]
    responses = responses_body(request)["text"]["format"]
    for spec in (chat, responses):
        assert spec["strict"] is False
        assert spec["schema"] == definition.parameters


# -- OpenAI: tools -------------------------------------------------------------------------


def book(ctx: RunContext[None], city: str, nights: int = 1, note: str | None = None) -> str:
    """Book a room.

    Args:
        city: where.
        nights: how many nights.
        note: for the desk.
    """
    return f"{city} {nights} {note}"


BOOK = Tool.from_function(book)


def test_chat_tools_are_strict_with_optional_parameters_nullable() -> None:
    body = chat_body(ModelRequest(PROMPT, tools=(BOOK.definition,)))
    function = body["tools"][0]["function"]
    assert function["strict"] is True
    params = function["parameters"]
    assert_strict_shape(params)
    assert params["required"] == ["city", "nights", "note"]
    nights = params["properties"]["nights"]
    assert nights["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert nights["description"].startswith("how many nights.")
    # already nullable: left as it is (null is a value there)
    assert params["properties"]["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]


def test_responses_tools_are_strict_where_they_qualify_and_say_false_where_not() -> None:
    open_map = ToolDefinition("tag", "", {"type": "object", "additionalProperties": True})
    body = responses_body(ModelRequest(PROMPT, tools=(BOOK.definition, open_map)))
    assert [t["strict"] for t in body["tools"]] == [True, False]
    assert body["tools"][1]["parameters"] == open_map.parameters


async def test_a_null_for_an_optional_argument_means_not_given() -> None:
    call = ToolCallPart("c1", "book", json.dumps({"city": "Oslo", "nights": None, "note": None}))
    outcome = await BOOK.execute(RunContext(None, "r", "c"), call)
    assert "Oslo 1 None" in repr(outcome), outcome


def test_a_null_for_an_optional_output_field_means_not_given() -> None:
    output = Output(Point, "tool")
    assert output.check(ToolCallPart("c", "final_result", '{"x": 1, "y": null}')) == (
        OutputValid(Point(1, 0.0))
    )
    person = Output(Person, "native", OpenAIModel("gpt-4o-mini", api_key="k"))
    answer = '{"name": "Ada", "age": 36, "nickname": null, "email": null}'
    assert person.check(Message.assistant(answer)) == OutputValid(Person(name="Ada", age=36))
    # what the schema lost is still checked against the full type
    bad = '{"name": "ada", "age": -1, "nickname": null, "email": null}'
    assert isinstance(person.check(Message.assistant(bad)), OutputInvalid)


async def test_a_strict_native_run_over_http_takes_nulls_for_defaults() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        content = json.dumps({"x": 3, "y": None})
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
            },
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        model = OpenAIModel("gpt-4o-mini", api_key="sk-test", http_client=client)
        result = await Agent(model, output_type=Point, output_mode="native").run("a point")
    assert result.output == Point(3, 0.0)
    assert bodies[0]["response_format"]["json_schema"]["strict"] is True


# -- typing_extensions.TypedDict -----------------------------------------------------------


def test_typing_extensions_typeddict_is_described_and_validated() -> None:
    schema = json_schema(Movie)
    assert schema["required"] == ["title"] and set(schema["properties"]) == {"title", "year"}
    assert validate({"title": "Up"}, Movie) == {"title": "Up"}
    output = Output(Movie, "native", OpenAIModel("gpt-4o-mini", api_key="k"))
    assert output.check(Message.assistant('{"title": "Up", "year": null}')) == OutputValid(
        {"title": "Up"}
    )

    def rate(movie: Movie) -> str:
        """Rate a movie."""
        return movie["title"]

    assert Tool.from_function(rate).definition.parameters["properties"]["movie"]["required"] == [
        "title"
    ]


# -- Gemini: const becomes enum ------------------------------------------------------------


def test_gemini_gets_enum_where_pydantic_writes_const() -> None:
    assert '"const"' in json.dumps(json_schema(Pet))  # what pydantic writes
    definition = Output(Pet, "tool").definition
    assert definition is not None
    request = ModelRequest(PROMPT, tools=(definition,))
    body = gemini_wire.encode_request(request, model="gemini-2.5-flash").unwrap()
    sent = body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]
    assert '"const"' not in json.dumps(sent)
    assert {"enum": ["cat"], "type": "string"}.items() <= sent["$defs"]["Cat"]["properties"][
        "kind"
    ].items()
    out = gemini_wire.encode_request(
        ModelRequest(PROMPT, output_schema=definition), model="gemini-2.5-flash"
    ).unwrap()
    assert '"const"' not in json.dumps(out["generationConfig"]["responseJsonSchema"])


# -- Anthropic: strict tools ---------------------------------------------------------------


def anthropic_body(request: ModelRequest, model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    return anthropic_wire.encode_request(request, model=model, stream=False).unwrap()


def test_anthropic_tools_are_strict_on_models_with_structured_outputs() -> None:
    body = anthropic_body(ModelRequest(PROMPT, tools=(BOOK.definition,)))
    tool = body["tools"][0]
    assert tool["strict"] is True
    assert tool["input_schema"]["additionalProperties"] is False
    assert tool["input_schema"]["required"] == ["city"]  # Anthropic takes optional ones
    older = anthropic_body(ModelRequest(PROMPT, tools=(BOOK.definition,)), "claude-sonnet-4-0")
    assert "strict" not in older["tools"][0]
    assert older["tools"][0]["input_schema"] == BOOK.definition.parameters


def test_anthropic_strict_tools_stay_within_the_requests_budget() -> None:
    """At most 24 optional parameters across every strict schema of a request (and 16
    union-typed ones, 20 strict tools): a tool that would pass the budget is sent without
    ``strict``."""
    many = {f"p{k}": {"type": "string"} for k in range(15)}
    schema = {"type": "object", "properties": many, "additionalProperties": False}
    tools = (ToolDefinition("a", "", schema), ToolDefinition("b", "", schema))
    body = anthropic_body(ModelRequest(PROMPT, tools=tools))
    assert [t.get("strict") for t in body["tools"]] == [True, None]
    empty = {"type": "object", "properties": {}, "additionalProperties": False}
    twenty_one = tuple(ToolDefinition(f"t{k}", "", empty) for k in range(21))
    body = anthropic_body(ModelRequest(PROMPT, tools=twenty_one))
    assert sum(t.get("strict") is True for t in body["tools"]) == 20


# -- a plain-text answer equal to a Literal value (issue 37, item 3) -----------------------


class Answer(enum.Enum):
    YES = "yes"
    NO = "no"


@pytest.mark.parametrize("mode", ["tool", "native"])
def test_a_plain_text_answer_equal_to_a_literal_value_is_accepted(mode: str) -> None:
    model = OpenAIModel("gpt-4o-mini", api_key="k")
    output = Output(Literal["yes", "no"], mode, model)
    assert output.check(Message.assistant("yes")) == OutputValid("yes")
    assert output.check(Message.assistant(" no\n")) == OutputValid("no")
    assert output.check(Message.assistant('"yes"')) == OutputValid("yes")
    assert isinstance(output.check(Message.assistant("maybe")), OutputInvalid)
    assert Output(Answer, mode, model).check(Message.assistant("no")) == OutputValid(Answer.NO)
    assert Output(Literal["yes"] | None, mode, model).check(
        Message.assistant("yes")
    ) == OutputValid("yes")
