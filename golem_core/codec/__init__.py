"""The JSON codec room: history JSON in and out, on one field table (ADRs 0060, 0074, 0149).

``_json_fields`` is the table, ``_json_reference`` reads it one field at a time,
``_json_compiled`` compiles the fast paths from it (and loads ``golem_core._native`` when
built), ``_json`` is the configured converter the rest of golem calls. Users import the
codec from ``golem_core`` (``encode_history``, ``decode_history``) and the table from
``golem_core.contract``.

May import: the ground of ``golem_core`` (``_messages``) and ``golem_core._native``;
nothing else of golem. ``wire/``, ``history/`` and ``loop/`` import it.
"""
