"""The provider registry: every provider golem speaks, as one profile value (ADR 0095).

Owns the one spelling of each provider (``Provider``: the value ``Message.provider``
records and ``Target.provider`` names) and, per provider, everything the rest of golem
reads about it: the pure wire codec, the display name in error messages, the
model-string prefixes ``infer_model`` accepts, the default endpoint and the environment
variables of the key and the base URL, the rules ``port_history`` applies (call ids,
which artifacts it reads and whether they are bound to the model, media in a model
turn, the quirks a compatible server may have, and the vendors known to have them), its
native compaction (``CompactionRule``: what it leaves in a history and how
``native_compaction`` folds with it), what its native structured output refuses, the
prompt-cache rule, and the OpenTelemetry ``gen_ai.provider.name``.

Adding a provider is one ``Provider`` member, one profile in ``PROFILES``, one codec
module in ``golem_core.wire`` and one adapter in ``golem_shell.models`` registered in
its ``ADAPTERS``; no other golem module dispatches on a provider.
``tests/test_registry.py`` fails while any of them is missing, and adds a
fictional fifth provider that way to a copy of golem and runs it. An unknown
provider is an error where it is named (``profile_of``); a provider recorded in a stored
history is read by ``recorded_provider``, which also maps the spellings other tools
use for the same API (``"gemini"``, ``"gcp.gemini"``).

Pure: constants and total look-ups.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol

from attrs import frozen
from returns.result import Result

from golem_core._messages import DataPart, Message, TextPart, URLPart
from golem_core.wire import anthropic as _anthropic
from golem_core.wire import gemini as _gemini
from golem_core.wire import openai as _openai
from golem_core.wire import openai_responses as _responses
from golem_core.wire._cache import CacheRule
from golem_core.wire._common import Origin, WireError, WireIds

__all__ = [
    "MISTRAL_CALL_IDS",
    "PROFILES",
    "STRING_CONTENT",
    "CacheRule",
    "CallIdRule",
    "Codec",
    "CompactionRule",
    "Provider",
    "ProviderProfile",
    "UnknownProviderError",
    "Vendor",
    "profile_of",
    "recorded_provider",
]

MISTRAL_CALL_IDS: Final = "mistral-call-ids"
"""A quirk: call ids must be exactly nine letters and digits (Mistral, vLLM's mistral mode)."""
STRING_CONTENT: Final = "string-content"
"""A quirk: a text-only message must be one string, never an array of text parts."""


class Provider(enum.StrEnum):
    """The providers golem speaks, one spelling each: the wire format an adapter sends
    (Chat Completions and Responses are two, since their artifacts differ). The value is
    what ``Message.provider`` records and what a model string starts with."""

    ANTHROPIC = "anthropic"
    GOOGLE = "google"
    """The Gemini API (``generateContent``)."""
    OPENAI = "openai"
    """OpenAI Chat Completions, and every compatible server."""
    OPENAI_RESPONSES = "openai-responses"


class UnknownProviderError(ValueError):
    """A provider name that is not in the registry (golem was misused)."""


class Codec(Protocol):
    """What every wire codec module offers, whatever else it does (its
    ``encode_request`` takes provider-specific options, so only its adapter calls it)."""

    PROVIDER: str

    def decode_response(
        self, body: object, *, origin: Origin | None = None
    ) -> Result[Message, WireError]: ...

    def decode_error(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        *,
        now_unix: float | None = None,
    ) -> WireError: ...

    def media_block(self, part: URLPart | DataPart) -> dict[str, Any]: ...

    @property
    def StreamDecoder(self) -> Callable[..., Any]: ...


@frozen
class CallIdRule:
    """The call ids a provider takes: the characters (``None``: any), the longest
    (``0``: any length), and whether two calls of one request may share one. The same
    settings its encoder gives ``WireIds``."""

    allowed: str | None = None
    max_length: int = 0
    unique: bool = False

    def builder(self) -> WireIds:
        """A fresh ``WireIds`` for one request under this rule."""
        return WireIds(allowed=self.allowed, max_length=self.max_length, unique=self.unique)


@frozen(kw_only=True)
class CompactionRule:
    """A provider's native compaction (ADR 0148): what it leaves in a history and how
    ``native_compaction`` folds with it.

    ``marker``: the part ``extra`` key that marks a compaction it issued; ``keys``: every
    ``extra`` key of such a part (dropped when its summary travels as text to another
    target); ``readable``: the part's text is a readable summary (else the compaction is
    encrypted, and left off elsewhere); ``fold``: ``"request"``, a compaction request of
    its own (its adapter's ``compact(request)``), or ``"answer"``, the model compacts
    in its answers and the processor cuts what stands before the newest compaction;
    ``removed``: what an erasure leaves in place of such a part once a message it was
    built from is erased (ADR 0143), beside the stale summary's text: a part its issuer
    takes as a no-op that keeps the turn valid (Anthropic: a ``compaction`` block with
    ``null`` content, which may open a request), or ``None`` (the part goes).
    """

    marker: str
    keys: frozenset[str]
    readable: bool
    fold: Literal["request", "answer"]
    removed: TextPart | None = None

    @property
    def what(self) -> str:
        """What a ``PortReport`` calls such a part."""
        return "compaction summary" if self.readable else "compaction item"


@frozen
class Vendor:
    """A vendor whose servers speak a provider's wire format with quirks of their own:
    the hosts of its API (and their subdomains), the prefixes of the model names it
    makes (served anywhere: vLLM's mistral mode), and those quirks."""

    name: str
    hosts: tuple[str, ...]
    model_prefixes: tuple[str, ...]
    quirks: frozenset[str]

    def serves(self, host: str, model: str) -> bool:
        """Whether a server at ``host`` serving ``model`` is (or serves) this vendor's."""
        host = host.lower()
        name = model.strip().lower().rsplit("/", 1)[-1]
        return any(host == h or host.endswith("." + h) for h in self.hosts) or name.startswith(
            self.model_prefixes
        )


_MISTRAL: Final = Vendor(
    "Mistral",
    hosts=("mistral.ai",),
    model_prefixes=(
        "mistral",
        "open-mistral",
        "open-mixtral",
        "mixtral",
        "codestral",
        "magistral",
        "ministral",
        "pixtral",
        "devstral",
        "voxtral",
    ),
    quirks=frozenset({MISTRAL_CALL_IDS}),
)


@frozen(kw_only=True)
class ProviderProfile:
    """Everything golem knows about one provider (see the module docstring).

    ``signs_thinking``: its thinking carries a ``signature`` (and may be redacted) that
    only it reads; ``artifact_keys``: the part ``extra`` keys that only it reads (and
    ``artifact_name``, what such a thinking part is called in a ``PortReport``);
    ``binds_model``: its artifacts are valid only for the model that issued them;
    ``media_in_assistant``: a model turn may carry media (elsewhere a stand-in is sent);
    ``compaction``: its native compaction, if it has one; ``schema_problem``: what in a
    JSON Schema its native structured output is documented to refuse (``None``: takes
    every schema golem writes).
    """

    provider: Provider
    codec: Codec
    prefixes: tuple[str, ...]
    """Model-string prefixes, the provider's own value first (``"google:"``, ``"gemini:"``)."""
    default_base_url: str
    key_env: tuple[str, ...]
    """Environment variables read for the API key, in order."""
    key_header: tuple[str, str]
    """The header the key travels in, and what precedes the key in it."""
    base_url_env: str
    otel_name: str
    """The OpenTelemetry ``gen_ai.provider.name`` (its well-known values)."""
    cache: CacheRule
    call_ids: CallIdRule = CallIdRule()
    binds_model: bool = False
    signs_thinking: bool = False
    artifact_keys: frozenset[str] = frozenset()
    artifact_name: str = "thinking"
    media_in_assistant: bool = False
    quirks: frozenset[str] = frozenset()
    """The quirks a compatible server of this wire format may have."""
    vendors: tuple[Vendor, ...] = ()
    """Vendors known to have some of those quirks (``guess_quirks``)."""
    model_family: str | None = None
    """A regex matching the model names usually served by it (for "did you mean")."""
    compaction: CompactionRule | None = None
    schema_problem: Callable[[Any], str | None] | None = None
    cache_lifetime: float = 300.0
    """Seconds a cached prompt prefix lives after its last use by default: Anthropic's
    5-minute cache, OpenAI's in-memory retention (5 to 10 minutes of inactivity: the
    shorter), Gemini's implicit cache (a few minutes). After that a request pays the
    whole prefix again, so compacting then throws no warm cache away
    (``golem_shell.compact_when_cold``)."""

    def guess_quirks(self, host: str, model: str) -> frozenset[str]:
        """The quirks of a server at ``host`` serving ``model``, guessed from the
        vendors it may be (none when it is no known vendor's)."""
        return frozenset().union(*(v.quirks for v in self.vendors if v.serves(host, model)))

    @property
    def display_name(self) -> str:
        """How errors name it (``"Gemini"``): the codec's own."""
        return self.codec.PROVIDER


_PROFILES: Final = (
    ProviderProfile(
        provider=Provider.OPENAI,
        codec=_openai,
        prefixes=("openai",),
        default_base_url="https://api.openai.com/v1",
        key_env=("OPENAI_API_KEY",),
        key_header=("authorization", "Bearer "),
        base_url_env="OPENAI_BASE_URL",
        otel_name="openai",
        cache=CacheRule.KEY,
        call_ids=CallIdRule(max_length=_openai.MAX_CALL_ID_LENGTH),
        quirks=frozenset({MISTRAL_CALL_IDS, STRING_CONTENT}),
        vendors=(_MISTRAL,),
        model_family=r"(gpt-|chatgpt|o\d(-|$))",
    ),
    ProviderProfile(
        provider=Provider.OPENAI_RESPONSES,
        codec=_responses,
        prefixes=("openai-responses",),
        default_base_url="https://api.openai.com/v1",
        key_env=("OPENAI_API_KEY",),
        key_header=("authorization", "Bearer "),
        base_url_env="OPENAI_BASE_URL",
        otel_name="openai",
        cache=CacheRule.KEY,
        call_ids=CallIdRule(max_length=_responses.MAX_CALL_ID_LENGTH, unique=True),
        artifact_keys=frozenset({_responses.REASONING_ID_KEY, _responses.ENCRYPTED_CONTENT_KEY}),
        artifact_name="reasoning item",
        compaction=CompactionRule(
            marker=_responses.COMPACTION_CONTENT_KEY,
            keys=frozenset({_responses.COMPACTION_CONTENT_KEY, _responses.COMPACTION_ID_KEY}),
            readable=False,
            fold="request",
        ),
    ),
    ProviderProfile(
        provider=Provider.ANTHROPIC,
        codec=_anthropic,
        prefixes=("anthropic",),
        default_base_url="https://api.anthropic.com",
        key_env=("ANTHROPIC_API_KEY",),
        key_header=("x-api-key", ""),
        base_url_env="ANTHROPIC_BASE_URL",
        otel_name="anthropic",
        cache=CacheRule.BREAKPOINTS,
        call_ids=CallIdRule(allowed=_anthropic.ID_CHARS, unique=True),
        binds_model=True,
        signs_thinking=True,
        artifact_name="signed thinking",
        model_family="claude",
        compaction=CompactionRule(
            marker=_anthropic.COMPACTION_KEY,
            keys=frozenset({_anthropic.COMPACTION_KEY, _anthropic.COMPACTION_FIELDS_KEY}),
            readable=True,
            fold="answer",
            removed=_anthropic.compaction_part(None),
        ),
        schema_problem=_anthropic.structured_output_problem,
    ),
    ProviderProfile(
        provider=Provider.GOOGLE,
        codec=_gemini,
        prefixes=("google", "gemini", "google-gla"),
        default_base_url="https://generativelanguage.googleapis.com/v1beta",
        key_env=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
        key_header=("x-goog-api-key", ""),
        base_url_env="GEMINI_BASE_URL",
        otel_name="gcp.gemini",
        cache=CacheRule.IMPLICIT,
        binds_model=True,
        artifact_keys=frozenset({_gemini.THOUGHT_SIGNATURE_KEY}),
        artifact_name="signed thought",
        media_in_assistant=True,
        model_family="gemini|gemma",
    ),
)

PROFILES: Final[Mapping[Provider, ProviderProfile]] = MappingProxyType(
    {p.provider: p for p in _PROFILES}
)
"""The registry: one profile per ``Provider``."""

# spellings of the same providers other tools (and the OpenTelemetry conventions) use,
# accepted when a stored history records one
_RECORDED: Final = MappingProxyType(
    {
        **{prefix: p.provider for p in _PROFILES for prefix in p.prefixes},
        **{p.provider.value: p.provider for p in _PROFILES},
        "gcp.gemini": Provider.GOOGLE,
        "gcp.gen_ai": Provider.GOOGLE,
    }
)


def profile_of(provider: Provider | str) -> ProviderProfile:
    """The profile of ``provider`` (a ``Provider`` or its value).

    Raises:
        UnknownProviderError: no such provider; the message lists the known ones.
    """
    try:
        return PROFILES[Provider(provider)]
    except (ValueError, KeyError):
        known = ", ".join(repr(p.value) for p in Provider)
        raise UnknownProviderError(
            f"unknown provider {provider!r}: expected one of {known}"
        ) from None


def recorded_provider(value: str | None) -> Provider | None:
    """The provider a stored ``Message.provider`` names (any case; also a model-string
    prefix or an OpenTelemetry name of it), or ``None`` when it names none golem knows
    (an origin of someone else's adapter). Total."""
    if value is None:
        return None
    return _RECORDED.get(value.strip().lower())
