"""The Temporal engine, by role (its public face is ``golem_shell.temporal``).

Rooms: ``_common`` (the names a run is recorded under, the registry of agents by name,
the engine's settings), ``_workflow`` (the workflow ``golem.run``: the driver replayed
from its history, its journal, its effects), ``_perform`` (how the workflow performs an
activity, again when its worker died or its blob store was unreachable), ``_activities``
(the effects, each an activity) and ``_client`` (``TemporalAgent``: starting runs,
answering and steering them, reading their results, and the worker). The workflow and
the activities agree on payloads through ``golem_shell.engines._records`` and the run's
blob store.

``temporalio`` is an optional dependency: importing the engine without it raises
``UsageError`` naming the extra.

May import: the engines room around it (``_engine``, ``_records``, ``_blobs``,
``_keywords``) and what that room may import; only its face, ``golem_shell.temporal``, imports it.
"""

from __future__ import annotations

from golem_shell._errors import UsageError

try:
    import temporalio  # noqa: F401  (only to name the extra when it is missing)
except ImportError as _missing:  # pragma: no cover - the extra is installed in CI
    raise UsageError(
        "golem_shell.temporal needs Temporal's SDK: install golem with the temporal extra"
        " (pip install 'golem-agents[temporal]')"
    ) from _missing
