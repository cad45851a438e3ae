"""Compiled parts of golem_core, each optional (ADR 0149).

A package of its own, with no imports, so that importing a compiled module from here
adds no edge back into golem_core: ``_speedups`` (the JSON fast decoder, from
``_speedups.c``) is built at install where a C compiler is, and missing otherwise.
May import: nothing (``codec/_json_compiled`` loads it).
"""

__all__: list[str] = []
