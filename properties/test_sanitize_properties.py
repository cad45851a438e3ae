"""sanitize_history: what survives, what is reported, and how URLs are read."""

from __future__ import annotations

import copy

import attrs
from hypothesis import given
from hypothesis import strategies as st
from strategies import browser_equivalent_urls, damaged_histories, histories, valid_histories

from golem_core import (
    Message,
    Role,
    URLPart,
    check_pairing,
    is_safe_url,
    normalize_history,
    sanitize_history,
    url_scheme,
)

any_history = st.one_of(histories(), damaged_histories())


def _strip(message: Message) -> Message:
    """The message with its unsafe URL parts removed, as sanitize must leave it."""
    parts = tuple(p for p in message.parts if not (type(p) is URLPart and not is_safe_url(p.url)))
    return message if parts == message.parts else attrs.evolve(message, parts=parts)


@given(any_history)
def test_sanitize_is_idempotent(history: tuple[Message, ...]) -> None:
    out, _ = sanitize_history(history)
    again, report = sanitize_history(out)
    assert again is out
    assert report.clean


@given(any_history)
def test_sanitize_is_deterministic(history: tuple[Message, ...]) -> None:
    assert sanitize_history(history) == sanitize_history(copy.deepcopy(history))
    assert sanitize_history(history) == sanitize_history(list(history))


@given(any_history)
def test_the_output_holds_nothing_unsafe_and_is_provider_valid(
    history: tuple[Message, ...],
) -> None:
    out, _ = sanitize_history(history)
    assert all(m.role is not Role.SYSTEM for m in out)
    for m in out:
        for p in m.parts:
            if type(p) is URLPart:
                assert url_scheme(p.url) in ("http", "https")
                assert is_safe_url(p.url)
    assert check_pairing(out) == ()


@given(any_history)
def test_the_report_counts_exactly_what_was_removed(history: tuple[Message, ...]) -> None:
    _, report = sanitize_history(history)
    assert report.system_prompts == sum(m.role is Role.SYSTEM for m in history)
    expected = [
        (i, p.kind, url_scheme(p.url))
        for i, m in enumerate(history)
        if m.role is not Role.SYSTEM
        for p in m.parts
        if type(p) is URLPart and not is_safe_url(p.url)
    ]
    assert [(u.message_index, u.kind, u.scheme) for u in report.unsafe_parts] == expected
    for i in report.emptied:
        assert history[i].role in (Role.USER, Role.ASSISTANT)
        assert i in {u.message_index for u in report.unsafe_parts}
    nothing_removed = not (report.system_prompts or report.unsafe_parts or report.emptied)
    assert report.clean == (nothing_removed and not report.repair.changed)


@given(any_history)
def test_it_is_strip_then_repair_and_nothing_else(history: tuple[Message, ...]) -> None:
    out, report = sanitize_history(history)
    stripped = [
        (i, _strip(m))
        for i, m in enumerate(history)
        if m.role is not Role.SYSTEM and i not in report.emptied
    ]
    repaired, repair = normalize_history([m for _, m in stripped])
    assert out == repaired
    origin = [i for i, _ in stripped]
    assert [origin[e.message_index] for e in repair.dropped] == [
        e.message_index for e in report.repair.dropped
    ]
    assert [origin[e.message_index] for e in repair.synthesized] == [
        e.message_index for e in report.repair.synthesized
    ]
    assert [origin[e.message_index] for e in repair.moved] == [
        e.message_index for e in report.repair.moved
    ]


@given(any_history)
def test_every_tool_result_that_repair_keeps_survives(history: tuple[Message, ...]) -> None:
    out, report = sanitize_history(history)
    dropped = {e.message_index for e in report.repair.dropped}
    survivors = [m for m in out if m.role is Role.TOOL]
    for i, m in enumerate(history):
        if m.role is Role.TOOL and i not in dropped:
            assert _strip(m) in survivors
    assert not set(report.emptied) & {i for i, m in enumerate(history) if m.role is Role.TOOL}


@given(valid_histories())
def test_trusted_history_without_system_messages_is_returned_unchanged(
    history: tuple[Message, ...],
) -> None:
    trusted = tuple(m for m in history if m.role is not Role.SYSTEM)
    out, report = sanitize_history(trusted)
    assert out is trusted
    assert report.clean
    assert report.repair == normalize_history(trusted)[1]
    out2, report2 = sanitize_history(history)
    assert out2 == trusted
    assert all(a is b for a, b in zip(out2, trusted, strict=True))
    assert report2.system_prompts == len(history) - len(trusted)


@given(browser_equivalent_urls())
def test_a_disguise_does_not_change_how_a_url_is_read(pair: tuple[str, str]) -> None:
    url, disguised = pair
    assert url_scheme(disguised) == url_scheme(url)
    assert is_safe_url(disguised) == is_safe_url(url)


@given(st.text())
def test_url_reading_is_total_and_only_http_s_is_safe(url: str) -> None:
    scheme = url_scheme(url)
    assert scheme == scheme.lower()
    assert scheme == "" or (scheme.isascii() and scheme[0].isalpha())
    if is_safe_url(url):
        assert scheme in ("http", "https")


@given(any_history, st.sets(st.sampled_from([f"call_{i}" for i in range(8)]), max_size=4))
def test_awaiting_reopens_only_the_final_turns_calls_and_reports_everything_else(
    history: tuple[Message, ...], awaiting: set[str]
) -> None:
    """Issue 13.5: ``awaiting`` is matched by turn. Compared with no ``awaiting``, the
    output lacks exactly the synthesized results of the final assistant turn's vouched
    calls, the report lacks exactly their entries, and nothing else changes: a reused id
    in an earlier turn keeps its synthesized result and report entry, and a real result
    of the final turn is never removed."""
    plain, plain_report = sanitize_history(history)
    out, report = sanitize_history(history, awaiting=awaiting)
    gone = set(plain_report.repair.synthesized) - set(report.repair.synthesized)
    assert set(report.repair.synthesized) <= set(plain_report.repair.synthesized)
    assert all(e.call_id in awaiting for e in gone)
    assert len({e.message_index for e in gone}) <= 1  # one turn: the final one
    assert len(plain) - len(out) == len(gone)
    reopened = {e.call_id for e in gone}
    end = len(out)
    while end and out[end - 1].role is Role.TOOL:
        end -= 1
    assert out[:end] == plain[:end]
    assert [m for m in plain[end:] if m.tool_call_id not in reopened] == list(out[end:])
    if gone:
        assert out[end - 1].role is Role.ASSISTANT
        assert reopened <= {c.id for c in out[end - 1].tool_calls}
