"""Exact token counters: tokenizers behind ``golem_core``'s ``TokenCounter``.

Owns ``tiktoken_counter``. A tokenizer is an effect the core does not take on: loading
an encoding by name may read a cache or download the ranks file. tiktoken is an
optional dependency (``pip install 'golem-agents[tiktoken]'``), imported only when a counter is
made, so ``golem_shell`` imports without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from golem_core import Message, TokenCounter, token_counter

if TYPE_CHECKING:
    import tiktoken

__all__ = ["tiktoken_counter"]


def tiktoken_counter(encoding: tiktoken.Encoding | str = "o200k_base") -> TokenCounter:
    """A ``TokenCounter`` that counts text exactly with a tiktoken encoding.

    Text, thinking, and a tool call's name and arguments are encoded as ordinary text
    (special-token strings such as ``<|endoftext|>`` count as the text they are, never
    refused); the fixed costs per message, per part and per media kind are
    ``golem_core.approximate_tokens``' (see ``golem_core.token_counter``).

    Args:
        encoding: An encoding, or the name of one for ``tiktoken.get_encoding``
            (``"o200k_base"`` for GPT-4o and later, ``"cl100k_base"`` for GPT-4 and
            GPT-3.5; ``tiktoken.encoding_for_model(model)`` finds one by model name).
            A name is resolved now, once: the first use of a name may download its ranks
            file into tiktoken's cache.

    Returns:
        The counter: deterministic, total, and safe to share between threads.

    Raises:
        ImportError: tiktoken is not installed.
        ValueError: ``encoding`` names no encoding tiktoken knows.
        OSError: the encoding's ranks file is neither cached nor downloadable (offline
            on first use); the message says so.
        TypeError: ``encoding`` is neither a string nor an encoding.
    """
    try:
        import tiktoken
    except ImportError as exc:
        raise ImportError(
            "tiktoken_counter needs tiktoken, an optional dependency of golem: "
            "install it with pip install 'golem-agents[tiktoken]'"
        ) from exc
    if isinstance(encoding, str):
        try:
            resolved = tiktoken.get_encoding(encoding)
        except OSError as exc:  # requests' errors are OSErrors: offline, proxy, HTTP 4xx/5xx
            raise OSError(
                f"tiktoken cannot load the encoding {encoding!r}: its ranks file is not in"
                " tiktoken's cache (TIKTOKEN_CACHE_DIR) and downloading it failed"
                f" ({type(exc).__name__}); load it once with network access, or use an"
                " approximate counter"
            ) from exc
    elif isinstance(encoding, tiktoken.Encoding):
        resolved = encoding
    else:
        raise TypeError(
            f"tiktoken_counter(encoding): expected a tiktoken.Encoding or an encoding name, "
            f"got {encoding!r}"
        )
    encode = resolved.encode_ordinary

    def text_tokens(text: str) -> int:
        return len(encode(text)) if text else 0

    counter = token_counter(text_tokens)

    def count(message: Message) -> int:
        return counter(message)

    count.__qualname__ = count.__name__ = f"tiktoken_counter({resolved.name!r})"
    return count
