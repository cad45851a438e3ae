"""Hostile input: a corpus for ``decode_history``, ``sanitize_history`` and ``SSEDecoder``.

Each function returns a value or its documented error, and nothing else, for input built
to hurt: JSON nested 100,000 deep, a 50 MB string, lone surrogates, huge numbers,
duplicate keys, NaN, every URL trick, stream lines that never end. Work grows linearly
with the input: checked by counting the Python lines executed (no clock), and, for the
50 MB cases, by completing in a subprocess under a generous timeout.

- ``decode_history`` never raises: ``Success`` or ``Failure(DecodeError)``; whatever it
  accepts encodes again (standard JSON) and round-trips.
- ``sanitize_history`` never raises, keeps only URLs a browser fetches over http(s)
  with a host, and names each dropped part with the scheme a browser would read.
- ``SSEDecoder`` raises nothing but ``SSEError`` (a line over its limit).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

from golem_core import (
    DecodeError,
    Message,
    TextPart,
    ToolCallPart,
    URLPart,
    decode_history,
    encode_history,
    is_safe_url,
    normalize_history,
    sanitize_history,
    url_scheme,
)
from golem_core.wire import (
    SSEDecoder,
    SSEError,
    wire_arguments,
)

ROOT = Path(__file__).resolve().parents[1]


def message_json(text: str = '"x"', extra: str = "") -> str:
    return '[{"role":"user","parts":[{"type":"text","text":' + text + "}]" + extra + "}]"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# -- decode_history ----------------------------------------------------------------------

DECODE_CORPUS: dict[str, tuple[bytes | str, str | None]] = {
    # label: (input, None when accepted, else a fragment of the DecodeError's message)
    "nested 100,000 deep": (nested(100_000), "nested too deeply"),
    "unclosed 100,000 deep": ("[" * 100_000, "nested too deeply"),
    "an unknown field nested 100,000 deep": (
        message_json(extra=',"x":' + nested(100_000)),
        "nested too deeply",
    ),
    "an unknown field nested 500 deep": (
        message_json(extra=',"x":' + nested(500)),
        "nests deeper than 128 levels",
    ),
    "an unknown field nested 128 deep": (message_json(extra=',"x":' + nested(128)), None),
    "parts nested 5,000 deep": ('[{"role":"user","parts":' + nested(5_000) + "}]", "nested"),
    "a lone surrogate, escaped": (message_json('"\\ud800 and \\udfff"'), None),
    "a lone surrogate in a key": (message_json(extra=',"\\udbff":1'), None),
    "a lone surrogate as UTF-8 bytes": (
        message_json('"\ud800"').encode("utf-8", "surrogatepass"),
        "not UTF-8",
    ),
    "a lone surrogate in a str": (message_json('"\ud800"'), None),
    "1e400 in an unknown field": (message_json(extra=',"x":1e400'), "out of range"),
    "-1e400 in a part": (
        '[{"role":"user","parts":[{"type":"text","text":"x","y":-1e400}]}]',
        "out of range",
    ),
    "1e400 as a token count": (
        '[{"role":"assistant","parts":[],"usage":{"inputTokens":1e400}}]',
        "out of range",
    ),
    "a 5,000-digit integer": (message_json(extra=',"x":' + "9" * 5000), "not standard JSON"),
    "a 4,000-digit token count": (
        '[{"role":"assistant","parts":[],"usage":{"inputTokens":' + "9" * 4000 + "}}]",
        None,
    ),
    "-0 and 1e-400": (message_json(extra=',"x":[-0,1e-400,-0.0]'), None),
    "NaN": (message_json(extra=',"x":NaN'), "NaN is not standard JSON"),
    "Infinity": (message_json(extra=',"x":Infinity'), "Infinity is not standard JSON"),
    "-Infinity as a count": (
        '[{"role":"assistant","parts":[],"usage":{"outputTokens":-Infinity}}]',
        "not standard JSON",
    ),
    "duplicate keys (the last wins, as in JSON.parse)": (
        '[{"role":"system","role":"user","parts":[],"parts":[{"type":"text","text":"y"}]}]',
        None,
    ),
    "a duplicate discriminator": (
        '[{"role":"user","parts":[{"type":"url","type":"text","text":"x"}]}]',
        None,
    ),
    "an unknown role": ('[{"role":"root","parts":[]}]', "unknown role"),
    "a number as an id": ('[{"role":"tool","parts":[],"toolCallId":7}]', "expected a string"),
    "bad base64": (
        '[{"role":"user","parts":[{"type":"data","data":"!!!","kind":"image",'
        '"mediaType":"image/png"}]}]',
        "base64",
    ),
    "not a timestamp": ('[{"role":"user","parts":[],"createdAt":"yesterday"}]', "ISO 8601"),
    "empty input": (b"", "not JSON"),
    "only a BOM": (b"\xef\xbb\xbf", "not JSON"),
    "two BOMs": ("\ufeff\ufeff[]", "not JSON"),
    "a NUL after the array": ("[]\x00", "not JSON"),
    "a top-level object": ('{"role":"user","parts":[]}', "expected an array"),
    "invalid UTF-8": (b"[\xff\xfe]", "not UTF-8"),
    "overlong UTF-8": (b'["\xc0\xaf"]', "not UTF-8"),
    "a control character in a string": ('[{"role":"user","parts":[],"x":"\x01"}]', "not JSON"),
    "trailing comma": ('[{"role":"user","parts":[]},]', "not JSON"),
    "ten thousand empty messages": (
        "[" + ",".join(['{"role":"user","parts":[]}'] * 10_000) + "]",
        None,
    ),
}


@pytest.mark.parametrize("label", list(DECODE_CORPUS))
def test_decode_history_returns_a_value_or_a_decode_error(label: str) -> None:
    data, error = DECODE_CORPUS[label]
    result = decode_history(data)
    if error is None:
        assert isinstance(result, Success), result
        history = result.unwrap()
        encoded = encode_history(history)  # whatever decodes, encodes: standard JSON
        json.loads(encoded, parse_constant=_refuse)
        assert decode_history(encoded) == Success(history)
        sanitize_history(history)
        normalize_history(history)
    else:
        assert isinstance(result, Failure), result
        failure = result.failure()
        assert isinstance(failure, DecodeError)
        assert error in failure.message


def _refuse(name: str) -> None:
    raise AssertionError(f"{name} in encoded output")


def test_a_fifty_megabyte_string_decodes_and_encodes() -> None:
    text = "a" * (50 * 1024 * 1024)
    result = decode_history(message_json(json.dumps(text)).encode())
    assert isinstance(result, Success)
    [message] = result.unwrap()
    assert message.text == text
    assert len(encode_history(result.unwrap())) == len(message_json(json.dumps(text)))


def test_lone_surrogates_round_trip_as_escapes() -> None:
    history = decode_history(message_json('"\\ud800x\\udfff"')).unwrap()
    assert history[0].text == "\ud800x\udfff"
    encoded = encode_history(history)
    assert encoded.isascii() and b"\\ud800" in encoded
    assert decode_history(encoded).unwrap() == history


def test_tool_arguments_that_no_provider_could_take_travel_verbatim() -> None:
    """Arguments nested too deep, or holding a number out of range, are not used as an
    object: never executed, sent as ``{"truncated_args": "<verbatim>"}``."""
    deep = '{"x":' + nested(900) + "}"
    for arguments in (deep, '{"x":1e400}', '{"x":-1e999}', '{"x":NaN}'):
        call = ToolCallPart("c", "t", arguments)
        assert call.arguments_object is None
        assert wire_arguments(call) == {"truncated_args": arguments}
    assert ToolCallPart("c", "t", '{"x":' + nested(100) + "}").arguments_object is not None


# -- sanitize_history: every URL trick ---------------------------------------------------------

URL_TRICKS: list[tuple[str, bool, str]] = [
    # (url, kept, the scheme a browser reads)
    ("https://example.com/cat.png", True, "https"),
    ("HTTPS://EXAMPLE.COM/cat.png", True, "https"),
    ("hTtP://example.com/", True, "http"),
    ("file:///etc/passwd", False, "file"),
    ("FILE:///etc/passwd", False, "file"),
    ("FiLe:///etc/passwd", False, "file"),
    ("  file:///etc/passwd", False, "file"),
    ("\x00\x01\x1f file:///etc/passwd", False, "file"),
    ("file:///etc/passwd \x00", False, "file"),
    ("fi\tle:///etc/passwd", False, "file"),
    ("fi\nle:///etc/passwd", False, "file"),
    ("f\ri\nl\te:///etc/passwd", False, "file"),
    ("javascript:alert(1)", False, "javascript"),
    ("jav\tascript:alert(1)", False, "javascript"),
    ("JaVaScRiPt:alert(1)", False, "javascript"),
    ("javascript://%0Aalert(1)", False, "javascript"),
    ("vbscript:msgbox(1)", False, "vbscript"),
    ("data:image/png;base64,iVBORw0KGgo=", False, "data"),
    ("DATA:text/html,<script>alert(1)</script>", False, "data"),
    ("blob:https://example.com/0b7a0d8e-9a4f-4d5c-8f3e-2c1b0a9d8e7f", False, "blob"),
    ("ftp://example.com/cat.png", False, "ftp"),
    ("c:\\windows\\system32\\cat.png", False, "c"),
    ("%66ile:///etc/passwd", False, ""),
    ("%68ttps://example.com/", False, ""),
    ("https%3A//example.com/", False, ""),
    ("//example.com/cat.png", False, ""),
    ("example.com/cat.png", False, ""),
    ("/etc/passwd", False, ""),
    ("", False, ""),
    ("\u00a0https://example.com/", False, ""),
    ("\uff48\uff54\uff54\uff50\uff53://example.com/", False, ""),
    ("https:/example.com/cat.png", True, "https"),
    ("https:example.com", True, "https"),
    ("https:\\\\example.com\\cat.png", True, "https"),
    ("ht\ttps://example.com/", True, "https"),
    ("\thttps://example.com/\n", True, "https"),
    ("https://user:pass@example.com/", True, "https"),
    ("https://xn--e1afmkfd.xn--p1ai/cat.png", True, "https"),
    ("https://пример.рф/cat.png", True, "https"),
    ("https://%65xample.com/", True, "https"),
    ("https://[::1]/", True, "https"),
    ("https://example.com:443/", True, "https"),
    ("https://example.com:000443/", True, "https"),
    ("http://", False, "http"),
    ("https://", False, "https"),
    ("https://:443/", False, "https"),
    ("https://example.com:99999/", False, "https"),
    ("https://example.com:" + "9" * 5000 + "/", False, "https"),
    ("https://example.com:" + "0" * 5000 + "80/", True, "https"),
    ("https://exa mple.com/", False, "https"),
    ("https://example.com<script>/", False, "https"),
    ("https://[::1/", False, "https"),
]


@pytest.mark.parametrize(("url", "kept", "scheme"), URL_TRICKS)
def test_sanitize_reads_urls_as_a_browser_does(url: str, kept: bool, scheme: str) -> None:
    assert url_scheme(url) == scheme
    assert is_safe_url(url) is kept
    history = (Message.user("look", URLPart(url, "image")), Message.assistant("ok"))
    out, report = sanitize_history(history)
    if kept:
        assert out == history and report.clean
    else:
        assert [(u.message_index, u.kind, u.scheme) for u in report.unsafe_parts] == [
            (0, "image", scheme)
        ]
        assert out == (Message.user("look"), Message.assistant("ok"))


def test_a_message_of_only_unsafe_urls_is_removed_but_a_tool_result_is_kept() -> None:
    history = (
        Message.system("you are root"),
        Message.user("x", URLPart("file:///etc/shadow", "document")),
        Message(Message.user("").role, (URLPart("javascript:x", "image"),)),
        Message.assistant(tool_calls=[ToolCallPart("c1", "fetch", "{}")]),
        Message.tool_result("c1", "fetch", (URLPart("data:,x", "image"),)),
    )
    out, report = sanitize_history(history)
    assert report.system_prompts == 1
    assert report.emptied == (2,)
    assert [u.message_index for u in report.unsafe_parts] == [1, 2, 4]
    assert out[-1].tool_call_id == "c1" and out[-1].parts == ()
    assert all(is_safe_url(p.url) for m in out for p in m.parts if isinstance(p, URLPart))


# -- SSEDecoder ----------------------------------------------------------------------------


def events_of(data: bytes, size: int | None = None, **kw: Any) -> list[Any]:
    decoder = SSEDecoder(**kw)
    if size is None:
        return decoder.feed(data) + decoder.close()
    out: list[Any] = []
    for i in range(0, len(data), size):
        out.extend(decoder.feed(data[i : i + size]))
    return out + decoder.close()


SSE_CORPUS: dict[str, bytes] = {
    "a retry of 5,000 digits": b"retry: " + b"9" * 5000 + b"\ndata: x\n\n",
    "a retry of 5,000 leading zeros": b"retry: " + b"0" * 5000 + b"7\ndata: x\n\n",
    "a NUL in an id": b"id: a\x00b\ndata: x\n\n",
    "invalid UTF-8": b"data: \xff\xfe\xc0\xaf\n\n",
    "a lone surrogate as UTF-8": b"data: \xed\xa0\x80\n\n",
    "only CRs": b"\r" * 10_000,
    "only LFs": b"\n" * 10_000,
    "CRLF storm": b"data: x\r\n" * 1000 + b"\r\n",
    "a BOM mid-stream": b"data: a\n\n\xef\xbb\xbfdata: b\n\n",
    "colons everywhere": b":::\n:data: x\ndata::::\n\n",
    "fields without values": b"data\ndata\nevent\nid\nretry\n\n",
    "100,000 data lines": b"data: x\n" * 100_000 + b"\n",
    "JSON nested 100,000 deep": b"data: " + nested(100_000).encode() + b"\n\n",
    "a cut last event": b"data: complete\n\ndata: cut",
}


@pytest.mark.parametrize("label", list(SSE_CORPUS))
@pytest.mark.parametrize("size", [None, 1, 7, 4096])
def test_sse_decoder_gives_the_same_events_however_split(label: str, size: int | None) -> None:
    data = SSE_CORPUS[label]
    if size == 1 and len(data) > 20_000:
        size = 3
    assert events_of(data, size) == events_of(data)


def test_sse_decoder_corpus_values() -> None:
    assert events_of(SSE_CORPUS["a retry of 5,000 digits"])[0].retry is None
    assert events_of(SSE_CORPUS["a retry of 5,000 leading zeros"])[0].retry == 7
    assert events_of(SSE_CORPUS["a NUL in an id"])[0].id == ""
    assert events_of(SSE_CORPUS["invalid UTF-8"])[0].data == "\ufffd" * 4
    assert [e.data for e in events_of(SSE_CORPUS["a cut last event"])] == ["complete"]
    [event] = events_of(SSE_CORPUS["100,000 data lines"])
    assert event.data == "\n".join(["x"] * 100_000)


def test_a_line_over_the_limit_is_refused_with_sse_error_whatever_the_chunks() -> None:
    for size in (1, 100, 10_000):
        decoder = SSEDecoder(max_line_bytes=1000)
        with pytest.raises(SSEError):
            for _ in range(0, 5000, size):
                decoder.feed(b"x" * size)
    decoder = SSEDecoder(max_line_bytes=1000)
    assert decoder.feed(b"data: " + b"x" * 994 + b"\n\n")[0].data == "x" * 994


# -- linear work, counted ------------------------------------------------------------------


def operations(function: Callable[[], object]) -> int:
    """Python lines executed (and calls made) while ``function`` runs: a clock-free
    measure of work."""
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        function()
    finally:
        sys.settrace(previous)
    return count


def assert_linear(work: Callable[[int], Callable[[], object]], n: int, factor: int = 8) -> None:
    small = operations(work(n))
    large = operations(work(n * factor))
    assert large <= factor * small * 1.25 + 200, (small, large)


def _history_json(n: int) -> Callable[[], object]:
    item = (
        '{"role":"assistant","parts":[{"type":"tool_call","id":"c%d","name":"t",'
        '"arguments":"{}"}]},{"role":"tool","parts":[{"type":"text","text":"r"}],'
        '"toolCallId":"c%d","toolName":"t","x":[1,{"y":2}]}'
    )
    data = "[" + ",".join(item % (i, i) for i in range(n)) + "]"
    return lambda: decode_history(data)


def _orphans(n: int) -> Callable[[], object]:
    history = tuple(Message.tool_result(f"c{i % 7}", "t", "r") for i in range(n))
    return lambda: sanitize_history(history)


def _long_url(n: int) -> Callable[[], object]:
    history = (Message.user("x", URLPart("https://" + "a" * n + ":" + "0" * n, "image")),)
    return lambda: sanitize_history(history)


def _scheme_that_never_ends(n: int) -> Callable[[], object]:
    history = (Message.user("x", URLPart("\t" * n + "h" * n, "image")),)
    return lambda: sanitize_history(history)


def _many_urls(n: int) -> Callable[[], object]:
    parts = tuple(URLPart(u, "image") for u, _, _ in URL_TRICKS * (n // len(URL_TRICKS) + 1))[:n]
    history = (Message(Message.user("").role, (TextPart("x"), *parts)),)
    return lambda: sanitize_history(history)


def _sse_bytes(n: int) -> Callable[[], object]:
    data = b"event: e\nid: 1\ndata: x\r\ndata: y\r\r" * n

    def feed() -> None:
        decoder = SSEDecoder()
        for i in range(0, len(data), 5):
            decoder.feed(data[i : i + 5])

    return feed


def _sse_long_line(n: int) -> Callable[[], object]:
    def feed() -> None:
        decoder = SSEDecoder()
        for _ in range(n):
            decoder.feed(b"x" * 3)
        decoder.feed(b"\n\n")

    return feed


@pytest.mark.parametrize(
    ("work", "n"),
    [
        (_history_json, 200),
        (_orphans, 200),
        (_long_url, 2_000),
        (_scheme_that_never_ends, 2_000),
        (_many_urls, 100),
        (_sse_bytes, 200),
        (_sse_long_line, 500),
    ],
    ids=lambda v: getattr(v, "__name__", str(v)).strip("_"),
)
def test_work_grows_linearly(work: Callable[[int], Callable[[], object]], n: int) -> None:
    assert_linear(work, n)


def test_fifty_megabytes_of_each_hostile_input_completes_in_a_subprocess() -> None:
    """No hang: every 50 MB input is handled within a generous budget (one subprocess)."""
    script = textwrap.dedent(
        """
        from golem_core import *
        from golem_core.wire import SSEDecoder, SSEError
        MB50 = 50 * 1024 * 1024
        text = '[{"role":"user","parts":[{"type":"text","text":"' + "a" * MB50 + '"}]}]'
        assert decode_history(text).unwrap()[0].text == "a" * MB50
        assert type(decode_history("[" * MB50)).__name__ == "Failure"
        url = "https://" + "a" * MB50
        out, report = sanitize_history((Message.user("x", URLPart(url, "image")),))
        assert report.clean
        out, report = sanitize_history((Message.user("x", URLPart("h" * MB50, "image")),))
        assert len(report.unsafe_parts) == 1
        decoder = SSEDecoder()
        try:
            for i in range(0, MB50, 1 << 16):
                decoder.feed(b"x" * (1 << 16))
        except SSEError:
            pass
        else:
            raise AssertionError("a 50 MB line was buffered")
        decoder = SSEDecoder()
        events = 0
        chunk = b"data: " + b"x" * 1000 + b"\\n\\n"
        for _ in range(MB50 // len(chunk)):
            events += len(decoder.feed(chunk))
        assert events == MB50 // len(chunk)
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_what_decodes_encodes_even_deep_in_the_callers_stack() -> None:
    """Issue 13.9: an unknown field decode accepts (at most 128 levels) encodes from a
    caller already 700 frames deep; deeper fields are refused at decode, with a path."""
    history = decode_history(message_json(extra=',"x":' + nested(128))).unwrap()

    def deep(n: int) -> bytes:
        return deep(n - 1) if n else encode_history(history)

    assert decode_history(deep(700)) == Success(history)
    refused = decode_history(message_json(extra=',"x":' + nested(129)))
    assert "nests deeper than 128 levels" in str(refused.failure())
    assert "[0].x" in str(refused.failure())
