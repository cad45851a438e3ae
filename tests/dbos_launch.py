"""One DBOS launch on a fresh SQLite file, for a test module's in-process durable runs.

The module fixtures of the DBOS tests each launched DBOS with the same configuration
(portable JSON, quiet logs, a fast notification poll since SQLite has no NOTIFY) and
destroyed it afterwards; ``launched_dbos`` is that, once. ``dbos`` is imported only when
it is called, after the test module's ``importorskip``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["launched_dbos"]


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
