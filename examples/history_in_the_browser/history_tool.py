"""The page's Python, run by Pyodide in the Web Worker: golem_core's public API only.

``examine(text)`` decodes a pasted history (golem's JSON format), checks its call/result
pairing, repairs it, sanitizes it as untrusted input, and returns all of it as JSON for
the page: the decode error when it does not decode, else the problems found, the repair
report, the sanitize report, and the repaired and sanitized histories. Nothing here
touches the network, a file or a clock: it is golem_core in a browser tab.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
from returns.result import Failure

from golem_core import (
    check_pairing,
    decode_history,
    encode_history,
    normalize_history,
    sanitize_history,
)


def _plain(value: Any) -> Any:
    """An attrs report as JSON-ready dicts and lists."""
    return attrs.asdict(value, recurse=True)


def examine(text: str) -> str:
    """The page's whole answer for ``text``, as JSON (see the module docstring)."""
    decoded = decode_history(text)
    if isinstance(decoded, Failure):
        return json.dumps({"ok": False, "error": decoded.failure().message})
    history = decoded.unwrap()
    repaired, repair = normalize_history(history)
    sanitized, report = sanitize_history(history)
    return json.dumps(
        {
            "ok": True,
            "messages": len(history),
            "problems": [_plain(p) for p in check_pairing(history)],
            "repair": _plain(repair),
            "repaired": json.loads(encode_history(repaired)),
            "sanitize": _plain(report),
            "sanitized": json.loads(encode_history(sanitized)),
            "problems_after": len(check_pairing(sanitized)),
        },
        default=str,
    )
