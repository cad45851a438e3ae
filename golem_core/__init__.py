"""golem_core: the pure part of golem.

No networking, no clock, no randomness, no files: attrs values and total functions over
them. Everything that needs an effect takes its value as an argument; ``golem_shell``
performs the effects and drives this core.
"""

from golem_core._identity import conversation_id_of, stamp
from golem_core._ids import next_uuid7, uuid7, uuid7_unix_ms
from golem_core._json import (
    DecodeError,
    configure_converter,
    decode_history,
    decode_message,
    encode_history,
    encode_message,
    history_from_jsonable,
    history_to_jsonable,
    make_converter,
)
from golem_core._messages import (
    DataPart,
    Extra,
    Message,
    Part,
    PartKind,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
    Usage,
)

__all__ = [
    "DataPart",
    "DecodeError",
    "Extra",
    "Message",
    "Part",
    "PartKind",
    "Role",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "URLPart",
    "UnknownPart",
    "Usage",
    "configure_converter",
    "conversation_id_of",
    "decode_history",
    "decode_message",
    "encode_history",
    "encode_message",
    "history_from_jsonable",
    "history_to_jsonable",
    "make_converter",
    "next_uuid7",
    "stamp",
    "uuid7",
    "uuid7_unix_ms",
]
