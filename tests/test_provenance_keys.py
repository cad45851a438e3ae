"""Verifying with the wrong key says so (issue 37 item 3): a signature names the key that
made it by a key id, so a message signed by a key you did not pass is reported as that,
not as an edit; a real edit under the right key stays plainly tampered."""

from __future__ import annotations

import json

from returns.result import Success

from golem_core import (
    PROVENANCE_FIELD,
    Message,
    MessageProvenance,
    ToolCallPart,
    decode_history,
    encode_history,
    sign_message,
    verify_history,
)

KEY = b"k" * 32
OLD = b"o" * 32
OTHER = b"x" * 32


def conversation(key: bytes) -> tuple[Message, ...]:
    """A prompt, a turn with a call and its result, each signed in its place by ``key``."""
    raw = (
        Message.user("pay the rent").with_ids("run-1", "conv-1"),
        Message.assistant("paying", tool_calls=(ToolCallPart("c1", "pay", "{}"),)).with_ids(
            "run-1", "conv-1"
        ),
        Message.tool_result("c1", "pay", "paid").with_ids("run-1", "conv-1"),
    )
    out: list[Message] = []
    for m in raw:
        out.append(sign_message(m, key, before=out))
    return tuple(out)


def test_a_history_signed_with_a_key_you_did_not_pass_is_reported_as_an_unknown_key() -> None:
    history = conversation(OTHER)
    report = verify_history(history, KEY)
    # still not trusted: a signature that does not verify is tampered for every reader
    assert report.verdicts == (MessageProvenance.TAMPERED,) * 3 and not report.intact
    # but the report says why: signed with a key that is not among the ones given
    assert report.unknown_key == (0, 1, 2)
    assert report.key_ids[0] is not None and report.key_ids == (report.key_ids[0],) * 3
    reason = report.reason(1)
    assert "key you did not pass" in reason and report.key_ids[0] in reason
    assert "edited" not in reason.split("(")[0]


def test_a_retired_key_is_named_as_unknown_beside_messages_the_current_key_verifies() -> None:
    old = conversation(OLD)
    new = sign_message(Message.user("and again").with_ids("run-2", "conv-1"), KEY, before=old)
    report = verify_history((*old, new), KEY)
    assert report.signed == (3,) and report.tampered == (0, 1, 2)
    assert report.unknown_key == (0, 1, 2)
    assert report.key_ids[3] != report.key_ids[0]
    assert verify_history((*old, new), [KEY, OLD]).intact  # pass the old key: all verify


def test_an_edit_under_the_right_key_stays_tampered_and_says_edited() -> None:
    history = conversation(KEY)
    objs = json.loads(encode_history(history))
    objs[1]["parts"][1]["arguments"] = '{"to": "mallory"}'
    decoded = decode_history(json.dumps(objs))
    assert isinstance(decoded, Success)
    report = verify_history(decoded.unwrap(), KEY)
    assert report.signed == (0,) and report.tampered == (1, 2)
    assert report.unknown_key == ()  # the key is right: the bytes are not
    assert "edited" in report.reason(1)
    assert report.reason(0).startswith("signed")


def test_a_forger_naming_a_key_id_gains_nothing() -> None:
    history = conversation(KEY)
    objs = json.loads(encode_history(history))
    signature = objs[0][PROVENANCE_FIELD]
    objs[0][PROVENANCE_FIELD] = signature.rsplit(".", 1)[0] + ".k=AAAAAAAA"
    objs[0]["parts"][0]["text"] = "pay mallory"
    decoded = decode_history(json.dumps(objs))
    assert isinstance(decoded, Success)
    report = verify_history(decoded.unwrap(), KEY)
    assert report.verdicts[0] is MessageProvenance.TAMPERED  # the id is a claim, not a proof
    assert "claim" in report.reason(0) or "says" in report.reason(0)


def test_unsigned_messages_have_no_key_id_and_say_unsigned() -> None:
    report = verify_history((Message.user("hi"),), KEY)
    assert report.key_ids == (None,) and report.unknown_key == ()
    assert report.reason(0).startswith("unsigned")
