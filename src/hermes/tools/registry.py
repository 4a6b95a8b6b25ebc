"""The tool registry: the only tools a model can call (seed 002 §2.3: unknown names never run)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from hermes.models.base import ToolSpec
from hermes.tools.base import Tool
from hermes.tools.decorator import as_tool

__all__ = ["ToolRegistry"]


class ToolRegistry:
    """Tools by name, in registration order, with the specs offered to a model cached.

    Not thread-safe for writes: register tools at start-up (or from the event loop's thread).
    """

    __slots__ = ("__weakref__", "_spec_cache", "_specs", "_tools")

    def __init__(self, tools: Iterable[Any] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._spec_cache: dict[str, ToolSpec] = {}
        self._specs: list[ToolSpec] | None = None
        for item in tools:
            self.register(item)

    def register(self, tool_or_fn: Any, *, replace: bool = False) -> Tool:
        """Add a Tool, a ``@tool`` function or a plain typed callable; returns the Tool.

        A second tool with the same name raises ``ValueError`` unless ``replace=True``.
        """
        new = as_tool(tool_or_fn)
        existing = self._tools.get(new.name)
        if existing is not None and not replace and existing is not new:
            raise ValueError(
                f"a tool named {new.name!r} is already registered (pass replace=True to swap it)"
            )
        self._tools[new.name] = new
        self._spec_cache.pop(new.name, None)
        self._specs = None
        return new

    def unregister(self, name: str) -> Tool | None:
        """Remove a tool (e.g. an MCP server went away); returns it, or ``None`` if absent."""
        removed = self._tools.pop(name, None)
        if removed is not None:
            self._spec_cache.pop(name, None)
            self._specs = None
        return removed

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def specs(self, names: Iterable[str] | None = None) -> list[ToolSpec]:
        """What a model is offered: all tools, or the named ones (unknown names raise
        ``ValueError``). The full list is cached until the next register/unregister; treat it
        as read-only."""
        if names is None:
            if self._specs is None:
                self._specs = [self._spec(tool) for tool in self._tools.values()]
            return self._specs
        wanted = list(names)
        unknown = [n for n in wanted if n not in self._tools]
        if unknown:
            raise ValueError(f"unknown tools: {', '.join(unknown)}")
        return [self._spec(self._tools[n]) for n in wanted]

    def _spec(self, tool: Tool) -> ToolSpec:
        spec = self._spec_cache.get(tool.name)
        if spec is None:
            spec = ToolSpec(tool.name, tool.description, tool.parameters)
            self._spec_cache[tool.name] = spec
        return spec

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __repr__(self) -> str:
        return f"ToolRegistry({', '.join(self._tools)})"
