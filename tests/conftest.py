from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
# properties/profiles.py: the Hypothesis profile (``ci`` under CI=1) for tests/ too, and
# ``examples(n)``, the example counts that scale with it
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "properties"))

from profiles import load_profile  # importable from the path above

from golem_core.providers import PROFILES

load_profile()

_PROVIDER_VARS = sorted({name for p in PROFILES.values() for name in (*p.key_env, p.base_url_env)})
"""Every key and base-URL variable of the registry's providers."""


@pytest.fixture(autouse=True)
def _clean_provider_environ(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test sees a real key or base URL from the machine it runs on."""
    for name in _PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server on 127.0.0.1 for the session (``tests/postgres_server.py``).

    Skips, saying why, only when no server can be started here; with
    ``GOLEM_REQUIRE_POSTGRES=1`` (as in CI) that is a failure instead. More databases on
    the same server: ``postgres_server.create_database(postgres_url, name)``.
    """
    import os

    from postgres_server import PostgresUnavailable, start_postgres

    try:
        server = start_postgres()
    except PostgresUnavailable as e:
        why = f"PostgreSQL could not be started: {e}"
        print(why, file=sys.stderr)
        if os.environ.get("GOLEM_REQUIRE_POSTGRES") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    with server:
        yield server.url


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real Temporal dev server on 127.0.0.1 for the session (``tests/temporal_server.py``).

    Yields a ``TemporalServer`` (``address``, ``namespace``). Skips, saying why, only when no
    server can be started here; with ``GOLEM_REQUIRE_TEMPORAL=1`` (as in CI) that is a
    failure instead.
    """
    import os

    from temporal_server import TemporalUnavailable, start_temporal

    try:
        server = start_temporal(tmp_path_factory.mktemp("temporal"))
    except TemporalUnavailable as e:
        why = f"Temporal could not be started: {e}"
        print(why, file=sys.stderr)
        if os.environ.get("GOLEM_REQUIRE_TEMPORAL") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    with server:
        yield server


# -- leaving the process --------------------------------------------------------------------

_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Once everything is reported, leave without interpreter finalization when the
    Temporal SDK was loaded: its native runtime threads can abort finalization
    (``PyGILState_Release``, seen in a benchmark child), which would turn a green run
    into a crash. Every fixture (servers, temporary files) is torn down by now."""
    if "temporalio" in sys.modules and _EXIT_STATUS:
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])
