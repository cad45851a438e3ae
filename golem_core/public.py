"""Public names say where they are public: ``golem_core.Message``, not ``golem_core._messages``.

Owns ``claim_public_names``, which each public module of ``golem_core`` and
``golem_shell`` calls once, at its end, on its own namespace: every class and function it
exports that is defined in a private module of its package gets the exporting module as
``__module__``, so reprs, tracebacks and type checkers' messages show the path users
import, and pickling by reference finds the name there. Public so the shell (which
imports only the core's public modules) uses the same function.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

__all__ = ["claim_public_names"]


def claim_public_names(namespace: dict[str, Any]) -> None:
    """Give each class and function in ``namespace["__all__"]`` that a private module of
    the same package defines (``golem_core._messages`` for ``golem_core``; the siblings
    for a public module such as ``golem_core.loop``; a private module inside one of the
    package's rooms, ``golem_shell.engines.dbos._client`` for ``golem_shell.durable``) the
    namespace's module as its ``__module__``.

    Only a name exported under its own ``__qualname__`` is claimed, so the public path
    resolves (``getattr(module, qualname)`` is the object: pickling by reference works);
    one already claimed by another public module keeps that module. A class's string
    annotations are resolved first, in the module that wrote them, so
    ``typing.get_type_hints`` (and cattrs, attrs) still read them afterwards; annotations
    that cannot be resolved there are left as they are. Exports a module loads on first
    use (its ``__getattr__``) are claimed when they load. Idempotent.
    """
    public: str = namespace["__name__"]
    package = public if "__path__" in namespace else public.rpartition(".")[0]
    exported = tuple(namespace.get("__all__", ()))
    for name in exported:
        if name in namespace:
            _claim(public, package, name, namespace[name])
    lazy = namespace.get("__getattr__")
    if callable(lazy) and any(name not in namespace for name in exported):
        namespace["__getattr__"] = _claiming(lazy, public, package, frozenset(exported))


def _claiming(
    lazy: Callable[[str], object], public: str, package: str, exported: frozenset[str]
) -> Callable[[str], object]:
    """The module's ``__getattr__`` for exports loaded on first use, claiming each."""

    def __getattr__(name: str) -> object:
        value = lazy(name)
        if name in exported:
            _claim(public, package, name, value)
        return value

    return __getattr__


def _is_private(module: str, package: str) -> bool:
    """Whether ``module`` is a private module of ``package``: one of the names below the
    package starts with ``_`` (``golem_shell._agent``, ``golem_shell.engines.dbos._client``)."""
    below = module.removeprefix(f"{package}.")
    return below != module and any(part.startswith("_") for part in below.split("."))


def _claim(public: str, package: str, name: str, value: object) -> None:
    if not isinstance(value, type | types.FunctionType):
        return
    module = getattr(value, "__module__", None)
    if not isinstance(module, str) or not _is_private(module, package):
        return
    if value.__qualname__ != name:
        return
    if isinstance(value, type):
        _resolve_annotations(value)
    value.__module__ = public


def _resolve_annotations(cls: type) -> None:
    own = inspect.get_annotations(cls)
    if not any(isinstance(v, str) for v in own.values()):
        return
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # a name only imported for type checking: leave them as written
        return
    cls.__annotations__ = {k: hints.get(k, v) for k, v in own.items()}
