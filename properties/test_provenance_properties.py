"""Signed provenance: tampering is detected, round trips and unknown fields are not tampering;
a signature holds in its place and in every fork sharing its prefix, nowhere else (ADR 0068)."""

from __future__ import annotations

import json

import attrs
from hypothesis import assume, given
from hypothesis import strategies as st
from returns.result import Success
from strategies import histories, json_values, messages, valid_histories

from golem_core import (
    INTERRUPTED_RESULT_TEXT,
    PROVENANCE_FIELD,
    Message,
    MessageProvenance,
    Role,
    TextPart,
    ToolCallPart,
    decode_message,
    encode_message,
    sanitize_history,
    sign_message,
    signed_calls,
    verify_history,
    verify_message,
)

keys = st.binary(min_size=16, max_size=48)
run_ids = st.none() | st.text(max_size=12)
key_lists = st.lists(keys, min_size=1, max_size=4, unique=True)
unknown_names = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1).filter(
    lambda k: k != PROVENANCE_FIELD
)


def in_place(
    history: tuple[Message, ...], key: bytes, chosen: list[bool] | None = None
) -> tuple[Message, ...]:
    """Each (chosen) message signed in its place after the ones before it, as a run signs."""
    out: list[Message] = []
    for i, m in enumerate(history):
        out.append(sign_message(m, key, before=out) if chosen is None or chosen[i] else m)
    return tuple(out)


def _kept(p: object) -> tuple[object, ...]:
    """What a chain keeps of a part for sure (text, a call without its signature)."""
    if type(p) is TextPart:
        return ("text", p.text)
    if type(p) is ToolCallPart:
        return ("call", p.id, p.name, p.arguments)
    return ()


def counting(history: tuple[Message, ...]) -> list[tuple[object, ...]]:
    """The messages that certainly move the place of what follows them (a user or assistant
    message holding text or a call: nothing sanitizing drops), as comparable values."""
    return [
        (m.role, m.run_id, m.conversation_id, *map(_kept, m.parts))
        for m in history
        if m.role in (Role.USER, Role.ASSISTANT)
        and any((type(p) is TextPart and p.text) or type(p) is ToolCallPart for p in m.parts)
    ]


def place(history: tuple[Message, ...], k: int) -> tuple[object, ...]:
    """What certainly tells apart the place of ``history[k]`` (ADR 0068): the counting
    messages before it; for a result, those up to the call it answers, and that call."""
    m = history[k]
    if m.role is Role.TOOL and m.tool_call_id is not None:
        for o in range(k - 1, -1, -1):
            if history[o].role is not Role.ASSISTANT:
                continue
            calls = [c for c in history[o].tool_calls if c.id == m.tool_call_id]
            if calls:
                return ("call", *counting(history[: o + 1]), _kept(calls[-1]))
    return ("after", *counting(history[:k]))


@st.composite
def signed_messages(draw: st.DrawFn) -> tuple[Message, bytes]:
    message = draw(messages())
    message = message.with_ids(draw(run_ids), draw(run_ids))
    key = draw(keys)
    return sign_message(message, key), key


@given(signed_messages())
def test_a_signed_message_verifies_and_survives_decode_encode(drawn: tuple[Message, bytes]) -> None:
    signed, key = drawn
    assert verify_message(signed, key) is MessageProvenance.SIGNED
    decoded = decode_message(encode_message(signed))
    assert isinstance(decoded, Success)
    assert verify_message(decoded.unwrap(), key) is MessageProvenance.SIGNED
    assert sign_message(signed, key) == signed  # idempotent (and deterministic)


@given(signed_messages(), st.data())
def test_any_single_byte_change_is_detected(
    drawn: tuple[Message, bytes], data: st.DataObject
) -> None:
    signed, key = drawn
    raw = bytearray(encode_message(signed))
    i = data.draw(st.integers(0, len(raw) - 1), label="index")
    new = data.draw(st.integers(0, 255).filter(lambda b: b != raw[i]), label="byte")
    raw[i] = new
    decoded = decode_message(bytes(raw))
    if not isinstance(decoded, Success):
        return  # no longer a message: nothing could act on it
    changed = decoded.unwrap()
    # a change that leaves the value as it was (e.g. ``\u001f`` to ``\u001F``) is no change
    assume(changed != signed)
    assert verify_message(changed, key) is not MessageProvenance.SIGNED


@given(signed_messages(), unknown_names, json_values)
def test_unknown_fields_do_not_break_verification(
    drawn: tuple[Message, bytes], name: str, value: object
) -> None:
    signed, key = drawn
    assume(all(k != name for k, _ in signed.extra))
    obj = json.loads(encode_message(signed))
    assume(name not in obj)
    # a newer writer added a field before signing: this version keeps it and verifies
    obj[name] = value
    newer = decode_message(json.dumps(obj))
    assert isinstance(newer, Success)
    resigned = sign_message(newer.unwrap(), key)
    back = decode_message(encode_message(resigned))
    assert isinstance(back, Success)
    assert verify_message(back.unwrap(), key) is MessageProvenance.SIGNED
    # and the same field added after signing is tampering
    later = json.loads(encode_message(signed))
    later[name] = value
    tampered = decode_message(json.dumps(later))
    assert isinstance(tampered, Success)
    assert verify_message(tampered.unwrap(), key) is MessageProvenance.TAMPERED


@given(messages(), key_lists, st.data())
def test_rotation_any_listed_key_verifies(
    message: Message, listed: list[bytes], data: st.DataObject
) -> None:
    message = message.with_ids("run", "conversation")
    signed = sign_message(message, listed)  # the newest (first) key signs
    order = data.draw(st.permutations(listed), label="order")
    report = verify_history((signed,), order)
    assert report.verdicts == (MessageProvenance.SIGNED,)
    assert report.key_indices == (order.index(listed[0]),)
    if len(listed) > 1:
        retired = [k for k in listed if k != listed[0]]
        assert verify_history((signed,), retired).verdicts == (MessageProvenance.TAMPERED,)


@given(histories(), keys)
def test_verification_is_total_and_unsigned_history_is_unsigned(
    history: tuple[Message, ...], key: bytes
) -> None:
    history = tuple(
        attrs.evolve(m, extra=tuple((k, v) for k, v in m.extra if k != PROVENANCE_FIELD))
        for m in history
    )
    report = verify_history(history, key)
    assert len(report.verdicts) == len(history)
    assert all(
        v is MessageProvenance.UNSIGNED or v is MessageProvenance.TAMPERED for v in report.verdicts
    )
    assert signed_calls(history, key) == frozenset()


@given(histories(), keys)
def test_signing_every_message_in_place_makes_the_history_intact(
    history: tuple[Message, ...], key: bytes
) -> None:
    signed = in_place(history, key)
    report = verify_history(signed, key)
    assert report.intact and report.unbound == ()
    # every call with a unique id in a signed assistant message is vouched for
    ids_seen = [c.id for m in signed if m.role.value == "assistant" for c in m.tool_calls]
    unique = {i for i in ids_seen if i is not None and ids_seen.count(i) == 1}
    assert signed_calls(signed, key) == unique


@given(histories(), keys)
def test_signed_out_of_place_nothing_is_vouched_for(
    history: tuple[Message, ...], key: bytes
) -> None:
    """v1 (no ``before``) verifies but is unbound: no call is vouched, no result trusted."""
    signed = tuple(sign_message(m, key) for m in history)
    report = verify_history(signed, key)
    assert report.intact and report.unbound == tuple(range(len(signed)))
    assert signed_calls(signed, key) == frozenset()
    out, _ = sanitize_history(signed, key=key)
    assert all(
        m == Message.tool_result(m.tool_call_id, m.tool_name, INTERRUPTED_RESULT_TEXT)
        for m in out
        if m.role is Role.TOOL
    )


@given(histories(), histories(), keys, st.data())
def test_a_fork_sharing_the_prefix_verifies(
    history: tuple[Message, ...], tail: tuple[Message, ...], key: bytes, data: st.DataObject
) -> None:
    signed = in_place(history, key)
    cut = data.draw(st.integers(0, len(signed)), label="cut")
    fork = in_place((*signed[:cut], *tail), key)
    assert fork[:cut] == signed[:cut]  # the shared prefix is not re-signed: same bytes
    report = verify_history(fork, key)
    assert report.intact and report.unbound == ()


@given(histories(max_size=10), keys, st.data())
def test_a_message_moved_to_another_place_does_not_verify(
    history: tuple[Message, ...], key: bytes, data: st.DataObject
) -> None:
    signed = in_place(history, key)
    assume(len(signed) >= 2)
    i = data.draw(st.integers(0, len(signed) - 1), label="from")
    rest = signed[:i] + signed[i + 1 :]
    j = data.draw(st.integers(0, len(rest)), label="to")
    moved = (*rest[:j], signed[i], *rest[j:])
    assume(place(signed, i) != place(moved, j))
    assert verify_history(moved, key).verdicts[j] is not MessageProvenance.SIGNED


@given(histories(max_size=10), histories(max_size=10), keys, st.data())
def test_a_message_moved_into_another_history_does_not_verify(
    one: tuple[Message, ...], other: tuple[Message, ...], key: bytes, data: st.DataObject
) -> None:
    signed, target = in_place(one, key), in_place(other, key)
    assume(signed)
    i = data.draw(st.integers(0, len(signed) - 1), label="from")
    j = data.draw(st.integers(0, len(target)), label="to")
    transplanted = (*target[:j], signed[i], *target[j:])
    verdict = verify_history(transplanted, key).verdicts[j]
    if place(signed, i) != place(transplanted, j):
        assert verdict is not MessageProvenance.SIGNED
        if signed[i].role is Role.ASSISTANT:  # and none of its calls is vouched for
            moved_ids = {c.id for c in signed[i].tool_calls}
            assert not moved_ids & signed_calls(transplanted, key) - signed_calls(target, key)


@given(histories(max_size=10), keys)
def test_a_result_after_a_later_call_with_its_id_does_not_verify(
    history: tuple[Message, ...], key: bytes
) -> None:
    """Issue 28, item 6 (c): providers number calls per response, so a later turn may
    reuse an id; a signed result moved after it never answers it."""
    signed = in_place(history, key)
    for i, m in enumerate(signed):
        if m.role is not Role.TOOL or m.tool_call_id is None:
            continue
        for k in range(i + 1, len(signed)):
            if signed[k].role is Role.ASSISTANT and any(
                c.id == m.tool_call_id for c in signed[k].tool_calls
            ):
                moved = (*signed[: k + 1], m)
                if place(signed, i) != place(moved, k + 1):
                    assert verify_history(moved, key).verdicts[-1] is not MessageProvenance.SIGNED


@given(valid_histories(), keys)
def test_keyed_sanitize_never_moves_a_signed_message(
    history: tuple[Message, ...], key: bytes
) -> None:
    """Sanitizing (system messages, unsafe URLs, emptied messages, repair) leaves every
    signed assistant and tool message verifying in its new place, and is idempotent."""
    signed = in_place(history, key)
    out, _ = sanitize_history(signed, key=key)
    report = verify_history(out, key)
    for m, verdict in zip(out, report.verdicts, strict=True):
        if m.role in (Role.ASSISTANT, Role.TOOL) and m.run_id is not None:
            assert verdict is MessageProvenance.SIGNED, m
    again, second = sanitize_history(out, key=key)
    assert again == out and second.clean


@given(histories(), keys, st.data())
def test_keyed_sanitize_lets_only_signed_calls_and_results_through(
    history: tuple[Message, ...], key: bytes, data: st.DataObject
) -> None:
    chosen = data.draw(st.lists(st.booleans(), min_size=len(history), max_size=len(history)))
    history = in_place(history, key, chosen)
    vouched = signed_calls(history, key)
    report_in = verify_history(history, key)
    out, report = sanitize_history(history, key=key)
    for i in report.unverified:  # only unsigned or tampered tool messages are dropped
        assert history[i].role is Role.TOOL
        assert report_in.verdicts[i] is not MessageProvenance.SIGNED
    report_out = verify_history(out, key)
    for m, verdict in zip(out, report_out.verdicts, strict=True):
        if m.role is Role.TOOL:
            assert verdict is MessageProvenance.SIGNED or m == Message.tool_result(
                m.tool_call_id, m.tool_name, INTERRUPTED_RESULT_TEXT
            )
    answered = {m.tool_call_id for m in out if m.role is Role.TOOL}
    last = max((i for i, m in enumerate(out) if m.role is Role.ASSISTANT), default=None)
    if last is not None:
        for c in out[last].tool_calls:
            if c.id is not None and c.id not in answered:
                assert c.id in vouched  # every call left open carries a valid signature
    again, _ = sanitize_history(out, key=key)
    assert again == out  # idempotent
