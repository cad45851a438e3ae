"""The run room: how one run executes, on whatever runtime drives it.

``_setup`` builds a run's ``RunSpec`` once (from the agent and the run's keywords,
declared once in ``_options``); ``_driver`` is the one driver over the effects protocol;
``_asyncio`` is the plain asyncio runtime (effects, timeout, ``sync``); ``_limits``,
``_steering``, ``_event_stream``, ``_capture`` and ``_checks`` are the run's limits,
steering, event iterator, captured messages and argument checks. Users import these names
from ``golem_shell``.

May import: ``golem_core``'s public modules, ``tools/``, ``observe/``, ``context/``,
``models/`` and the leaves (``_errors``, ``_ids``, ``_hooks``, ``_results``). Never
``_agent``, ``engines/`` or ``ui/``, which import this room.
"""
