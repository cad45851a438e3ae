"""The targets ``python -m bench`` is held to, and the verdicts on a run's records.

Owns ``TARGETS`` (golem's op against a baseline's or a peer's, with the most the ratio
may be), the linear-growth and peak-memory checks, the tracing check (``tracing_verdicts``)
and ``Verdict``, the judged ratio that ``bench/run_report.py`` renders and that
``bench/store.py``'s own verdicts share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.timing import Memory, Record
from bench.tracing import HISTORY_SIZES

__all__ = [
    "LINEAR",
    "MEMORY_LIMIT",
    "TARGETS",
    "TARGET_N",
    "TRACING_FLAT",
    "Target",
    "Verdict",
    "judge",
    "tracing_verdicts",
]

TARGET_N = 10_000
"""The size the spec's "at 10,000" targets are judged at."""


@dataclass(frozen=True)
class Target:
    """golem's ``op`` against ``versus`` (``(lib, op)``): its ratio, and the most it may be.

    ``limit=None`` is informational. ``at`` restricts the judged size (the others are
    still shown, informational); ``None`` judges every size.
    """

    op: str
    versus: tuple[str, str]
    limit: float | None
    label: str
    at: int | None = None


TARGETS = (
    Target("decode_json", ("stdlib-json", "json_loads"), 1.5, "within 1.5x of json.loads"),
    Target("decode_json", ("pydantic-ai", "decode_json"), 0.25, ">= 4x faster"),
    Target("decode_json", ("orjson", "json_loads"), None, "scale"),
    Target("decode_json_stdlib", ("stdlib-json", "json_loads"), None, "info: without orjson"),
    Target("decode_json_stdlib", ("pydantic-ai", "decode_json"), None, "info: without orjson"),
    Target("encode_json", ("stdlib-json", "json_dumps"), 1.0, "at most json.dumps"),
    Target("encode_json", ("pydantic-ai", "encode_json"), 1 / 3, ">= 3x faster", TARGET_N),
    Target("encode_json", ("orjson", "json_dumps"), None, "scale"),
    Target("normalize_clean_cold", ("python", "floor_pass"), 3.0, "within 3x of the floor"),
    Target("normalize_clean", ("python", "floor_pass"), None, "info: arguments parsed before"),
    Target("normalize_clean", ("pydantic-ai", "repair_messages_clean"), None, "info"),
    Target(
        "normalize_damaged_cold",
        ("python", "floor_pass_damaged"),
        3.0,
        "within 3x of the floor",
    ),
    Target(
        "normalize_damaged",
        ("pydantic-ai", "repair_messages_damaged"),
        0.5,
        ">= 2x faster (neither parses arguments)",
    ),
    Target(
        "normalize_damaged_cold",
        ("pydantic-ai", "repair_messages_damaged"),
        None,
        "info: golem also parses every call's arguments",
    ),
    Target("sanitize_clean_cold", ("python", "floor_pass"), 4.0, "within 4x of the floor"),
    Target("sanitize_clean", ("python", "floor_pass"), None, "info: arguments parsed before"),
    Target("sanitize_clean", ("pydantic-ai", "sanitize_messages_clean"), None, "info"),
    Target("trim_half", ("langchain-core", "trim_messages_count"), None, "info"),
    Target(
        "trim_half_stepped",
        ("langchain-core", "trim_messages_count"),
        0.5,
        "<= 1/2 (the default stepped cut)",
        TARGET_N,
    ),
    Target("trim_half", ("pydantic-ai", "keep_last_half"), None, "a bare slice"),
    Target(
        "budget_half_tokens",
        ("langchain-core", "trim_messages_tokens"),
        0.1,
        ">= 10x faster",
        TARGET_N,
    ),
    Target("agent_run_text", ("pydantic-ai", "agent_run_text"), 0.2, "<= 1/5"),
    Target("agent_run_1tool", ("pydantic-ai", "agent_run_1tool"), 0.2, "<= 1/5"),
    Target("agent_run_1tool_history", ("pydantic-ai", "agent_run_1tool_history"), 0.1, "<= 1/10"),
    Target("stream_openai", ("openai-sdk", "stream_openai"), 1 / 3, ">= 3x faster than the SDK"),
    Target("stream_anthropic", ("anthropic-sdk", "stream_anthropic"), 1 / 3, ">= 3x faster"),
    Target(
        "stream_gemini", ("google-genai-sdk", "stream_gemini"), 1 / 3, ">= 3x faster than the SDK"
    ),
    Target(
        "stream_responses", ("openai-sdk", "stream_responses"), 1 / 3, ">= 3x faster than the SDK"
    ),
    Target("import_golem_core", ("pydantic-ai", "import_golem_core"), 0.5, "<= 1/2 of import"),
    Target("import_golem_shell", ("pydantic-ai", "import_golem_shell"), 0.5, "<= 1/2 of import"),
    Target("cli_help", ("pydantic-ai", "import_golem_shell"), None, "info: vs import pydantic_ai"),
    Target("first_request", ("pydantic-ai", "first_request"), 0.5, "<= 1/2"),
    Target(
        "durable_overhead_per_step",
        ("pydantic-ai", "durable_overhead_per_step"),
        1.0,
        "DBOS on SQLite, per recorded step: at most equal",
    ),
    Target(
        "durable_overhead_per_run",
        ("pydantic-ai", "durable_overhead_per_run"),
        None,
        "info: golem records 5 steps per run, pydantic-ai 3",
    ),
)
LINEAR = (
    ("budget_half_tokens", 13.0),
    ("trim_half", None),
    ("normalize_clean", None),
    ("decode_json", None),
)
"""golem ops whose 100,000/10,000 time ratio is checked (limit: 10x, 30% slack)."""
MEMORY_LIMIT = 3.0


@dataclass(frozen=True)
class Verdict:
    op: str
    n: int
    golem_s: float
    versus: str
    versus_s: float
    ratio: float
    target: str
    met: bool | None

    @property
    def status(self) -> str:
        return {True: "met", False: "MISSED", None: ""}[self.met]

    def as_json(self) -> dict[str, object]:
        return {
            "kind": "ratio",
            "op": self.op,
            "n": self.n,
            "golem_median_s": self.golem_s,
            "versus": self.versus,
            "versus_median_s": self.versus_s,
            "ratio": round(self.ratio, 4),
            "target": self.target,
            "met": self.met,
        }


def judge(records: Sequence[Record], memory: Sequence[Memory]) -> list[Verdict]:
    """Every golem/peer ratio the records allow, each with its target's verdict."""
    by_key = {(r.lib, r.op, r.n): r for r in records}
    sizes = sorted({r.n for r in records if r.lib == "golem"})
    verdicts: list[Verdict] = []
    for t in TARGETS:
        for n in sizes:
            mine = by_key.get(("golem", t.op, n))
            theirs = by_key.get((*t.versus, n))
            if mine is None or theirs is None:
                continue
            ratio = mine.median_s / theirs.median_s
            judged = t.limit is not None and (t.at is None or t.at == n)
            if t.limit is None:
                label = t.label
            elif judged:
                label = f"{t.label} (<= {t.limit:.3g})"
            else:
                label = f"info ({t.label} judged at {t.at:,})"
            verdicts.append(
                Verdict(
                    t.op,
                    n,
                    mine.median_s,
                    f"{t.versus[0]} {t.versus[1]}",
                    theirs.median_s,
                    ratio,
                    label,
                    ratio <= t.limit if judged and t.limit is not None else None,
                )
            )
    for op, limit in LINEAR:
        big = by_key.get(("golem", op, 100_000))
        small = by_key.get(("golem", op, 10_000))
        if big is None or small is None:
            continue
        ratio = big.median_s / small.median_s
        verdicts.append(
            Verdict(
                op,
                100_000,
                big.median_s,
                f"golem {op} n=10,000",
                small.median_s,
                ratio,
                f"linear: ~10x (<= {limit:.3g})" if limit is not None else "linear (info)",
                ratio <= limit if limit is not None else None,
            )
        )
    for m in memory:
        if m.lib != "golem":
            continue
        judged = m.n == TARGET_N
        verdicts.append(
            Verdict(
                "decode_json_peak_mem",
                m.n,
                float(m.peak_bytes),
                "input bytes",
                float(m.input_bytes),
                m.ratio,
                f"peak <= {MEMORY_LIMIT:g}x input" if judged else "info (judged at 10,000)",
                m.ratio <= MEMORY_LIMIT if judged else None,
            )
        )
    return verdicts


TRACING_FLAT = 2.0
"""Tracing with content, per request, at 100 and 1,000 messages: at most this times its
cost at 10 messages (flat: nothing re-serialized per request; the history's text is
still copied into the span attribute, which grows with it)."""


def tracing_verdicts(records: Sequence[Record]) -> list[Verdict]:
    """The tracing cost per request (traced run minus untraced run, over its two
    requests) at each history size against the same at the smallest size."""
    by_key = {(r.op, r.n): r.median_s for r in records if r.lib == "golem"}
    cost: dict[int, float] = {}
    for n in HISTORY_SIZES:
        on = by_key.get(("run_history_otel_content", n))
        off = by_key.get(("run_history_otel_off", n))
        if on is not None and off is not None:
            cost[n] = max(on - off, on / 100) / 2  # noise can put "on" under "off"
    base = HISTORY_SIZES[0]
    if base not in cost:
        return []
    return [
        Verdict(
            "otel_content_per_request",
            n,
            cost[n],
            f"golem otel_content_per_request n={base}",
            cost[base],
            cost[n] / cost[base],
            f"flat: within {TRACING_FLAT:g}x of n={base} (<= {TRACING_FLAT:g})"
            if n != base
            else "info",
            cost[n] / cost[base] <= TRACING_FLAT if n != base else None,
        )
        for n in HISTORY_SIZES
        if n in cost
    ]
