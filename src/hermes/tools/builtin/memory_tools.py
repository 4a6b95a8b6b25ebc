"""The names of memory's tools, for the executor's ``_is_memory_tool`` only.

The tools themselves live in :mod:`hermes.memory.tools` (memory owns its tools; DESIGN.md,
"Layers": tools/ never imports memory), which defines the same names; this module defines no
tool and goes away once the executor's memory recording is a pipeline step memory contributes.
"""

from __future__ import annotations

__all__ = ["MEMORY_TOOLS"]

#: The tools an agent with a long-term memory offers (``hermes.memory.tools.MEMORY_TOOLS``).
MEMORY_TOOLS = ("remember", "recall_memories", "forget_memory")
