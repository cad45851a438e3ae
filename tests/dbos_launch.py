"""One DBOS launch on a fresh SQLite file, for a test module's in-process durable runs.

The module fixtures of the DBOS tests each launched DBOS with the same configuration
(portable JSON, quiet logs, a fast notification poll since SQLite has no NOTIFY) and
destroyed it afterwards; ``launched_dbos`` is that, once, and ``dbos_fixture(name)`` the
module fixture that wraps it (``launched = dbos_fixture("golem-payloads")``). ``dbos`` is
imported only when DBOS is launched, after the test module's ``importorskip``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["dbos_fixture", "launched_dbos"]


@contextmanager
def launched_dbos(path: Path, name: str) -> Iterator[Path]:
    """DBOS launched as application ``name`` on the SQLite file ``path`` (yielded), and
    destroyed on exit."""
    import dbos

    dbos.DBOS(
        config={
            "name": name,
            "system_database_url": f"sqlite:///{path}",
            "serializer": dbos.DBOSPortableJSONSerializer(),
            "log_level": "WARNING",
            "notification_listener_polling_interval_sec": 0.05,  # SQLite has no NOTIFY
        }
    )
    dbos.DBOS.launch()
    try:
        yield path
    finally:
        dbos.DBOS.destroy()


def dbos_fixture(name: str) -> Callable[..., Iterator[Path]]:
    """A module fixture: one DBOS, application ``name``, on a fresh SQLite file for the
    module's tests; it yields the file."""

    @pytest.fixture(scope="module")
    def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
        with launched_dbos(tmp_path_factory.mktemp("dbos") / "golem.sqlite", name) as path:
            yield path

    return launched
