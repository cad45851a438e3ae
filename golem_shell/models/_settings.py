"""Merging request settings: the one rule for settings set in two places.

Owns ``merge_settings(base, over)``: the agent's settings under a run's, and an
adapter's defaults under a request's, follow the same rule (a field ``over`` leaves at
its default is taken from ``base``). A leaf module: ``golem_core`` only.
"""

from __future__ import annotations

import attrs

from golem_core import ModelSettings

__all__ = ["merge_settings"]


def merge_settings(base: ModelSettings | None, over: ModelSettings | None) -> ModelSettings:
    """``base`` with every field that ``over`` sets away from its default.

    ``None`` on either side is nothing to merge (``ModelSettings()`` when both are).
    Total, deterministic; ``merge_settings(s, ModelSettings()) == s``.
    """
    if over is None:
        return base if base is not None else ModelSettings()
    if base is None:
        return over
    changed = {
        f.name: getattr(over, f.name)
        for f in attrs.fields(ModelSettings)
        if getattr(over, f.name) != f.default
    }
    return attrs.evolve(base, **changed) if changed else base
