"""Serve the history page on 127.0.0.1, with Pyodide and the wheels from this machine.

    python examples/history_in_the_browser/serve.py [--port 8000]

then open http://127.0.0.1:8000/. The page's own files come from this folder;
``/pyodide/`` from the npm ``pyodide`` package (default: ``tests/pyodide/node_modules/pyodide``
of this clone, installed by ``cd tests/pyodide && npm ci``; ``--pyodide DIR`` for another
copy); ``/wheels/`` from ``--wheels DIR`` (default ``./wheels``), built on first start when
it holds no golem wheel: golem's from this clone (``pip wheel --no-deps``, pure Python:
``GOLEM_PURE=1``, in pip's isolated build environment, so that hatchling comes from the
package index as for any user's pip) and golem_core's dependencies, pure-Python wheels from
the package index (``pip download``).
``/wheels/index.json`` lists them for the worker. Standard library only; ``.wasm`` is
served as ``application/wasm`` (browsers compile it only then).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEFAULT_PYODIDE = ROOT / "tests" / "pyodide" / "node_modules" / "pyodide"
DEPENDENCIES = ("attrs==26.1.0", "cattrs==26.2.1", "returns==0.30.0", "typing_extensions==4.16.0")
"""golem_core's dependencies as pinned for Pyodide (the same pins as tests/pyodide/harness.py)."""
PYODIDE_PYTHON = "3.13"
"""The Python of the pinned ``pyodide`` package (0.29.5)."""


def build_wheels(out: Path, root: Path = ROOT) -> list[Path]:
    """golem's wheel built from ``root`` and the pinned dependencies downloaded, into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip"]
    # Isolated (pip installs the build backend, hatchling, into a throwaway environment: the
    # README's set-up installs no build tools) and pure Python (GOLEM_PURE=1, hatch_build.py:
    # WebAssembly cannot load the compiled decoder, Pyodide wants ``py3-none-any``)
    subprocess.run(
        [*pip, "wheel", "-q", "--no-deps", "-w", str(out), str(root)],
        check=True,
        env={**os.environ, "GOLEM_PURE": "1"},
    )
    subprocess.run(
        [*pip, "download", "-q", "--no-deps", "--only-binary=:all:",
         "--python-version", PYODIDE_PYTHON, "--implementation", "py",
         "--platform", "any", "--abi", "none", "-d", str(out), *DEPENDENCIES],
        check=True,
    )  # fmt: skip
    return sorted(out.glob("*.whl"))


class Handler(SimpleHTTPRequestHandler):
    """This folder at ``/``, Pyodide at ``/pyodide/``, the wheels at ``/wheels/``."""

    extensions_map = {  # noqa: RUF012 - the base class's attribute, extended
        **SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".json": "application/json",
        ".whl": "application/octet-stream",
        ".zip": "application/zip",
    }

    def __init__(self, *args: object, pyodide: Path, wheels: Path, **kwargs: object) -> None:
        self.pyodide = pyodide
        self.wheels = wheels
        super().__init__(*args, directory=str(HERE), **kwargs)  # type: ignore[arg-type]

    def translate_path(self, path: str) -> str:
        clean = path.split("?", 1)[0].split("#", 1)[0]
        for prefix, base in (("/pyodide/", self.pyodide), ("/wheels/", self.wheels)):
            if clean.startswith(prefix):
                name = clean[len(prefix) :]
                target = (base / name).resolve()
                if base.resolve() not in target.parents:
                    return str(base / "__refused__")  # a 404: nothing outside base
                return str(target)
        return super().translate_path(path)

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == "/wheels/index.json":
            body = json.dumps(sorted(p.name for p in self.wheels.glob("*.whl"))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    quiet: ClassVar[bool] = False

    def log_message(self, format: str, *args: object) -> None:
        if not self.quiet:
            super().log_message(format, *args)


def make_server(
    host: str = "127.0.0.1", port: int = 8000, *, pyodide: Path = DEFAULT_PYODIDE, wheels: Path
) -> ThreadingHTTPServer:
    """The server (not yet serving); ``port=0`` picks a free one (``server.server_port``)."""
    if not (pyodide / "pyodide.js").is_file():
        raise SystemExit(
            f"no Pyodide at {pyodide}: run (cd tests/pyodide && npm ci) or pass --pyodide"
        )
    handler = functools.partial(Handler, pyodide=pyodide, wheels=wheels)
    return ThreadingHTTPServer((host, port), handler)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--pyodide", type=Path, default=DEFAULT_PYODIDE)
    parser.add_argument("--wheels", type=Path, default=HERE / "wheels")
    parser.add_argument("--quiet", action="store_true", help="no request log")
    args = parser.parse_args(argv)
    Handler.quiet = args.quiet
    if not list(args.wheels.glob("golem_agents-*.whl")):
        print(f"building the wheels into {args.wheels} ...", flush=True)
        build_wheels(args.wheels)
    server = make_server(args.host, args.port, pyodide=args.pyodide, wheels=args.wheels)
    print(f"serving on http://{args.host}:{server.server_port}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
