"""An API key never leaks: not in a repr, a str, a log record, an error, a partial or a result.

Every fault scenario runs with a recognisable key, for both adapters, streamed and not,
with logging captured at DEBUG (golem, httpx, httpcore), and everything the run produced
is scanned: the exception and its whole chain (``__cause__``, ``__context__``, ``cause``;
``str``, ``repr`` and the formatted traceback), the partial encoded as JSON, every
``DeltaEvent``, the result and its messages, the model's and the agent's repr, and every
log record. A server that echoes the key (masked, as OpenAI does, or in full, or in a
request-id header) must not make golem repeat it.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from fault_server import (  # noqa: F401 (fixture, asked for by name)
    Fault,
    FaultServer,
    Provider,
    fault_server_fixture,
)

from golem_core import RetryPolicy, encode_history
from golem_shell import (
    Agent,
    AnthropicModel,
    OpenAIModel,
    RunError,
    UsageError,
    partial_from,
)

pytestmark = pytest.mark.anyio

KEY = "sk-golem-SECRET-0123456789abcdef"
MASKED = "sk-gole**********************cdef"
FAST = RetryPolicy(max_attempts=2, max_total_seconds=5.0, base=0.005, cap=0.01)


async def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: what to look up.
    """
    return f"value of {key}"


def _echo_body(provider: Provider, text: str) -> bytes:
    if provider == "openai":
        error = {"message": text, "type": "invalid_request_error", "code": "invalid_api_key"}
        return json.dumps({"error": error}).encode()
    return json.dumps(
        {"type": "error", "error": {"type": "authentication_error", "message": text}}
    ).encode()


def scenarios(provider: Provider) -> dict[str, tuple[Fault, ...]]:
    return {
        "healthy": (),
        "429-storm": (Fault.status_code(429, retry_after="0.01"),) * 4,
        "500-then-ok": (Fault.status_code(500),),
        "401-masked-echo": (
            Fault.status_code(
                401, body=_echo_body(provider, f"Incorrect API key provided: {MASKED}.")
            ),
        ),
        "401-full-echo": (
            Fault.status_code(401, body=_echo_body(provider, f"Bad key {KEY} (key={KEY!r})")),
        ),
        "key-in-request-id": (
            Fault.status_code(
                500, headers=(("x-request-id", KEY), ("request-id", KEY)), body=b"{}"
            ),
        )
        * 3,
        "key-in-plain-body": (
            Fault.status_code(
                502, body=f"<html>proxy saw Authorization: Bearer {KEY}</html>".encode()
            ),
        )
        * 3,
        "reset-mid-stream": (Fault.healthy(), Fault.reset_mid()),
        "stall": (Fault.healthy(), Fault.stall_mid(1.0)) + (Fault.stall_before(1.0),) * 3,
        "malformed": (Fault.healthy(), Fault.malformed_sse()),
        "wrong-content-type": (Fault.wrong_content_type(),),
        "huge-body": (Fault.huge_body(4 * 1024 * 1024),),
    }


def texts_of(value: Any) -> Iterator[str]:
    """Every str and repr reachable from an exception: its chain and its traceback."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield str(e)
        yield repr(e)
        yield "".join(traceback.format_exception(e))
        for attribute in ("message", "request_id", "stage", "partial"):
            yield repr(getattr(e, attribute, None))
        stack.extend([e.__cause__, e.__context__, getattr(e, "cause", None)])


def assert_no_key(*texts: str) -> None:
    for text in texts:
        assert KEY not in text
        assert KEY[3:] not in text  # not even without its prefix
        assert "0123456789abcdef" not in text


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_key_never_leaks_under_any_fault(
    fault_server: FaultServer,
    caplog: pytest.LogCaptureFixture,
    provider: Provider,
    stream: bool,
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "golem_shell", "golem_core"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    produced: list[str] = []
    outcomes: dict[str, str] = {}
    for name, faults in scenarios(provider).items():
        scenario = f"secret-{name}-{provider}-{stream}"
        fault_server.plan(scenario, *faults)
        if provider == "openai":
            model: Any = OpenAIModel(
                "gpt-4o-mini",
                api_key=KEY,
                base_url=fault_server.openai_base_url,
                retry=FAST,
                timeout=0.3,
                max_response_bytes=1024 * 1024,
            )
        else:
            model = AnthropicModel(
                "claude-sonnet-4-5",
                api_key=KEY,
                base_url=fault_server.anthropic_base_url,
                retry=FAST,
                timeout=0.3,
                max_response_bytes=1024 * 1024,
            )
        agent = Agent(model, instructions=f"scenario={scenario}", tools=[lookup])
        events: list[Any] = []
        produced += [repr(model), str(model), model.name, model.url, repr(agent), str(agent)]
        try:
            if stream:
                result = await agent.run_stream("hello", on_delta=events.append)
            else:
                result = await agent.run("hello")
        except RunError as error:
            outcomes[name] = "error"
            produced.extend(texts_of(error))
            partial = partial_from(error)
            if partial is not None:
                produced += [repr(partial), encode_history(partial.messages).decode()]
        else:
            outcomes[name] = "ok"
            produced += [repr(result), encode_history(result.messages).decode()]
            produced += [repr(m) for m in result.messages]
        finally:
            await model.aclose()
        produced += [repr(e) for e in events]
        # the key did reach the server, in the credential header and nowhere else
        for exchange in fault_server.of(scenario):
            header = "authorization" if provider == "openai" else "x-api-key"
            assert KEY in exchange.headers[header]
            assert KEY.encode() not in exchange.body
    assert outcomes["healthy"] == outcomes["500-then-ok"] == "ok"
    assert outcomes["401-full-echo"] == outcomes["key-in-request-id"] == "error"
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    records = caplog.records
    assert any(r.name.startswith("httpcore") for r in records)  # DEBUG was on
    assert any(r.name.startswith("golem_shell") for r in records)  # retries were logged
    for record in records:
        if record.getMessage().startswith("receive_response_headers.complete"):
            continue  # httpcore quoting the headers the server sent (its echo, not ours)
        produced += [formatter.format(record), repr(record.args), repr(record.__dict__)]
    sent = [r.getMessage() for r in records if "send_request_headers" in r.getMessage()]
    assert sent and all("Bearer" not in m and "x-api-key" not in m for m in sent)
    assert_no_key(*produced)
    assert any(MASKED in text for text in produced)  # the server's masked echo is kept


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "bad",
    [KEY + "\n", KEY + "\r\n", "\t" + KEY + "\x00", KEY + "é"],
    ids=["lf", "crlf", "nul", "non-ascii"],
)
def test_a_key_no_header_can_carry_is_refused_without_echoing_it(provider: str, bad: str) -> None:
    """httpx would refuse it later, quoting the whole key in its error."""
    factory: Any = OpenAIModel if provider == "openai" else AnthropicModel
    with pytest.raises(UsageError) as info:
        factory("m", api_key=bad, base_url="http://127.0.0.1:9")
    assert_no_key(*texts_of(info.value))


def test_env_keys_never_show_in_reprs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    for model in (OpenAIModel("gpt-4o-mini"), AnthropicModel("claude-sonnet-4-5")):
        agent = Agent(model)
        assert_no_key(repr(model), str(model), repr(agent), str(agent), repr(model._http))
