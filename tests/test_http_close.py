"""A model's keep-alive socket is closed, never left to the garbage collector (issue 33,
item 10): a non-streaming ``run_sync`` left one open, and ``ResourceWarning: unclosed
transport`` failed a user's ``pytest -W error`` suite."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
)

from golem_shell import Agent
from golem_shell.models import OpenAIModel

ROOT = Path(__file__).resolve().parents[1]
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hi."}, "finish_reason": "stop"}
    ],
}


def test_a_dropped_model_leaves_no_socket_to_the_collector(
    provider_server: ProviderServer,
) -> None:
    unraisable: list[Any] = []
    gc.collect()  # what earlier tests left to the collector is theirs, not this model's
    hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            for _ in range(2):  # the second run lets the sync loop close the first's client
                provider_server.enqueue(json_reply(ANSWER))
                model = OpenAIModel("m", api_key="k", base_url=f"{provider_server.url}/v1")
                assert Agent(model).run_sync("hi").output == "Hi."
                del model
                gc.collect()
            gc.collect()
    finally:
        sys.unraisablehook = hook
    assert [str(u.exc_value) for u in unraisable] == []


def test_run_sync_then_exit_warns_of_no_unclosed_transport(
    provider_server: ProviderServer,
) -> None:
    script = textwrap.dedent(
        f"""
        import gc
        from golem_shell import Agent
        from golem_shell.models import OpenAIModel

        model = OpenAIModel("m", api_key="k", base_url="{provider_server.url}/v1")
        print(Agent(model).run_sync("hi").output)
        gc.collect()
        """
    )
    provider_server.enqueue(json_reply(ANSWER))
    done = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hi."
    assert "ResourceWarning" not in done.stderr and "unclosed" not in done.stderr, done.stderr
