"""``import golem_shell`` loads no HTTP client and no store: the provider adapters, and
httpx with them (whose command-line module pulls in rich, click and pygments), and the
stores load on first use.
A module importing an adapter at its top once made the import of golem_shell load them
all (``python -m bench`` measures ``import_golem_shell``)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = (
    "httpx",
    "httpx_sse",
    "rich",
    "click",
    "pygments",
    "anthropic",
    "openai",
    "golem_shell.store",
    "sqlite3",
)


def _loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True)
    return [m for m in out.stdout.decode().strip().split(",") if m]


def test_importing_golem_shell_loads_no_http_client_and_no_store() -> None:
    assert _loaded_after("import golem_shell") == []
    assert _loaded_after("from golem_shell import Agent, native_compaction") == []


def test_an_adapter_loads_httpx_when_first_used() -> None:
    assert "httpx" in _loaded_after("from golem_shell import AnthropicModel")


def test_a_store_loads_when_first_used() -> None:
    assert "golem_shell.store" in _loaded_after("from golem_shell import SQLiteHistoryStore")
