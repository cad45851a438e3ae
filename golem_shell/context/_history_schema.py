"""The JSON Schema of golem's history JSON, generated from the codec's field table.

Owns ``build_history_schema`` and ``render_history_schema``: the schema is written from
the field table (``golem_core.contract``, the one table every path of the JSON codec
reads, ADR 0060 and 0100), so it accepts exactly what ``decode_history`` accepts wherever
a schema can say it, and cannot drift from the codec: a field added to the table is a
property here without an edit. ``golem_shell/history.schema.json`` (package data,
what ``golem schema`` prints) is this module's output; a test checks that it is, and
``python -m golem_shell.context._history_schema`` writes it again.

Per field kind: a role and a part kind are enums; a string is a string and an optional
one also ``null``; a flag a boolean; a count a non-negative integer or ``null``; a
timestamp a string or ``null``; base64 standard padded base64; a usage an object or
``null``. A field is required where the table gives it no default. Every object allows
more properties, of any value (unknown fields survive; ``summary``, written by
``summarize_history`` and kept as such a field, is one of them). What a schema cannot
say: a timestamp ``datetime.fromisoformat`` cannot read, an integer written with a
fraction (``1.0``), unknown fields nested deeper than ``MAX_UNKNOWN_DEPTH``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, assert_never

from golem_core.contract import (
    MESSAGE,
    NO_DEFAULT,
    PART_KINDS,
    PART_RECORDS,
    ROLES,
    USAGE,
    Kind,
    Record,
)

__all__ = ["build_history_schema", "render_history_schema"]

BASE64_PATTERN: Final = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?(?![\s\S])"
"""Standard base64 with its padding, as ``base64.b64decode(text, validate=True)`` reads it.
It ends in "nothing follows" rather than ``$``, which Python's ``re`` (what ``jsonschema``
uses) also matches before a final newline."""

_DESCRIPTION: Final = (
    "A conversation as golem stores it: an array of messages. Keys are camelCase; a part's"
    ' discriminator is "type". Additive only: fields are only ever added, and fields or part'
    " types a reader does not know must be kept, so every object allows more properties."
    " Generated from the codec's field table (golem_shell.context._history_schema); printed by"
    " `golem schema`."
)

_NOTES: Final[dict[str, str]] = {
    "toolCallId": "On a tool message: the id of the call it answers.",
    "failed": "On a tool message: a definitive failure. Written only when true.",
    "createdAt": "ISO 8601 (Python datetime.isoformat), with an offset when known.",
    "data": "Standard base64 (RFC 4648, with padding).",
    "arguments": (
        "The arguments exactly as the model sent them (usually a JSON object as text; may"
        ' be truncated). Absent: "{}".'
    ),
}
"""Descriptions of some keys, shown to a reader of the schema."""

_SUMMARY: Final = {
    "description": (
        "Marks a user message that summarizes earlier messages (golem_shell.summarize_history;"
        " golem writes {messages: how many it replaced}). Kept as an unknown field: any value"
        " is accepted."
    )
}


def _def_name(record: Record) -> str:
    """A part record's name under ``$defs``: its tag in camelCase, then ``Part``
    (``tool_call`` -> ``toolCallPart``)."""
    head, *rest = str(record.tag).split("_")
    return head + "".join(w.capitalize() for w in rest) + "Part"


def _kind_schema(kind: Kind) -> dict[str, Any]:
    match kind:
        case Kind.ROLE:
            return {"enum": list(ROLES)}
        case Kind.PARTS:
            return {"type": "array", "items": {"$ref": "#/$defs/part"}}
        case Kind.STR:
            return {"type": "string"}
        case Kind.OPTIONAL_STR | Kind.TIMESTAMP:
            return {"$ref": "#/$defs/optionalString"}
        case Kind.FLAG:
            return {"type": "boolean"}
        case Kind.COUNT:
            return {"$ref": "#/$defs/count"}
        case Kind.USAGE:
            return {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/usage"}]}
        case Kind.PART_KIND:
            return {"$ref": "#/$defs/kind"}
        case Kind.BASE64:
            return {"type": "string", "pattern": BASE64_PATTERN}
        case _:  # pragma: no cover - Kind is exhaustive
            assert_never(kind)


def _record_schema(record: Record, *, object_type: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for f in record.fields:
        schema = _kind_schema(f.kind)
        note = _NOTES.get(f.key)
        if note is not None:
            schema = {**schema, "description": note}
        properties[f.key] = schema
    required = [
        f.key for f, d in zip(record.fields, record.defaults, strict=True) if d is NO_DEFAULT
    ]
    out: dict[str, Any] = {"type": "object"} if object_type else {}
    if required:
        out["required"] = required
    out["properties"] = properties
    return out


def build_history_schema(
    *,
    message_record: Record = MESSAGE,
    usage_record: Record = USAGE,
    part_records: Sequence[Record] = PART_RECORDS,
) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a history, from the codec's field table.

    Every field of every record is a property (required where the table gives it no
    default); nothing is listed by hand but the descriptions.

    Args:
        message_record: The message record (default: the codec's, ``contract.MESSAGE``).
        usage_record: The usage record (default: ``contract.USAGE``).
        part_records: The known part types (default: ``contract.PART_RECORDS``).

    Returns:
        The schema. Deterministic: the same table gives the same schema, key order
        included.
    """
    message = _record_schema(message_record, object_type=True)
    message["properties"]["summary"] = _SUMMARY
    known = {"type": {"type": "string", "minLength": 1}}
    part: dict[str, Any] = {
        "type": "object",
        "required": ["type"],
        "properties": known,
        "allOf": [
            {
                "if": {"properties": {"type": {"const": r.tag}}},
                "then": {"$ref": f"#/$defs/{_def_name(r)}"},
            }
            for r in part_records
        ],
        "description": "A part of another type is kept as it is (written by a newer version).",
    }
    defs: dict[str, Any] = {
        "optionalString": {"type": ["string", "null"]},
        "count": {"type": ["integer", "null"], "minimum": 0},
        "kind": {
            "description": "What a URL or data part holds.",
            "enum": list(PART_KINDS),
        },
        "message": message,
        "usage": _record_schema(usage_record, object_type=True),
        "part": part,
    }
    for record in part_records:
        defs[_def_name(record)] = _record_schema(record, object_type=False)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:golem:history:v1",
        "title": "golem history",
        "description": _DESCRIPTION,
        "type": "array",
        "items": {"$ref": "#/$defs/message"},
        "$defs": defs,
    }


def render_history_schema() -> str:
    """The schema as the text of ``history.schema.json`` (two-space indent, a final newline)."""
    return json.dumps(build_history_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # pragma: no cover - python -m golem_shell.context._history_schema
    target = Path(__file__).parent.parent / "history.schema.json"
    target.write_text(render_history_schema(), encoding="utf-8")
    sys.stdout.write(f"wrote {target}\n")
