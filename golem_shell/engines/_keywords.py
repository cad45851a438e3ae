"""A durable run's keywords: recorded when it starts, and its spec built from the record.

Owns ``Keywords``: what an engine's wrapper (``DurableAgent``, ``TemporalAgent``) knows to
take a run's keywords (``RunOptions``, and ``output_type=``), record them in the run's
input (``RecordedOptions``), and build the run's ``RunSpec`` from the agent and that
record. It is the one place an engine builds a spec: the workflow body and every step or
activity read the record, so a run recovered by a worker whose agent changed meanwhile
(another default model, say) goes on with the keywords it started with.

What can be recorded: ``model=`` as a key of the wrapper's ``models`` (a registered
instance, or its key) or a ``"provider:model"`` string; ``settings=`` and
``usage_limits=`` (as JSON); ``output_type=`` registered in ``output_types``; ``deps=``
when it is a JSON value. The agent's own model is recorded by its key when it is
registered, else by its name (a worker whose agent has another model then fails the run
rather than run it on another model). What cannot be recorded is refused before the run
starts, naming the keyword and what to do instead: ``on_event=`` and ``steering=``
(functions and live objects), an unregistered model instance or output type, deps that
are not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from golem_shell._agent import Agent
from golem_shell._errors import UsageError
from golem_shell.engines._records import NO_DEPS, RecordedOptions
from golem_shell.models import Model, infer_model
from golem_shell.run._options import RunOptions, check_options
from golem_shell.run._setup import RunSpec
from golem_shell.tools._output import Output

__all__ = ["RECORDED", "REFUSED", "Keywords"]

RECORDED = frozenset({"run_id", "conversation_id", "model", "settings", "usage_limits", "deps"})
"""The run keywords a durable run records (the ids in its input, the rest in
``RecordedOptions``)."""

_REFUSED = {
    "on_event": (
        "a function cannot be recorded with a durable run: follow its events with"
        " {wrapper}.events(run_id) or {wrapper}.run(..., on_event=...) (both need"
        " {wrapper}(..., event_log=...)), or give the worker's {wrapper}(..., on_event=...),"
        " which receives the events of every run it executes"
    ),
    "steering": (
        "a Steering object lives in one process: send a durable run its messages with"
        " {wrapper}.steer(run_id, ...) (DurableAgent(..., steerable=True) on DBOS)"
    ),
}
REFUSED = frozenset(_REFUSED)
"""The run keywords a durable run refuses (each with what to do instead). A keyword of
``RunOptions`` in neither set is refused too, as one durable runs do not take yet: a new
keyword is never silently ignored."""


class Keywords:
    """What ``wrapper`` (the engine's class name) records of a run's keywords, and the
    run's spec built from the record.

    Args:
        wrapper: the engine's class name, for messages.
        agent: the wrapped agent.
        models: models a run may name (``model="fast"``, or the instance itself), the
            same in every worker.
        output_types: output types a run may ask for (``output_type=Verdict``), by
            a key the same in every worker.

    Raises:
        UsageError: a key is not a non-empty string, a model is not a ``Model``, or an
            output type cannot be described as JSON Schema.
    """

    def __init__(
        self,
        wrapper: str,
        agent: Agent[Any, Any],
        models: Mapping[str, Model] | None,
        output_types: Mapping[str, Any] | None,
    ) -> None:
        self.wrapper = wrapper
        self.agent = agent
        self.models: dict[str, Model] = dict(models or {})
        self.output_types: dict[str, Any] = dict(output_types or {})
        for what, table in (("models", self.models), ("output_types", self.output_types)):
            for key in table:
                if not isinstance(key, str) or not key:
                    raise UsageError(f"{wrapper}({what}=...) keys are non-empty strings: {key!r}")
        for key, model in self.models.items():
            if not isinstance(model, Model):
                raise UsageError(f"{wrapper}(models=...): {key!r} is not a Model: {model!r}")
        for kind in self.output_types.values():
            Output(kind)  # refuses a type that cannot be described, now

    def record(self, method: str, options: Mapping[str, Any], output_type: Any) -> RecordedOptions:
        """The keywords of a run started by ``method`` as its input records them.

        Raises:
            TypeError: a keyword that no run method takes.
            UsageError: a keyword that cannot be recorded (the message says what to do).
        """
        where = f"{self.wrapper}.{method}"
        check_options(where, options)
        for name, why in _REFUSED.items():
            if options.get(name) is not None:
                raise UsageError(f"{where}({name}=...): {why.format(wrapper=self.wrapper)}")
        untaken = sorted(set(options) - RECORDED - REFUSED)
        if untaken:
            raise UsageError(f"{where}({untaken[0]}=...): durable runs do not take it yet")
        model, agent_model = self._model(where, options.get("model"))
        deps = options.get("deps", NO_DEPS)
        if deps is not NO_DEPS and not _is_json(deps):
            raise UsageError(
                f"{where}(deps=...): a durable run records its deps as JSON (a dict, list,"
                f" str, number, bool or None), not {type(deps).__name__}; give each worker"
                f" its deps with {self.wrapper}(..., deps=...) instead"
            )
        return RecordedOptions(
            model=model,
            agent_model=agent_model,
            settings=options.get("settings"),
            usage_limits=options.get("usage_limits"),
            output_type=self._output_key(where, output_type),
            deps=deps,
        )

    def _model(self, where: str, model: object) -> tuple[str | None, str | None]:
        """``(model, agent_model)`` of ``RecordedOptions`` for ``model=``."""
        if model is None:  # the agent's own (or its override's), pinned for the run
            own = self.agent.model
            key = self._model_key(own)
            return (key, None) if key is not None else (None, own.name)
        if isinstance(model, str):
            if model not in self.models:
                infer_model(model)  # a bad string is refused here, before the run starts
            return model, None
        key = self._model_key(model)
        if key is None:
            raise UsageError(
                f"{where}(model={model!r}): a model instance cannot be recorded with a durable"
                f" run: register it in every worker, {self.wrapper}(..., models={{'name':"
                " model}), and pass model='name' (or the instance), or pass a"
                " 'provider:model' string"
            )
        return key, None

    def _model_key(self, model: object) -> str | None:
        return next((k for k, m in self.models.items() if m is model), None)

    def _output_key(self, where: str, output_type: Any) -> str | None:
        if output_type is None:
            return None
        if isinstance(output_type, str) and output_type in self.output_types:
            return output_type
        key = next((k for k, t in self.output_types.items() if t is output_type), None)
        if key is None:
            raise UsageError(
                f"{where}(output_type={output_type!r}): a durable run records its output type"
                f" by name: register it in every worker, {self.wrapper}(...,"
                " output_types={'name': type}), and pass it (or its name)"
            )
        return key

    def spec(self, recorded: RecordedOptions) -> RunSpec:
        """The run's spec: the agent's configuration with the recorded keywords (the one
        ``run_spec`` call of an engine).

        Raises:
            UsageError: the record names a model or output type this worker does not
                register, or the agent's own model (recorded by name) is another now.
        """
        options: RunOptions[Any] = {}
        if recorded.model is not None:
            options["model"] = self.models.get(recorded.model) or infer_model(recorded.model)
        if recorded.settings is not None:
            options["settings"] = recorded.settings
        if recorded.usage_limits is not None:
            options["usage_limits"] = recorded.usage_limits
        spec = self.agent.run_spec(**options)
        if recorded.agent_model is not None and spec.model.name != recorded.agent_model:
            raise UsageError(
                f"the run was started on the agent's model {recorded.agent_model!r}; this"
                f" worker's agent has {spec.model.name!r}: register the run's model in"
                f" every worker ({self.wrapper}(..., models={{'name': model}})) so a"
                " recovered run keeps it"
            )
        if recorded.output_type is None:
            return spec
        kind = self.output_types.get(recorded.output_type)
        if kind is None:
            raise UsageError(
                f"the run asked for the output type {recorded.output_type!r}, which this"
                f" worker's {self.wrapper} does not register (output_types=...)"
            )
        return spec.with_output(kind)

    def output_of(self, key: str | None) -> Output:
        """The output a run's recorded end is read back into (``key``: its recorded
        ``output_type``; ``None``: the agent's)."""
        return self.spec(RecordedOptions(output_type=key)).output

    def deps(self, recorded: RecordedOptions, default: Any) -> Any:
        """The run's ``RunContext.deps``: its recorded deps, else the worker's."""
        return default if recorded.deps is NO_DEPS else recorded.deps


def _is_json(value: object) -> bool:
    """Whether ``value`` reads back from JSON as itself (no tuple, no non-string key)."""
    try:
        return bool(json.loads(json.dumps(value, allow_nan=False)) == value) and _plain(value)
    except (TypeError, ValueError):
        return False


def _plain(value: object) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, str | int | float | bool)
