"""The durable engines room: runs that survive a crash, on DBOS and on Temporal.

``_engine`` is what every engine does the same way around the driver (input, first
state, end); ``_records`` the values an engine records, as plain JSON; ``_blobs`` the
content-addressed store that keeps history by reference. Users import the engines from
``golem_shell.durable`` (DBOS) and ``golem_shell.temporal``.

May import: everything of the shell below it (``_agent``, ``run/``, ``tools/``,
``observe/``, ``context/``, ``models/``, the leaves) and ``golem_core``'s public modules.
Nothing but the public faces and ``ui/`` imports this room.
"""
