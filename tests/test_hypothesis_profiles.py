"""Issue 33, item 12: CI runs the properties under the ``ci`` Hypothesis profile, and no
property's example count overrides the profile (each scales with it, ``examples(n)``)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

PROPERTIES = Path(__file__).resolve().parent.parent / "properties"


def _profiles() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "golem_property_profiles", PROPERTIES / "profiles.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("environ", "profile"),
    [
        ({}, "dev"),
        ({"CI": "1"}, "ci"),
        ({"CI": "true"}, "ci"),
        ({"CI": ""}, "dev"),
        ({"CI": "0"}, "dev"),
        ({"CI": "false"}, "dev"),
        ({"CI": "1", "HYPOTHESIS_PROFILE": "thorough"}, "thorough"),
        ({"HYPOTHESIS_PROFILE": "ci"}, "ci"),
    ],
)
def test_the_profile_follows_ci_unless_named(environ: dict[str, str], profile: str) -> None:
    assert _profiles().chosen_profile(environ) == profile


def test_an_unknown_profile_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"HYPOTHESIS_PROFILE='fast': no such profile"):
        _profiles().chosen_profile({"HYPOTHESIS_PROFILE": "fast"})


@pytest.mark.parametrize(
    ("environ", "counts"),
    [
        ({"CI": "1"}, "100 40 1000"),  # what .ci/run sets
        ({}, "60 24 600"),
        ({"HYPOTHESIS_PROFILE": "thorough"}, "2000 800 20000"),
    ],
)
def test_the_properties_conftest_loads_the_profile_and_counts_scale_with_it(
    environ: dict[str, str], counts: str
) -> None:
    """The conftest as pytest loads it, in a fresh interpreter: the profile's examples,
    then ``examples(40)`` and ``examples(1000)``."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    script = (
        f"import sys; sys.path.insert(0, {str(PROPERTIES)!r}); import conftest;"
        " from hypothesis import settings; from profiles import examples;"
        " print(settings.default.max_examples, examples(40), examples(1000))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**env, **environ},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == counts.split()


FIXED = re.compile(r"max_examples\s*=\s*(?!examples\()")


def test_no_property_fixes_its_example_count() -> None:
    """A fixed ``max_examples`` overrides every profile (``ci`` and ``thorough`` could not
    raise it): each property writes ``examples(n)``."""
    fixed = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(PROPERTIES.glob("*.py"))
        if path.name != "profiles.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FIXED.search(line)
    ]
    assert fixed == []


TESTS = Path(__file__).resolve().parent
KIT_TESTS = ("test_testing_kit.py", "test_compaction_probe.py", "test_hypothesis_profiles.py")
"""Tests of golem's testing kit, whose ``max_examples=`` is a user's parameter (and this
file, which names it)."""


def test_no_test_fixes_its_example_count_either() -> None:
    """``tests/`` too: ``tests/test_store_races.py`` ran its state machine 6 x 8 under
    every profile (issue 49 item 8)."""
    fixed = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(TESTS.glob("*.py"))
        if path.name not in KIT_TESTS
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FIXED.search(line)
    ]
    assert fixed == []


def test_the_tests_conftest_loads_the_profile_too() -> None:
    """A run of ``tests/`` alone uses the profile (and ``examples(n)`` scales with it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    script = (
        f"import sys; sys.path.insert(0, {str(TESTS)!r}); import conftest;"
        " from hypothesis import settings; from profiles import examples;"
        " print(settings.default.max_examples, examples(6))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**env, "HYPOTHESIS_PROFILE": "thorough"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["2000", "120"]
