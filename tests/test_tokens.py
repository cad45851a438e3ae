"""tiktoken_counter, offline: every encoding here is built from ranks the test makes.

No test loads a published encoding ("o200k_base" and friends download their ranks):
the default name is checked through a stand-in for ``tiktoken.get_encoding``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import tiktoken

from golem_core import (
    Message,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
    approximate_tokens,
    budget_history,
    token_counter,
)
from golem_shell import tiktoken_counter

BYTES = {bytes([i]): i for i in range(256)}


@pytest.fixture
def encoding() -> tiktoken.Encoding:
    """Bytes, plus merges: "ab" is one token, "abab" one, "weather" one."""
    return tiktoken.Encoding(
        name="test",
        pat_str=r"\S+|\s+",
        mergeable_ranks=BYTES
        | {
            b"ab": 256,
            b"abab": 257,
            b"we": 258,
            b"at": 259,
            b"her": 260,
            b"he": 261,
            b"wea": 262,
            b"weat": 263,
            b"weather": 264,
        },
        special_tokens={"<|endoftext|>": 300},
    )


@pytest.fixture
def no_download(monkeypatch: pytest.MonkeyPatch, encoding: tiktoken.Encoding) -> list[str]:
    """``tiktoken.get_encoding`` replaced: records the names asked for, returns the test one."""
    asked: list[str] = []

    def get_encoding(name: str) -> tiktoken.Encoding:
        asked.append(name)
        return encoding

    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)
    return asked


def test_the_encoding_merges_as_built(encoding: tiktoken.Encoding) -> None:
    assert encoding.encode_ordinary("abab") == [257]
    assert encoding.encode_ordinary("ab ab") == [256, 32, 256]
    assert len(encoding.encode_ordinary("weather")) == 1


def test_counts_text_exactly(encoding: tiktoken.Encoding) -> None:
    count = tiktoken_counter(encoding)
    assert count(Message.user("abab")) == 4 + 2 + 1
    assert count(Message.user("ab ab")) == 4 + 2 + 3
    assert count(Message.user("xyz")) == 4 + 2 + 3
    assert count(Message.user("")) == 4 + 2


def test_counts_thinking_and_tool_calls_as_text(encoding: tiktoken.Encoding) -> None:
    count = tiktoken_counter(encoding)
    call = ToolCallPart("c1", "weather", "abab")
    assert count(Message.assistant(tool_calls=[call])) == 4 + 2 + 1 + 1
    assert count(Message.assistant("ab", thinking=[ThinkingPart("abab ab")])) == 4 + 2 + 3 + 2 + 1


def test_media_and_unknown_parts_cost_what_approximate_tokens_says(
    encoding: tiktoken.Encoding,
) -> None:
    count = tiktoken_counter(encoding)
    image = Message.user("", URLPart("https://x/y.png", "image"))
    assert count(image) == approximate_tokens(image) == 4 + 2 + 2 + 1_000
    unknown = Message(Role.USER, (TextPart(""), UnknownPart("hologram")))
    assert count(unknown) == 4 + 2


def test_agrees_with_token_counter_over_the_same_tokenizer(encoding: tiktoken.Encoding) -> None:
    exact = tiktoken_counter(encoding)
    same = token_counter(lambda text: len(encoding.encode_ordinary(text)))
    for message in (
        Message.user("weather ab abab"),
        Message.assistant("a", tool_calls=[ToolCallPart("c", "weather", '{"a":"abab"}')]),
        Message.tool_result("c", "weather", "18C"),
    ):
        assert exact(message) == same(message)


def test_special_token_text_is_counted_as_text(encoding: tiktoken.Encoding) -> None:
    count = tiktoken_counter(encoding)
    assert count(Message.user("<|endoftext|>")) == 4 + 2 + len("<|endoftext|>")


def test_text_that_is_not_valid_unicode_is_counted(encoding: tiktoken.Encoding) -> None:
    assert tiktoken_counter(encoding)(Message.user("a\ud800b")) >= 4 + 2 + 1


def test_the_default_names_o200k_base_and_resolves_it_once(no_download: list[str]) -> None:
    count = tiktoken_counter()
    count(Message.user("abab"))
    count(Message.user("abab"))
    assert no_download == ["o200k_base"]


def test_a_name_is_resolved_when_the_counter_is_made(no_download: list[str]) -> None:
    tiktoken_counter("cl100k_base")
    assert no_download == ["cl100k_base"]


def test_an_unknown_name_is_a_value_error() -> None:
    # tiktoken decides from its local registry; nothing is fetched for an unknown name
    with pytest.raises(ValueError, match="no-such-encoding"):
        tiktoken_counter("no-such-encoding")


def test_refuses_what_is_not_an_encoding() -> None:
    with pytest.raises(TypeError, match=r"expected a tiktoken.Encoding or an encoding name"):
        tiktoken_counter(42)  # type: ignore[arg-type]


def test_is_named_in_a_budget_processor(encoding: tiktoken.Encoding) -> None:
    processor = budget_history(tiktoken_counter(encoding), 100)
    assert repr(processor) == "budget_history(tiktoken_counter('test'), 100)"


def test_bounds_a_history_by_exact_tokens(encoding: tiktoken.Encoding) -> None:
    history = (Message.user("abab " * 20), Message.assistant("abab"), Message.user("ab"))
    count = tiktoken_counter(encoding)
    assert [count(m) for m in history] == [4 + 2 + 40, 4 + 2 + 1, 4 + 2 + 1]
    # the sliding window keeps what fits; the default cuts whole steps (each at least half
    # the budget, from one step point to the next): the first message is a step of its own
    assert budget_history(count, 14, low_water=14)(history).unwrap() == history[1:]
    assert budget_history(count, 14)(history).unwrap() == history[1:]
    assert budget_history(count, 13)(history).unwrap() == history[2:]
    assert budget_history(count, 60)(history).unwrap() is history


def test_without_tiktoken_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ImportError, match=r"pip install 'golem-agents\[tiktoken\]'"):
        tiktoken_counter("o200k_base")


def test_golem_shell_imports_without_tiktoken() -> None:
    code = (
        "import sys\n"
        "sys.modules['tiktoken'] = None\n"
        "import golem_shell\n"
        "assert callable(golem_shell.tiktoken_counter)\n"
        "try:\n"
        "    golem_shell.tiktoken_counter()\n"
        "except ImportError as e:\n"
        "    assert 'golem-agents[tiktoken]' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('expected ImportError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
