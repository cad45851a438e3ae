"""Hypothesis strategies for messages and histories, shared by every property module.

``histories()`` draws well-formed and deliberately broken conversations alike: any role,
any part, unicode everywhere, empty and huge strings, ids present or absent and
repeated, dangling calls, orphan and duplicate results, results before their calls,
interleaved user turns, system messages and hostile URLs. ``valid_histories()`` draws
only provider-valid ones.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import attrs
from hypothesis import strategies as st

from golem_core import (
    DataPart,
    HistoryProcessor,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
    Usage,
    approximate_tokens,
    budget_history,
    trim_history,
)

KINDS = ("image", "audio", "video", "document")

texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "\n", "ünïcødé ✓", "\u0000", "a" * 5000]),
)
ids = st.one_of(st.none(), st.sampled_from([f"call_{i}" for i in range(6)]), st.text(max_size=8))
call_ids = st.sampled_from([f"call_{i}" for i in range(8)])
names = st.sampled_from(["get_weather", "search", "write_file", "ünï", ""])

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**9), 10**9), st.text(max_size=10)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def _extra_keys(reserved: frozenset[str]) -> st.SearchStrategy[tuple[tuple[str, str], ...]]:
    pairs = st.dictionaries(
        st.text(min_size=1, max_size=8).filter(lambda k: k not in reserved), json_values, max_size=2
    )
    return pairs.map(
        lambda d: tuple(
            (k, json.dumps(v, ensure_ascii=False, separators=(",", ":"))) for k, v in d.items()
        )
    )


good_arguments = st.dictionaries(st.text(max_size=6), json_values, max_size=3).map(
    lambda d: json.dumps(d, ensure_ascii=False)
)
bad_arguments = st.sampled_from(
    ['{"path":"a', "[1,2]", '"str"', "42", "null", "{", "not json", '{"a":NaN}']
)
arguments = st.one_of(good_arguments, bad_arguments, st.just(""), st.text(max_size=10))

hostile_urls = st.sampled_from(
    [
        "file:///etc/passwd",
        "FILE:///etc/passwd",
        "  file:///x",
        "jav\tascript:alert(1)",
        "javascript:alert(1)",
        "data:image/png;base64,AAAA",
        "blob:https://a/b",
        "//host/x",
        "ftp://host/x",
        "\x00http://x",
        "",
        "http:",
        "HTTPS://Example.com/a.png",
        "https://example.com/b.png",
        "http://example.com/c.pdf",
    ]
)
urls = st.one_of(hostile_urls, st.text(max_size=20))


@st.composite
def parts(draw: st.DrawFn, *, allow_calls: bool = True) -> Part:
    choice = draw(st.integers(0, 6 if allow_calls else 5))
    if choice == 0:
        return TextPart(draw(texts), extra=draw(_extra_keys(frozenset({"type", "text"}))))
    if choice == 1:
        return ThinkingPart(
            draw(texts),
            signature=draw(st.one_of(st.none(), st.text(max_size=10))),
            redacted=draw(st.booleans()),
        )
    if choice == 2:
        return URLPart(
            draw(urls),
            draw(st.sampled_from(KINDS)),
            media_type=draw(st.one_of(st.none(), st.sampled_from(["image/png", "x/y"]))),
        )
    if choice == 3:
        return DataPart(
            draw(st.binary(max_size=20)),
            draw(st.sampled_from(KINDS)),
            draw(st.sampled_from(["image/png", "application/pdf"])),
        )
    if choice == 4:
        return UnknownPart(
            draw(st.sampled_from(["hologram", "citation", "x"])),
            draw(_extra_keys(frozenset({"type"}))),
        )
    if choice == 5:
        return TextPart(draw(texts))
    return ToolCallPart(draw(ids), draw(names), draw(arguments))


usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 10**7),
    output_tokens=st.integers(0, 10**7),
    cache_read_tokens=st.one_of(st.none(), st.integers(0, 10**6)),
    cache_write_tokens=st.one_of(st.none(), st.integers(0, 10**6)),
    reasoning_tokens=st.one_of(st.none(), st.integers(0, 10**6)),
)
timestamps = st.one_of(
    st.none(),
    st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ),
    st.just(datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=5, minutes=30)))),
)


@st.composite
def messages(draw: st.DrawFn, *, role: Role | None = None) -> Message:
    """Any message: any role, any parts, optional fields present or absent."""
    r = role if role is not None else draw(st.sampled_from(list(Role)))
    drawn = tuple(draw(st.lists(parts(allow_calls=r is Role.ASSISTANT), max_size=4)))
    is_tool = r is Role.TOOL
    return Message(
        r,
        drawn,
        tool_call_id=draw(ids) if is_tool else draw(st.one_of(st.none(), ids)),
        tool_name=draw(st.one_of(st.none(), names)),
        failed=draw(st.booleans()) if is_tool else False,
        run_id=draw(st.one_of(st.none(), st.sampled_from(["run-a", "run-b"]))),
        conversation_id=draw(st.one_of(st.none(), st.sampled_from(["conv-a", "conv-b"]))),
        created_at=draw(timestamps),
        model=draw(st.one_of(st.none(), st.text(max_size=10))),
        usage=draw(st.one_of(st.none(), usages)),
        finish_reason=draw(st.one_of(st.none(), st.sampled_from(["stop", "length"]))),
        extra=draw(_extra_keys(frozenset({"role", "parts", "usage", "failed"}))),
    )


@st.composite
def assistant_with_calls(draw: st.DrawFn, *, id_pool: st.SearchStrategy[str] = call_ids) -> Message:
    calls = draw(
        st.lists(
            st.builds(
                ToolCallPart,
                st.one_of(id_pool, id_pool, id_pool, st.none()),
                names,
                arguments,
            ),
            min_size=1,
            max_size=3,
        )
    )
    lead: list[Part] = draw(st.lists(st.one_of(parts(allow_calls=False)), max_size=2))
    return Message(Role.ASSISTANT, (*lead, *calls))


@st.composite
def tool_results(draw: st.DrawFn, *, id_pool: st.SearchStrategy[str] = call_ids) -> Message:
    return Message.tool_result(
        draw(st.one_of(id_pool, id_pool, st.none())),
        draw(names),
        draw(st.one_of(texts.map(lambda t: (TextPart(t),)), st.just(()))),
        failed=draw(st.booleans()),
    )


@st.composite
def histories(draw: st.DrawFn, *, max_size: int = 14) -> tuple[Message, ...]:
    """Histories of every shape, broken ones included (the repair functions' domain)."""
    pieces = st.one_of(
        messages(role=Role.USER),
        messages(role=Role.SYSTEM),
        assistant_with_calls(),
        assistant_with_calls(),
        tool_results(),
        tool_results(),
        messages(role=Role.ASSISTANT),
        messages(),
    )
    return tuple(draw(st.lists(pieces, max_size=max_size)))


@st.composite
def valid_histories(draw: st.DrawFn, *, max_turns: int = 5) -> tuple[Message, ...]:
    """Provider-valid histories: every call with an id answered once, directly after it."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message.system(draw(texts)))
    counter = 0
    for _ in range(draw(st.integers(0, max_turns))):
        out.append(Message.user(draw(st.text(min_size=1, max_size=30))))
        for _ in range(draw(st.integers(0, 2))):
            n = draw(st.integers(1, 3))
            calls = []
            for _ in range(n):
                calls.append(ToolCallPart(f"c{counter}", draw(names), draw(good_arguments)))
                counter += 1
            out.append(Message.assistant(draw(st.one_of(st.none(), texts)), tool_calls=calls))
            for call in calls:
                out.append(
                    Message.tool_result(
                        call.id, call.name, draw(st.text(max_size=20)), failed=draw(st.booleans())
                    )
                )
        if draw(st.booleans()):
            out.append(Message.assistant(draw(st.text(min_size=1, max_size=30))))
    return tuple(out)


# -- history processors (golem_core._processors) ----------------------------------------


def one_token(message: Message) -> int:
    """A counter under which a token budget is a message count."""
    return 1


def part_tokens(message: Message) -> int:
    """A counter with free (zero-token) messages: one token per part."""
    return len(message.parts)


token_counters = st.sampled_from([approximate_tokens, one_token, part_tokens])
max_messages = st.integers(1, 16)
max_tokens = st.one_of(st.integers(1, 40), st.integers(1, 4000))


@st.composite
def history_processors(draw: st.DrawFn) -> HistoryProcessor:
    """``trim_history`` or ``budget_history`` with a drawn bound (and counter)."""
    if draw(st.booleans()):
        return trim_history(draw(max_messages))
    return budget_history(draw(token_counters), draw(max_tokens))


# -- damaged histories and browser-equivalent URLs (repair and sanitize) ------------------

_DAMAGE = st.sampled_from(
    ["delete", "duplicate", "move", "insert_user", "insert_system", "cut", "orphan"]
)


@st.composite
def damaged_histories(draw: st.DrawFn, *, max_turns: int = 5) -> tuple[Message, ...]:
    """Valid histories after the damage crashes, pipelines and hand edits cause.

    Up to five edits of a ``valid_histories()`` draw: a message deleted (a lost result,
    a lost call), duplicated (an equal, distinct copy: duplicate results, reused ids),
    moved anywhere (results separated from, or placed before, their calls; results out of
    call order), a user or system message inserted (between a call and its results), a
    cut (a crash mid-batch), an orphan result. Every message is a distinct object.
    """
    out = list(draw(valid_histories(max_turns=max_turns)))
    for _ in range(draw(st.integers(0, 5))):
        op = draw(_DAMAGE)
        at = draw(st.integers(0, len(out)))
        if op == "insert_user":
            out.insert(at, Message.user(draw(st.text(min_size=1, max_size=10))))
        elif op == "insert_system":
            out.insert(at, Message.system(draw(st.text(max_size=10))))
        elif op == "orphan":
            out.insert(at, Message.tool_result(draw(call_ids), draw(names), "orphan"))
        elif not out:
            continue
        elif op == "cut":
            del out[at:]
        else:
            i = min(at, len(out) - 1)
            if op == "delete":
                del out[i]
            elif op == "duplicate":
                out.insert(draw(st.integers(i, len(out))), attrs.evolve(out[i]))
            else:  # move
                message = out.pop(i)
                out.insert(draw(st.integers(0, len(out))), message)
    return tuple(out)


C0_OR_SPACE = "".join(chr(c) for c in range(0x21))


@st.composite
def browser_equivalent_urls(draw: st.DrawFn) -> tuple[str, str]:
    """A URL and a disguise a browser reads the same way: leading and trailing C0
    controls and spaces, ASCII tabs and newlines inserted anywhere, ASCII letters of the
    scheme in random case."""
    url = draw(urls)
    head, sep, tail = url.partition(":")
    if sep and head.isascii():
        head = "".join(c.upper() if draw(st.booleans()) else c.lower() for c in head)
    disguised = list(head + sep + tail)
    for _ in range(draw(st.integers(0, 3))):
        disguised.insert(draw(st.integers(0, len(disguised))), draw(st.sampled_from("\t\n\r")))
    pad = st.text(alphabet=C0_OR_SPACE, max_size=3)
    return url, draw(pad) + "".join(disguised) + draw(pad)
