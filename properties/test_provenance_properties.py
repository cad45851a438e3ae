"""Signed provenance: tampering is detected, round trips and unknown fields are not tampering."""

from __future__ import annotations

import json

import attrs
from hypothesis import assume, given
from hypothesis import strategies as st
from returns.result import Success
from strategies import histories, json_values, messages

from golem_core import (
    INTERRUPTED_RESULT_TEXT,
    PROVENANCE_FIELD,
    Message,
    MessageProvenance,
    Role,
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
def test_signing_every_message_makes_the_history_intact(
    history: tuple[Message, ...], key: bytes
) -> None:
    signed = tuple(sign_message(m, key) for m in history)
    assert verify_history(signed, key).intact
    # every call with a unique id in a signed assistant message is vouched for
    ids_seen = [c.id for m in signed if m.role.value == "assistant" for c in m.tool_calls]
    unique = {i for i in ids_seen if i is not None and ids_seen.count(i) == 1}
    assert signed_calls(signed, key) == unique


@given(histories(), keys, st.data())
def test_keyed_sanitize_lets_only_signed_calls_and_results_through(
    history: tuple[Message, ...], key: bytes, data: st.DataObject
) -> None:
    chosen = data.draw(st.lists(st.booleans(), min_size=len(history), max_size=len(history)))
    history = tuple(sign_message(m, key) if c else m for m, c in zip(history, chosen, strict=True))
    vouched = signed_calls(history, key)
    out, report = sanitize_history(history, key=key)
    for i in report.unverified:  # only unsigned or tampered tool messages are dropped
        assert history[i].role is Role.TOOL
        assert verify_message(history[i], key) is not MessageProvenance.SIGNED
    for m in out:
        if m.role is Role.TOOL:
            assert verify_message(m, key) is MessageProvenance.SIGNED or m == Message.tool_result(
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
