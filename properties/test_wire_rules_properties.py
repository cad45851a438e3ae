"""Every history ``check_pairing`` accepts reaches all four providers (OpenAI Chat
Completions, OpenAI Responses, Anthropic Messages, Gemini) as a body they accept (issue
13, items 2-4 and 6; issue 28, items 2, 5 and 7): the pairing rule per provider (repeated
call ids in one turn included), Anthropic's alternation and whitespace rules, Gemini's
first turn, media a provider cannot take (carried as a textual stand-in, never refused),
and lone surrogates anywhere, call ids included, through the whole path a request takes
(``HTTPModel._body``: encoder, then JSON bytes). The only refusal left is a request with
nothing to send.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st
from strategies import histories, valid_histories
from wire_rules import (
    anthropic_violations,
    gemini_violations,
    openai_violations,
    responses_violations,
)

from golem_core import (
    DataPart,
    Message,
    ModelRequest,
    Role,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    URLPart,
    check_pairing,
    repair_history,
)
from golem_core.loop import (
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
from golem_shell.models import AnthropicModel, GeminiModel, OpenAIModel, OpenAIResponsesModel

TOOL = ToolDefinition("get_weather", "The weather.", {"type": "object", "properties": {}})
OPENAI = OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
ANTHROPIC = AnthropicModel("claude-sonnet-4-5", api_key="sk-test", base_url="http://127.0.0.1:9")
RESPONSES = OpenAIResponsesModel("gpt-5", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
GEMINI = GeminiModel("gemini-2.5-flash", api_key="g-test", base_url="http://127.0.0.1:9/v1beta")
MODELS = {"openai": OPENAI, "responses": RESPONSES, "anthropic": ANTHROPIC, "gemini": GEMINI}
RULES = {
    "openai": openai_violations,
    "responses": responses_violations,
    "anthropic": anthropic_violations,
    "gemini": gemini_violations,
}

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
    """The four providers' request bodies (``None``: nothing to send, refused clearly)."""
    request = ModelRequest(
        messages=tuple(m for m in history if m.role is not Role.SYSTEM),
        instructions="Be terse.",
        tools=(TOOL,) if with_tools else (),
    )
    out: dict[str, dict[str, Any] | None] = {}
    for name, model in MODELS.items():
        try:
            raw = model._body(request, stream=False)
        except UsageError as e:  # the one refusal left: a request with nothing to send
            assert "nothing to send" in str(e), (name, str(e))
            out[name] = None
            continue
        out[name] = json.loads(raw.decode("utf-8"))  # valid UTF-8, valid JSON
    return out


def assert_accepted(history: tuple[Message, ...], with_tools: bool) -> None:
    assert check_pairing(history) == ()
    for name, body in bodies(history, with_tools).items():
        if body is None:
            assert name in ("anthropic", "gemini"), name  # the others send instructions
            continue
        problems = RULES[name](body)
        if name == "anthropic" and body["messages"][0]["role"] == "assistant":
            problems = [p for p in problems if "first message" not in p]
        assert problems == [], (name, problems, body)


@given(histories(), st.booleans())
def test_every_repaired_history_is_accepted_by_all_four_providers(
    history: tuple[Message, ...], with_tools: bool
) -> None:
    assert_accepted(repair_history(history), with_tools)


@given(valid_histories(), st.booleans(), st.data())
def test_lone_surrogates_never_break_a_request(
    history: tuple[Message, ...], with_tools: bool, data: st.DataObject
) -> None:
    planted = repair_history(data.draw(with_surrogates(history)))
    assert_accepted(planted, with_tools)


odd_media = st.sampled_from(
    [
        DataPart(b"<svg xmlns='http://www.w3.org/2000/svg'/>", "image", "image/svg+xml"),
        DataPart(b"\x00\x01\x02", "document", "application/octet-stream"),
        DataPart(b"\x00\x00\x00\x18ftypmp42", "video", "video/mp4"),
        DataPart(b"RIFF\x00\x00WAVE", "audio", "audio/wav"),
        DataPart(b"\xff\xfe", "document", "text/plain"),
        DataPart(b"x", "image", "x/y"),
        URLPart("https://example.com/clip.mp4", "video", media_type="video/mp4"),
        URLPart("https://example.com/a.mp3", "audio"),
        URLPart("https://example.com/d.svg", "image", media_type="image/svg+xml"),
        URLPart("data:application/octet-stream;base64,AAEC", "document"),
    ]
)


@st.composite
def with_odd_media(draw: st.DrawFn, history: tuple[Message, ...]) -> tuple[Message, ...]:
    """``history`` with media some provider cannot take added to some messages of every
    role (a tool that returned an SVG, a video, an octet-stream resource, audio)."""
    out: list[Message] = []
    for m in history:
        if m.role is not Role.SYSTEM and draw(st.booleans()):
            extra = draw(st.lists(odd_media, min_size=1, max_size=2))
            m = attrs.evolve(m, parts=(*m.parts, *extra))
        out.append(m)
    return tuple(out)


@given(valid_histories(), st.booleans(), st.data())
def test_media_a_provider_cannot_take_never_bricks_a_conversation(
    history: tuple[Message, ...], with_tools: bool, data: st.DataObject
) -> None:
    """Issue 28, item 5: every provider takes every such history (the part travels as a
    stand-in naming it); none refuses it before sending."""
    planted = data.draw(with_odd_media(history))
    assert_accepted(planted, with_tools)


@given(
    st.lists(
        st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2),
        min_size=2,
        max_size=4,
        unique=True,
    ),
    st.sampled_from(["call_", "", "x" * 60]),
)
def test_call_ids_differing_only_in_a_lone_surrogate_stay_distinct_on_every_wire(
    tails: list[str], head: str
) -> None:
    """Issue 28, item 7: the request's bytes replace a lone surrogate, so two ids that
    only a surrogate told apart would become one id (two calls with one id, a result
    answering nothing); each wire keeps them distinct and paired."""
    calls = [ToolCallPart(head + t, "get_weather", "{}") for t in tails]
    history = (
        Message.user("go"),
        Message.assistant(None, tool_calls=calls),
        *(Message.tool_result(c.id or "", c.name, f"result {k}") for k, c in enumerate(calls)),
        Message.user("thanks"),
    )
    assert_accepted(history, True)
    for name, body in bodies(history, True).items():
        assert body is not None
        sent = json.dumps(body, ensure_ascii=False)
        for k in range(len(calls)):
            assert f"result {k}" in sent, name  # every result answers its own call


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
    from golem_core.loop import Fail, Finish, OutputValid, ValidateOutput

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
