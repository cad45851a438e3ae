"""The provider registry, public: one profile per provider golem speaks (ADR 0095).

``Provider`` is the one spelling of each provider (what ``Message.provider`` records);
``PROFILES`` maps each to its ``ProviderProfile`` (codec, model-string prefixes, default
endpoint, key variables, porting and cache rules, quirks and the ``Vendor`` values that
have them, native compaction (``CompactionRule``), OpenTelemetry name); ``profile_of``
looks one up and refuses an unknown name; ``recorded_provider`` reads a stored
``provider`` value, old spellings included. The porting names an adapter needs
(``Target``, ``Origin``, ``port_history``, ``describe_report``, ``same_model``, the
quirks) are here too, so the shell imports no private core module for them.
"""

from golem_core._providers import (
    MISTRAL_CALL_IDS,
    PROFILES,
    STRING_CONTENT,
    CacheRule,
    CallIdRule,
    Codec,
    CompactionRule,
    Provider,
    ProviderProfile,
    UnknownProviderError,
    Vendor,
    profile_of,
    recorded_provider,
)
from golem_core.history._port import (
    Origin,
    PortedPart,
    PortReport,
    RewrittenId,
    Target,
    asked_model_of,
    describe_report,
    port_history,
    record_asked_model,
    same_model,
)

__all__ = [
    "MISTRAL_CALL_IDS",
    "PROFILES",
    "STRING_CONTENT",
    "CacheRule",
    "CallIdRule",
    "Codec",
    "CompactionRule",
    "Origin",
    "PortReport",
    "PortedPart",
    "Provider",
    "ProviderProfile",
    "RewrittenId",
    "Target",
    "UnknownProviderError",
    "Vendor",
    "asked_model_of",
    "describe_report",
    "port_history",
    "profile_of",
    "record_asked_model",
    "recorded_provider",
    "same_model",
]

from golem_core.public import claim_public_names as _claim_public_names

_claim_public_names(globals())  # reprs and tracebacks name this module
