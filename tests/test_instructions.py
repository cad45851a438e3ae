"""Instructions: static then dynamic, and they replace every system message."""

from __future__ import annotations

import pytest

from golem_core import (
    Message,
    Role,
    join_instructions,
)
from golem_core.history._instructions import apply_instructions


@pytest.mark.parametrize(
    ("static", "dynamic", "joined"),
    [
        ("Be brief.", "The player is Ada.", "Be brief.\n\nThe player is Ada."),
        ("Be brief.", None, "Be brief."),
        (None, "The player is Ada.", "The player is Ada."),
        ("Be brief.", "", "Be brief."),
        ("Be brief.", " \n\t", "Be brief."),
        ("", "dyn", "dyn"),
        ("   ", "dyn", "dyn"),
        (None, None, None),
        ("", "", None),
        (" ", "\n", None),
        ("  keep my spaces  ", "\nand mine\n", "  keep my spaces  \n\n\nand mine\n"),
    ],
)
def test_join_instructions(static: str | None, dynamic: str | None, joined: str | None) -> None:
    assert join_instructions(static, dynamic) == joined


def test_apply_instructions_replaces_every_system_message() -> None:
    history = (
        Message.system("old"),
        Message.user("hi"),
        Message.system("stale, mid-conversation"),
        Message.assistant("hello"),
    )
    out = apply_instructions(history, "new")
    assert out == (Message.system("new"), history[1], history[3])
    assert out[1] is history[1] and out[2] is history[3]


def test_apply_instructions_with_none_only_removes() -> None:
    history = [Message.system("old"), Message.user("hi")]
    assert apply_instructions(history, None) == (history[1],)


def test_apply_instructions_returns_the_same_tuple_when_already_applied() -> None:
    history = (Message.system("new"), Message.user("hi"))
    assert apply_instructions(history, "new") is history
    plain = (Message.user("hi"),)
    assert apply_instructions(plain, None) is plain


def test_apply_instructions_is_idempotent() -> None:
    history = (Message.user("a"), Message.system("x"), Message.system("y"))
    once = apply_instructions(history, "z")
    assert apply_instructions(once, "z") is once
    assert [m.role for m in once] == [Role.SYSTEM, Role.USER]


def test_apply_instructions_on_an_empty_history() -> None:
    assert apply_instructions((), None) == ()
    assert apply_instructions([], "i") == (Message.system("i"),)


def test_a_stamped_system_message_is_replaced_by_a_plain_one() -> None:
    stamped = Message.system("new").with_ids("run", "conv")
    out = apply_instructions((stamped, Message.user("hi")), "new")
    assert out[0] == Message.system("new")
