"""Models: the ``Model`` protocol, the offline models, the provider adapters, and
``infer_model``."""

from __future__ import annotations

from collections.abc import Callable

from golem_shell._errors import UsageError
from golem_shell.models._base import Model
from golem_shell.models.anthropic import AnthropicModel
from golem_shell.models.function import FunctionModel, ScriptedModel
from golem_shell.models.gemini import GeminiModel
from golem_shell.models.openai import OpenAIModel
from golem_shell.models.openai_responses import OpenAIResponsesModel
from golem_shell.models.test import TestModel

__all__ = [
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

_PROVIDERS: dict[str, Callable[[str], Model]] = {
    "anthropic": AnthropicModel,
    "gemini": GeminiModel,
    "google": GeminiModel,
    "google-gla": GeminiModel,
    "openai": OpenAIModel,
    "openai-responses": OpenAIResponsesModel,
}


def infer_model(model: str | Model) -> Model:
    """A model from ``"<provider>:<model>"``, or the model itself.

    ``"openai:gpt-4o-mini"`` is ``OpenAIModel("gpt-4o-mini")`` (key and base URL from
    ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``); ``"openai-responses:gpt-5"`` is
    ``OpenAIResponsesModel("gpt-5")`` (the Responses API, same variables);
    ``"anthropic:claude-sonnet-4-5"`` is
    ``AnthropicModel("claude-sonnet-4-5")`` (``ANTHROPIC_API_KEY``,
    ``ANTHROPIC_BASE_URL``); ``"google:gemini-2.5-flash"`` (also ``"google-gla:"`` and
    ``"gemini:"``) is ``GeminiModel("gemini-2.5-flash")`` (``GOOGLE_API_KEY`` or
    ``GEMINI_API_KEY``, ``GEMINI_BASE_URL``).

    Raises:
        UsageError: an unknown provider prefix, no model name, or a missing key.
    """
    if not isinstance(model, str):
        if isinstance(model, Model):
            return model
        raise UsageError(f"expected a model or a 'provider:model' string, got {model!r}")
    prefix, colon, name = model.partition(":")
    known = ", ".join(f"'{p}:'" for p in sorted(_PROVIDERS))
    factory = _PROVIDERS.get(prefix.strip().lower()) if colon else None
    if factory is None:
        raise UsageError(f"unknown model {model!r}: expected one of the prefixes {known}")
    if not name.strip():
        raise UsageError(f"model {model!r} names no model after {prefix!r}")
    return factory(name.strip())
