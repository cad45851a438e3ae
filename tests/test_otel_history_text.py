"""The span text of a request's history is written once per message and shared between
requests, and is always exactly the JSON of the whole history (issue 29, item 3)."""

from __future__ import annotations

import gc

import pytest

pytest.importorskip("opentelemetry")

from golem_core import Message, TextPart, ToolCallPart
from golem_shell.observe import _otel


def _plain(history: tuple[Message, ...]) -> str:
    return _otel._json([_otel._message(m) for m in history])


def test_each_request_text_is_the_json_of_its_whole_history() -> None:
    base = (
        Message.system("be brief"),
        Message.user("hi"),
        Message.assistant(tool_calls=[ToolCallPart("c1", "f", '{"x": 1}')]),
        Message.tool_result("c1", "f", "ok"),
    )
    requests = [
        (),
        base[:1],
        base,
        (*base, Message.user("more")),  # the conversation goes on
        (*base, Message.user("more"), Message.assistant("done")),
        (*base[:2], Message.user("branch")),  # a branch from an earlier point
        (*base[:2], Message.user("branch")),  # the very same request again
        (Message.user("unrelated"),),
        (*base[:2], Message(base[2].role, (TextPart("équipe ✓"),))),  # non-ASCII
    ]
    for history in requests:
        assert _otel._messages_json(history) == _plain(history)


def test_texts_leave_with_their_messages() -> None:
    message = Message.user("short-lived")
    _otel._messages_json((Message.user("anchor"), message))
    key = id(message)
    assert key in _otel._MESSAGE_TEXTS
    for k in [k for k, (h, _, _) in _otel._RECENT_HISTORIES.items() if message in h]:
        del _otel._RECENT_HISTORIES[k]
    del message
    gc.collect()
    assert key not in _otel._MESSAGE_TEXTS


def test_recent_histories_are_bounded() -> None:
    for i in range(3 * _otel._RECENT_MAX):
        _otel._messages_json((Message.user(f"conversation {i}"),))
    assert len(_otel._RECENT_HISTORIES) <= _otel._RECENT_MAX
