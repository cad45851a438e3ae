"""golem_shell: the effects of golem (provider HTTP, tools, clock, ids) around ``golem_core``."""

from golem_shell._ids import new_id

__all__ = ["new_id"]
