"""The message contract as data: the field table every reader and writer of history JSON
is generated from.

Owns nothing new: it publishes the table of ``golem_core.codec._json_fields`` (ADR 0060) for
the generators outside the codec. ``MESSAGE``, ``USAGE`` and ``PART_RECORDS`` list, per
class, every JSON key in the order it is written, its attribute, its ``Kind`` and its
default (``Record.defaults``; ``NO_DEFAULT`` when the key is required). The codec's
decoders and encoders, the Hypothesis strategies of ``golem_core.testing`` and the
history JSON Schema (``golem schema``) all walk this table, so a field added to it
appears in every one of them without another edit (ADR 0100). ``ROLES`` and
``PART_KINDS`` are the values a role and a part kind can take.

The table is read-only data; nothing here does I/O.
"""

from __future__ import annotations

from typing import Final, get_args

from golem_core._messages import PartKind, Role
from golem_core.codec._json_fields import (
    MESSAGE,
    NO_DEFAULT,
    PART_RECORDS,
    USAGE,
    Field,
    Kind,
    Record,
)

__all__ = [
    "MESSAGE",
    "NO_DEFAULT",
    "PART_KINDS",
    "PART_RECORDS",
    "ROLES",
    "USAGE",
    "Field",
    "Kind",
    "Record",
]

ROLES: Final[tuple[str, ...]] = tuple(r.value for r in Role)
"""Every role's JSON value, in ``Role``'s order."""

PART_KINDS: Final[tuple[str, ...]] = tuple(get_args(PartKind))
"""Every value of a URL or data part's ``kind``."""

from golem_core.public import claim_public_names as _claim_public_names  # noqa: E402

_claim_public_names(globals())  # reprs and tracebacks name this module
