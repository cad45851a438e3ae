"""A durable run's toolsets (MCP servers and the like): their tool list recorded at the
run's start, and each call of one of their tools made by the worker from that record.

Owns the set-up effect ``list_toolsets`` (a DBOS step, a Temporal activity: it asks every
toolset of the run's agent for its tools, as ``Agent.run`` does, and records their specs
as plain JSON), ``Listed`` (that record read back: the tools the model is offered, on the
first run and on every replay, without asking the toolsets again) and ``toolset_tool``,
which puts the live tool of a recorded call in the context the call runs with, in the
process that executes it (the engine's ordinary tool step or activity: the call itself is
recorded there like any tool call). A toolset that can rebuild a tool from its recorded
definition (``MCPToolset``: the worker's connection to the server makes the call) is not
asked for its tools again; any other is asked again by the process executing the call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

import attrs
from attrs import frozen

from golem_core import make_converter
from golem_core.loop import ToolSpec
from golem_shell._errors import RunError
from golem_shell.engines._records import CorruptRecord
from golem_shell.run._setup import RunSpec, toolset_specs
from golem_shell.tools._tools import RunContext, Tool, ToolFailure

__all__ = [
    "TOOLSETS_STEP",
    "Listed",
    "Recorder",
    "list_toolsets",
    "listing_failed",
    "toolset_tool",
]

JSON: TypeAlias = Any

TOOLSETS_STEP = "golem.toolsets"
"""The name of the recorded set-up effect (a DBOS step, a Temporal activity); persisted
with every run of an agent that has toolsets."""

_TYPE = "toolsetsListed"
_CONVERTER = make_converter()


@frozen
class Listed:
    """The recorded tool list of a run's toolsets: ``tools`` maps each tool's name to the
    index of its toolset in the agent's ``toolsets`` and its spec; ``failed`` says why
    listing failed (the run then fails at stage ``tool``)."""

    tools: Mapping[str, tuple[int, ToolSpec]] = attrs.field(factory=dict)
    failed: str | None = None

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The specs the model is offered, in the order the toolsets listed them."""
        return tuple(spec for _, spec in self.tools.values())

    def entry(self, name: str) -> JSON:
        """The recorded entry of the toolset tool ``name`` (JSON, for an activity's
        payload), or ``None`` when no toolset offered it."""
        found = self.tools.get(name)
        if found is None:
            return None
        return {"toolset": found[0], "spec": _CONVERTER.unstructure(found[1])}

    def carried(self, name: str) -> dict[str, JSON]:
        """What a tool activity's payload carries of the tool ``name``: ``{"toolset":
        <its entry>}`` for a toolset's tool, nothing for the agent's own."""
        entry = self.entry(name)
        return {} if entry is None else {"toolset": entry}

    @classmethod
    def of(cls, recorded: JSON) -> Listed:
        """The record ``list_toolsets`` returned, read back.

        Raises:
            CorruptRecord: it is not such a record.
        """
        try:
            if recorded.get("type") != _TYPE:
                raise ValueError(f"not a {_TYPE} record")
            if recorded.get("failed") is not None:
                return cls(failed=str(recorded["failed"]))
            tools = {}
            for item in recorded["tools"]:
                spec = _CONVERTER.structure(item["spec"], ToolSpec)
                tools[spec.name] = (int(item["toolset"]), spec)
            return cls(tools)
        except Exception as e:
            raise CorruptRecord(f"toolsets: {e}") from e


def listing_failed(reason: str) -> JSON:
    """The recorded value of a listing that failed for ``reason``."""
    return {"type": _TYPE, "failed": reason}


class Recorder:
    """The engine's recorded ``list_toolsets`` (``perform``), as ``set_up`` asks for it,
    keeping what it read: ``listed`` (empty until then, and for a run without toolsets)."""

    def __init__(self, perform: Callable[[], Awaitable[JSON]]) -> None:
        self.perform = perform
        self.listed = Listed()

    async def __call__(self) -> JSON:
        recorded = await self.perform()
        self.listed = Listed.of(recorded)
        return recorded


async def list_toolsets(spec: RunSpec, context: RunContext[Any]) -> JSON:
    """The recorded value of listing the run's toolsets (the effect, as ``Agent.run``
    lists them: ``toolset_specs``): each tool's toolset and spec, or why listing failed
    (a server down, not connected, two tools of one name). The tools listed are not
    kept: a call is made from the record."""
    listing = attrs.evolve(context, toolset_tools={})
    tools: list[JSON] = []
    try:
        for index, toolset in enumerate(spec.toolsets):
            known = len(listing.toolset_tools)
            await toolset_specs(attrs.evolve(spec, toolsets=(toolset,)), listing)
            for tool in list(listing.toolset_tools.values())[known:]:
                tools.append({"toolset": index, "spec": _CONVERTER.unstructure(tool.spec)})
    except RunError as e:
        return listing_failed(e.message)
    except Exception as e:  # two tools of one name, a tool name no provider accepts
        return listing_failed(f"listing the tools of the toolsets failed: {e}")
    return {"type": _TYPE, "tools": tools}


async def toolset_tool(spec: RunSpec, context: RunContext[Any], name: str, entry: JSON) -> None:
    """Put the live tool of the recorded toolset tool ``name`` (its ``Listed.entry``) in
    ``context.toolset_tools``, in the process about to execute a call of it: rebuilt from
    the recorded definition when its toolset can (``MCPToolset``), else as the toolset
    lists it now (a tool it no longer offers answers with a failed result). Nothing for
    the agent's own tools, nor when the tool is there already.

    Raises:
        CorruptRecord: ``entry`` is not a recorded entry.
    """
    if entry is None or name in spec.tools or name in context.toolset_tools:
        return
    try:
        toolset = spec.toolsets[int(entry["toolset"])]
        recorded = _CONVERTER.structure(entry["spec"], ToolSpec)
    except Exception as e:
        raise CorruptRecord(f"toolset tool {name!r}: {e}") from e
    rebuild = getattr(toolset, "_recorded_tool", None)
    if rebuild is not None:
        context.toolset_tools[name] = rebuild(recorded.definition)
        return
    try:
        offered = {t.name: t for t in await toolset.tools(context)}
    except Exception as e:  # the call crashes with it, as a tool that raises does
        context.toolset_tools[name] = _standing_in(recorded, e)
        return
    gone = ToolFailure(f"the tool {name} is no longer offered by {toolset!r}")
    context.toolset_tools[name] = offered.get(name) or _standing_in(recorded, gone)


def _standing_in(recorded: ToolSpec, error: Exception) -> Tool[Any]:
    """A tool of the recorded definition whose every call raises ``error`` (a
    ``ToolFailure``: a failed result the model reads; anything else: a crash)."""
    definition = recorded.definition

    async def call(context: RunContext[Any], arguments: dict[str, object]) -> Any:
        raise error

    return Tool.from_schema(definition.name, definition.description, definition.parameters, call)
