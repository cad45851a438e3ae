"""Every pair of providers, proven (issue 25, item 3; ADRs 0085-0086).

A history whose assistant turns came from one provider's decoded responses (its thinking,
signatures, redacted thinking, reasoning items, thought signatures, its own call-id
style, parallel calls, failed results, repaired turns), some from another model or
endpoint of that provider and some written before origins were recorded, is sent to
every target through the adapter's whole path (``HTTPModel._body``: ``port_history``,
encoder, JSON bytes). For all 16 ordered (origin, target) pairs the body satisfies the
target's rules (``wire_rules``: pairing, alternation, ids, the OpenAI-compatible quirks)
and carries no artifact the target would refuse: every signature, encrypted reasoning
and thought signature in it was issued by the target's provider at its endpoint (and
by its model where the provider binds it). Artifacts are tagged with their issuer
(``wire_rules.ISSUED``) so that the check can tell.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import damaged_histories, valid_histories
from wire_rules import (
    ISSUED,
    anthropic_violations,
    artifact_violations,
    compatible_violations,
    gemini_violations,
    openai_violations,
    responses_violations,
)

from golem_core import (
    Message,
    ModelRequest,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    check_pairing,
    port_history,
    repair_history,
)
from golem_core.history._port import MISTRAL_CALL_IDS, PROVIDERS, STRING_CONTENT
from golem_core.wire.gemini import with_thought_signature
from golem_core.wire.openai_responses import reasoning_part
from golem_shell import UsageError
from golem_shell.models import AnthropicModel, GeminiModel, OpenAIModel, OpenAIResponsesModel
from golem_shell.models._adapter import HTTPModel

TOOL = ToolDefinition("get_weather", "The weather.", {"type": "object", "properties": {}})
ENDPOINTS = ("api.one.test", "api.two.test")
MODELS = {
    "openai": ("gpt-4o-mini", "mistral-large-latest"),
    "openai-responses": ("gpt-5", "o4-mini"),
    "anthropic": ("claude-sonnet-4-5", "claude-opus-4-1"),
    "google": ("gemini-2.5-flash", "gemini-3-pro-preview"),
}
RULES = {
    "openai": openai_violations,
    "openai-responses": responses_violations,
    "anthropic": anthropic_violations,
    "google": gemini_violations,
}


def make_model(provider: str, model: str, endpoint: str, quirks: Any = None) -> HTTPModel:
    """The adapter for ``provider`` at ``https://<endpoint>`` (never contacted)."""
    if provider == "openai":
        return OpenAIModel(model, api_key="k", base_url=f"https://{endpoint}/v1", quirks=quirks)
    if provider == "openai-responses":
        return OpenAIResponsesModel(model, api_key="k", base_url=f"https://{endpoint}/v1")
    if provider == "anthropic":
        return AnthropicModel(model, api_key="k", base_url=f"https://{endpoint}")
    return GeminiModel(model, api_key="k", base_url=f"https://{endpoint}/v1beta")


# -- histories from a provider's decoded responses ------------------------------------------


def _tag(provider: str, model: str | None, endpoint: str | None) -> str:
    return f"{ISSUED}|{provider}|{model or '*'}|{endpoint or '*'}"


def _styled_id(provider: str, call_id: str, long: bool) -> str:
    """A call id in the style of ``provider``'s responses (some too long or with
    characters another provider refuses)."""
    if provider == "anthropic":
        return f"toolu_01{call_id}"
    if provider == "openai-responses":
        return f"call_{call_id}" + ("R" * 70 if long else "")
    if provider == "google":
        return f"gemini:{call_id}" if long else call_id
    return f"chatcmpl-tool.{call_id}" + ("x" * 40 if long else "")


@st.composite
def from_provider(draw: st.DrawFn, provider: str) -> tuple[Message, ...]:
    """A repaired history whose assistant turns ``provider`` produced: with its artifacts,
    its call-id style, and an origin (one of two models, one of two endpoints, or none:
    written before origins were recorded)."""
    base = draw(st.one_of(valid_histories(max_turns=4), damaged_histories(max_turns=3)))
    history = repair_history(base)
    renamed: dict[str, str] = {}
    out: list[Message] = []
    for m in history:
        if m.role is Role.ASSISTANT:
            m = draw(_decorated(m, provider, renamed))
        elif m.role is Role.TOOL and m.tool_call_id in renamed:
            m = attrs.evolve(m, tool_call_id=renamed[m.tool_call_id])
        out.append(m)
    return tuple(out)


@st.composite
def _decorated(
    draw: st.DrawFn, message: Message, provider: str, renamed: dict[str, str]
) -> Message:
    legacy = draw(st.integers(0, 4)) == 0
    model = None if legacy else draw(st.sampled_from(MODELS[provider]))
    endpoint = None if legacy else draw(st.sampled_from(ENDPOINTS))
    tag = _tag(provider, model, endpoint)
    long = draw(st.booleans())
    parts: list[Part] = []
    thought = draw(st.sampled_from(["", "Let me check.", "two\nlines"]))
    if provider == "anthropic":
        parts.append(ThinkingPart(thought, signature=tag))
        if draw(st.booleans()):
            parts.append(ThinkingPart(tag, redacted=True))
    elif provider == "openai-responses":
        parts.append(reasoning_part("rs_" + str(len(renamed)), [thought], tag))
    elif thought:
        parts.append(ThinkingPart(thought))  # a Gemini thought summary, a server's reasoning
    signed = False
    for p in message.parts:
        if type(p) is ThinkingPart:
            continue  # the drawn thinking has no issuer: replaced by the provider's own
        if type(p) is ToolCallPart and p.id is not None:
            new_id = renamed.setdefault(p.id, _styled_id(provider, p.id, long))
            p = attrs.evolve(p, id=new_id)
        if provider == "google" and not signed and type(p) in (TextPart, ToolCallPart):
            p = with_thought_signature(p, base64.b64encode(tag.encode()).decode("ascii"))
            signed = True
        parts.append(p)
    return attrs.evolve(
        message,
        parts=tuple(parts),
        provider=provider if not legacy else None,
        endpoint=endpoint,
        model=model,
    )


# -- the property ----------------------------------------------------------------------------


def body_of(model: HTTPModel, history: tuple[Message, ...], with_tools: bool) -> Any:
    request = ModelRequest(
        messages=tuple(m for m in history if m.role is not Role.SYSTEM),
        instructions="Be terse.",
        tools=(TOOL,) if with_tools else (),
    )
    try:
        raw = model._body(request, stream=False)
    except UsageError as e:  # the one refusal left: nothing to send
        assert "nothing to send" in str(e), str(e)
        return None
    return json.loads(raw.decode("utf-8"))


PAIRS = [(o, t) for o in PROVIDERS for t in PROVIDERS]


@pytest.mark.parametrize(("origin", "target"), PAIRS, ids=[f"{o}->{t}" for o, t in PAIRS])
@given(data=st.data())
def test_a_history_from_any_provider_is_accepted_by_every_target(
    origin: str, target: str, data: st.DataObject
) -> None:
    history = data.draw(from_provider(origin), label="history")
    assert check_pairing(history) == ()
    model_name = data.draw(st.sampled_from(MODELS[target]), label="target model")
    endpoint = data.draw(st.sampled_from(ENDPOINTS), label="target endpoint")
    quirks: Any = None
    if target == "openai":
        quirks = data.draw(
            st.sets(st.sampled_from([MISTRAL_CALL_IDS, STRING_CONTENT])), label="quirks"
        )
    model = make_model(target, model_name, endpoint, quirks)
    with_tools = data.draw(st.booleans(), label="with tools")
    body = body_of(model, history, with_tools)
    if body is None:
        assert target in ("anthropic", "google")
        return
    problems = RULES[target](body)
    if target == "anthropic" and body["messages"][0]["role"] == "assistant":
        problems = [p for p in problems if "first message" not in p]
    problems += artifact_violations(body, target, model_name, endpoint)
    if target == "openai":
        problems += compatible_violations(
            body,
            mistral_ids=MISTRAL_CALL_IDS in model.target.quirks,
            string_content=STRING_CONTENT in model.target.quirks,
        )
    assert problems == [], (problems, body)


@given(st.sampled_from(PROVIDERS), st.sampled_from(PROVIDERS), st.data())
def test_porting_is_idempotent_and_its_report_maps_ids_back(
    origin: str, target: str, data: st.DataObject
) -> None:
    history = data.draw(from_provider(origin))
    model = make_model(target, MODELS[target][0], ENDPOINTS[0], [MISTRAL_CALL_IDS])
    ported, report = port_history(history, model.target)
    again, second = port_history(ported, model.target)
    assert again == ported
    assert second.as_text == () and second.left_off == () and second.call_ids == ()
    assert check_pairing(ported) == ()
    sent = {p.id for m in ported for p in m.parts if type(p) is ToolCallPart}
    for r in report.call_ids:
        assert r.sent in sent and report.original_id(r.sent) == r.original
    assert len(ported) == len(history)
    for before, after in zip(history, ported, strict=True):
        assert (before.role, before.run_id, before.conversation_id) == (
            after.role,
            after.run_id,
            after.conversation_id,
        )


@given(st.sampled_from(PROVIDERS), st.sampled_from(PROVIDERS), st.data())
def test_a_growing_conversation_never_changes_what_was_sent(
    origin: str, target: str, data: st.DataObject
) -> None:
    """Issue 49, item 7: once the target answered, the history it was sent is ported the
    same way on every later request, whatever follows (a steered message, the next
    prompt, another model's turns): each request extends the previous one."""
    history = data.draw(from_provider(origin))
    model = make_model(target, MODELS[target][0], ENDPOINTS[0], [MISTRAL_CALL_IDS])
    answer = attrs.evolve(
        Message.assistant("ok"),
        provider=target,
        model=MODELS[target][0],
        endpoint=ENDPOINTS[0],
        asked_model=MODELS[target][0],
    )
    sent, _ = port_history((*history, answer), model.target)
    later = (*history, answer, Message.user("next"), *data.draw(from_provider(origin)))
    grown, _ = port_history(later, model.target)
    assert grown[: len(sent)] == sent
