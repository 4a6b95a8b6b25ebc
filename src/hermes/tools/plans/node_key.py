"""Every plan node's call carries the key run id + node id (DESIGN.md, "Multi-call plans").

:class:`PlanNodeStep` is one more step of the ordinary tool chain (before ``idempotency``):
for a call whose context carries :data:`NODE_KEY_EXTRA` and whose tool may have side effects,
it claims that key in the same idempotency records as the ``idempotency`` step, replays a
stored result, or runs the call and stores its result. So a node that finished its call but
died before its outcome was persisted is answered from the record on resume instead of
paying twice, and a node started twice with one key runs once. The key reaches the tool too
(``ToolContext.extras["idempotency_key"]``): a tool talking to an API with idempotency keys of
its own (payments, bookings) can pass it on.

:data:`REPLAY_ONLY_EXTRA` asks for the record only: a node of a tool with side effects cut
off mid-call is replayed when its result was stored, else refused with ``outcome_unknown``
without running (the saga follows).
"""

from __future__ import annotations

from hermes.tools.base import Tool, ToolResult
from hermes.tools.pipeline import Call, Next, ToolExecutor
from hermes.tools.pipeline.idempotency import IdempotencyStep
from hermes.tools.policies import idempotency_key

__all__ = ["NODE_KEY_EXTRA", "REPLAY_ONLY_EXTRA", "PlanNodeStep", "with_node_keys"]

#: The ``CallContext.extras`` key holding a node's key (``RUN_ID/NODE_ID``).
NODE_KEY_EXTRA = "idempotency_key"
#: The ``CallContext.extras`` key asking for a replay of the node's record, never a run.
REPLAY_ONLY_EXTRA = "plan_replay_only"
STEP_NAME = "plan_node_key"


class PlanNodeStep(IdempotencyStep):
    """The idempotency step keyed by the plan node instead of by the arguments."""

    name = STEP_NAME

    def applies(self, tool: Tool) -> bool:
        return tool.side_effects is not False

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        node_key = call.context.extras.get(NODE_KEY_EXTRA)
        if not isinstance(node_key, str) or not call.tool.has_side_effects(call.arguments):
            return await next(call)
        key = idempotency_key(call.context.user_id, f"plan-node:{node_key}")
        replay_only = call.context.extras.get(REPLAY_ONLY_EXTRA) is True
        return await self.run_keyed(call, next, key, run_if_new=not replay_only)


def with_node_keys(executor: ToolExecutor) -> ToolExecutor:
    """``executor`` with a :class:`PlanNodeStep` in its chain (added once, before the
    ``idempotency`` step, on the same records; the in-process ones of its policy state when
    it has no idempotency step). Calls without a node key pass it untouched."""
    if executor.step(STEP_NAME) is not None:
        return executor
    held = executor.step("idempotency")
    if isinstance(held, IdempotencyStep):
        step = PlanNodeStep(held.records, held.key_locks)
        executor.insert(step, before="idempotency")
    else:
        state = executor.state
        executor.insert(PlanNodeStep(state.idempotency, state.key_locks), before="run")
    return executor
