"""Memory's step in the tool pipeline (DESIGN "Layers → memory": memory contributes one step;
``tools/`` never imports memory). An agent with a memory that keeps tool calls puts it in the
place of the in-process cache step, so one cache serves ``cache_ttl``.

Every call that reaches it (one that passed validation, authorization and the approval gate)
is recorded in the L2 index and the L3 archive, and a ``cache_ttl`` tool's identical call
within its TTL is answered from L1 → L2 + L3: scoped per user (per session without one),
matched on the tool's identity too (its fingerprint of name, schemas and function, recorded as
the L2 row's ``tool_version`` beside an ``input_hash`` of the arguments alone: a changed tool
never reuses the old one's results), and surviving a restart (the fingerprint names the
function by module and qualified name). The memory tools are recorded in L2 with their
output's hash only, never archived in L3 (their output is the user's memories, which
forgetting must erase).

Recording (an L3 write, an L2 commit) measured ~0.7 ms p50 per call on the 2-vCPU dev VM —
many times a plain call — so with a ``background`` spawner it runs off the call's path. The
price is a window in which a crash loses the record of calls that already returned (the last
millisecond or so); the call's result itself is never lost (it is in the session log).
Without a spawner the call awaits its record.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol

from hermes.memory.tiers import CallKey, ToolMemory, tool_fingerprint
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolResult
from hermes.tools.pipeline import Call, Next, reused

__all__ = ["MEMORY_TOOLS", "MEMORY_TOOLSET", "Background", "MemoryStep"]

logger = get_logger("memory")

#: The toolset of the memory tools; a tool of it (or of one of their names) is not archived.
MEMORY_TOOLSET = "memory"
#: The tools an agent with a long-term memory offers (``hermes.memory.tools`` builds them; the
#: names live here, where the step that must recognise them is, so neither imports the other).
MEMORY_TOOLS = ("remember", "recall_memories", "forget_memory")
#: Fingerprints of the tools seen, by id (the Tool kept alive beside it, so an id is never
#: reused while its entry lives); cleared when it grows past the bound.
_MAX_FINGERPRINTS = 4096


class Background(Protocol):
    """Where recordings run off the call's path (``hermes.memory.facade.Memory`` fits)."""

    def spawn(self, work: Coroutine[Any, Any, Any], *, what: str) -> None: ...


class MemoryStep:
    """Reuse (``cache_ttl``) from the tiers, then the record of what happened."""

    name = "cache"  # it takes the cache step's place: one cache serves cache_ttl

    def __init__(self, tiers: ToolMemory, background: Background | None = None) -> None:
        self.tiers = tiers
        self.background = background
        self._fingerprints: dict[int, tuple[Tool, str]] = {}

    def applies(self, tool: Tool) -> bool:
        return True  # every call is recorded

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        ctx, tool = call.context, call.tool
        try:
            key = self.tiers.key(
                tool.name,
                call.arguments,
                user_id=ctx.user_id,
                session_id=ctx.session_id,
                tool_version=self._fingerprint(tool),
            )
        except Exception as exc:  # noqa: BLE001 - memory must never stop a call: run it without
            logger.error("tool_memory_key_failed", tool=tool.name, error_type=type(exc).__name__)
            return await next(call)
        result = await self._reused(call, key) if tool.cache_ttl is not None else None
        if result is None:
            result = await next(call)
        record = self.tiers.record_call(
            key,
            result,
            reuse_ttl=tool.cache_ttl,
            call_id=ctx.call_id,
            trace_id=ctx.trace_id,
            archive=not _is_memory_tool(tool),
        )
        if self.background is not None:
            self.background.spawn(record, what="tool_record")
        else:
            try:
                await record
            except Exception as exc:  # noqa: BLE001 - the call happened: its result still goes back
                logger.error("tool_record_failed", tool=tool.name, error_type=type(exc).__name__)
        call.mark("memory")
        return result

    async def _reused(self, call: Call, key: CallKey) -> ToolResult | None:
        assert call.tool.cache_ttl is not None
        try:
            hit = await self.tiers.find_reusable(key, ttl=call.tool.cache_ttl)
        except Exception as exc:  # noqa: BLE001 - a broken tier is a miss, never a failed call
            logger.error("tool_reuse_failed", tool=call.tool.name, error_type=type(exc).__name__)
            hit = None
        call.mark("cache")
        return None if hit is None else reused(hit.output, hit.summary, call.start)

    def _fingerprint(self, tool: Tool) -> str:
        """The tool's identity, the ``tool_version`` of its calls: its name, parameters and
        output schemas and where its function lives, computed once per tool."""
        held = self._fingerprints.get(id(tool))
        if held is not None and held[0] is tool:
            return held[1]
        fn = tool.fn
        where = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
        value = tool_fingerprint(tool.name, tool.parameters, [tool.output_schema, where])
        if len(self._fingerprints) >= _MAX_FINGERPRINTS:
            self._fingerprints.clear()
        self._fingerprints[id(tool)] = (tool, value)
        return value


def _is_memory_tool(tool: Tool) -> bool:
    # By name too: a program may register its own tool under a memory tool's name (the test
    # suite's stand-ins do); its output is taken to be memory text, and not archived either.
    return tool.toolset == MEMORY_TOOLSET or tool.name in MEMORY_TOOLS
