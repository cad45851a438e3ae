"""Fuzzing the boundary functions with hostile input: nothing raised but the documented error.

- ``decode_history`` on any bytes, any JSON-ish text (NaN, infinities, huge numbers, lone
  surrogates, duplicate keys, deep nesting) and mutated valid histories returns
  ``Success`` or ``Failure(DecodeError)``; what it accepts encodes as standard JSON and
  round-trips.
- ``sanitize_history`` on histories full of URL tricks never raises, keeps only URLs
  ``is_safe_url`` accepts (always http or https), names each dropped part with its
  browser-read scheme, and is idempotent.
- ``SSEDecoder`` on any bytes, split anywhere, gives the same events as unsplit, and
  raises nothing but ``SSEError``, exactly when a line is over its limit.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples
from returns.result import Failure, Success
from strategies import browser_equivalent_urls, histories

from golem_core import (
    DecodeError,
    Message,
    Role,
    TextPart,
    URLPart,
    decode_history,
    encode_history,
    is_safe_url,
    sanitize_history,
    url_scheme,
)
from golem_core.wire import (
    SSEDecoder,
    SSEError,
)

FUZZ = settings(
    max_examples=examples(120),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- decode_history ------------------------------------------------------------------------


class _Raw(str):
    """JSON text written as is (a number ``json.dumps`` would not write)."""


class _Object(list):  # type: ignore[type-arg]
    """A JSON object as key-value pairs: duplicate keys allowed."""


_KEYS = [
    "role",
    "parts",
    "type",
    "text",
    "toolCallId",
    "toolName",
    "failed",
    "runId",
    "usage",
    "inputTokens",
    "createdAt",
    "url",
    "kind",
    "data",
    "mediaType",
    "id",
    "name",
    "arguments",
]
any_text = st.text(st.characters(blacklist_categories=()), max_size=12)  # surrogates too
numbers = st.one_of(
    st.integers(),
    st.integers(-(10**40), 10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["1e400", "-1e400", "1e-400", "-0", "9" * 4400, "0.1e99999", "-0.0"]).map(_Raw),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, any_text)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(st.tuples(st.one_of(any_text, st.sampled_from(_KEYS)), inner), max_size=5).map(
            _Object
        ),
    ),
    max_leaves=20,
)


def to_json(value: Any, ascii_only: bool) -> str:
    """JSON text of ``value``, written by hand: NaN, duplicate keys and all."""
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, _Object):
        return (
            "{"
            + ",".join(f"{to_json(k, ascii_only)}:{to_json(v, ascii_only)}" for k, v in value)
            + "}"
        )
    if isinstance(value, list):
        return "[" + ",".join(to_json(v, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only, allow_nan=True)


roles = st.sampled_from(["user", "assistant", "tool", "system", "root", "", "USER"])
part_types = st.sampled_from(["text", "tool_call", "thinking", "url", "data", "x", ""])


@st.composite
def message_shaped(draw: st.DrawFn) -> Any:
    """Something close enough to a message to reach the deep checks."""
    parts = _Object
    part_list = []
    for _ in range(draw(st.integers(0, 3))):
        fields = [("type", draw(part_types))]
        fields += draw(st.lists(st.tuples(st.sampled_from(_KEYS), values), max_size=4))
        part_list.append(parts(fields))
    message = [("role", draw(roles)), ("parts", part_list)]
    message += draw(
        st.lists(st.tuples(st.one_of(st.sampled_from(_KEYS), any_text), values), max_size=4)
    )
    return _Object(draw(st.permutations(message)))


def assert_total(data: bytes | str) -> None:
    result = decode_history(data)
    if isinstance(result, Failure):
        assert isinstance(result.failure(), DecodeError)
        assert result.failure().message
        return
    assert isinstance(result, Success)
    history = result.unwrap()
    encoded = encode_history(history)
    json.loads(encoded, parse_constant=_refuse)  # standard JSON, always
    assert decode_history(encoded) == Success(history)
    sanitize_history(history)


def _refuse(name: str) -> None:
    raise AssertionError(f"{name} written")


@FUZZ
@given(st.binary(max_size=200))
def test_any_bytes(data: bytes) -> None:
    assert_total(data)


@FUZZ
@given(st.lists(values, max_size=3), st.booleans(), st.booleans())
def test_any_json_like_text(items: list[Any], ascii_only: bool, as_bytes: bool) -> None:
    text = to_json(items, ascii_only)
    assert_total(text.encode("utf-8", "surrogatepass") if as_bytes else text)


@FUZZ
@given(st.lists(message_shaped(), min_size=1, max_size=4), st.booleans())
def test_message_shaped_json(items: list[Any], ascii_only: bool) -> None:
    assert_total(to_json(items, ascii_only))


@FUZZ
@given(
    histories(max_size=6),
    st.lists(
        st.tuples(st.integers(0, 10_000), st.integers(0, 3), st.binary(min_size=0, max_size=4)),
        min_size=1,
        max_size=4,
    ),
)
def test_mutated_valid_histories(history: tuple[Message, ...], edits: list[Any]) -> None:
    data = bytearray(encode_history(history))
    for at, cut, insert in edits:
        at %= len(data) + 1
        data[at : at + cut] = insert
    assert_total(bytes(data))


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(1, 5000), st.integers(0, 3), st.sampled_from(["[", '{"a":', '[{"x":']))
def test_deep_nesting_anywhere(depth: int, where: int, opener: str) -> None:
    closer = {"[": "]", '{"a":': "}", '[{"x":': "}]"}[opener]
    deep = opener * depth + "1" + closer * depth
    places = [
        deep,
        f'[{{"role":"user","parts":[],"x":{deep}}}]',
        f'[{{"role":"user","parts":[{{"type":"text","text":"t","y":{deep}}}]}}]',
        f'[{{"role":"assistant","parts":[],"usage":{{"z":{deep}}}}}]',
    ]
    assert_total(places[where])


# -- sanitize_history ---------------------------------------------------------------------

C0_OR_SPACE = "".join(chr(c) for c in range(0x21))


@st.composite
def url_tricks(draw: st.DrawFn) -> str:
    scheme = draw(
        st.sampled_from(["http", "https", "file", "javascript", "data", "blob", "ftp", "c", ""])
    )
    scheme = "".join(c.upper() if draw(st.booleans()) else c for c in scheme)
    separator = draw(st.sampled_from(["://", ":", ":/", ":\\\\", ":////", "%3A//", "//", ""]))
    host = draw(
        st.sampled_from(
            [
                "example.com",
                "",
                "exa mple.com",
                "[::1]",
                "[::1",
                "пример.рф",
                "xn--e1afmkfd.xn--p1ai",
                "a:99999",
                "a:0080",
                "a:" + "9" * 30,
                "%65x.com",
                "user:pw@host",
                "h<o>st",
                "a\\b",
            ]
        )
    )
    url = scheme + separator + host + draw(st.sampled_from(["", "/", "/a.png", "?q#f", "\\x"]))
    for _ in range(draw(st.integers(0, 3))):  # tabs and newlines anywhere: a browser drops them
        at = draw(st.integers(0, len(url)))
        url = url[:at] + draw(st.sampled_from(["\t", "\n", "\r"])) + url[at:]
    lead = draw(st.text(st.sampled_from(C0_OR_SPACE + "\u00a0\ufeff"), max_size=3))
    trail = draw(st.text(st.sampled_from(C0_OR_SPACE), max_size=2))
    return lead + url + trail


any_url = st.one_of(
    url_tricks(), st.text(max_size=30), st.text(st.characters(blacklist_categories=()), max_size=10)
)


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from([Role.USER, Role.ASSISTANT, Role.TOOL, Role.SYSTEM]),
            st.lists(any_url, max_size=3),
        ),
        max_size=6,
    )
)
def test_sanitize_keeps_only_safe_urls(spec: list[tuple[Role, list[str]]]) -> None:
    history = tuple(
        Message(
            role,
            (TextPart("x"), *(URLPart(u, "image") for u in urls))
            if role is not Role.TOOL
            else tuple(URLPart(u, "image") for u in urls),
            tool_call_id="c" if role is Role.TOOL else None,
        )
        for role, urls in spec
    )
    out, report = sanitize_history(history)
    kept = [p.url for m in out for p in m.parts if isinstance(p, URLPart)]
    assert all(is_safe_url(u) and url_scheme(u) in ("http", "https") for u in kept)
    unsafe = [
        (i, url_scheme(p.url))
        for i, m in enumerate(history)
        if m.role is not Role.SYSTEM
        for p in m.parts
        if isinstance(p, URLPart) and not is_safe_url(p.url)
    ]
    assert [(u.message_index, u.scheme) for u in report.unsafe_parts] == unsafe
    assert all(m.role is not Role.SYSTEM for m in out)
    again, second = sanitize_history(out)
    assert again == out and second.clean


@FUZZ
@given(any_url)
def test_url_reading_is_total_and_well_formed(url: str) -> None:
    scheme = url_scheme(url)
    assert re.fullmatch(r"([a-z][a-z0-9+.-]*)?", scheme)
    if is_safe_url(url):
        assert scheme in ("http", "https")


@FUZZ
@given(browser_equivalent_urls())
def test_disguises_do_not_change_the_verdict(pair: tuple[str, str]) -> None:
    plain, disguised = pair
    assert url_scheme(plain) == url_scheme(disguised)
    assert is_safe_url(plain) == is_safe_url(disguised)


# -- SSEDecoder -------------------------------------------------------------------------------

sse_pieces = st.sampled_from(
    [
        b"data:",
        b"data: ",
        b"event:",
        b"id:",
        b"retry:",
        b":",
        b"\n",
        b"\r",
        b"\r\n",
        b"x",
        b"\xef\xbb\xbf",
        b"\xff",
        b"\x00",
        b"9" * 30,
        b"[DONE]",
        b"{",
        b" ",
    ]
)
sse_streams = st.one_of(
    st.binary(max_size=300),
    st.lists(sse_pieces, max_size=60).map(b"".join),
)


def _decode(data: bytes, cuts: list[int], limit: int) -> list[Any] | str:
    decoder = SSEDecoder(max_line_bytes=limit)
    out: list[Any] = []
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    try:
        for a, b in itertools.pairwise(points):
            out.extend(decoder.feed(data[a:b]))
        out.extend(decoder.close())
    except SSEError:
        return "refused"
    return out


@FUZZ
@given(sse_streams, st.lists(st.integers(0, 400), max_size=12), st.sampled_from([4, 16, 1 << 20]))
def test_sse_any_split_gives_the_same_events_and_only_sse_error(
    data: bytes, cuts: list[int], limit: int
) -> None:
    whole = _decode(data, [], limit)
    assert _decode(data, cuts, limit) == whole
    longest = max(
        (len(line) for line in re.split(rb"\r\n|\r|\n", data.removeprefix(b"\xef\xbb\xbf"))),
        default=0,
    )
    assert (whole == "refused") == (longest > limit)
