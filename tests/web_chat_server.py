"""The web chat example (``examples/web_chat/app.py``) served by uvicorn on 127.0.0.1.

``serve_web_chat(db, delay=...)`` starts it in a thread on a free port and returns a
``WebChatServer`` (``url``, ``app``, ``db``, ``close()``), for the HTTP and browser tests.
"""

from __future__ import annotations

import importlib.util
import socket
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import uvicorn

APP_PATH = Path(__file__).resolve().parents[1] / "examples" / "web_chat" / "app.py"


def load_example() -> ModuleType:
    """The example's module (imported from its file, once)."""
    name = "golem_web_chat_example"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, APP_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class WebChatServer:
    def __init__(self, app: Any, db: str) -> None:
        self.app = app
        self.db = db
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the web chat server did not start")
            time.sleep(0.02)

    @property
    def chat(self) -> Any:
        """The example's ``ChatServer`` (its store, runs and agent)."""
        return self.app.state.server

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


def serve_web_chat(db: Path, *, delay: float = 0.01, key: bytes | None = None) -> WebChatServer:
    """Start the example on a free port of 127.0.0.1 with its SQLite file at ``db``."""
    example = load_example()
    return WebChatServer(example.make_app(str(db), delay=delay, key=key), str(db))
