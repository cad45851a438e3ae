"""The durable engines room: where a run of an ``Agent`` is recorded so it survives its
worker, on DBOS and on Temporal.

Owns nothing public. Its modules: ``_engine`` (what every engine does the same way around
the driver: the run's JSON input, its first state, its recorded end and the result read
back), ``_records`` (every recorded value as JSON, from one table), ``_blobs``
(conversations stored by reference, once per message; ``_blobs_sql``, the SQLAlchemy
store; ``_collect``, collecting what no conversation holds), ``_keywords`` (a run's
keywords, recorded, and its spec built from the record), ``_toolsets`` (a run's toolsets:
their tool list recorded at its start, each call made from the record), ``_events`` (a
run's events and deltas in a stream log), ``dbos/`` (the DBOS engine) and ``temporal/``
(the Temporal engine), each by role: ``_common``, ``_workflow``, ``_client``
(and Temporal's ``_activities``). Users import the engines from their faces,
``golem_shell.durable`` and ``golem_shell.temporal``, which re-export them.

May import: ``golem_core``'s public modules and everything of the shell below it
(``_agent``, ``run/``, ``tools/``, ``observe/``, ``context/``, ``models/``, the leaves).
Nothing below it imports it: only the two faces, ``ui/`` and tests do.
"""
