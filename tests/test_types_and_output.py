"""Types a tool or an output may use, and how structured output reaches a run.

Issue 14 items 2 (a value outside a ``Literal`` is an invalid value, never a crash),
6 (pydantic models, ``datetime``/``date``/``UUID``/``Decimal``, Sphinx docstrings,
defaults in the schema, tools returning such values) and 9 (a JSON text answer, native
structured output, ``TestModel``). ADRs 0057-0059.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import subprocess
import sys
import uuid
from decimal import Decimal
from typing import Any, Literal, NotRequired, TypedDict

import attrs
import httpx
import pydantic
import pytest

from golem_core import Message, ModelRequest, Role, ToolCallPart, ToolDefinition, check_pairing
from golem_core.wire import openai as openai_wire
from golem_shell import (
    Agent,
    AnthropicModel,
    FunctionModel,
    OpenAIModel,
    RunContext,
    RunError,
    ScriptedModel,
    Stage,
    TestModel,
    tool,
)
from golem_shell.models.test import example_from_schema
from golem_shell.tools._output import Output
from golem_shell.tools._schema import (
    ValidationFailed,
    is_pydantic_model,
    json_schema,
    to_jsonable,
    validate,
)

pytestmark = pytest.mark.anyio


def calls(*parts: ToolCallPart) -> Message:
    return Message.assistant(tool_calls=parts)


def call(id_: str, name: str, arguments: Any) -> ToolCallPart:
    return ToolCallPart(
        id_, name, arguments if isinstance(arguments, str) else json.dumps(arguments)
    )


# -- item 2: Literal values outside the Literal --------------------------------------------


def test_a_value_outside_a_literal_is_a_validation_failure_naming_the_path() -> None:
    with pytest.raises(ValidationFailed) as info:
        validate("huge", Literal["small", "large"], path="size")
    assert info.value.errors == ['size: expected one of "small", "large", got string "huge"']
    with pytest.raises(ValidationFailed, match=r"\$\[1\]: expected one of 1, 2"):
        validate([1, 3], list[Literal[1, 2]])
    with pytest.raises(ValidationFailed, match="expected one of true"):
        validate(1, Literal[True])  # 1 is not true
    with pytest.raises(ValidationFailed, match="expected one of 1"):
        validate(True, Literal[1])  # true is not 1
    assert validate(None, Literal["a"] | None) is None


def size_tool(size: Literal["small", "large"]) -> str:
    """Order a coffee."""
    return f"a {size} coffee"


async def test_a_tool_called_outside_its_literal_gets_a_failed_result_and_a_retry() -> None:
    model = ScriptedModel(
        [
            calls(call("c1", "size_tool", {"size": "huge"})),
            calls(call("c2", "size_tool", {"size": "large"})),
            "done",
        ]
    )
    result = await Agent(model, tools=[size_tool]).run("coffee")
    assert result.output == "done"
    first = model.requests[1].messages[-1]
    assert first.failed and 'size: expected one of "small", "large"' in first.text
    assert model.requests[2].messages[-1].text == "a large coffee"


async def test_a_tool_always_called_outside_its_literal_fails_the_run_with_a_partial() -> None:
    bad = calls(call("c", "size_tool", {"size": "huge"}))
    model = ScriptedModel([bad, bad, bad])
    with pytest.raises(RunError) as info:
        await Agent(model, tools=[size_tool]).run("coffee")
    assert info.value.stage is Stage.TOOL
    assert info.value.partial is not None
    assert check_pairing(info.value.partial.messages) == ()


async def test_a_literal_output_outside_the_literal_gets_corrections_then_fails() -> None:
    model = ScriptedModel(
        [
            calls(call("o1", "final_result", {"response": "maybe"})),
            calls(call("o2", "final_result", {"response": "perhaps"})),
        ]
    )
    agent = Agent(model, output_type=Literal["yes", "no"], output_retries=1)  # type: ignore[call-overload]
    with pytest.raises(RunError) as info:
        await agent.run("?")
    assert info.value.stage is Stage.OUTPUT
    assert info.value.partial is not None
    assert "maybe" in model.requests[1].messages[-1].text


async def test_a_literal_output_is_corrected() -> None:
    model = ScriptedModel(
        [
            calls(call("o1", "final_result", {"response": "maybe"})),
            calls(call("o2", "final_result", {"response": "yes"})),
        ]
    )
    agent = Agent(model, output_type=Literal["yes", "no"])  # type: ignore[call-overload]
    assert (await agent.run("?")).output == "yes"


# -- validation is strict and total (examples; the property is in properties/) -------------


@attrs.frozen
class Point:
    x: int
    _label: str = "origin"


def test_strictness_and_paths() -> None:
    assert validate({"x": 1.0, "label": "a"}, Point) == Point(1, "a")  # attrs alias
    with pytest.raises(ValidationFailed) as info:
        validate({"x": "1", "y": 2}, Point)
    assert info.value.errors == [
        "$.y: unexpected field (the fields are label, x)",
        '$.x: expected an integer, got string "1"',
    ]
    with pytest.raises(ValidationFailed, match=r"\$\.a: expected an integer or a string"):
        validate({"a": [1]}, dict[str, int | str])
    with pytest.raises(ValidationFailed, match="finite number"):
        validate(float("nan"), float)


def test_a_class_that_refuses_its_values_is_a_validation_failure() -> None:
    @attrs.frozen
    class Positive:
        n: int = attrs.field(validator=attrs.validators.gt(0))

    with pytest.raises(ValidationFailed, match=r"\$: Positive: 'n' must be > 0"):
        validate({"n": -1}, Positive)


# -- item 6: pydantic, datetime, date, UUID, Decimal, docstrings, defaults -----------------


class Address(pydantic.BaseModel):
    street: str
    zip_code: str = pydantic.Field(description="postal code", pattern=r"^\d{4}$")


class Person(pydantic.BaseModel):
    """A person."""

    name: str
    age: int = pydantic.Field(ge=0)
    address: Address | None = None


async def test_a_pydantic_model_as_output_type() -> None:
    model = ScriptedModel(
        [
            calls(call("o1", "final_result", {"name": "Ada", "age": -1})),
            calls(call("o2", "final_result", {"name": "Ada", "age": 36})),
        ]
    )
    agent = Agent(model, output_type=Person)
    result = await agent.run("who?")
    assert result.output == Person(name="Ada", age=36)
    parameters = model.requests[0].tools[0].parameters
    assert parameters["properties"]["age"]["minimum"] == 0  # pydantic's own schema
    assert parameters["$defs"]["Address"]["properties"]["zip_code"]["description"] == "postal code"
    correction = model.requests[1].messages[-1]
    assert (
        correction.failed and "age: Input should be greater than or equal to 0" in correction.text
    )


def book(
    person: Person,
    when: dt.datetime,
    day: dt.date,
    ref: uuid.UUID,
    price: Decimal,
    seats: int = 2,
    note: str | None = None,
) -> dict[str, Any]:
    """Book a table.

    :param person: who books.
    :param when: the time of the booking,
        in ISO 8601.
    :param int seats: how many seats.
    :returns: the booking.
    """
    return {"who": person.name, "when": when, "day": day, "ref": ref, "price": price * seats}


def test_a_tool_with_pydantic_datetime_uuid_decimal_parameters_is_described() -> None:
    definition = tool(book).definition
    assert definition.description == "Book a table."
    props = definition.parameters["properties"]
    assert props["when"] == {
        "type": "string",
        "format": "date-time",
        "description": "the time of the booking, in ISO 8601.",
    }
    assert props["day"]["format"] == "date"
    assert props["ref"]["format"] == "uuid"
    assert {"type": "number"} in props["price"]["anyOf"]
    assert props["seats"] == {"type": "integer", "description": "how many seats.", "default": 2}
    assert props["note"]["default"] is None
    assert props["person"]["description"] == "who books."
    assert props["person"]["properties"]["address"]["anyOf"][0] == {"$ref": "#/$defs/Address"}
    assert "Address" in definition.parameters["$defs"]  # one $defs, at the root
    assert definition.parameters["required"] == ["person", "when", "day", "ref", "price"]


async def test_a_tool_taking_and_returning_datetime_uuid_decimal_and_pydantic_values() -> None:
    arguments = {
        "person": {"name": "Ada", "age": 36},
        "when": "2026-12-03T19:30:00+01:00",
        "day": "2026-12-03",
        "ref": "12345678-1234-4678-9234-567812345678",
        "price": "12.50",
    }
    model = ScriptedModel([calls(call("b", "book", arguments)), "booked"])
    result = await Agent(model, tools=[book]).run("book")
    assert result.output == "booked"
    returned = json.loads(model.requests[1].messages[-1].text)
    assert returned == {
        "who": "Ada",
        "when": "2026-12-03T19:30:00+01:00",
        "day": "2026-12-03",
        "ref": "12345678-1234-4678-9234-567812345678",
        "price": "25.00",
    }


def now_and_model() -> list[Any]:
    """Return values that are not plain JSON."""
    return [dt.datetime(2026, 1, 2, 3, 4, 5), Person(name="Ada", age=1), uuid.UUID(int=1)]


async def test_a_tool_returning_a_datetime_does_not_fail_the_run() -> None:
    model = ScriptedModel([calls(call("t", "now_and_model", {})), "ok"])
    result = await Agent(model, tools=[now_and_model]).run("x")
    assert result.output == "ok"
    assert json.loads(model.requests[1].messages[-1].text) == [
        "2026-01-02T03:04:05",
        {"name": "Ada", "age": 1, "address": None},
        "00000000-0000-0000-0000-000000000001",
    ]


def test_a_tool_returning_bytes_is_still_a_tool_failure_of_the_run() -> None:
    with pytest.raises(TypeError, match="DataPart"):
        to_jsonable(b"raw")


def google_and_sphinx(a: int, b: str = "x") -> None:
    """Summary line.

    Args:
        a: the first.
    """


def test_google_docstrings_still_work_and_defaults_appear() -> None:
    definition = tool(google_and_sphinx).definition
    assert definition.description == "Summary line."
    assert definition.parameters["properties"] == {
        "a": {"type": "integer", "description": "the first."},
        "b": {"type": "string", "default": "x"},
    }


def test_pydantic_is_never_imported_by_golem() -> None:
    code = (
        "import sys, datetime, typing\n"
        "import golem_shell\n"
        "from golem_shell import tool\n"
        "def f(when: datetime.datetime, n: typing.Literal[1, 2] = 1) -> str:\n"
        "    return ''\n"
        "tool(f)\n"
        "golem_shell.Agent(golem_shell.TestModel(), output_type=dict)\n"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert not is_pydantic_model(dict)
    assert is_pydantic_model(Person)


# -- item 9: a JSON text answer, native output, TestModel ----------------------------------


@attrs.frozen
class City:
    name: str
    population: int


async def test_a_json_text_answer_that_validates_is_the_output() -> None:
    model = ScriptedModel(['```json\n{"name": "Oslo", "population": 700000}\n```'])
    result = await Agent(model, output_type=City).run("x")
    assert result.output == City("Oslo", 700000)
    assert result.messages[-1].role is Role.ASSISTANT
    assert check_pairing(result.messages) == ()


async def test_a_bare_json_value_answers_a_wrapped_output_type() -> None:
    model = ScriptedModel(["42"])
    assert (await Agent(model, output_type=int).run("x")).output == 42
    model = ScriptedModel(['{"response": 7}'])
    assert (await Agent(model, output_type=int).run("x")).output == 7


async def test_text_that_is_not_valid_json_output_gets_a_correction() -> None:
    model = ScriptedModel(
        ["Oslo, I think", '{"name": "Oslo"}', '{"name": "Oslo", "population": 1}']
    )
    result = await Agent(model, output_type=City).run("x")
    assert result.output == City("Oslo", 1)
    first, second = model.requests[1].messages[-1], model.requests[2].messages[-1]
    assert first.role is Role.USER and "final_result" in first.text
    assert "$.population: missing required field" in second.text


async def test_native_mode_sends_the_schema_and_reads_json_text() -> None:
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> str:
        seen.append(request)
        return '{"name": "Oslo", "population": 700000}'

    agent = Agent(FunctionModel(answer), output_type=City, output_mode="native")
    result = await agent.run("x")
    assert result.output == City("Oslo", 700000)
    request = seen[0]
    assert request.tools == () and not request.tool_choice_required
    assert request.output_schema is not None
    assert request.output_schema.name == "City"
    assert request.output_schema.parameters["required"] == ["name", "population"]


async def test_native_mode_on_a_model_without_it_keeps_the_tool() -> None:
    agent = Agent(AnthropicModel("claude-x", api_key="k"), output_type=City, output_mode="native")
    assert agent._output.mode == "tool"
    assert agent._output.definition is not None and agent._output.native is None


def test_an_unknown_output_mode_is_refused() -> None:
    from golem_shell import UsageError

    with pytest.raises(UsageError, match="output_mode"):
        Agent(TestModel(), output_type=City, output_mode="json")  # type: ignore[arg-type]


def test_the_openai_encoder_sends_response_format() -> None:
    closed = ToolDefinition("City", "A city.", json_schema(City))
    body = openai_wire.encode_request(
        ModelRequest((Message.user("x"),), output_schema=closed), model="m", stream=False
    ).unwrap()
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "City",
            "description": "A city.",
            "schema": json_schema(City),
            "strict": True,
        },
    }
    with_default = ToolDefinition("P", "", json_schema(Point))  # made strict (ADR 0130)
    body = openai_wire.encode_request(
        ModelRequest((Message.user("x"),), output_schema=with_default), model="m", stream=False
    ).unwrap()
    assert body["response_format"]["json_schema"]["strict"] is True
    open_map = ToolDefinition("M", "", Output(dict[str, int]).schema)  # cannot qualify
    body = openai_wire.encode_request(
        ModelRequest((Message.user("x"),), output_schema=open_map), model="m", stream=False
    ).unwrap()
    assert body["response_format"]["json_schema"]["strict"] is False
    plain = openai_wire.encode_request(ModelRequest((Message.user("x"),)), model="m", stream=False)
    assert "response_format" not in plain.unwrap()


async def test_openai_native_structured_output_over_http() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        content = json.dumps({"name": "Oslo", "population": 700000})
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
        agent = Agent(model, output_type=City, output_mode="native")
        result = await agent.run("the biggest city of Norway")
    assert result.output == City("Oslo", 700000)
    assert bodies[0]["response_format"]["json_schema"]["name"] == "City"
    assert "tools" not in bodies[0] and "tool_choice" not in bodies[0]


# -- TestModel -----------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Order:
    item: str
    color: Color
    count: int = 1


class Options(TypedDict):
    gift: bool
    note: NotRequired[str]


@attrs.frozen
class Receipt:
    order: Order
    total: Decimal
    at: dt.datetime


async def test_test_model_calls_each_tool_once_then_gives_a_valid_output() -> None:
    executed: list[str] = []

    def place(ctx: RunContext[None], order: Order, options: Options, person: Person) -> str:
        """Place an order."""
        executed.append("place")
        assert isinstance(order.color, Color) and isinstance(person, Person)
        return "placed"

    def when(day: dt.date, ref: uuid.UUID, size: Literal["s", "m"] = "s") -> dt.datetime:
        executed.append("when")
        return dt.datetime.combine(day, dt.time(12))

    model = TestModel()
    result = await Agent(model, output_type=Receipt, tools=[place, when]).run("order")
    assert sorted(executed) == ["place", "when"]
    assert isinstance(result.output, Receipt)
    assert isinstance(result.output.at, dt.datetime)
    assert len(model.requests) == 2
    assert check_pairing(result.messages) == ()


async def test_test_model_text_output_reports_the_tool_results() -> None:
    def double(n: int) -> int:
        return n * 2

    result = await Agent(TestModel(seed=3), tools=[double]).run("x")
    assert list(json.loads(result.output)) == ["double"]
    assert (await Agent(TestModel()).run("x")).output == "success (no tool calls)"
    assert (await Agent(TestModel(output_text="hi")).run("x")).output == "hi"


async def test_test_model_native_mode_fixed_output_and_streaming() -> None:
    agent = Agent(TestModel(), output_type=int, output_mode="native")
    assert isinstance((await agent.run("x")).output, int)
    fixed = Agent(TestModel(output={"name": "Oslo", "population": 1}), output_type=City)
    assert (await fixed.run_stream("x")).output == City("Oslo", 1)
    wrapped = Agent(TestModel(output=5), output_type=int)
    assert (await wrapped.run("x")).output == 5


def test_example_from_schema_meets_common_schemas() -> None:
    for tp in (Person, Receipt, Options, list[Literal["a", "b"]] | None, dict[str, Decimal]):
        for seed in range(5):
            validate(example_from_schema(json_schema(tp), seed=seed), tp)
