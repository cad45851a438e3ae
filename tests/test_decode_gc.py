"""``decode_history`` and ``history_from_jsonable`` pause the cyclic collector while they
build, and restore it as it was: on success, on a decode failure, and when something
raises out of the build (ADR 0093)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from returns.result import Failure, Success

from golem_core import Message, decode_history, encode_history, history_from_jsonable
from golem_core.codec import _json as codec

HISTORY = (Message.user("hi"), Message.tool_result("call_1", "search", "found"))
DATA = encode_history(HISTORY)


@pytest.fixture(autouse=True)
def _collector_back_on() -> Iterator[None]:
    """Whatever a test does, the collector is on again after it."""
    yield
    gc.enable()


def _spy(monkeypatch: pytest.MonkeyPatch, name: str, raises: BaseException | None) -> list[bool]:
    """Replace ``codec.<name>`` (a builder the decode calls) with one that records whether
    the collector was enabled when it ran, then builds or raises ``raises``."""
    seen: list[bool] = []
    real: Callable[..., Any] = getattr(codec, name)

    def spy(*args: Any) -> Any:
        seen.append(gc.isenabled())
        if raises is not None:
            raise raises
        return real(*args)

    monkeypatch.setattr(codec, name, spy)
    return seen


@pytest.mark.parametrize("orjson", [True, False], ids=["orjson", "stdlib"])
def test_the_collector_is_paused_while_building_and_on_again_after(
    monkeypatch: pytest.MonkeyPatch, orjson: bool
) -> None:
    if not orjson:
        monkeypatch.setattr(codec, "_ORJSON", None)
    seen = _spy(monkeypatch, "fast_message_list" if orjson else "fast_messages", None)
    gc.enable()
    assert decode_history(DATA) == Success(HISTORY)
    assert seen and not any(seen)
    assert gc.isenabled()


def test_the_collector_is_on_again_after_a_decode_failure() -> None:
    gc.enable()
    assert isinstance(decode_history(b'[{"role": "nobody"}'), Failure)
    assert isinstance(decode_history(b'[{"role": "nobody", "parts": []}]'), Failure)
    assert isinstance(history_from_jsonable({"not": "a list"}), Failure)
    assert gc.isenabled()


def test_the_collector_is_on_again_when_the_build_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spy(monkeypatch, "fast_message_list", MemoryError("out of memory in the build"))
    gc.enable()
    with pytest.raises(MemoryError, match="out of memory in the build"):
        decode_history(DATA)
    assert seen == [False]
    assert gc.isenabled()


def test_history_from_jsonable_restores_the_collector_when_the_build_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _spy(monkeypatch, "fast_messages", KeyboardInterrupt())
    gc.enable()
    with pytest.raises(KeyboardInterrupt):
        history_from_jsonable([{"role": "user", "parts": []}])
    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_the_caller_disabled_stays_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    gc.disable()
    assert decode_history(DATA) == Success(HISTORY)
    assert isinstance(decode_history(b"not json"), Failure)
    assert history_from_jsonable([{"role": "user", "parts": []}]) == Success((Message("user", ()),))
    _spy(monkeypatch, "fast_message_list", MemoryError())
    with pytest.raises(MemoryError):
        decode_history(DATA)
    assert not gc.isenabled()
