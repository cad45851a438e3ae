"""The tools room: Python functions a model can call, and a run's output type.

``_tools`` makes tools of functions (``_docstrings`` reads their descriptions),
``_registry`` holds what decorators register on an agent, ``_schema`` turns Python types
into JSON Schema and validates values back, ``_output`` describes and validates a run's
output, ``_partial_json`` reads a prefix of a JSON answer for ``stream_output``. Users
import these names from ``golem_shell``; MCP toolsets are ``golem_shell.mcp``.

May import: ``golem_core``'s public modules and ``golem_shell._errors``. Everything else
of the shell may import this room; it imports none of it.
"""
