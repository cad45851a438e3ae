"""Reprs, tracebacks and pickles name the public path (issue 37 item 3): ``golem_shell.Agent``,
not ``golem_shell._agent.Agent``; every exported class and function of a public module
that a private module of its package defines says the module users import it from."""

from __future__ import annotations

import importlib
import pickle
import traceback
import types
import typing

import cattrs
import pytest

import golem_core
import golem_shell
import golem_shell.models
import golem_shell.store
from golem_core import Message, Role, TextPart, make_converter
from golem_shell import Agent, RunError, TestModel

PUBLIC = [
    "golem_core",
    "golem_core.loop",
    "golem_core.ids",
    "golem_core.retry",
    "golem_core.wire",
    "golem_shell",
    "golem_shell.models",
    "golem_shell.store",
    "golem_shell.ui",
]


def test_agent_run_error_and_message_name_their_public_module() -> None:
    assert (Agent.__module__, Agent.__qualname__) == ("golem_shell", "Agent")
    assert repr(Agent) == "<class 'golem_shell.Agent'>"
    assert RunError.__module__ == "golem_shell"
    assert (Message.__module__, Message.__qualname__) == ("golem_core", "Message")
    assert golem_core.decode_history.__module__ == "golem_core"
    assert golem_shell.tool.__module__ == "golem_shell"
    assert golem_shell.AsyncTokenCounter.__module__ == "golem_shell"  # loaded on first use
    assert golem_shell.store.SQLiteHistoryStore.__module__ == "golem_shell.store"
    assert importlib.import_module("golem_core.loop").RunState.__module__ == "golem_core.loop"


def test_a_traceback_shows_the_public_path() -> None:
    try:
        raise golem_shell.UsageError("misused")
    except golem_shell.UsageError as e:
        text = "".join(traceback.format_exception(e))
    assert "golem_shell.UsageError: misused" in text
    assert "golem_shell._errors" not in text


@pytest.mark.parametrize("name", PUBLIC)
def test_every_exported_class_and_function_is_claimed_and_resolves(name: str) -> None:
    module = importlib.import_module(name)
    package = name if hasattr(module, "__path__") else name.rpartition(".")[0]
    for member in module.__all__:
        value = getattr(module, member)
        if not isinstance(value, type | types.FunctionType) or value.__qualname__ != member:
            continue
        assert not value.__module__.startswith(f"{package}._"), (name, member)
        home = importlib.import_module(value.__module__)
        assert getattr(home, value.__qualname__) is value, (name, member)


def test_pickles_and_type_hints_still_work() -> None:
    message = Message.user("hi")
    assert pickle.loads(pickle.dumps(message)) == message
    assert pickle.loads(pickle.dumps(Role.USER)) is Role.USER
    assert pickle.loads(pickle.dumps(golem_core.decode_history)) is golem_core.decode_history
    assert typing.get_type_hints(Message)["role"] is Role
    converter = make_converter()
    assert converter.structure(converter.unstructure(message), Message) == message
    assert cattrs.Converter().structure({"text": "hi"}, TextPart) == TextPart("hi")


def test_a_run_still_runs() -> None:
    assert Agent(TestModel()).run_sync("hi").output
