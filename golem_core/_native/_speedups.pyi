"""Types of ``golem_core._native._speedups``, the compiled JSON fast decoder (``_speedups.c``)."""

from typing import Any

from golem_core._messages import Message

__all__ = ["Decoder", "decoder", "source_sha256"]

class Decoder:
    """The compiled fast decoder of one field table's spec."""

    def messages(self, raw: list[object], names: dict[Any, str], /) -> list[Message]: ...
    def message(self, d: object, names: dict[Any, str], /) -> Message: ...

source_sha256: str
"""The SHA-256 of the ``_speedups.c`` it was built from (``hatch_build.py``)."""

def decoder(spec: tuple[object, ...], /) -> Decoder: ...
