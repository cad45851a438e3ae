"""The DBOS engine, by role (its public face is ``golem_shell.durable``).

Rooms: ``_common`` (the names a run is recorded under, the registry of agents by name,
the blob store in DBOS's system database, the step options), ``_workflow`` (the workflow
``golem.run``: the driver replayed from its recorded steps, and its effects as steps)
and ``_client`` (``DurableAgent``: starting runs, answering and steering them, reading
their results), as ``golem_shell.engines.temporal`` has them. With DBOS there is no
worker object to make: a launched DBOS executes the workflows of its process, and a step
is a function the workflow body calls, so there is no activities room.

``dbos`` is an optional dependency: importing the engine without it raises
``UsageError`` naming the extra.

May import: the engines room around it (``_engine``, ``_records``, ``_blobs``,
``_keywords``) and what that room may import; only its face, ``golem_shell.durable``, imports it.
"""

from __future__ import annotations

from golem_shell._errors import UsageError

try:
    import dbos  # noqa: F401  (only to name the extra when it is missing)
except ImportError as _missing:  # pragma: no cover - the extra is installed in CI
    raise UsageError(
        "golem_shell.durable needs DBOS: install golem with the dbos extra"
        " (pip install 'golem-agents[dbos]')"
    ) from _missing
