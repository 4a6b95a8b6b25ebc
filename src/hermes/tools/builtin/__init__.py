"""Built-in tools, by name: ``calculator``, ``current_time`` (more arrive as modules here).

Adding a built-in is adding one module to this package: every ``@tool`` function defined in a
public module (name without a leading underscore) is collected, in module-name order. Two
built-ins with one name are a programming error and fail at import.

Being a built-in makes a tool available by name, not offered: an Agent offers only the tools it
is given (``calculator`` and ``current_time`` by default). The memory tools (``remember``,
``recall_memories``, ``forget_memory``) are not built-ins: memory owns them
(:mod:`hermes.memory.tools`, bound to one memory); the agent adds them itself when it has a
long-term memory (``Agent(memory=...)``) and binds their names to its memory. The notes
tools (``note_add`` …) are built-ins whose module-level objects keep their entries in this
process; an agent offering them binds them to its durable notes stores
(:func:`hermes.tools.builtin.notes.notes_tools`).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType

from hermes.tools.base import Tool
from hermes.tools.decorator import TOOL_ATTRIBUTE

__all__ = ["BUILTIN_TOOLS", "get_builtin"]


def _collect() -> dict[str, Tool]:
    found: dict[str, Tool] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            attached = getattr(value, TOOL_ATTRIBUTE, None)
            defined_here = getattr(value, "__module__", None) == module.__name__
            if not isinstance(attached, Tool) or not defined_here:
                continue  # not a tool, or a tool imported from elsewhere
            if attached.name in found and found[attached.name] is not attached:
                raise RuntimeError(f"two built-in tools are named {attached.name!r}")
            found[attached.name] = attached
    return found


#: Every built-in tool by name (read-only).
BUILTIN_TOOLS: Mapping[str, Tool] = MappingProxyType(_collect())


def get_builtin(name: str) -> Tool | None:
    """The built-in tool called ``name``, or ``None``."""
    return BUILTIN_TOOLS.get(name)
