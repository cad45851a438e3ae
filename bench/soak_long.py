"""The ``soak_long`` section of ``bench/results.md``: issue 50's long soak.

``python -m bench.soak --config durable --chaos --users 12 --minutes 20 --min-kills 100
--every 1 3 --section soak_long --write bench/results.md`` records it: DBOS and Temporal,
20 minutes of chaos each (a kill every 1-3 s), and on until at least 100 kills of each
kind (server, worker, PostgreSQL).
Owns ``render`` (``bench.soak_render``'s tables under their own title); ``bench.soak``
keeps the shorter calm-and-chaos run in the ``soak`` section.
"""

from __future__ import annotations

from typing import Any

from bench.soak_render import render as render_soak

__all__ = ["render"]


def render(data: dict[str, Any]) -> str:
    """The long soak's section."""
    return render_soak(data, title="the long soak")
