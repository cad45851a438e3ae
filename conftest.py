"""The switch every test run shares (``tests/`` and ``properties/``).

``GOLEM_PURE_DECODER=1``: every decode of the run uses the fast decoder written in Python
(``PYTHON_PATHS``), the one an install without a C compiler has, even where the compiled
one is built; ``.ci/run`` runs the codec tests a second time so (ADR 0149: the two differ
in speed only). Read here, not in ``golem_core``, which reads no environment (pure).
"""

from __future__ import annotations

import os

if os.environ.get("GOLEM_PURE_DECODER") == "1":
    import golem_core.codec._json as codec
    import golem_core.codec._json_compiled as compiled

    for module in (compiled, codec):  # `_json` holds its own names for them
        setattr(module, "fast_message", compiled.PYTHON_PATHS[0])  # noqa: B010
        setattr(module, "fast_message_list", compiled.PYTHON_PATHS[1])  # noqa: B010
