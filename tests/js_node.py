"""Which ``ai`` package (5, 6 or 7) a JS check drives, and the Node that runs it.

``tests/js/package.json`` pins ``ai`` 6 as ``ai``, 5 as ``ai-v5`` and 7 as ``ai-v7``. AI SDK 7
needs Node 22 (``engines: node >=22``) while the machine and CI have Node 20, so the same
``npm ci`` installs Node 22 from the npm registry as the package ``node``
(``tests/js/node_modules/node/bin/node``): the ai 7 checks run under that binary, called by
its path; the ai 5 and 6 checks keep the ``node`` on ``PATH``. The runner owns that choice;
the scripts take the package name as an argument.
"""

from __future__ import annotations

from typing import Any, Literal

from web_chat_server import JS_DIR, js_clients_or_skip, run_node

Sdk = Literal[5, 6, 7]

# the npm package each AI SDK major is installed as (tests/js/package.json)
PACKAGES: dict[int, str] = {5: "ai-v5", 6: "ai", 7: "ai-v7"}
NODE22 = JS_DIR / "node_modules" / "node" / "bin" / "node"


def node_for(sdk: Sdk) -> str:
    """The Node binary that runs a check of ``ai`` ``sdk``: Node 22 from ``tests/js`` for 7
    (it needs it), the ``node`` on ``PATH`` for 5 and 6."""
    return str(NODE22) if sdk == 7 else "node"


def sdk_or_skip(sdk: Sdk) -> None:
    """Skip unless the JS clients for ``ai`` ``sdk`` are installed, Node 22 among them for 7
    (``npm ci`` in ``tests/js``); with ``GOLEM_REQUIRE_JS=1`` a missing one fails instead."""
    import os
    import subprocess

    import pytest

    js_clients_or_skip()
    if sdk != 7:
        return
    missing = None
    if not (JS_DIR / "node_modules" / PACKAGES[7]).is_dir():
        missing = "tests/js/node_modules/ai-v7 is missing: run (cd tests/js && npm ci)"
    elif not NODE22.is_file():
        missing = f"{NODE22} is missing (ai 7 needs Node 22): run (cd tests/js && npm ci)"
    else:
        version = subprocess.run(
            [str(NODE22), "--version"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
        if not version.startswith("v22."):
            missing = f"{NODE22} --version says {version!r}, not v22.x"
    if missing is None:
        return
    if os.environ.get("GOLEM_REQUIRE_JS") == "1":
        pytest.fail(f"GOLEM_REQUIRE_JS=1 but {missing}")
    pytest.skip(missing)


def run_sdk(sdk: Sdk, script: str, *args: str, stdin: Any = None, timeout: float = 60) -> Any:
    """Run ``tests/js/<script>`` under the Node ``ai`` ``sdk`` needs and return the JSON it
    prints (stdin: a JSON value, when given). A failing script fails the test with its
    output, and so does one whose ``runtime`` says it loaded an ``ai`` of another major or
    (for 7) ran under a Node other than 22."""
    result = run_node(script, *args, stdin=stdin, timeout=timeout, node=node_for(sdk))
    runtime = result.get("runtime")
    assert runtime is not None, f"{script} printed no runtime"
    assert runtime["ai"] and all(v.startswith(f"{sdk}.") for v in runtime["ai"]), (
        f"{script} for ai {sdk} loaded ai {runtime['ai']}"
    )
    if sdk == 7:
        assert runtime["node"].startswith("v22."), f"{script} for ai 7 ran on {runtime['node']}"
    return result
