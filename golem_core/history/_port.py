"""Porting a history to the provider and model it is about to be sent to (ADRs 0085-0086).

Owns ``port_history(history, target) -> (history, PortReport)``: the history a target
will be sent, and what had to change for it. Pure, total, deterministic, idempotent.

Provider artifacts are the parts (or part fields) only their producer can read back:
Anthropic thinking signatures and redacted thinking, OpenAI Responses reasoning items
(id and ``encrypted_content``), Gemini thought signatures, and provider-issued call ids.
An assistant message records its origin (``provider``, ``endpoint``, and the model its
adapter asked for, ``askedModel``, beside ``model``, the name the provider answered
with: ``claude-sonnet-4-0`` is answered as ``claude-sonnet-4-20250514``;
``wire._common.Origin``). The rule, per artifact:

- it goes back unchanged when the target is its producer: the same provider and
  endpoint (API host), and, where the provider binds it to the model, a target that
  asks for the model the answer was asked for (the same name) or for the model that
  answered it (by ``same_model``: a dated snapshot is the same model as its alias,
  ``claude-sonnet-4-0`` and ``claude-sonnet-4-20250514``, whichever of the two asked
  and whichever the target names). Anthropic and Gemini signatures are bound to the
  model, OpenAI's encrypted reasoning to the organization behind the endpoint only
  (``BINDS_MODEL``). The decision reads only the answer and the target, so every
  request of one adapter sends an answer's thinking the same way;
- otherwise the artifact is left off (a signature, an encrypted blob, redacted
  thinking), and the readable thinking it came with, like every thinking part of
  another origin, becomes text (``<thinking>...</thinking>``) when it belongs to the
  tool loop the target took over (no user message between it and the target's first
  answer after it, or the end of the history: the current tool loop, what the providers
  themselves keep, when the target has not answered yet), else it is left off. Later
  user messages (a steered message, an output correction, the next prompt) never turn
  such text back off, so every request of one target extends the previous one.
  ``thinking="drop"`` leaves all of it off;
- thinking of the target's own model that carries no artifact the target reads back
  (Chat Completions reasoning, unsigned Anthropic thinking or Gemini thoughts, a
  reasoning item without its encrypted content) is left off: no encoder sends it;
- a message without an origin (history written before ADR 0085) keeps every artifact
  the target's encoder sends (its own format); its other thinking is left off.

Whatever does not travel is reported: a thinking part is either sent (as it came or as
text, ``as_text``) or in ``left_off``, never dropped by an encoder without a word.

Native compaction (ADR 0148) leaves artifacts of the same kind, each issuer's described by
its profile's ``CompactionRule``: a Responses ``compaction`` item (encrypted: nothing
readable) goes back only to Responses at its endpoint, else it is left off, reported as
``"compaction item"``; an Anthropic ``compaction`` block goes back only to Anthropic at
its endpoint for its model, else its summary travels as plain text, reported in
``as_text`` as ``"compaction summary"`` (left off when the compaction failed and holds no
summary).

Call ids are rewritten to fit the target's rules (Anthropic's characters, OpenAI's
lengths, Mistral's nine letters and digits), the same new id on the call and on its
results, so they still pair; the stored history keeps the original ids, and the report
maps them back. Parts the target cannot take (media it carries as a textual stand-in,
ADR 0067) are reported, not changed: the encoder sends the stand-in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal, TypeAlias

import attrs
from attrs import frozen

from golem_core._messages import (
    DataPart,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    URLPart,
)
from golem_core._providers import (
    MISTRAL_CALL_IDS,
    PROFILES,
    STRING_CONTENT,
    CompactionRule,
    Provider,
    ProviderProfile,
    UnknownProviderError,
    profile_of,
    recorded_provider,
)
from golem_core.history._call_ids import CallIds, NineChars
from golem_core.history._model_names import model_key as _model_key
from golem_core.history._model_names import same_model
from golem_core.wire._common import Origin

__all__ = [
    "BINDS_MODEL",
    "MISTRAL_CALL_IDS",
    "PROVIDERS",
    "STRING_CONTENT",
    "ASKED_MODEL_KEY",
    "Origin",
    "PortReport",
    "PortedPart",
    "RewrittenId",
    "Target",
    "ThinkingRule",
    "asked_model_of",
    "describe_report",
    "origin_of",
    "port_history",
    "record_asked_model",
    "same_model",
]

PROVIDERS: Final = tuple(Provider)
"""The wire formats a target speaks: every provider of the registry (``golem_core.providers``)."""
BINDS_MODEL: Final = frozenset(p for p, profile in PROFILES.items() if profile.binds_model)
"""Providers whose artifacts are valid only for the model that issued them."""

ThinkingRule: TypeAlias = Literal["text", "drop"]
"""What becomes of readable thinking a target cannot verify (see the module docstring)."""


def _known_provider(value: Provider | str) -> Provider:
    return profile_of(value).provider


def _quirks(values: Iterable[str]) -> frozenset[str]:
    return frozenset(values)


@frozen
class Target:
    """Where a history is about to be sent: the adapter's wire format (a ``Provider``,
    or its value), the model, the API host, and the compatible server's quirks (among
    its profile's: ``MISTRAL_CALL_IDS``, ``STRING_CONTENT``).

    Raises:
        UnknownProviderError: a provider not in the registry, or a quirk its profile
            does not know (a ``ValueError``).
    """

    provider: Provider = attrs.field(converter=_known_provider)
    model: str
    endpoint: str | None = None
    quirks: frozenset[str] = attrs.field(default=frozenset(), converter=_quirks)
    replays_reasoning: bool = attrs.field(default=True, kw_only=True)
    """Whether the target's encoder sends reasoning items back (a Responses model
    without encrypted reasoning does not: they are left off, and reported)."""

    def __attrs_post_init__(self) -> None:
        known = self.profile.quirks
        if not self.quirks <= known:
            raise UnknownProviderError(
                f"unknown quirks {sorted(self.quirks - known)} for {self.provider.value};"
                f" known: {sorted(known)}"
            )

    @property
    def profile(self) -> ProviderProfile:
        """The target's registry profile."""
        return PROFILES[self.provider]

    def __str__(self) -> str:
        at = f" at {self.endpoint}" if self.endpoint else ""
        return f"{self.provider.value}:{self.model}{at}"


@frozen
class PortedPart:
    """A part that changed (or that the target cannot take): where it stands in the
    history, what it is (``"signed thinking"``, ``"redacted thinking"``, ``"reasoning
    item"``, ``"thought signature"``, ``"thinking"``, ``"image (image/svg+xml)"``), and
    why. Never the part's content."""

    message_index: int
    part_index: int
    what: str
    reason: str


@frozen
class RewrittenId:
    """A call id sent under another name: the assistant message that holds the call,
    the id the history keeps, and the id the target is sent (its results too)."""

    message_index: int
    original: str
    sent: str


@frozen
class PortReport:
    """What ``port_history`` changed for ``target``.

    ``as_text``: thinking sent as text; ``left_off``: artifacts and thinking not sent;
    ``call_ids``: ids rewritten to fit the target's rules; ``cannot_take``: media the
    target gets as a textual stand-in (ADR 0067). Identifiers and kinds only, never
    content, so the report can travel in a lifecycle event.
    """

    target: str
    as_text: tuple[PortedPart, ...] = ()
    left_off: tuple[PortedPart, ...] = ()
    call_ids: tuple[RewrittenId, ...] = ()
    cannot_take: tuple[PortedPart, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether anything is reported."""
        return bool(self.as_text or self.left_off or self.call_ids or self.cannot_take)

    def original_id(self, sent: str) -> str:
        """The id the history keeps for a call sent as ``sent`` (``sent`` itself when it
        was not rewritten)."""
        for r in self.call_ids:
            if r.sent == sent:
                return r.original
        return sent


ASKED_MODEL_KEY: Final = "askedModel"
"""The JSON key of ``Message.asked_model`` (``record_asked_model``)."""


def record_asked_model(message: Message, model: str) -> Message:
    """``message`` recording that its adapter asked for ``model`` (beside ``model``, the
    name the provider answered with): ``Message.asked_model``, stored as the additive
    JSON field ``"askedModel"``. Total, idempotent."""
    return attrs.evolve(message, asked_model=model)


def asked_model_of(message: Message) -> str | None:
    """The model the adapter asked for when it decoded ``message``; ``None`` when not
    recorded (history written before it was, or built by hand). Total."""
    return message.asked_model or None


def origin_of(message: Message) -> Origin | None:
    """The origin an assistant message records, ``None`` when it records none: its
    provider and endpoint, and the model asked for (the model answered when the asked
    one is not recorded)."""
    if message.provider is None:
        return None
    return Origin(message.provider, asked_model_of(message) or message.model, message.endpoint)


def _same_endpoint(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a.lower() == b.lower()


# -- artifacts ---------------------------------------------------------------------------

_SIGNER: Final = next(p for p in PROFILES.values() if p.signs_thinking)
"""The provider whose thinking carries a ``signature`` (and may be redacted)."""
_KEY_READER: Final = {key: p for p in PROFILES.values() for key in p.artifact_keys}
"""Who reads each artifact key a part's ``extra`` may hold."""
_ARTIFACT_KEYS: Final = frozenset(_KEY_READER)
_COMPACTION_ISSUER: Final = {
    p.compaction.marker: (p.provider, p.compaction)
    for p in PROFILES.values()
    if p.compaction is not None
}
"""Who issued a compaction and its rule, by the ``extra`` key that marks it."""
_COMPACTION_KEYS: Final = frozenset(
    k for p in PROFILES.values() if p.compaction is not None for k in p.compaction.keys
)


def _reader_of(part: Part) -> ProviderProfile | None:
    """The provider whose artifact ``part``'s ``extra`` carries, if any."""
    for k, _ in getattr(part, "extra", ()):
        reader = _KEY_READER.get(k)
        if reader is not None:
            return reader
    return None


def _without(part: Any, keys: frozenset[str]) -> Any:
    return attrs.evolve(part, extra=tuple((k, v) for k, v in part.extra if k not in keys))


def _model_matches(message: Message, target: Target) -> bool:
    """Whether ``target`` asks for the model that answered ``message``, the one place
    that decides it: the model its adapter asked for, by the same name, or the model
    that answered (the dated snapshot an alias resolved to), by ``same_model``: an
    alias and the snapshot it was answered as are one model (``claude-sonnet-4-0``,
    ``claude-sonnet-4`` and ``claude-sonnet-4-20250514``), whichever name the history
    or the target uses. Pure in the message and the target, so every request of one
    adapter ports an answer the same way."""
    asked = asked_model_of(message)
    if asked is not None and _model_key(asked) == _model_key(target.model):
        return True
    return same_model(message.model or asked, target.model)


def _valid_for(reader: Provider, origin: Origin, target: Target, same: bool) -> str | None:
    """``None`` when an artifact only ``reader`` reads, issued by ``origin`` (for the
    model the target asks for when ``same``), is valid for ``target``; else why not."""
    issued = f"issued by {origin.provider}:{origin.model} at {origin.endpoint}"
    if target.provider is not reader:
        return f"{issued}; {target.provider.value} cannot read it"
    if recorded_provider(origin.provider) is not reader:
        return f"{issued}, not by {reader.value}"
    if not _same_endpoint(origin.endpoint, target.endpoint):
        return f"{issued}; {target.endpoint} is another endpoint"
    if PROFILES[reader].binds_model and not same:
        return f"{issued}; {reader.value} binds it to that model"
    return None


def _native(part: ThinkingPart, target: Target) -> bool:
    """Whether ``target``'s encoder sends ``part`` as thinking of its own: it carries
    the target's artifact whole (a signature or redacted data for the signer, every
    artifact key for the others, reasoning items only where they are replayed)."""
    profile = target.profile
    if part.redacted or part.signature:
        return profile.signs_thinking
    carried = {k for k, _ in part.extra}
    whole = bool(profile.artifact_keys) and profile.artifact_keys <= carried
    return whole and target.replays_reasoning


def _kind(part: ThinkingPart) -> str:
    """What a report calls a thinking part of no recorded origin."""
    if part.redacted:
        return "redacted thinking"
    reader = _SIGNER if part.signature else _reader_of(part)
    return "thinking" if reader is None else reader.artifact_name


def _foreign(origin: Origin, target: Target, same: bool) -> bool:
    return (
        recorded_provider(origin.provider) is not target.provider
        or not _same_endpoint(origin.endpoint, target.endpoint)
        or not same
    )


class _Assistant:
    """Ports the parts of one assistant message."""

    def __init__(
        self,
        index: int,
        message: Message,
        target: Target,
        current_loop: bool,
        thinking: ThinkingRule,
    ) -> None:
        origin = origin_of(message)
        self.index = index
        self.origin = origin
        self.same = origin is not None and _model_matches(message, target)
        self.target = target
        self.current_loop = current_loop
        self.thinking = thinking
        self.as_text: list[PortedPart] = []
        self.left_off: list[PortedPart] = []

    def note(self, into: list[PortedPart], j: int, what: str, reason: str) -> None:
        into.append(PortedPart(self.index, j, what, reason))

    def part(self, j: int, part: Part) -> Part | None:
        origin = self.origin
        if origin is None:
            if type(part) is ThinkingPart and not _native(part, self.target):
                home = f"no origin recorded; {self.target} takes back only its own thinking"
                self.note(self.left_off, j, _kind(part), home)
                return None
            return part
        if type(part) is ThinkingPart:
            return self.thought(j, part, origin)
        if type(part) is TextPart and part.extra:
            marker = next((k for k, _ in part.extra if k in _COMPACTION_ISSUER), None)
            if marker is not None:
                return self.compaction(j, part, origin, *_COMPACTION_ISSUER[marker])
        if type(part) in (TextPart, ToolCallPart):
            reader = _reader_of(part)
            if reader is not None:
                why = _valid_for(reader.provider, origin, self.target, self.same)
                if why is not None:
                    self.note(self.left_off, j, "thought signature", why)
                    return _without(part, reader.artifact_keys)  # type: ignore[no-any-return]
        return part

    def compaction(
        self, j: int, part: TextPart, origin: Origin, issuer: Provider, rule: CompactionRule
    ) -> Part | None:
        """A provider's compaction (ADR 0148): to its issuer as it came; elsewhere an
        encrypted item is left off and a readable summary travels as text (the issuer's
        ``CompactionRule``)."""
        why = _valid_for(issuer, origin, self.target, self.same)
        if why is None:
            return part
        if not rule.readable or not part.text.strip():
            self.note(self.left_off, j, rule.what, why + "; nothing readable to send instead")
            return None
        self.note(self.as_text, j, rule.what, why + "; its summary sent as text")
        return _without(part, _COMPACTION_KEYS)  # type: ignore[no-any-return]

    def thought(self, j: int, part: ThinkingPart, origin: Origin) -> Part | None:
        """One entry per part: the artifact it carries (if any) and what became of it."""
        target = self.target
        if part.redacted:
            why = _valid_for(_SIGNER.provider, origin, target, self.same)
            if why is None:
                return part
            self.note(self.left_off, j, "redacted thinking", why)
            return None
        what, why, readable = "thinking", None, part
        reader = _SIGNER if part.signature else _reader_of(part)
        if reader is not None:
            what, why = reader.artifact_name, _valid_for(reader.provider, origin, target, self.same)
            if why is None and reader.artifact_keys and not target.replays_reasoning:
                # valid, but this target's encoder sends no reasoning items (a Responses
                # model without encrypted reasoning): the item and its summary stay home
                why = f"{target} is sent no reasoning items (its encrypted reasoning is off)"
                self.note(self.left_off, j, what, why)
                return None
            if why is None and not _native(part, target):
                why = f"{target} cannot replay it: its {what} is incomplete"
            if why is None:
                return part  # its artifact is valid here: sent as it came
            readable = _without(attrs.evolve(part, signature=None), _ARTIFACT_KEYS)
        if not _foreign(origin, target, self.same):
            # its own model's thinking without an artifact the target reads back: no
            # encoder sends that (Chat Completions takes no reasoning back, Anthropic
            # only signed thinking, Gemini only signed thoughts), so it stays home
            home = f"{target} takes back no thinking without an artifact of its own"
            self.note(self.left_off, j, what, f"{why}; {home}" if why else home)
            return None
        reason = why or f"from {origin.provider}:{origin.model}, which {target} cannot verify"
        if self.thinking == "text" and self.current_loop and readable.text.strip():
            self.note(self.as_text, j, what, reason + "; in the tool loop it took over")
            return TextPart(f"<thinking>\n{readable.text}\n</thinking>")
        self.note(self.left_off, j, what, reason)
        return None


# -- call ids ----------------------------------------------------------------------------


def _ids_for(target: Target) -> CallIds:
    """The id rules of the target's encoder (its profile's ``CallIdRule``, the same
    ``WireIds`` it builds), or Mistral's nine characters."""
    if MISTRAL_CALL_IDS in target.quirks:
        return NineChars()
    return target.profile.call_ids.builder()


# -- media -------------------------------------------------------------------------------


def _stood_in(part: URLPart | DataPart, target: Target, role: Role) -> bool:
    """Whether the target's encoder sends ``part`` as its textual stand-in (ADR 0067)."""
    profile = target.profile
    if role is Role.ASSISTANT and not profile.media_in_assistant:
        return True  # only Gemini carries media in a model turn
    if isinstance(part, DataPart) and part.media_type.lower() != "text/plain":
        part = attrs.evolve(part, data=b"")  # the choice never reads the bytes
    block = profile.codec.media_block(part)
    return block.get("type") in ("text", "input_text") or set(block) == {"text"}


def _media_what(part: URLPart | DataPart) -> str:
    media = f" ({part.media_type})" if part.media_type else ""
    by = " by URL" if isinstance(part, URLPart) else ""
    return f"{part.kind}{by}{media}"


# -- porting -----------------------------------------------------------------------------


def _taken_over(history: Sequence[Message], target: Target) -> list[bool]:
    """Per message, whether it belongs to the tool loop ``target`` took over: no user
    message between it and the target's first answer after it (or the end of the
    history). Decided by what follows a message up to the target's own answer, so a
    growing conversation never changes it: thinking once sent as text stays text."""
    out = [False] * len(history)
    open_loop = True  # nothing after the end: the loop still open
    for i in range(len(history) - 1, -1, -1):
        out[i] = open_loop
        message = history[i]
        if message.role is Role.USER:
            open_loop = False
        elif message.role is Role.ASSISTANT:
            origin = origin_of(message)
            if origin is not None and not _foreign(origin, target, _model_matches(message, target)):
                open_loop = True
    return out


def port_history(
    history: Sequence[Message], target: Target, *, thinking: ThinkingRule = "text"
) -> tuple[tuple[Message, ...], PortReport]:
    """The history ``target`` will be sent, and what changed for it (the module
    docstring has the rules). Pure, total, deterministic; porting a ported history
    changes nothing more.

    Args:
        history: the conversation (system messages pass through untouched).
        target: the provider, model, endpoint and quirks it is sent to.
        thinking: ``"text"`` (default): thinking of another origin in the tool loop
            the target took over travels as text; ``"drop"``: it is left off.
    """
    taken_over = _taken_over(history, target)
    ids = _ids_for(target)
    as_text: list[PortedPart] = []
    left_off: list[PortedPart] = []
    rewritten: list[RewrittenId] = []
    cannot: list[PortedPart] = []
    out: list[Message] = []
    for i, message in enumerate(history):
        parts = message.parts
        new_parts: list[Part] = []
        changed = False
        if message.role is Role.ASSISTANT:
            porter = _Assistant(i, message, target, taken_over[i], thinking)
            named: dict[str, str] = {}
            for j, part in enumerate(parts):
                ported = porter.part(j, part)
                if type(ported) is ToolCallPart and ported.id is not None:
                    sent = named.get(ported.id)
                    if sent is None:  # a repeat in the turn keeps the first's name
                        sent = named[ported.id] = ids.call(ported.id)
                        if sent != ported.id:
                            rewritten.append(RewrittenId(i, ported.id, sent))
                    if sent != ported.id:
                        ported = attrs.evolve(ported, id=sent)
                changed = changed or ported is not part
                if ported is not None:
                    new_parts.append(ported)
            as_text.extend(porter.as_text)
            left_off.extend(porter.left_off)
        else:
            new_parts = list(parts)
        for j, part in enumerate(parts):
            if type(part) in (URLPart, DataPart) and message.role is not Role.SYSTEM:
                media: Any = part
                if _stood_in(media, target, message.role):
                    why = f"{target.provider.value} cannot take it: sent as a stand-in"
                    cannot.append(PortedPart(i, j, _media_what(media), why))
        if (
            STRING_CONTENT in target.quirks
            and message.role is Role.USER
            and len(new_parts) > 1
            and all(type(p) is TextPart for p in new_parts)
        ):
            texts = [p.text for p in new_parts if type(p) is TextPart]
            new_parts = [TextPart("\n".join(texts))]
            changed = True
        update: dict[str, Any] = {}
        if changed:
            update["parts"] = tuple(new_parts)
        if message.role is Role.TOOL and message.tool_call_id is not None:
            sent_id = ids.result(message.tool_call_id)
            if sent_id != message.tool_call_id:
                update["tool_call_id"] = sent_id
        out.append(attrs.evolve(message, **update) if update else message)
    report = PortReport(
        str(target),
        as_text=tuple(as_text),
        left_off=tuple(left_off),
        call_ids=tuple(rewritten),
        cannot_take=tuple(cannot),
    )
    return tuple(out), report


def describe_report(report: PortReport) -> str:
    """The report in words, one line per change, for a log (never content)."""
    lines = [f"ported to {report.target}"]

    def at(p: PortedPart) -> str:
        return f"  message {p.message_index} part {p.part_index}: {p.what}"

    lines += [f"{at(p)} as text ({p.reason})" for p in report.as_text]
    lines += [f"{at(p)} left off ({p.reason})" for p in report.left_off]
    lines += [
        f"  message {r.message_index}: call id {json.dumps(r.original)} sent as {r.sent}"
        for r in report.call_ids
    ]
    lines += [f"{at(p)}: {p.reason}" for p in report.cannot_take]
    return "\n".join(lines)
