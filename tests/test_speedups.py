"""The compiled fast decoder (``golem_core/_native/_speedups.c``, ADR 0149).

properties/test_codec_agreement_properties.py holds it to the reference decoder on every
input (each property runs on it and on the generated Python). Here: it is the one the
codec uses when built, and built from this clone's source; it releases every reference
it takes, on success and at each place it gives up; it refuses a malformed spec with a
``TypeError`` (a stale build falls back to Python, never a wrong value); it builds
exactly the Python decoder's values on both of ``bench/``'s workloads; and the wheel's
build hook compiles it where it can, builds the pure-Python wheel where it cannot, and
fails only when asked to (``GOLEM_REQUIRE_SPEEDUPS=1``).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import hashlib
import os
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import orjson
import pytest

import golem_core.codec._json as codec
import golem_core.codec._json_compiled as compiled
from bench.decode import _inputs
from golem_core import Message, Role, TextPart
from golem_core.codec._json_compiled import NATIVE_PATHS, PYTHON_PATHS, Unhandled, native_spec

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "golem_core" / "_native" / "_speedups.c"


def speedups() -> ModuleType:
    """``golem_core._native._speedups``, or a skip (a failure under
    ``GOLEM_REQUIRE_SPEEDUPS=1``)."""
    try:
        from golem_core._native import _speedups
    except ImportError:
        if os.environ.get("GOLEM_REQUIRE_SPEEDUPS") == "1":
            pytest.fail("GOLEM_REQUIRE_SPEEDUPS=1 but golem_core._native._speedups is not built")
        pytest.skip("golem_core._native._speedups is not built (no C compiler at install)")
    return _speedups


def test_the_codec_decodes_with_the_compiled_decoder_built_from_this_source() -> None:
    module = speedups()
    if os.environ.get("GOLEM_PURE_DECODER") == "1":  # the root conftest.py's switch
        pytest.skip("GOLEM_PURE_DECODER=1: this run decodes with the Python fast decoder")
    assert module.source_sha256 == hashlib.sha256(SOURCE.read_bytes()).hexdigest(), (
        "golem_core._native._speedups was built from another _speedups.c: reinstall "
        "(pip install -e .)"
    )
    assert NATIVE_PATHS is not None
    assert compiled.fast_message is NATIVE_PATHS[0] is codec.fast_message
    assert compiled.fast_message_list is NATIVE_PATHS[1] is codec.fast_message_list


@pytest.mark.parametrize("workload", ["chat", "agentic"])
def test_it_builds_the_python_decoders_values_on_both_bench_workloads(workload: str) -> None:
    speedups()
    assert NATIVE_PATHS is not None
    value = orjson.loads(_inputs(workload, 600, None)[0])
    native = NATIVE_PATHS[1](value, {})
    assert native == PYTHON_PATHS[1](value, {})
    assert [type(p) for m in native for p in m.parts] == [
        type(p) for m in PYTHON_PATHS[1](value, {}) for p in m.parts
    ]
    # and a shared field is the first equal string of the decode, as in Python
    names: dict[Any, str] = {}
    tools = [m.tool_name for m in NATIVE_PATHS[1](value, names) if m.tool_name]
    assert tools and all(t is names[t] for t in tools)


# -- references ----------------------------------------------------------------------------


def _fresh(value: Any) -> Any:
    """``value`` with each string a new object (a literal may be shared with the rest of
    the interpreter, whose count then moves with whatever else runs)."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    if isinstance(value, str):
        return "".join(list(value))
    return value


def _message_dict() -> dict[str, Any]:
    """A message using every kind of field, each value a fresh object."""
    return _fresh(
        {
            "role": "assistant",
            "parts": [
                {"type": "thinking", "text": "".join(["th", "ink"]), "signature": "s" * 3},
                {"type": "tool_call", "id": "c" * 2, "name": "tool" + "x", "arguments": "{}" * 2},
                {"type": "url", "url": "https://x/" + "a", "kind": "image", "mediaType": "i/p"},
                {"type": "data", "data": "AAE=", "kind": "document", "mediaType": "a/p"},
                {"type": "hologram", "frames": 3},
                {"type": "text", "text": "t" * 5, "future": [1, 2]},
            ],
            "runId": "r" * 4,
            "createdAt": "2026-01-02T03:04:05+00:00",
            "model": "m" * 6,
            "usage": {"inputTokens": 10**30, "outputTokens": 2, "later": True},
            "finishReason": "stop",
            "zzz": {"unknown": "field"},
        }
    )


def _shared_by_the_interpreter(x: object) -> bool:
    """``None``, the booleans, small ints, one-character strings: their counts move with
    anything the process does."""
    return (
        x is None
        or type(x) is bool
        or (type(x) is int and -5 <= x <= 256)
        or (  # type: ignore[operator]
            type(x) is str and len(x) <= 1  # type: ignore[arg-type]
        )
    )


def _leaves(value: object) -> list[object]:
    """Every object a parsed JSON value holds (containers and scalars), but those the
    interpreter shares."""
    out: list[object] = [] if _shared_by_the_interpreter(value) else [value]
    if isinstance(value, dict):
        for v in value.values():
            out += _leaves(v)
    elif isinstance(value, list):
        for v in value:
            out += _leaves(v)
    return out


def _wrong(value: object) -> list[object]:
    return [None, 1.5, -1, "not-a-thing", [], {}] if value is not None else [1.5]


def _mutations(d: dict[str, Any]) -> list[dict[str, Any]]:
    """``d`` with one value set wrong at a time, at every depth: each gives up at a
    different place, after taking references for the values read before it."""
    out: list[dict[str, Any]] = []
    for key, value in d.items():
        for bad in _wrong(value):
            m = copy.deepcopy(d)
            m[key] = bad
            out.append(m)
    for i, part in enumerate(d["parts"]):
        for key, value in part.items():
            for bad in _wrong(value):
                m = copy.deepcopy(d)
                m["parts"][i][key] = bad
                out.append(m)
    for key in d["usage"]:
        m = copy.deepcopy(d)
        m["usage"][key] = -5
        out.append(m)
    return out


def test_every_reference_it_takes_is_released_on_success_and_wherever_it_gives_up() -> None:
    speedups()
    assert NATIVE_PATHS is not None
    one, many = NATIVE_PATHS
    inputs = [_message_dict(), *_mutations(_message_dict())]
    outcomes = {"built": 0, "unhandled": 0}
    gc.collect()  # no collection in between: counts move only by what the calls keep
    with collector_paused():
        check_each(inputs, one, many, outcomes)
    assert outcomes["built"] >= 2 and outcomes["unhandled"] >= 40, outcomes


def check_each(inputs: list[dict[str, Any]], one: Any, many: Any, outcomes: dict[str, int]) -> None:
    for d in inputs:
        leaves = _leaves(d)
        before = [sys.getrefcount(x) for x in leaves]
        for call, arg in ((one, d), (many, [d, d])):
            try:
                result = call(arg, {})
            except Unhandled:
                outcomes["unhandled"] += 1
            else:
                outcomes["built"] += 1
                del result
        del arg  # the last one holds ``[d, d]``
        after = [sys.getrefcount(x) for x in leaves]
        leaked = [(x, a - b) for x, b, a in zip(leaves, before, after, strict=True) if a != b]
        assert leaked == [], (d, leaked)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_the_values_it_builds_own_their_references() -> None:
    speedups()
    assert NATIVE_PATHS is not None
    text = "".join(["long ", "text"])
    d = {"role": "user", "parts": [{"type": "text", "text": text}]}
    base = sys.getrefcount(text)
    message = NATIVE_PATHS[0](d, {})
    assert sys.getrefcount(text) == base + 1  # the part holds it
    del d
    assert message == Message(Role.USER, parts=(TextPart("long text"),))
    assert message.parts[0].text is text
    del message
    assert sys.getrefcount(text) == base - 1  # only ``text``, the dict gone too


# -- the collector -------------------------------------------------------------------------


def _objects(value: object) -> Iterator[object]:
    """``value`` and every object it refers to, depth first (each once)."""
    seen: set[int] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if id(v) in seen or isinstance(v, Role | type):
            continue
        seen.add(id(v))
        yield v
        todo += gc.get_referents(v)


def _acyclic(v: object, depth: int) -> bool:
    """Untracked (atomic, or a value built and untracked), or a tuple of such values to
    ``depth`` levels (the unknown fields' ``((key, text), ...)``)."""
    if not gc.is_tracked(v):
        return True
    return depth > 0 and type(v) is tuple and all(_acyclic(x, depth - 1) for x in v)


def test_what_it_builds_is_left_to_reference_counting_where_no_cycle_can_pass() -> None:
    """Values made of immutable leaves are untracked (the collector never traverses a
    long history again and again); each untracked value refers only to values that are
    untracked or not the collector's, or to a ``Role``: no cycle can pass through it.
    A value holding an ``UnknownPart`` (built in Python) stays tracked."""
    speedups()
    assert NATIVE_PATHS is not None
    value = [*orjson.loads(_inputs("agentic", 300, None)[0]), _message_dict()]
    built = NATIVE_PATHS[1](value, {})
    untracked = 0
    for message in built:
        for o in _objects(message):
            if gc.is_tracked(o) or not gc.is_tracked(type(o)):
                continue  # tracked, or an atomic value (str, int, bytes, datetime, ...)
            untracked += 1
            for ref in gc.get_referents(o):
                assert _acyclic(ref, 2) or isinstance(ref, Role | type), (o, ref)
    assert untracked > len(built) * 2  # messages, parts, tuples, usages
    assert sum(not gc.is_tracked(m) for m in built) == len(built) - 1  # but the last
    assert not gc.is_tracked(built[0]) and not gc.is_tracked(built[0].parts)
    holds_unknown = built[-1]  # ``_message_dict`` has a "hologram" part
    assert any(type(p).__name__ == "UnknownPart" for p in holds_unknown.parts)
    assert gc.is_tracked(holds_unknown) and gc.is_tracked(holds_unknown.parts)
    assert not gc.is_tracked(holds_unknown.usage)  # a usage of known fields: untracked


# -- the spec --------------------------------------------------------------------------------


class _WithDict:
    pass


class _Slotted:
    __slots__ = ("a", "extra")


def _spec_with(**record: Any) -> tuple[object, ...]:
    helpers, message, usage, parts = native_spec(compiled._NS)
    cls, tag, known, not_null, fields = message  # type: ignore[misc]
    fields = record.get("fields", fields)
    message = (record.get("cls", cls), record.get("tag", tag), known, not_null, fields)
    return (record.get("helpers", helpers), message, usage, parts)


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param((), id="not-four"),
        pytest.param(_spec_with(cls=_WithDict), id="a-class-with-a-dict"),
        pytest.param(_spec_with(cls=_Slotted), id="a-field-that-is-not-a-slot"),
        pytest.param(_spec_with(cls=Message, tag="text"), id="a-message-with-a-tag"),
        pytest.param(_spec_with(fields=(("role", "role", 99, True, None, 0, 0),)), id="a-kind"),
        pytest.param(_spec_with(fields=((1, "role", 1, True, None, 0, 0),)), id="a-key"),
        pytest.param(_spec_with(fields=(("role",),)), id="a-short-field"),
        pytest.param(_spec_with(helpers=(Unhandled,)), id="short-helpers"),
    ],
)  # fmt: skip
def test_a_malformed_spec_is_a_type_error(spec: tuple[object, ...]) -> None:
    module = speedups()
    module.decoder(native_spec(compiled._NS))  # the well-formed one is accepted
    with pytest.raises(TypeError, match="decoder"):
        module.decoder(spec)


def test_a_stale_build_falls_back_to_the_python_decoder_with_a_warning() -> None:
    module = speedups()

    def stale(spec: object) -> object:
        raise TypeError("decoder: bad spec (a field's key or kind)")

    with mock.patch.object(module, "decoder", stale), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert compiled._native_paths() is None
    assert "stale" in str(w[0].message)


# -- the build hook --------------------------------------------------------------------------


def _wheel(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    full.pop("GOLEM_REQUIRE_SPEEDUPS", None)
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir",
         str(tmp_path), str(ROOT)],
        capture_output=True, text=True, env=full,
    )  # fmt: skip


def test_without_a_compiler_the_wheel_is_pure_python_unless_one_is_required(
    tmp_path: Path,
) -> None:
    no_cc = {"CC": str(tmp_path / "no-such-cc"), "LDSHARED": str(tmp_path / "no-such-cc")}
    done = _wheel(tmp_path / "fallback", **no_cc)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "did not compile" in done.stdout + done.stderr
    (wheel,) = (tmp_path / "fallback").glob("*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    compiled_files = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith((".so", ".pyd"))]
    assert compiled_files == []
    refused = _wheel(tmp_path / "required", GOLEM_REQUIRE_SPEEDUPS="1", **no_cc)
    assert refused.returncode != 0
    assert "GOLEM_REQUIRE_SPEEDUPS=1" in refused.stdout + refused.stderr
    pure = _wheel(tmp_path / "pure", GOLEM_PURE="1")
    assert pure.returncode == 0, pure.stderr[-3000:]
    (wheel,) = (tmp_path / "pure").glob("*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
