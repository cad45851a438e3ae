"""Models: the ``Model`` protocol, the offline models, the provider adapters, and
``infer_model``.

The provider adapters (and with them httpx) load on first use (``__getattr__``, or
``infer_model`` naming their provider), so an application that imports golem pays for a
provider only when it uses one (start-up, issue 29). ``ADAPTERS`` names each provider's
adapter; the model-string prefixes and the "did you mean" families come from the
provider registry (``golem_core.providers``).

May import: ``golem_core``'s public modules, the leaves (``_errors``, ``_hooks``) and
``tools/`` (``TestModel`` reads output types); never ``run/``, ``context/``, ``engines/``
or ``_agent``, which import this package.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING

from golem_core.providers import PROFILES, Provider
from golem_shell._errors import UsageError
from golem_shell.models._base import Model
from golem_shell.models.function import FunctionModel, ScriptedModel
from golem_shell.models.test import TestModel

if TYPE_CHECKING:
    from golem_shell.models.anthropic import AnthropicModel
    from golem_shell.models.gemini import GeminiModel
    from golem_shell.models.openai import OpenAIModel
    from golem_shell.models.openai_responses import OpenAIResponsesModel

ADAPTERS: dict[Provider, tuple[str, str]] = {
    Provider.ANTHROPIC: ("golem_shell.models.anthropic", "AnthropicModel"),
    Provider.GOOGLE: ("golem_shell.models.gemini", "GeminiModel"),
    Provider.OPENAI: ("golem_shell.models.openai", "OpenAIModel"),
    Provider.OPENAI_RESPONSES: ("golem_shell.models.openai_responses", "OpenAIResponsesModel"),
}
"""Each provider's adapter: (module, class). A provider of the registry without one is
an error (``tests/test_registry.py``)."""
_ADAPTERS = {cls: module for module, cls in ADAPTERS.values()}


def __getattr__(name: str) -> object:
    module = _ADAPTERS.get(name)
    if module is None:
        raise AttributeError(f"module 'golem_shell.models' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def _adapter(provider: Provider) -> Callable[[str], Model]:
    def make(model: str) -> Model:
        where = ADAPTERS.get(provider)
        if where is None:
            raise UsageError(f"no adapter is registered for provider {provider.value!r}")
        made: Model = getattr(import_module(where[0]), where[1])(model)
        return made

    return make


__all__ = [
    "ADAPTERS",
    "ALLOW_MODEL_REQUESTS",
    "AnthropicModel",
    "FunctionModel",
    "GeminiModel",
    "Model",
    "OpenAIModel",
    "OpenAIResponsesModel",
    "ScriptedModel",
    "TestModel",
    "infer_model",
]

ALLOW_MODEL_REQUESTS: bool = True
"""Set to ``False`` (in a test suite's ``conftest.py``) and every request to a real
provider raises ``ModelRequestsNotAllowed`` naming the model, out of the run: a test
that forgot ``agent.override(model=TestModel())`` fails loudly instead of calling the
API. The offline models are not affected."""

_PROVIDERS: dict[str, Callable[[str], Model]] = {
    prefix: _adapter(p.provider) for p in PROFILES.values() for prefix in p.prefixes
}
"""Every model-string prefix (``"google:"``, also ``"gemini:"``), to its provider's adapter."""

_FAMILIES = tuple(  # a model name's usual provider, for "did you mean" when the prefix is missing
    (re.compile(p.model_family, re.I), p.provider.value)
    for p in PROFILES.values()
    if p.model_family is not None
)


def _suggestion(model: str) -> str | None:
    """The model string a user most likely meant, or ``None``."""
    text = model.strip()
    prefix, colon, name = text.partition(":")
    if not colon:  # "openai/gpt-4o" or a bare "gpt-4o"
        head, slash, tail = text.partition("/")
        if slash and head.lower() in _PROVIDERS and tail:
            return f"{head.lower()}:{tail}"
        family = next((p for pattern, p in _FAMILIES if pattern.match(text)), None)
        return f"{family}:{text}" if family is not None and text else None
    close = difflib.get_close_matches(prefix.strip().lower(), list(_PROVIDERS), n=1, cutoff=0.6)
    if close:
        return f"{close[0]}:{name.strip()}"
    family = next((p for pattern, p in _FAMILIES if pattern.match(name.strip())), None)
    return f"{family}:{name.strip()}" if family is not None else None


def infer_model(model: str | Model) -> Model:
    """A model from ``"<provider>:<model>"``, or the model itself.

    ``"openai:gpt-4o-mini"`` is ``OpenAIModel("gpt-4o-mini")`` (key and base URL from
    ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``); ``"openai-responses:gpt-5"`` is
    ``OpenAIResponsesModel("gpt-5")`` (the Responses API, same variables);
    ``"anthropic:claude-sonnet-4-5"`` is
    ``AnthropicModel("claude-sonnet-4-5")`` (``ANTHROPIC_API_KEY``,
    ``ANTHROPIC_BASE_URL``); ``"google:gemini-2.5-flash"`` (also ``"google-gla:"`` and
    ``"gemini:"``) is ``GeminiModel("gemini-2.5-flash")`` (``GOOGLE_API_KEY`` or
    ``GEMINI_API_KEY``, ``GEMINI_BASE_URL``); ``"test"`` is ``TestModel()`` (offline).
    A key is read when the first request is sent, not here: an agent made at import
    time needs none until it is used.

    Raises:
        UsageError: an unknown provider prefix (with the string most likely meant:
            ``'opnai:gpt-4o'``, did you mean ``'openai:gpt-4o'``?), or no model name.
    """
    if not isinstance(model, str):
        if isinstance(model, Model):
            return model
        raise UsageError(f"expected a model or a 'provider:model' string, got {model!r}")
    if model.strip() == "test":
        return TestModel()
    prefix, colon, name = model.partition(":")
    known = ", ".join(f"'{p}:'" for p in sorted(_PROVIDERS))
    factory = _PROVIDERS.get(prefix.strip().lower()) if colon else None
    if factory is None:
        guess = _suggestion(model)
        hint = f"; did you mean {guess!r}?" if guess is not None else ""
        raise UsageError(f"unknown model {model!r}: expected one of the prefixes {known}{hint}")
    if not name.strip():
        raise UsageError(f"model {model!r} names no model after {prefix!r}")
    return factory(name.strip())


from golem_core.public import claim_public_names as _claim_public_names  # noqa: E402

_claim_public_names(globals())  # reprs and tracebacks name this module
