"""The values a durable engine records, as plain JSON, from one table.

Owns the JSON of everything that crosses a durable engine's boundary (a DBOS step's
output, a Temporal activity's result, a workflow's input, signal and result): model
outcomes, tool outcomes, answers to a paused run, the calls it waits for, and a run's
end. Like the message codec (``golem_core.codec._json_fields``), one table drives both ways:
``RECORDS`` has a row per recorded type naming its tag and its fields, and ``encode`` /
``decode`` interpret it, so a new recorded value is one row and every engine records it
the same way. Messages and parts inside records use golem's message contract, so a run
recorded by one version of golem resumes in the next.

``decode`` of JSON that golem did not write raises ``CorruptRecord`` naming where.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias, TypeVar

import attrs
from attrs import frozen
from returns.result import Failure, Success

from golem_core import (
    Approved,
    CompactionRecord,
    Denied,
    ExternalResult,
    Message,
    ModelErrorKind,
    ModelSettings,
    Part,
    ToolCallPart,
    Usage,
    history_from_jsonable,
    history_to_jsonable,
    make_converter,
)
from golem_core.loop import (
    CompactionDeclined,
    DeferredCall,
    HistoryCompacted,
    ModelFailed,
    ModelResponded,
    ToolCanceled,
    ToolCrashed,
    ToolRetry,
    ToolReturned,
)
from golem_shell.run._limits import UsageLimits

__all__ = [
    "RECORDS",
    "AnswersSent",
    "CorruptRecord",
    "InstructionsResolved",
    "NO_DEPS",
    "ProcessorRan",
    "RecordedOptions",
    "RunEnded",
    "Waiting",
    "decode",
    "decode_as",
    "encode",
]

JSON: TypeAlias = Any
"""A plain JSON value (what ``json.loads`` returns)."""
T = TypeVar("T")

_CONVERTER = make_converter()


class CorruptRecord(ValueError):
    """Recorded JSON that golem did not write (or a newer golem wrote differently)."""


# -- the values only engines record -------------------------------------------------------


@frozen
class Waiting:
    """A paused run's waiting calls, and which pause of the run this is (answers name it).

    ``repeated``: the ids of waiting calls that an earlier, answered call of the run had
    too (a model that reuses ids): an answer naming one must name its pause, or a
    retried answer to the earlier call would approve this one."""

    pause: int
    calls: tuple[DeferredCall, ...]
    repeated: tuple[str, ...] = ()


@frozen
class AnswersSent:
    """Answers sent to a paused run, bound to the pause they answer."""

    pause: int
    answers: Mapping[str, Any]


@frozen
class InstructionsResolved:
    """The dynamic instructions resolved for a run, or why resolving them failed."""

    instructions: str | None = None
    failed: str | None = None


@frozen
class ProcessorRan:
    """The history processor's outcome on a run's supplied history: the processed
    history (``history``: the head of its chain in the engine's blob store; ``messages``
    inline, as golem recorded it before ADR 0125), or why it failed (recorded once per
    run, replayed from the record)."""

    messages: tuple[Message, ...] | None = None
    failed: str | None = None
    history: str | None = None


@frozen
class RunEnded:
    """How a durable run ended: ``status`` is ``"done"`` or ``"failed"``.

    Done: ``output`` (JSON), the messages, ``added`` (how many the run added, at the
    end). Failed: ``stage``, ``reason`` and the partial's messages (none: no partial).
    The messages are ``system`` (the instructions), then the chain whose head is
    ``history`` in the engine's blob store, then ``messages`` (ADR 0125: golem writes
    ``system`` and ``history``; a run recorded before holds them all in ``messages``).
    """

    agent: str
    status: str
    run_id: str
    conversation_id: str
    messages: tuple[Message, ...] = ()
    added: int = 0
    usage: Usage = Usage()
    requests: int = 0
    tool_executions: int = 0
    output: Any = None
    stage: str | None = None
    reason: str | None = None
    system: tuple[Message, ...] = ()
    history: str | None = None
    output_type: str | None = None
    """The key of the run's own output type (``output_type=``) in the engine's
    ``output_types``; ``None``: the agent's."""
    steering_left: tuple[Message, ...] = ()
    """The steering messages the run accepted but did not take (they came after its
    last look): drained from its steering channel at its end, given back with its
    result."""


NO_DEPS: Any = type("NoDeps", (), {"__repr__": lambda self: "NO_DEPS"})()
"""The ``deps`` of ``RecordedOptions`` of a run that passed none (``None`` is a value)."""


@frozen
class RecordedOptions:
    """The run keywords a durable run was started with, as its input records them; its
    spec is built from them and the agent (never from the agent's defaults of the day).

    ``model``: a key of the engine's ``models`` or a ``"provider:model"`` string (the
    run's ``model=``, or the agent's own model when it is registered); ``agent_model``:
    the name of the agent's own model when it is not registered (a worker whose agent
    has another model refuses the run); ``output_type``: a key of the engine's
    ``output_types``; ``deps``: the run's JSON deps (``NO_DEPS``: the worker's)."""

    model: str | None = None
    agent_model: str | None = None
    settings: ModelSettings | None = None
    usage_limits: UsageLimits | None = None
    output_type: str | None = None
    deps: Any = NO_DEPS


# -- field codecs: (encode, decode) ---------------------------------------------------------

Codec: TypeAlias = tuple[Callable[[Any], JSON], Callable[[JSON, str], Any]]


def _typed(kind: type, name: str) -> Codec:
    def check(value: JSON, where: str) -> Any:
        if type(value) is not kind:
            raise CorruptRecord(f"{where}: expected {name}, got {type(value).__name__}")
        return value

    return (lambda v: v, check)


def _optional(codec: Codec) -> Codec:
    enc, dec = codec
    return (
        lambda v: None if v is None else enc(v),
        lambda v, where: None if v is None else dec(v, where),
    )


def _messages(value: JSON, where: str) -> tuple[Message, ...]:
    match history_from_jsonable(value):
        case Success(decoded):
            messages: tuple[Message, ...] = decoded
            return messages
        case Failure(error):
            raise CorruptRecord(f"{where}: {error}")
    raise AssertionError("unreachable")  # pragma: no cover


def _parts(value: JSON, where: str) -> tuple[Part, ...]:
    if type(value) is not list:
        raise CorruptRecord(f"{where}: expected a list of parts")
    out: list[Part] = []
    for i, p in enumerate(value):
        try:
            out.append(_CONVERTER.structure(p, Part))  # type: ignore[arg-type]
        except (ValueError, TypeError, KeyError) as e:
            raise CorruptRecord(f"{where}[{i}]: {e}") from None
    return tuple(out)


def _call(value: JSON, where: str) -> ToolCallPart:
    (call,) = _parts([value], where)
    if not isinstance(call, ToolCallPart):
        raise CorruptRecord(f"{where}: not a tool call")
    return call


def _usage(value: JSON, where: str) -> Usage:
    try:
        return _CONVERTER.structure(value, Usage)
    except (ValueError, TypeError, KeyError) as e:
        raise CorruptRecord(f"{where}: {e}") from None


def _structured(kind: type[T]) -> Codec:
    def dec(value: JSON, where: str) -> T:
        try:
            return _CONVERTER.structure(value, kind)
        except (ValueError, TypeError, KeyError) as e:
            raise CorruptRecord(f"{where}: {e}") from None

    return (lambda v: _CONVERTER.unstructure(v), dec)


def _decode_list(value: JSON, where: str) -> list[Any]:
    if type(value) is not list:
        raise CorruptRecord(f"{where}: expected a list")
    return [decode(x, f"{where}[{i}]") for i, x in enumerate(value)]


def _decode_mapping(value: JSON, where: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise CorruptRecord(f"{where}: expected an object")
    return {str(k): decode(v, f"{where}.{k}") for k, v in value.items()}


def _enum(kind: type[ModelErrorKind]) -> Codec:
    def dec(value: JSON, where: str) -> ModelErrorKind:
        try:
            return kind(value)
        except ValueError:
            raise CorruptRecord(f"{where}: unknown {kind.__name__} {value!r}") from None

    return (lambda v: v.value, dec)


def _deferred_kind(value: JSON, where: str) -> str:
    if value not in ("approval", "external"):
        raise CorruptRecord(f"{where}: not a waiting kind: {value!r}")
    return str(value)


TEXT = _typed(str, "a string")
FLAG = _typed(bool, "true or false")
COUNT = _typed(int, "an integer")
ANY: Codec = (lambda v: v, lambda v, where: v)
PARTS: Codec = (lambda v: [_CONVERTER.unstructure(p, Part) for p in v], _parts)
MESSAGE: Codec = (lambda m: history_to_jsonable((m,))[0], lambda v, w: _messages([v], w)[0])
_texts: Codec = (
    list,
    lambda v, where: tuple(
        TEXT[1](x, f"{where}[{i}]") for i, x in enumerate(_typed(list, "a list")[1](v, where))
    ),
)


def _compaction(value: JSON, where: str) -> CompactionRecord:
    record = CompactionRecord.from_json(value)
    if record is None:
        raise CorruptRecord(f"{where}: not a compaction record")
    return record


COMPACTION: Codec = (lambda r: r.to_json(), _compaction)
MESSAGES: Codec = (lambda ms: history_to_jsonable(ms), _messages)
CALL: Codec = (lambda c: _CONVERTER.unstructure(c, Part), _call)
USAGE: Codec = (lambda u: _CONVERTER.unstructure(u), _usage)
WAITING_KIND: Codec = (lambda v: v, _deferred_kind)
RECORD_LIST: Codec = (lambda v: [encode(x) for x in v], lambda v, w: tuple(_decode_list(v, w)))
RECORD_MAP: Codec = (lambda v: {k: encode(x) for k, x in v.items()}, _decode_mapping)


# -- the table ------------------------------------------------------------------------------


@frozen
class Field:
    """One field of a recorded value: its attribute, its JSON key, how it is written."""

    attr: str
    key: str
    codec: Codec
    optional: bool = False
    """Left out of the JSON when it holds the attribute's default."""


@frozen
class Record:
    """A recorded type: its ``type`` tag in the JSON and its fields."""

    tag: str
    cls: type
    fields: tuple[Field, ...]


def _f(attr: str, codec: Codec, key: str | None = None, *, optional: bool = False) -> Field:
    if key is None:
        head, *rest = attr.split("_")
        key = head + "".join(w.title() for w in rest)
    return Field(attr, key, codec, optional)


RECORDS: tuple[Record, ...] = (
    Record("responded", ModelResponded, (_f("message", MESSAGE),)),
    Record(
        "requestFailed",
        ModelFailed,
        (_f("reason", TEXT), _f("kind", _optional(_enum(ModelErrorKind)), optional=True)),
    ),
    Record(
        "returned",
        ToolReturned,
        (_f("call_id", TEXT), _f("parts", PARTS), _f("failed", FLAG, optional=True)),
    ),
    Record(
        "compacted",
        HistoryCompacted,
        (_f("history", MESSAGES), _f("record", COMPACTION)),
    ),
    Record("compactionDeclined", CompactionDeclined, (_f("outcome", TEXT),)),
    Record("retry", ToolRetry, (_f("call_id", TEXT), _f("reason", TEXT))),
    Record("canceled", ToolCanceled, (_f("call_id", TEXT), _f("reason", TEXT))),
    Record(
        "crashed",
        ToolCrashed,
        (
            _f("call_id", TEXT),
            _f("reason", TEXT),
            _f("error_type", _optional(TEXT), optional=True),
        ),
    ),
    Record("approved", Approved, ()),
    Record("denied", Denied, (_f("reason", TEXT),)),
    Record("external", ExternalResult, (_f("parts", PARTS), _f("failed", FLAG, optional=True))),
    Record("deferred", DeferredCall, (_f("call", CALL), _f("kind", WAITING_KIND))),
    Record(
        "waiting",
        Waiting,
        (
            _f("pause", COUNT),
            _f("calls", RECORD_LIST),
            _f("repeated", _texts, optional=True),
        ),
    ),
    Record("answers", AnswersSent, (_f("pause", COUNT), _f("answers", RECORD_MAP))),
    Record(
        "instructions",
        InstructionsResolved,
        (
            _f("instructions", _optional(TEXT), optional=True),
            _f("failed", _optional(TEXT), optional=True),
        ),
    ),
    Record(
        "processed",
        ProcessorRan,
        (
            _f("messages", _optional(MESSAGES), optional=True),
            _f("failed", _optional(TEXT), optional=True),
            _f("history", _optional(TEXT), optional=True),
        ),
    ),
    Record(
        "run",
        RunEnded,
        (
            _f("agent", TEXT),
            _f("status", TEXT),
            _f("run_id", TEXT),
            _f("conversation_id", TEXT),
            _f("messages", MESSAGES, optional=True),
            _f("added", COUNT, optional=True),
            _f("usage", USAGE, optional=True),
            _f("requests", COUNT, optional=True),
            _f("tool_executions", COUNT, optional=True),
            _f("output", ANY, optional=True),
            _f("stage", _optional(TEXT), optional=True),
            _f("reason", _optional(TEXT), optional=True),
            _f("system", MESSAGES, optional=True),
            _f("history", _optional(TEXT), optional=True),
            _f("output_type", _optional(TEXT), optional=True),
            _f("steering_left", MESSAGES, optional=True),
        ),
    ),
    Record(
        "options",
        RecordedOptions,
        (
            _f("model", _optional(TEXT), optional=True),
            _f("agent_model", _optional(TEXT), optional=True),
            _f("settings", _optional(_structured(ModelSettings)), optional=True),
            _f("usage_limits", _optional(_structured(UsageLimits)), optional=True),
            _f("output_type", _optional(TEXT), optional=True),
            _f("deps", ANY, optional=True),
        ),
    ),
)
"""Every recorded type; ``encode`` and ``decode`` read it."""

_BY_TYPE: dict[type, Record] = {r.cls: r for r in RECORDS}
_BY_TAG: dict[str, Record] = {r.tag: r for r in RECORDS}
_NO_DEFAULT = object()
_DEFAULTS: dict[tuple[type, str], Any] = {
    (r.cls, a.name): a.default
    for r in RECORDS
    for a in attrs.fields(r.cls)
    if a.default is not attrs.NOTHING
}


def encode(value: Any) -> JSON:
    """The JSON of a recorded value (a type of ``RECORDS``).

    Raises:
        TypeError: ``value`` is not of a recorded type.
    """
    record = _BY_TYPE.get(type(value))
    if record is None:
        raise TypeError(
            f"{type(value).__name__} is not a recorded value (recorded: "
            + ", ".join(r.cls.__name__ for r in RECORDS)
            + ")"
        )
    out: dict[str, JSON] = {"type": record.tag}
    for f in record.fields:
        v = getattr(value, f.attr)
        default = _DEFAULTS.get((record.cls, f.attr), _NO_DEFAULT)
        if f.optional and default is not _NO_DEFAULT and v == default:
            continue
        out[f.key] = f.codec[0](v)
    return out


def decode(value: JSON, where: str = "record") -> Any:
    """The recorded value ``value`` is the JSON of.

    Raises:
        CorruptRecord: it is not JSON that ``encode`` writes; the message names where.
    """
    if type(value) is not dict:
        raise CorruptRecord(f"{where}: expected an object, got {type(value).__name__}")
    tag = value.get("type")
    record = _BY_TAG.get(tag) if isinstance(tag, str) else None
    if record is None:
        raise CorruptRecord(f"{where}: unknown record type {tag!r}")
    kwargs: dict[str, Any] = {}
    for f in record.fields:
        if f.key not in value:
            if f.optional:
                continue
            raise CorruptRecord(f"{where}: missing {f.key!r}")
        kwargs[f.attr] = f.codec[1](value[f.key], f"{where}.{f.key}")
    try:
        return record.cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise CorruptRecord(f"{where}: {e}") from None


def decode_as(kind: type[T], value: JSON, where: str = "record") -> T:
    """``decode``, checking that the value is a ``kind``."""
    decoded = decode(value, where)
    if not isinstance(decoded, kind):
        raise CorruptRecord(f"{where}: expected a {kind.__name__}, got {type(decoded).__name__}")
    return decoded
