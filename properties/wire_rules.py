"""What OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and Gemini accept,
as checkers of request bodies: the rules the SDKs' request types cannot express (pairing,
alternation, the first turn, empty and whitespace-only text, unique ids). Each returns
the list of violations (empty when the body would be accepted), so a failing property
prints what a provider would say.

Sources: ``/work/shared/research/wire-facts.md`` (the providers' 400 messages); for
Gemini, its 400s "Please ensure that function call turn comes immediately after a user
turn or after a function response turn", "... function response turn comes immediately
after a function call turn", "the number of function response parts is equal to the
number of function call parts", and "contents is not specified" (ADR 0065).
"""

from __future__ import annotations

import base64
import json
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
    first = messages[0]["content"]
    compacted = (
        isinstance(first, list) and bool(first) and first[0].get("type") == "compaction"
    )  # Anthropic drops what stands before a compaction block: it may open the request
    if messages[0]["role"] != "user" and not compacted:
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
            if b["type"] == "compaction":
                content = b.get("content")
                if role != "assistant":
                    problems.append(f"messages.{k}.content.{j}: compaction in a {role} turn")
                if content is not None and (not isinstance(content, str) or not content):
                    problems.append(
                        f"messages.{k}.content.{j}: compaction content must be a non-empty"
                        " string or null"
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


ANTHROPIC_EDITS = {
    "clear_tool_uses_20250919": "context-management-2025-06-27",
    "clear_thinking_20251015": "context-management-2025-06-27",
    "compact_20260112": "compact-2026-01-12",
}
"""Anthropic's ``context_management`` edit types and the ``anthropic-beta`` each needs."""


def anthropic_context_violations(body: dict[str, Any], betas: str = "") -> list[str]:
    """Anthropic ``context_management``: known edit types, each with its beta header
    (``betas``: the ``anthropic-beta`` header sent), ``clear_thinking_20251015`` listed
    first, a ``compact_20260112`` trigger of at least 50,000 input tokens, and
    ``compaction`` blocks only with the compaction beta (docs: context editing,
    compaction)."""
    problems: list[str] = []
    sent = {b.strip() for b in betas.split(",") if b.strip()}
    edits = (body.get("context_management") or {}).get("edits", [])
    for k, edit in enumerate(edits):
        kind = edit.get("type")
        if kind not in ANTHROPIC_EDITS:
            problems.append(f"context_management.edits[{k}]: unknown type {kind!r}")
            continue
        if ANTHROPIC_EDITS[kind] not in sent:
            problems.append(f"context_management.edits[{k}]: {kind} needs {ANTHROPIC_EDITS[kind]}")
        if kind == "clear_thinking_20251015" and k:
            problems.append(f"context_management.edits[{k}]: clear_thinking must be first")
        trigger = edit.get("trigger")
        if kind == "compact_20260112" and trigger is not None and trigger.get("value", 0) < 50000:
            problems.append(f"context_management.edits[{k}]: trigger under 50000 tokens")
    for k, m in enumerate(body.get("messages") or []):
        content = m["content"] if isinstance(m["content"], list) else []
        if any(b.get("type") == "compaction" for b in content) and "compact-2026-01-12" not in sent:
            problems.append(f"messages.{k}: a compaction block without the compact beta")
    return problems


RESPONSES_COMPACT_KEYS = frozenset(
    {"model", "input", "instructions", "previous_response_id"}
    | {"prompt_cache_key", "prompt_cache_retention", "service_tier"}
)
"""The fields ``POST /responses/compact`` takes."""


def responses_compact_violations(body: dict[str, Any]) -> list[str]:
    """``POST /responses/compact``: a ``model``, only the fields it takes (no tools,
    ``store``, ``include``, ``stream``), and input that would be valid for ``/responses``."""
    problems = [
        f"{key}: not a field of /responses/compact" for key in body.keys() - RESPONSES_COMPACT_KEYS
    ]
    if not body.get("model"):
        problems.append("model: required")
    return problems + responses_violations(body)


MAX_RESPONSES_CALL_ID = 64
"""OpenAI Responses refuses a longer ``call_id`` (``string_above_max_length``)."""


def responses_violations(body: dict[str, Any]) -> list[str]:
    """Responses: every ``function_call`` answered by a ``function_call_output`` with its
    ``call_id`` before the next item that is not a tool item, no output answering
    nothing, call ids unique and at most 64 characters, and a reasoning item followed by
    an item of its own turn (a reasoning, an assistant message or a call)."""
    problems: list[str] = []
    items = body.get("input", [])
    open_ids: list[str] = []
    seen: set[str] = set()
    for k, item in enumerate(items):
        kind = item.get("type")
        if kind == "function_call":
            cid = item["call_id"]
            if cid in seen:
                problems.append(f"input[{k}]: call_id {cid!r} used twice")
            if len(cid) > MAX_RESPONSES_CALL_ID:
                problems.append(f"input[{k}]: call_id longer than 64")
            seen.add(cid)
            open_ids.append(cid)
        elif kind == "function_call_output":
            cid = item["call_id"]
            if cid not in open_ids:
                problems.append(f"input[{k}]: output for {cid!r} answers no open call")
            else:
                open_ids.remove(cid)
        else:
            if open_ids:
                problems.append(f"input[{k}]: calls {open_ids} unanswered before this item")
                open_ids = []
            if kind == "compaction" and not item.get("encrypted_content"):
                problems.append(f"input[{k}]: compaction item without encrypted_content")
            if kind == "reasoning":
                following = items[k + 1] if k + 1 < len(items) else {}
                if (
                    following.get("type") not in ("reasoning", "function_call")
                    and following.get("role") != "assistant"
                ):
                    problems.append(f"input[{k}]: reasoning item with nothing after it")
    if open_ids:
        problems.append(f"end: calls {open_ids} unanswered")
    return problems


GEMINI_DATA_KEYS = frozenset({"text", "inlineData", "fileData", "functionCall", "functionResponse"})
"""The keys of which a Gemini part holds exactly one."""


def gemini_violations(body: dict[str, Any], *, paired: bool = True) -> list[str]:
    """Gemini: at least one content; the first from the user; roles ``user`` and
    ``model`` alternating; no empty content; one datum per part; no empty text unless it
    carries a signature; calls only in ``model`` contents and responses only in ``user``
    ones; and the pairing rule: a content opens with exactly the responses to the calls
    of the content before it, in order, with the call's id and name (no response after
    other parts, none answering nothing), call ids distinct within a turn, and the first
    call of a turn carries a thought signature (Gemini 3). ``paired=False`` leaves the
    pairing rule out (for bodies of histories no repair went over)."""
    contents = body.get("contents") or []
    if not contents:
        return ["contents: at least one content is required (contents is not specified)"]
    problems: list[str] = []
    if contents[0].get("role") != "user":
        problems.append(
            "contents[0]: the first content must come from the user (a function call"
            " turn comes immediately after a user turn or a function response turn)"
        )
    open_calls: list[tuple[Any, Any]] = []
    for k, content in enumerate(contents):
        role = content.get("role")
        parts = content.get("parts") or []
        if role not in ("user", "model"):
            problems.append(f"contents[{k}]: role {role!r}")
        if not parts:
            problems.append(f"contents[{k}]: no parts")
        if k and contents[k - 1].get("role") == role:
            problems.append(f"contents[{k}]: the same role twice in a row")
        for j, part in enumerate(parts):
            data = GEMINI_DATA_KEYS & set(part)
            if len(data) != 1:
                problems.append(f"contents[{k}].parts[{j}]: {sorted(data)}")
            if part.get("text") == "" and "thoughtSignature" not in part:
                problems.append(f"contents[{k}].parts[{j}]: empty text")
            if "functionCall" in part and role != "model":
                problems.append(f"contents[{k}].parts[{j}]: a call in a user content")
            if "functionResponse" in part and role != "user":
                problems.append(f"contents[{k}].parts[{j}]: a response in a model content")
            if "functionResponse" in part and not isinstance(
                part["functionResponse"].get("response"), dict
            ):
                problems.append(f"contents[{k}].parts[{j}]: a response that is not an object")
        if not paired:
            continue
        answers = [
            (p["functionResponse"].get("id"), p["functionResponse"]["name"])
            for p in parts
            if "functionResponse" in p
        ]
        if answers != open_calls:
            problems.append(f"contents[{k}]: responses {answers} for calls {open_calls}")
        if any("functionResponse" in p for p in parts[len(answers) :]):
            problems.append(f"contents[{k}]: a response after other parts")
        open_calls = [
            (p["functionCall"].get("id"), p["functionCall"]["name"])
            for p in parts
            if "functionCall" in p
        ]
        ids = [i for i, _ in open_calls if i is not None]
        if len(ids) != len(set(ids)):
            problems.append(f"contents[{k}]: call ids repeated in one turn: {ids}")
        if open_calls and "thoughtSignature" not in next(p for p in parts if "functionCall" in p):
            problems.append(f"contents[{k}]: the first call carries no signature")
    if open_calls:
        problems.append(f"calls left unanswered at the end: {open_calls}")
    return problems


MAX_CACHE_BREAKPOINTS = 4
"""Anthropic: "A maximum of 4 blocks with cache_control may be provided"."""


def anthropic_cache_violations(body: dict[str, Any]) -> list[str]:
    """Messages prompt caching: at most 4 ``cache_control`` blocks across tools, system and
    messages; each ``{"type": "ephemeral"}`` with an optional ``ttl`` of ``5m`` or ``1h``;
    a 1-hour entry never after a 5-minute one (longer TTLs come first); never on a
    thinking block or an empty text block."""
    problems: list[str] = []
    marked: list[tuple[str, dict[str, Any]]] = []

    def visit(path: str, block: Any) -> None:
        if not isinstance(block, dict) or "cache_control" not in block:
            return
        marker = block["cache_control"]
        marked.append((path, marker))
        if block.get("type") in ("thinking", "redacted_thinking"):
            problems.append(f"{path}: a thinking block cannot carry cache_control")
        if block.get("type") == "text" and not block.get("text"):
            problems.append(f"{path}: an empty text block cannot carry cache_control")

    for k, tool in enumerate(body.get("tools") or []):
        visit(f"tools.{k}", tool)
    system = body.get("system")
    if isinstance(system, list):
        for k, block in enumerate(system):
            visit(f"system.{k}", block)
    for k, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        if isinstance(content, list):
            for j, block in enumerate(content):
                visit(f"messages.{k}.content.{j}", block)
    if len(marked) > MAX_CACHE_BREAKPOINTS:
        problems.append(
            f"{len(marked)} blocks with cache_control; at most {MAX_CACHE_BREAKPOINTS} allowed"
        )
    seen_short = False
    for path, marker in marked:
        if not isinstance(marker, dict) or marker.get("type") != "ephemeral":
            problems.append(f"{path}: cache_control must be {{'type': 'ephemeral'}}")
            continue
        ttl = marker.get("ttl", "5m")
        if ttl not in ("5m", "1h"):
            problems.append(f"{path}: cache_control.ttl must be '5m' or '1h', got {ttl!r}")
        if ttl == "5m":
            seen_short = True
        elif seen_short:
            problems.append(f"{path}: a 1h cache entry after a 5m one (longer TTLs first)")
    return problems


def openai_cache_violations(body: dict[str, Any]) -> list[str]:
    """Chat Completions and Responses prompt caching: ``prompt_cache_key`` a non-empty
    string, ``prompt_cache_retention`` ``in_memory`` or ``24h``."""
    problems: list[str] = []
    if "prompt_cache_key" in body:
        key = body["prompt_cache_key"]
        if not isinstance(key, str) or not key:
            problems.append(f"prompt_cache_key must be a non-empty string, got {key!r}")
    if "prompt_cache_retention" in body and body["prompt_cache_retention"] not in (
        "in_memory",
        "24h",
    ):
        problems.append(
            f"prompt_cache_retention must be 'in_memory' or '24h', "
            f"got {body['prompt_cache_retention']!r}"
        )
    return problems


# -- OpenAI-compatible servers' quirks, and artifacts only their issuer reads (ADR 0085) -----

MISTRAL_CALL_ID = re.compile(r"^[a-zA-Z0-9]{9}$")
"""Mistral: "Tool call id was <id> but must be a-z, A-Z, 0-9, with a length of 9"."""


def compatible_violations(
    body: dict[str, Any], *, mistral_ids: bool = False, string_content: bool = False
) -> list[str]:
    """Chat Completions on OpenAI-compatible servers: no ``developer`` role (llama.cpp,
    vLLM chat templates and other servers refuse it); no thinking content part (Mistral
    refuses one it did not issue); with ``mistral_ids``, every call id and every
    ``tool_call_id`` exactly nine letters and digits; with ``string_content``, a message
    holding only text is one string, never an array (servers that refuse array content)."""
    problems: list[str] = []
    for k, m in enumerate(body.get("messages") or []):
        if m["role"] == "developer":
            problems.append(f"messages.{k}: role 'developer' is not supported")
        content = m.get("content")
        if isinstance(content, list):
            kinds = {c.get("type") for c in content}
            if "thinking" in kinds or "reasoning" in kinds:
                problems.append(f"messages.{k}: a thinking part")
            if string_content and kinds <= {"text"}:
                problems.append(f"messages.{k}: array content where a string is required")
        if mistral_ids:
            ids = [c["id"] for c in m.get("tool_calls") or []]
            if m["role"] == "tool":
                ids.append(m.get("tool_call_id"))
            for cid in ids:
                if not isinstance(cid, str) or not MISTRAL_CALL_ID.match(cid):
                    problems.append(f"messages.{k}: call id {cid!r} is not 9 letters and digits")
    return problems


ISSUED = "issued"
"""The tag a property's artifacts carry: ``issued|<provider>|<model>|<endpoint>``; ``*``
for a model or endpoint a legacy (origin-less) artifact does not name."""


def _issuer(tag: str) -> tuple[str, str, str] | None:
    fields = tag.split("|")
    if len(fields) != 4 or fields[0] != ISSUED:
        return None
    return fields[1], fields[2], fields[3]


def artifact_violations(
    body: dict[str, Any], provider: str, model: str, endpoint: str
) -> list[str]:
    """Every artifact in ``body`` (Anthropic thinking signatures and redacted data, Responses
    ``encrypted_content``, Gemini ``thoughtSignature``s other than Google's placeholder)
    was issued by ``provider`` at ``endpoint``, and, for Anthropic and Gemini, by
    ``model``: what each provider checks ("Invalid signature in thinking block",
    "encrypted content ... could not be verified", "Corrupted thought signature"). The
    artifacts are tagged by the property that made them (``ISSUED``)."""
    found: list[tuple[str, str]] = []  # (path, tag)
    if provider == "anthropic":
        for k, m in enumerate(body.get("messages") or []):
            content = m["content"] if isinstance(m["content"], list) else []
            for j, b in enumerate(content):
                if b["type"] == "thinking":
                    found.append((f"messages.{k}.content.{j}", b["signature"]))
                elif b["type"] == "redacted_thinking":
                    found.append((f"messages.{k}.content.{j}", b["data"]))
    elif provider == "openai-responses":
        for k, item in enumerate(body.get("input") or []):
            if item.get("type") in ("reasoning", "compaction"):
                found.append((f"input[{k}]", item.get("encrypted_content", "")))
    elif provider == "google":
        skip = base64.b64encode(b"skip_thought_signature_validator").decode("ascii")
        for k, content in enumerate(body.get("contents") or []):
            for j, part in enumerate(content.get("parts") or []):
                sig = part.get("thoughtSignature")
                if sig is not None and sig != skip:
                    tag = base64.b64decode(sig).decode("utf-8", "replace")
                    found.append((f"contents[{k}].parts[{j}]", tag))
    elif provider == "openai":
        for k, m in enumerate(body.get("messages") or []):
            for key in ("reasoning_content", "reasoning", "thinking"):
                if key in m:
                    found.append((f"messages.{k}.{key}", m[key]))
    problems: list[str] = []
    binds_model = provider in ("anthropic", "google")
    for path, tag in found:
        issuer = _issuer(tag) if isinstance(tag, str) else None
        if issuer is None:
            problems.append(f"{path}: an artifact of unknown origin")
            continue
        by, by_model, by_endpoint = issuer
        if by != provider:
            problems.append(f"{path}: issued by {by}, sent to {provider}")
        elif by_endpoint not in ("*", endpoint):
            problems.append(f"{path}: issued at {by_endpoint}, sent to {endpoint}")
        elif binds_model and by_model not in ("*", model):
            problems.append(f"{path}: issued by model {by_model}, sent to {model}")
    return problems


# -- strict schemas (issue 37, item 5; ADR 0130) ---------------------------------------------
#
# OpenAI: platform.openai.com/docs/guides/structured-outputs, "Supported schemas" (the same
# subset for strict function calling). Anthropic: docs.claude.com structured outputs, "JSON
# Schema limitations" and "Schema complexity limits" (JSON outputs and strict tool use).
# Gemini: ai.google.dev/gemini-api/docs/structured-output, the JSON Schema subset of
# responseJsonSchema.

OPENAI_STRICT_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "const"}
    | {"anyOf", "$defs", "$ref", "description", "title", "format", "pattern"}
    | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
    | {"minItems", "maxItems"}
)
OPENAI_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def _subschemas(schema: Any, path: str, depth: int) -> list[tuple[str, Any, int]]:
    """Every subschema with its path and its level of object nesting."""
    out = [(path, schema, depth)]
    if not isinstance(schema, dict):
        return out
    inner = depth + (schema.get("type") == "object" or "properties" in schema)
    for name, sub in (schema.get("properties") or {}).items():
        out += _subschemas(sub, f"{path}.{name}", inner)
    if "items" in schema:
        out += _subschemas(schema["items"], f"{path}[]", depth)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for k, sub in enumerate(schema.get(key) or ()):
            out += _subschemas(sub, f"{path}.{key}[{k}]", depth)
    if isinstance(schema.get("additionalProperties"), dict):
        out += _subschemas(schema["additionalProperties"], f"{path}.additionalProperties", inner)
    for name, sub in (schema.get("$defs") or {}).items():
        out += _subschemas(sub, f"{path}.$defs.{name}", 0)
    return out


def openai_strict_violations(schema: Any) -> list[str]:
    """A schema sent with ``strict: true``: the root an object (not ``anyOf``); only the
    documented keywords and formats; every object ``additionalProperties: false`` with
    every property required; every node typed (``type``, ``enum``, ``const``, ``anyOf``
    or ``$ref``), a ``$ref`` alone and local, types among the documented ones, arrays
    with typed ``items``; at most 5000 properties, 10 levels of nesting, 1000 enum
    values."""
    bad: list[str] = []
    if not isinstance(schema, dict) or schema.get("type") != "object" or "anyOf" in schema:
        return ["$: the root must be an object, not anyOf"]
    properties = enums = 0
    for path, node, depth in _subschemas(schema, "$", 0):
        if not isinstance(node, dict):
            bad.append(f"{path}: not a schema object")
            continue
        if set(node) - OPENAI_STRICT_KEYWORDS:
            bad.append(f"{path}: unsupported {sorted(set(node) - OPENAI_STRICT_KEYWORDS)}")
        if not {"type", "enum", "const", "anyOf", "$ref"} & set(node):
            bad.append(f"{path}: no type")
        types = node.get("type")
        for t in types if isinstance(types, list) else [types] if types else []:
            if t not in _TYPES:
                bad.append(f"{path}: type {t!r}")
        ref = node.get("$ref")
        if ref is not None:
            if set(node) != {"$ref"}:
                bad.append(f"{path}: keywords beside $ref")
            if ref != "#" and not str(ref).startswith("#/$defs/"):
                bad.append(f"{path}: $ref {ref!r}")
        if node.get("type") == "object" or "properties" in node:
            if node.get("additionalProperties") is not False:
                bad.append(f"{path}: additionalProperties must be false")
            props = node.get("properties")
            if not isinstance(props, dict):
                bad.append(f"{path}: an object without properties")
            elif sorted(node.get("required", [])) != sorted(props):
                bad.append(f"{path}: every property must be required")
            else:
                properties += len(props)
            if depth + 1 > 10:
                bad.append(f"{path}: more than 10 levels of nesting")
        if node.get("type") == "array" and not (
            isinstance(node.get("items"), dict) and node["items"]
        ):
            bad.append(f"{path}: an array without typed items")
        if "format" in node and node["format"] not in OPENAI_STRICT_FORMATS:
            bad.append(f"{path}: format {node['format']!r}")
        enums += len(node.get("enum") or ())
    if properties > 5000:
        bad.append(f"{properties} properties (at most 5000)")
    if enums > 1000:
        bad.append(f"{enums} enum values (at most 1000)")
    return bad


def openai_strict_body_violations(body: dict[str, Any]) -> list[str]:
    """Every tool and native output of a Chat or Responses body sent ``strict: true`` meets
    ``openai_strict_violations``; every ``strict`` is a boolean."""
    bad: list[str] = []
    specs: list[tuple[str, dict[str, Any], Any]] = []
    for k, tool in enumerate(body.get("tools") or []):
        function = tool.get("function", tool)
        specs.append((f"tools[{k}]", function, function.get("parameters")))
    fmt = (body.get("response_format") or {}).get("json_schema") or (
        (body.get("text") or {}).get("format")
    )
    if fmt:
        specs.append(("output", fmt, fmt.get("schema")))
    for where, spec, schema in specs:
        if "strict" in spec and not isinstance(spec["strict"], bool):
            bad.append(f"{where}: strict must be a boolean")
        if spec.get("strict") is True:
            bad += [f"{where}: {p}" for p in openai_strict_violations(schema)]
    return bad


ANTHROPIC_STRICT_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "minItems", "enum"}
    | {"const", "anyOf", "allOf", "$ref", "$defs", "definitions", "description", "title"}
    | {"default", "format", "pattern"}
)
ANTHROPIC_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)


def _recursive(schema: dict[str, Any]) -> set[str]:
    defs = schema.get("$defs") or {}
    refs = {n: set(re.findall(r'"#/\$defs/([^"]+)"', json.dumps(d))) for n, d in defs.items()}
    found: set[str] = set()
    for name in defs:
        frontier, seen = set(refs[name]), set()
        while frontier:
            other = frontier.pop()
            if other == name:
                found.add(name)
                break
            if other not in seen:
                seen.add(other)
                frontier |= refs.get(other, set())
    return found


def anthropic_strict_violations(body: dict[str, Any]) -> list[str]:
    """Strict tools and ``output_config.format`` of a Messages body: each schema within
    the documented subset (closed objects, no recursion, no numeric or length bounds,
    ``minItems`` 0 or 1, documented formats, primitive enums, a type everywhere), and
    across them all at most 20 strict tools, 24 optional and 16 union-typed properties."""
    bad: list[str] = []
    schemas: list[tuple[str, Any]] = []
    strict_tools = 0
    for k, tool in enumerate(body.get("tools") or []):
        if tool.get("strict") is True:
            strict_tools += 1
            schemas.append((f"tools[{k}]", tool.get("input_schema")))
    fmt = (body.get("output_config") or {}).get("format")
    if fmt:
        schemas.append(("output", fmt.get("schema")))
    if strict_tools > 20:
        bad.append(f"{strict_tools} strict tools (at most 20)")
    optional = unions = 0
    for where, schema in schemas:
        if not isinstance(schema, dict):
            bad.append(f"{where}: no schema")
            continue
        if _recursive(schema):
            bad.append(f"{where}: recursive ({sorted(_recursive(schema))})")
        for path, node, _ in _subschemas(schema, where, 0):
            if not isinstance(node, dict):
                continue
            if set(node) - ANTHROPIC_STRICT_KEYWORDS:
                bad.append(f"{path}: unsupported {sorted(set(node) - ANTHROPIC_STRICT_KEYWORDS)}")
            if (node.get("type") == "object" or "properties" in node) and node.get(
                "additionalProperties"
            ) is not False:
                bad.append(f"{path}: additionalProperties must be false")
            if node.get("minItems", 0) not in (0, 1):
                bad.append(f"{path}: minItems other than 0 or 1")
            if "format" in node and node["format"] not in ANTHROPIC_FORMATS:
                bad.append(f"{path}: format {node['format']!r}")
            if any(isinstance(v, dict | list) for v in node.get("enum") or ()):
                bad.append(f"{path}: complex values in enum")
            if not {"type", "anyOf", "allOf", "enum", "const", "$ref"} & set(node):
                bad.append(f"{path}: no type")
            for name, sub in (node.get("properties") or {}).items():
                optional += name not in node.get("required", ())
                unions += isinstance(sub, dict) and (
                    "anyOf" in sub or isinstance(sub.get("type"), list)
                )
    if optional > 24:
        bad.append(f"{optional} optional properties across strict schemas (at most 24)")
    if unions > 16:
        bad.append(f"{unions} union-typed properties across strict schemas (at most 16)")
    return bad


def gemini_schema_violations(body: dict[str, Any]) -> list[str]:
    """``responseJsonSchema`` and every ``parametersJsonSchema``: no ``const`` (outside the
    documented subset), ``enum`` values strings or numbers only, a ``$ref`` with nothing
    but ``$``-keywords beside it."""
    bad: list[str] = []
    schemas: list[tuple[str, Any]] = []
    for t, tool in enumerate(body.get("tools") or []):
        for k, declaration in enumerate(tool.get("functionDeclarations") or []):
            schemas.append((f"tools[{t}][{k}]", declaration.get("parametersJsonSchema")))
    config = body.get("generationConfig") or {}
    if "responseJsonSchema" in config:
        schemas.append(("output", config["responseJsonSchema"]))
    for where, schema in schemas:
        for path, node, _ in _subschemas(schema, where, 0):
            if not isinstance(node, dict):
                continue
            if "const" in node:
                bad.append(f"{path}: const is outside the documented subset")
            if any(
                not isinstance(v, str | int | float) or isinstance(v, bool)
                for v in node.get("enum") or ()
            ):
                bad.append(f"{path}: enum values must be strings or numbers")
            if "$ref" in node and any(not k.startswith("$") for k in node):
                bad.append(f"{path}: keywords beside $ref")
    return bad
