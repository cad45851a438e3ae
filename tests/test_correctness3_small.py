"""Issue 28, item 8 (smaller promises): arguments of non-JSON whitespace are truncated,
and the token-usage histogram advises the GenAI conventions' bucket boundaries."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem_core import Message, ToolCallPart, normalize_history
from golem_core.wire import wire_arguments

JSON_SPACE = " \t\n\r"
OTHER_SPACE = [c for c in map(chr, range(0x3000 + 1)) if c.isspace() and c not in JSON_SPACE]


@pytest.mark.parametrize("text", ["\xa0", " \xa0 ", "\u2028", "\x0b", "\x0c", "\u3000"])
def test_non_json_whitespace_is_truncated_not_empty(text: str) -> None:
    call = ToolCallPart("c1", "lookup", text)
    assert call.arguments_object is None and not call.arguments_valid
    assert wire_arguments(call) == {"truncated_args": text}
    history = (
        Message.user("go"),
        Message.assistant(None, tool_calls=[call]),
        Message.tool_result("c1", "lookup", "ok"),
    )
    _, repair = normalize_history(history)
    assert [e.call_id for e in repair.truncated] == ["c1"]


@given(st.text(alphabet=JSON_SPACE, max_size=6))
def test_json_whitespace_alone_is_an_empty_object(text: str) -> None:
    assert wire_arguments(ToolCallPart("c", "f", text)) == {}


@given(
    st.text(alphabet=JSON_SPACE, max_size=3),
    st.text(alphabet=st.sampled_from(OTHER_SPACE), min_size=1, max_size=3),
    st.text(alphabet=JSON_SPACE, max_size=3),
)
def test_any_other_whitespace_makes_arguments_truncated(left: str, odd: str, right: str) -> None:
    text = left + odd + right
    assert wire_arguments(ToolCallPart("c", "f", text)) == {"truncated_args": text}


def test_token_usage_buckets_are_the_genai_conventions_list() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from golem_shell.observe._otel import Instrumentation

    reader = InMemoryMetricReader()
    inst = Instrumentation(
        tracer_provider=None,
        meter_provider=MeterProvider(metric_readers=[reader]),
        capture_content=False,
    )
    inst.token_usage.record(70_000_000, {"gen_ai.token.type": "input"})
    data = reader.get_metrics_data()
    assert data is not None
    (point,) = [
        p
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "gen_ai.client.token.usage"
        for p in m.data.data_points  # type: ignore[attr-defined]
    ]
    # semantic-conventions docs/gen-ai/gen-ai-metrics.md: [1, 4, 16, ..., 67108864]
    assert list(point.explicit_bounds) == [4**k for k in range(14)]
    assert point.bucket_counts[-1] == 1  # above the last boundary
