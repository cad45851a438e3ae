from __future__ import annotations

import uuid

import pytest

from golem_core import (
    Message,
    conversation_id_of,
)
from golem_core.ids import (
    next_uuid7,
    stamp,
    uuid7,
    uuid7_unix_ms,
)
from golem_shell import new_id


def test_uuid7_layout_follows_rfc_9562() -> None:
    ms = 0x0193_A1B2_C3D4
    value = uuid.UUID(uuid7(ms, b"\xff" * 10))
    assert value.version == 7
    assert value.variant == uuid.RFC_4122
    assert value.int >> 80 == ms
    assert uuid7_unix_ms(str(value)) == ms


def test_uuid7_is_deterministic_in_its_arguments() -> None:
    assert uuid7(5, bytes(range(10))) == uuid7(5, bytes(range(10)))
    assert uuid7(5, bytes(range(10))) != uuid7(5, bytes(range(1, 11)))


@pytest.mark.parametrize(("ms", "rand"), [(-1, bytes(10)), (1 << 48, bytes(10)), (0, bytes(9))])
def test_uuid7_refuses_bad_input(ms: int, rand: bytes) -> None:
    with pytest.raises(ValueError):
        uuid7(ms, rand)


def test_next_uuid7_is_strictly_increasing_within_a_millisecond_and_after_a_clock_step_back() -> (
    None
):
    ids = [next_uuid7(None, 1000, b"\xff" * 10)]
    for i in range(200):
        ms = 1000 if i < 100 else 999  # same millisecond, then a clock that stepped back
        ids.append(next_uuid7(ids[-1], ms, bytes([i % 256]) * 10))
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 7 for i in ids)


def test_next_uuid7_uses_a_newer_clock() -> None:
    first = next_uuid7(None, 1000, bytes(10))
    assert uuid7_unix_ms(next_uuid7(first, 2000, bytes(10))) == 2000


def test_new_id_mints_many_strictly_increasing_ids() -> None:
    ids = [new_id() for _ in range(5000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 5000
    assert uuid.UUID(ids[0]).version == 7


def test_conversation_id_rule() -> None:
    plain = Message.user("a")
    older = Message.user("b").with_ids("r1", "conv-old")
    newer = Message.assistant("c").with_ids("r2", "conv-new")
    assert conversation_id_of([older, newer, plain], explicit="mine") == "mine"
    assert conversation_id_of([older, newer, plain]) == "conv-new"
    assert conversation_id_of([plain]) is None
    assert conversation_id_of([]) is None


def test_stamp_sets_ids_and_is_idempotent() -> None:
    added = (Message.user("q"), Message.assistant("a"))
    stamped = stamp(added, "run", "conv")
    assert all(m.run_id == "run" and m.conversation_id == "conv" for m in stamped)
    assert stamp(stamped, "run", "conv") == stamped
    assert stamped[0].text == "q"
