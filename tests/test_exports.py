"""Every public name is exported, sorted, and importable (httpx test_exported_members)."""

from __future__ import annotations

import importlib
import types

import pytest

PACKAGES = ["golem_core", "golem_shell"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_complete(name: str) -> None:
    package = importlib.import_module(name)
    exported = package.__all__
    assert exported == sorted(exported)
    for member in exported:
        assert hasattr(package, member), member
    public = {
        n
        for n, v in vars(package).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert public - set(exported) == set()


@pytest.mark.parametrize("name", PACKAGES)
def test_private_modules_declare_all(name: str) -> None:
    package = importlib.import_module(name)
    for n, v in vars(package).items():
        if isinstance(v, types.ModuleType) and n.startswith("_"):
            assert hasattr(v, "__all__"), n
