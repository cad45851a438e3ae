"""What OpenAI Chat Completions and Anthropic Messages accept, as checkers of request
bodies: the rules the SDKs' request types cannot express (pairing, alternation, empty
and whitespace-only text, unique ids). Each returns the list of violations (empty when
the body would be accepted), so a failing property prints what a provider would say.

Sources: ``/work/shared/research/wire-facts.md`` (the providers' 400 messages).
"""

from __future__ import annotations

import re
from typing import Any

_ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def openai_violations(body: dict[str, Any]) -> list[str]:
    """Chat Completions: every ``tool_call`` answered by a ``tool`` message directly after
    its assistant message (before any other message), ids unique in a turn, and no tool
    message that answers nothing."""
    problems: list[str] = []
    messages = body.get("messages") or []
    open_ids: set[str] = set()
    for k, m in enumerate(messages):
        role = m["role"]
        if role == "tool":
            cid = m.get("tool_call_id")
            if cid not in open_ids:
                problems.append(f"messages.{k}: tool message for {cid!r} answers no open call")
            open_ids.discard(cid)
            continue
        if open_ids:
            problems.append(f"messages.{k}: tool_call ids without a response: {sorted(open_ids)}")
            open_ids = set()
        if role == "assistant":
            calls = m.get("tool_calls") or []
            ids = [c["id"] for c in calls]
            if len(ids) != len(set(ids)):
                problems.append(f"messages.{k}: repeated tool_call ids {ids}")
            if any(len(i) > 40 for i in ids):
                problems.append(f"messages.{k}: a tool_call id longer than 40 characters")
            if m.get("content") is None and not calls:
                problems.append(f"messages.{k}: assistant message with neither content nor calls")
            open_ids = set(ids)
    if open_ids:
        problems.append(f"end: tool_call ids without a response: {sorted(open_ids)}")
    return problems


def anthropic_violations(body: dict[str, Any]) -> list[str]:
    """Messages: strict user/assistant alternation starting with a user turn, no empty
    content and no empty or whitespace-only text block, every ``tool_use`` answered by a
    ``tool_result`` at the start of the very next (user) message, results answering
    only the previous turn's ``tool_use`` blocks once, ``tool_use`` ids unique in the
    request and pattern-valid, and a final assistant turn not ending in whitespace."""
    problems: list[str] = []
    messages = body.get("messages") or []
    if not messages:
        return ["messages: at least one message is required"]
    if messages[0]["role"] != "user":
        problems.append("messages.0: the first message must use the user role")
    seen_ids: set[str] = set()
    previous_calls: list[str] = []
    for k, m in enumerate(messages):
        role = m["role"]
        if k and role == messages[k - 1]["role"]:
            problems.append(f"messages.{k}: two {role} turns in a row")
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not blocks:
            problems.append(f"messages.{k}: empty content")
        for j, b in enumerate(blocks):
            if b["type"] == "text" and not b["text"].strip():
                problems.append(
                    f"messages.{k}.content.{j}: text blocks must contain non-whitespace"
                )
        if role == "assistant":
            calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
            for cid in calls:
                if cid in seen_ids:
                    problems.append(f"messages.{k}: tool_use ids must be unique ({cid!r})")
                if not _ANTHROPIC_ID.match(cid):
                    problems.append(f"messages.{k}: tool_use id {cid!r} breaks the pattern")
                seen_ids.add(cid)
            if any(b["type"] == "tool_result" for b in blocks):
                problems.append(f"messages.{k}: tool_result in an assistant turn")
            if previous_calls:
                problems.append(f"messages.{k}: tool_use without tool_result: {previous_calls}")
            previous_calls = calls
            continue
        results: list[str] = []
        seen_other = False
        for b in blocks:
            if b["type"] == "tool_result":
                if seen_other:
                    problems.append(f"messages.{k}: a tool_result after other content")
                results.append(b["tool_use_id"])
            else:
                seen_other = True
            if b["type"] == "tool_use":
                problems.append(f"messages.{k}: tool_use in a user turn")
        if sorted(results) != sorted(previous_calls):
            problems.append(
                f"messages.{k}: results {results} do not answer the calls {previous_calls}"
            )
        previous_calls = []
    if previous_calls:
        problems.append(f"end: tool_use without tool_result: {previous_calls}")
    last = messages[-1]
    if last["role"] == "assistant":
        content = last["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if (
            blocks
            and blocks[-1]["type"] == "text"
            and blocks[-1]["text"] != blocks[-1]["text"].rstrip()
        ):
            problems.append("final assistant content cannot end with trailing whitespace")
    return problems
