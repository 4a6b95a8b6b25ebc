"""Result reuse (``cache_ttl``): an identical successful call within the TTL is answered
with the earlier result, without running the tool. The in-process cache serves it here; an
agent with a memory replaces this step with memory's (``hermes.memory.step``: the tiers,
surviving a restart) — one cache, never two."""

from __future__ import annotations

from hermes.tools.base import Tool, ToolResult
from hermes.tools.pipeline.call import Call, Next
from hermes.tools.pipeline.results import reused
from hermes.tools.policies.cache import CachedResult, ResultCache

__all__ = ["CacheStep"]


class CacheStep:
    """Scoped like the memory tiers: per user, an anonymous caller per session, and a call
    with neither is never cached (two anonymous people must not share results); keyed on the
    function's identity too (two agents in one process may each have a tool of one name)."""

    name = "cache"

    def __init__(self, cache: ResultCache) -> None:
        self.cache = cache

    def applies(self, tool: Tool) -> bool:
        return tool.cache_ttl is not None

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        ttl = call.tool.cache_ttl
        ctx = call.context
        if ttl is None or (not ctx.user_id and not ctx.session_id):
            return await next(call)
        scope = f"user:{ctx.user_id}" if ctx.user_id else f"session:{ctx.session_id}"
        key = (call.tool.name, id(call.tool.fn), scope, call.arguments_json())
        hit: CachedResult | None = self.cache.get(key)
        call.mark("cache")
        if hit is not None:
            return reused(hit.output(), hit.summary, call.start)
        result = await next(call)
        if result.ok:
            self.cache.put(key, result.output, result.summary, ttl)
        return result
