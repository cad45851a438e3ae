from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

_PROVIDER_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
)


@pytest.fixture(autouse=True)
def _clean_provider_environ(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test sees a real key or base URL from the machine it runs on."""
    for name in _PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
