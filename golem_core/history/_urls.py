"""How golem reads a URL: its scheme as a browser reads it, and whether it is safe to keep.

Owns ``url_scheme`` and ``is_safe_url`` (browser-faithful: the WHATWG URL parser's
reading of the scheme and host), shared by ``sanitize_history`` and by signed
provenance, which binds each signature to the history as sanitizing leaves it
(ADR 0068). Every function here is total and deterministic.
"""

from __future__ import annotations

import string

__all__ = ["is_safe_url", "url_scheme"]

_C0_OR_SPACE = "".join(chr(c) for c in range(0x21))
_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")
_ALPHA = frozenset(string.ascii_letters)
_SCHEME_CHARS = frozenset(string.ascii_letters + string.digits + "+-.")
_SAFE_SCHEMES = frozenset({"http", "https"})
_AUTHORITY_END = frozenset("/\\?#")
# WHATWG "forbidden domain code points", without "%" (hosts may be percent-encoded).
_FORBIDDEN_HOST = frozenset(chr(c) for c in range(0x20)) | frozenset(" #/:<>?@[\\]^|\x7f")
_IPV6_CHARS = frozenset(string.hexdigits + ":.")


def _browser_view(url: str) -> str:
    """The URL as the WHATWG parser starts on it: leading and trailing C0 controls and
    spaces stripped, ASCII tabs and newlines removed everywhere."""
    return url.strip(_C0_OR_SPACE).translate(_TAB_OR_NEWLINE)


def _scheme_of(view: str) -> str:
    if not view or view[0] not in _ALPHA:
        return ""
    for k, c in enumerate(view):
        if c == ":":
            return view[:k].lower()  # ASCII only here, so lower() is ASCII case folding
        if c not in _SCHEME_CHARS:
            return ""
    return ""


def _names_a_host(rest: str) -> bool:
    """Whether what follows ``http:``/``https:`` has a host, as a browser reads it.

    Slashes and backslashes after the scheme are skipped (``https:/x`` and ``https:x``
    are ``https://x/`` to a browser); the authority ends at ``/``, ``\\``, ``?`` or
    ``#``; credentials end at its last ``@``; the port must be decimal and at most 65535.
    """
    rest = rest.lstrip("/\\")
    end = len(rest)
    for k, c in enumerate(rest):
        if c in _AUTHORITY_END:
            end = k
            break
    authority = rest[:end].rpartition("@")[2]
    if authority.startswith("["):
        close = authority.find("]")
        if close < 2 or any(c not in _IPV6_CHARS for c in authority[1:close]):
            return False
        after = authority[close + 1 :]
        if after and after[0] != ":":
            return False
        port = after[1:]
    else:
        host, _, port = authority.partition(":")
        if not host or any(c in _FORBIDDEN_HOST for c in host):
            return False
    if not port:
        return True
    digits = port.lstrip("0")  # leading zeros are allowed; more than 5 digits is out of range
    return port.isascii() and port.isdigit() and len(digits) <= 5 and int(digits or "0") <= 65535


def url_scheme(url: str) -> str:
    """The scheme of ``url`` as a browser (the WHATWG URL parser) reads it.

    Leading and trailing C0 controls and spaces are stripped and ASCII tabs and
    newlines removed anywhere before reading; the scheme is an ASCII letter followed by
    letters, digits, ``+``, ``-`` or ``.``, ended by ``:``, and is case folded.
    ``"  FILE:///x"`` and ``"jav\\tascript:x"`` are ``file`` and ``javascript``.

    Args:
        url: Any string.

    Returns:
        The lowercase scheme, or ``""`` when there is none (``//host/x``, ``""``,
        ``"/etc/passwd"``). Total and deterministic.
    """
    return _scheme_of(_browser_view(url))


def is_safe_url(url: str) -> bool:
    """Whether ``url`` is one ``sanitize_history`` keeps: a browser reads it as http or
    https with a host.

    ``https:/x`` is kept (a browser reads it as ``https://x/``); ``http:`` and
    ``https://`` are not (no host: a browser refuses them). The URL is never rewritten:
    this only decides. Host names are not checked further (an internal address is an
    http URL all the same: guarding against it is the fetcher's job).

    Args:
        url: Any string.

    Returns:
        ``True`` for a fetchable http(s) URL. Total and deterministic.
    """
    view = _browser_view(url)
    scheme = _scheme_of(view)
    return scheme in _SAFE_SCHEMES and _names_a_host(view[len(scheme) + 1 :])
