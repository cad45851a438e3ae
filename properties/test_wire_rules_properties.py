"""Every history ``check_pairing`` accepts reaches both providers as a body they accept
(issue 13, items 2-4 and 6): the pairing rule per provider (repeated call ids in one turn
included), Anthropic's alternation and whitespace rules, and lone surrogates anywhere,
through the whole path a request takes (``HTTPModel._body``: encoder, then JSON bytes).
"""

from __future__ import annotations

import json
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st
from strategies import histories, valid_histories
from wire_rules import anthropic_violations, openai_violations

from golem_core import (
    Message,
    ModelRequest,
    Role,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    check_pairing,
    repair_history,
)
from golem_core._loop import (
    ExecuteTools,
    ModelResponded,
    RequestModel,
    RunConfig,
    ToolReturned,
    ToolSpec,
    ToolsReturned,
    next_command,
    receive,
    start_run,
)
from golem_shell import UsageError
from golem_shell.models import AnthropicModel, OpenAIModel

TOOL = ToolDefinition("get_weather", "The weather.", {"type": "object", "properties": {}})
OPENAI = OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
ANTHROPIC = AnthropicModel("claude-sonnet-4-5", api_key="sk-test", base_url="http://127.0.0.1:9")

surrogates = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3)


@st.composite
def with_surrogates(draw: st.DrawFn, history: tuple[Message, ...]) -> tuple[Message, ...]:
    """``history`` with lone surrogates planted in some texts and call arguments."""
    out: list[Message] = []
    for m in history:
        if not draw(st.booleans()):
            out.append(m)
            continue
        parts = []
        for p in m.parts:
            if type(p) is TextPart:
                p = attrs.evolve(p, text=p.text + draw(surrogates))
            elif type(p) is ToolCallPart:
                p = attrs.evolve(p, arguments='{"city": "' + draw(surrogates) + '"}')
            parts.append(p)
        out.append(attrs.evolve(m, parts=tuple(parts)))
    return tuple(out)


def bodies(history: tuple[Message, ...], with_tools: bool) -> dict[str, dict[str, Any] | None]:
    """Both providers' request bodies (``None``: refused with a clear UsageError)."""
    request = ModelRequest(
        messages=tuple(m for m in history if m.role is not Role.SYSTEM),
        instructions="Be terse.",
        tools=(TOOL,) if with_tools else (),
    )
    out: dict[str, dict[str, Any] | None] = {}
    for name, model in (("openai", OPENAI), ("anthropic", ANTHROPIC)):
        try:
            raw = model._body(request, stream=False)
        except UsageError as e:  # content the provider cannot take, named before sending
            assert "message" in str(e) or "nothing to send" in str(e), str(e)
            out[name] = None
            continue
        out[name] = json.loads(raw.decode("utf-8"))  # valid UTF-8, valid JSON
    return out


def assert_accepted(history: tuple[Message, ...], with_tools: bool) -> None:
    assert check_pairing(history) == ()
    for name, body in bodies(history, with_tools).items():
        if body is None:
            continue
        problems = openai_violations(body) if name == "openai" else anthropic_violations(body)
        first = body["messages"][0]["role"] if body["messages"] else None
        if name == "anthropic" and first == "assistant":
            problems = [p for p in problems if "first message" not in p]
        assert problems == [], (name, problems, body["messages"])


@given(histories(), st.booleans())
def test_every_repaired_history_is_accepted_by_both_providers(
    history: tuple[Message, ...], with_tools: bool
) -> None:
    assert_accepted(repair_history(history), with_tools)


@given(valid_histories(), st.booleans(), st.data())
def test_lone_surrogates_never_break_a_request(
    history: tuple[Message, ...], with_tools: bool, data: st.DataObject
) -> None:
    planted = repair_history(data.draw(with_surrogates(history)))
    assert_accepted(planted, with_tools)


call_ids = st.sampled_from(["x", "x_2", "call_0", "a:b"])


@given(
    st.lists(
        st.tuples(call_ids, st.sampled_from(["get_weather", "final_result"])),
        min_size=1,
        max_size=5,
    ),
    st.booleans(),
)
def test_a_turn_repeating_call_ids_runs_each_id_once_and_stays_paired(
    calls: list[tuple[str, str]], structured: bool
) -> None:
    """The loop over a model turn like ``[call x, call x]``: one execution per id, and
    every request it sends (and the history it ends with) is paired, on both wires."""
    tools = [ToolSpec(TOOL)]
    if structured:
        tools.append(ToolSpec(ToolDefinition("final_result", "", {"type": "object"}), "output"))
    config = RunConfig(
        run_id="r",
        conversation_id="c",
        tools=tuple(tools),
        output_tool="final_result" if structured else None,
    )
    state = start_run(config, (), (TextPart("go"),))
    turn = Message.assistant(None, tool_calls=[ToolCallPart(i, n, "{}") for i, n in calls])
    executed: list[str] = []
    replies = [turn, Message.assistant("done")]
    from golem_core._loop import Fail, Finish, OutputValid, ValidateOutput

    for _ in range(10):
        command = next_command(state)
        if isinstance(command, RequestModel):
            assert_accepted(tuple(command.request.messages), True)
            if not replies:
                break
            state = receive(state, ModelResponded(replies.pop(0)))
        elif isinstance(command, ExecuteTools):
            executed.extend(str(c.id) for c in command.calls)
            state = receive(
                state,
                ToolsReturned(
                    tuple(ToolReturned(str(c.id), (TextPart("ok"),)) for c in command.calls)
                ),
            )
        elif isinstance(command, ValidateOutput):
            state = receive(state, OutputValid("value"))
        else:
            assert isinstance(command, Finish | Fail)
            break
    assert len(executed) == len(set(executed)), executed
    if state.failure is None:
        assert check_pairing(state.messages) == ()
    else:  # a failed run's partial ends at the turn; the next run repairs it (ADR 0032)
        assert check_pairing(repair_history(state.evidence_messages)) == ()
