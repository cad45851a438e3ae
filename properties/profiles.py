"""The Hypothesis profiles of golem's properties, and ``examples(n)``: every fixed example
count scaled by the loaded profile.

Profiles (``HYPOTHESIS_PROFILE`` chooses; without it ``ci`` when ``CI`` is set to
anything but ``""``, ``0`` or ``false``, else ``dev``):

- ``ci``: 100 examples a property (Hypothesis's own default); what ``.ci/run`` runs (it
  sets ``CI=1``), kept so that the properties take about three minutes on two cores.
  Derandomized: the examples are the same on every run, so a submission's CI verdict
  never depends on a draw (the hunt for new examples is ``dev`` and ``thorough``'s job);
- ``dev``: 60, for a quick local run;
- ``thorough``: 2,000, for a hunt (``HYPOTHESIS_PROFILE=thorough``).

A property that needs another count than the profile's (a slow one fewer, a cheap one
more) writes ``@settings(max_examples=examples(n))`` with ``n`` its count under ``ci``:
the count scales with the profile (``dev`` 0.6x, ``thorough`` 20x), so no fixed count
overrides a profile.
"""

from __future__ import annotations

import os
from typing import Final

from hypothesis import HealthCheck, settings

__all__ = ["CI_EXAMPLES", "PROFILES", "chosen_profile", "examples", "load_profile"]

CI_EXAMPLES: Final = 100
"""Examples a property runs under ``ci``; the unit of ``examples(n)``."""

PROFILES: Final[dict[str, int]] = {"ci": CI_EXAMPLES, "dev": 60, "thorough": 2000}
"""Each profile's examples per property."""

_QUIET: Final = [HealthCheck.too_slow, HealthCheck.data_too_large]


def chosen_profile(environ: dict[str, str] | None = None) -> str:
    """The profile ``environ`` (default: ``os.environ``) asks for: ``HYPOTHESIS_PROFILE``,
    else ``ci`` when ``CI`` is set (and not ``""``, ``0``, ``false``), else ``dev``.

    Raises:
        ValueError: ``HYPOTHESIS_PROFILE`` names no profile.
    """
    env = os.environ if environ is None else environ
    name = env.get("HYPOTHESIS_PROFILE")
    if name is None:
        ci = env.get("CI", "").strip().lower()
        return "ci" if ci not in ("", "0", "false", "no") else "dev"
    if name not in PROFILES:
        raise ValueError(f"HYPOTHESIS_PROFILE={name!r}: no such profile; one of {sorted(PROFILES)}")
    return name


def load_profile(environ: dict[str, str] | None = None) -> str:
    """Register the profiles and load the one ``environ`` asks for; returns its name."""
    for name, count in PROFILES.items():
        settings.register_profile(
            name,
            max_examples=count,
            deadline=None,
            suppress_health_check=() if name == "dev" else _QUIET,
            print_blob=name == "ci",
            derandomize=name == "ci",
        )
    name = chosen_profile(environ)
    settings.load_profile(name)
    return name


def examples(n: int) -> int:
    """``n`` examples under ``ci``, scaled to the loaded profile (at least 1)."""
    return max(1, round(n * settings.default.max_examples / CI_EXAMPLES))
