"""The web chat example (``examples/web_chat/app.py``) loaded as a module from its file.

Owns ``APP_PATH`` and ``load_example()``, shared by the soak's server process
(``bench/soak_app.py``) and the tests' web chat server (``tests/web_chat_server.py``): the
example is no package, so it is imported from its path, once per process, under the
name ``golem_web_chat_example`` (a second load returns the same module, with whatever
the first caller changed in it).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["APP_PATH", "load_example"]

APP_PATH = Path(__file__).resolve().parents[1] / "examples" / "web_chat" / "app.py"


def load_example() -> ModuleType:
    """The example's module, loaded from its file (once per process)."""
    name = "golem_web_chat_example"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, APP_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
