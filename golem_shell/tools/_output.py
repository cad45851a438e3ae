"""A run's output: how it is described to the model and how an answer is validated.

Owns the output type's two channels (ADR 0059):

- ``"tool"`` (the default): the model gives its final result by calling the
  ``final_result`` tool, whose parameters are the output type's JSON Schema (a
  non-object type is wrapped as ``{"response": ...}``);
- ``"native"``: the provider constrains the answer to the schema itself (OpenAI Chat
  ``response_format: json_schema``, Responses ``text.format``, Gemini
  ``responseJsonSchema``, Anthropic ``output_config.format`` on Claude 4.5 and later;
  ADR 0087); the answer arrives as JSON text. A model that has no native structured
  output (Claude before 4.5, ...) keeps the tool, and so does one whose native
  mechanism is documented to refuse the schema (Anthropic: open maps such as
  ``dict[str, int]``, recursive types; ADR 0120): ``Output.fallback`` says why.
  Gemini before 3 cannot take native output beside tools: its adapter then puts the
  schema in the instructions (``golem_core.wire.gemini``, ADR 0120).

In both modes a plain text answer that is JSON and validates is accepted too (models
sometimes answer in text although asked for the tool), and so is one equal to a string
value of a ``Literal`` or ``Enum`` output type (``yes`` for ``Literal["yes", "no"]``);
any other answer gets a correction round, then the run fails at stage ``output`` with a
partial. A ``null`` given for an optional property whose type does not take ``None``
means "not given" (strict mode makes such properties nullable, ADR 0130).
"""

from __future__ import annotations

import enum
import json
import re
import types
from typing import Annotated, Any, Literal, TypeAlias, Union, get_args, get_origin

from golem_core import Message, ToolCallPart, ToolDefinition
from golem_core.loop import OutputInvalid, OutputValid
from golem_core.providers import Target
from golem_core.wire.strict import absent_nulls_dropped
from golem_shell._errors import UsageError
from golem_shell.tools._partial_json import INCOMPLETE, parse_partial
from golem_shell.tools._schema import (
    SchemaError,
    ValidationFailed,
    json_schema,
    to_jsonable,
    validate,
)

__all__ = [
    "OUTPUT_TOOL_NAME",
    "Output",
    "OutputMode",
    "native_output_problem",
    "supports_native_output",
]

OUTPUT_TOOL_NAME = "final_result"

OutputMode: TypeAlias = Literal["tool", "native"]
"""How structured output reaches the run: the ``final_result`` tool, or the provider's
native structured output (where it has none, the tool)."""

_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n(.*)\n\s*```$", re.DOTALL)
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def supports_native_output(model: object) -> bool:
    """Whether ``model`` honours ``ModelRequest.output_schema`` (its
    ``supports_native_output`` attribute; models without one do not)."""
    return getattr(model, "supports_native_output", False) is True


def native_output_problem(model: object, schema: dict[str, Any]) -> str | None:
    """Why ``model``'s native structured output is documented to refuse ``schema``
    (``None``: it takes it). Read from the profile of the model's ``target`` provider
    (``ProviderProfile.schema_problem``): Anthropic's rules
    (``golem_core.wire.anthropic.structured_output_problem``); the other providers take
    every schema golem writes (OpenAI's encoders send ``strict: true`` with the schema
    rewritten for strict mode where it can qualify, else ``strict: false``, ADR 0130;
    Gemini's encoder loosens what ``responseJsonSchema`` does not take)."""
    target = getattr(model, "target", None)
    if not isinstance(target, Target) or target.profile.schema_problem is None:
        return None
    problem = target.profile.schema_problem(schema)
    if problem is None:
        return None
    return f"{target.profile.display_name}'s structured output cannot take this schema: {problem}"


def _name(model: object) -> str:
    name = getattr(model, "name", None)
    return name if isinstance(name, str) else type(model).__name__


class Output:
    """The output of an agent's runs: its type, its schema, and the check of a candidate.

    ``text`` is true for ``str`` output (the model's text is the output). Otherwise
    ``definition`` is the ``final_result`` tool (tool mode) or ``None`` and ``native``
    the schema sent as the request's ``output_schema`` (native mode). ``fallback`` is
    ``None``, or, when native mode was asked for and the tool is used instead, why.

    Raises:
        UsageError: the type cannot be described as JSON Schema, or an unknown mode.
    """

    def __init__(self, output_type: Any, mode: str = "tool", model: object = None) -> None:
        if mode not in ("tool", "native"):
            raise UsageError(f"output_mode must be 'tool' or 'native', got {mode!r}")
        self.type = output_type
        self.requested = mode
        """The mode asked for (``mode`` is the one used with the model given)."""
        self.text = output_type is str
        self.wrapped = False
        self.mode: OutputMode = "tool"
        self.definition: ToolDefinition | None = None
        self.native: ToolDefinition | None = None
        self.fallback: str | None = None
        self.schema: dict[str, Any] = {}
        """The schema of the output tool's arguments or of the native answer (``{}`` for
        text output)."""
        if self.text:
            return
        try:
            schema = json_schema(output_type)
        except SchemaError as e:
            raise UsageError(f"output_type {output_type!r} cannot be described: {e}") from e
        if schema.get("type") != "object" or "properties" not in schema:
            self.wrapped = True
            defs = schema.pop("$defs", None)
            schema = {
                "type": "object",
                "properties": {"response": schema},
                "required": ["response"],
                "additionalProperties": False,
            }
            if defs:
                schema["$defs"] = defs
        description = schema.pop("description", None) or "Give the final result of the task."
        self.schema = schema
        if mode == "native" and not supports_native_output(model):
            self.fallback = f"{_name(model)} has no native structured output"
        elif mode == "native":
            self.fallback = native_output_problem(model, schema)
        if mode == "native" and self.fallback is None:
            self.mode = "native"
            name = getattr(output_type, "__name__", "")
            if self.wrapped or not isinstance(name, str) or not _NAME.fullmatch(name):
                name = OUTPUT_TOOL_NAME
            self.native = ToolDefinition(name, description, schema)
        else:
            self.definition = ToolDefinition(OUTPUT_TOOL_NAME, description, schema)

    def __repr__(self) -> str:
        why = "" if self.fallback is None else f", fallback={self.fallback!r}"
        return f"Output({self.type!r}, mode={self.mode!r}{why})"

    def check(self, candidate: ToolCallPart | Message) -> OutputValid | OutputInvalid:
        """Validate a candidate: a call of the output tool, or an assistant text answer."""
        if isinstance(candidate, Message):
            if self.text:
                return OutputValid(candidate.text)
            return self._check_text(candidate.text)
        arguments = candidate.arguments_object
        if arguments is None:
            return OutputInvalid(
                "the arguments were cut off or are not a JSON object; call the tool again"
            )
        if self.wrapped and set(arguments) != {"response"}:
            return OutputInvalid('expected exactly one argument, "response"')
        try:
            return OutputValid(self._validate(absent_nulls_dropped(dict(arguments), self.schema)))
        except ValidationFailed as e:
            return OutputInvalid(f"the output is not valid: {e}. Fix it and call again.")

    def partial(self, text: str) -> Any:
        """The output so far from ``text``, a streamed prefix of the output tool's
        arguments (or of the native answer): the prefix's value so far
        (``parse_partial``) when it is valid as the output type, else ``INCOMPLETE``.
        Output validators do not run on it: they see only the final output."""
        if self.text:
            return text
        stripped = text.lstrip()
        if stripped.startswith("```"):  # a fenced answer: its body, once it has started
            newline = stripped.find("\n")
            stripped = "" if newline < 0 else stripped[newline + 1 :].split("```", 1)[0]
        try:
            value = parse_partial(stripped)
        except ValueError:
            return INCOMPLETE
        if value is INCOMPLETE:
            return INCOMPLETE
        try:
            if self.wrapped:
                if isinstance(value, dict) and set(value) == {"response"}:
                    value = value["response"]
                elif isinstance(value, dict) and not value and self.mode == "tool":
                    return INCOMPLETE  # `{` of the tool's arguments: no response yet
                return validate(value, self.type, path="response")
            if not isinstance(value, dict):
                return INCOMPLETE
            return validate(absent_nulls_dropped(value, self.schema), self.type)
        except ValidationFailed:
            return INCOMPLETE

    def dump(self, value: Any) -> Any:
        """The output as plain JSON (``validate`` reads it back)."""
        return value if self.text else to_jsonable(value)

    def _validate(self, value: Any) -> Any:
        if self.wrapped:
            return validate(value["response"], self.type, path="response")
        return validate(value, self.type)

    def _check_text(self, text: str) -> OutputValid | OutputInvalid:
        stripped = text.strip()
        fenced = _FENCE.match(stripped)
        if fenced:
            stripped = fenced.group(1).strip()
        try:
            value = json.loads(stripped, parse_constant=_refuse_constant)
        except ValueError:
            if self.wrapped and stripped in _text_values(self.type):
                return OutputValid(validate(stripped, self.type))  # `yes` for Literal["yes"]
            return OutputInvalid(self._ask_again())
        except RecursionError:
            return OutputInvalid(f"the answer is nested too deeply to read. {self._ask_again()}")
        try:
            if self.wrapped:
                if isinstance(value, dict) and set(value) == {"response"}:
                    return OutputValid(self._validate(absent_nulls_dropped(value, self.schema)))
                bare = absent_nulls_dropped({"response": value}, self.schema)["response"]
                return OutputValid(validate(bare, self.type))
            return OutputValid(self._validate(absent_nulls_dropped(value, self.schema)))
        except ValidationFailed as e:
            return OutputInvalid(f"the output is not valid: {e}. {self._ask_again()}")

    def _ask_again(self) -> str:
        if self.mode == "native":
            return "Please answer with only a JSON value that matches the response schema."
        return (
            f"Please give your final answer by calling the {OUTPUT_TOOL_NAME} tool;"
            " plain text is not accepted."
        )


def _text_values(tp: Any) -> frozenset[str]:
    """The strings ``tp`` takes as a whole value (a ``Literal``'s or an ``Enum``'s string
    values, through unions and ``Annotated``): a plain-text answer equal to one is that
    value, although it is not JSON."""
    origin = get_origin(tp)
    if origin is Literal:
        values = (a.value if isinstance(a, enum.Enum) else a for a in get_args(tp))
        return frozenset(v for v in values if isinstance(v, str))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return frozenset(m.value for m in tp if isinstance(m.value, str))
    if origin in (Union, types.UnionType):
        return frozenset().union(*(_text_values(a) for a in get_args(tp)))
    if origin is Annotated:
        return _text_values(get_args(tp)[0])
    return frozenset()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
