"""The durable engines: where a run of an ``Agent`` is recorded so it survives its worker.

Owns nothing public. Its rooms: ``_engine`` (what every engine does the same way around
the driver: the run's JSON input, its first state, its recorded end and the result read
back), ``_records`` (every recorded
value as JSON, from one table), ``_blobs`` (conversations stored by reference, once per
message), ``_keywords`` (a run's keywords, recorded, and its spec built from the record),
``dbos/`` (the DBOS engine) and ``temporal/`` (the Temporal engine), each by role:
``_common``, ``_workflow``, ``_client`` (and Temporal's ``_activities``). Users import
the engines from their faces, ``golem_shell.durable`` and ``golem_shell.temporal``, which
re-export them.

What it may import: golem_core's public modules and golem_shell's run machinery (the
agent, its set-up, the driver, the asyncio effects, tools, observation, errors).
Nothing below it may import it: only the two faces (and tests) do.
"""

from __future__ import annotations

__all__: list[str] = []
