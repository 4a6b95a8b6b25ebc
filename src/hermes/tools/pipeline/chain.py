"""The tool executor: one chain of steps every call runs through (DESIGN "Layers → tools").

::

    validate → authorize → approval → cache → idempotency → breaker → run (timeout + retry
      → process sandbox → parse → output schema + post_validate) → ToolResult

The chain is built once per executor (an agent has one), from steps that were given their
dependencies when they were made; per tool, only the steps that apply to it are linked (a
plain tool's chain is validate → run, with authorize when there is an authorizer), and that
chain is kept. Every outcome is a :class:`ToolResult` — a failed call is data the model can
react to (DESIGN principle 2, seed 001 §3.2); only cancellation of the calling task, and with
``signals="raise"`` an :class:`~hermes.tools.pipeline.signals.ApprovalRequired`, leave here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from time import perf_counter
from typing import Literal

from hermes.models.base import ToolCall
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolContext, ToolResult
from hermes.tools.pipeline.approval import ApprovalStep
from hermes.tools.pipeline.authorize import AuthorizeStep, Checker
from hermes.tools.pipeline.breaker import BreakerStep
from hermes.tools.pipeline.cache import CacheStep
from hermes.tools.pipeline.call import Call, Next, Step, StepTimer
from hermes.tools.pipeline.context import CallContext
from hermes.tools.pipeline.idempotency import IdempotencyStep
from hermes.tools.pipeline.idempotency_records import IdempotencyRecords, RecordsPerWorkspace
from hermes.tools.pipeline.results import refused
from hermes.tools.pipeline.run import RunStep
from hermes.tools.pipeline.signals import RetryWith, ToolSignal
from hermes.tools.pipeline.validate import ValidateStep
from hermes.tools.policies import DEFAULT_POLICY_STATE, PolicyState
from hermes.tools.registry import ToolRegistry

__all__ = ["STEP_ORDER", "SignalMode", "ToolExecutor", "default_steps"]

logger = get_logger("tools")

#: The built-in steps, in chain order.
STEP_ORDER = ("validate", "authorize", "approval", "cache", "idempotency", "breaker", "run")
#: What ``run`` does with a signal no step turned into a result: ``result`` — the result the
#: signal stands for (``approval_required``…); ``raise`` — raise it to the caller (the agent,
#: which asks a person). A ``RetryWith`` is always a result: the model is who it talks to.
SignalMode = Literal["result", "raise"]
#: How many registered names an ``unknown_tool`` error lists (bounded for huge registries).
_MAX_LISTED_TOOLS = 20
#: Chains kept per executor (a registry that keeps making new tools must not grow it forever).
_MAX_CHAINS = 4096


def default_steps(
    state: PolicyState,
    *,
    authorizer: Checker | None = None,
    idempotency: IdempotencyRecords | RecordsPerWorkspace | None = None,
) -> list[Step]:
    """The built-in chain: each step with its dependency (the authorizer, the breaker board,
    the result cache, the idempotency records — ``idempotency``, else the in-process ones of
    ``state`` — and the per-key locks of ``state``). No authorizer (or a disabled one): no
    authorize step."""
    steps: list[Step] = [ValidateStep()]
    if authorizer is not None and getattr(authorizer, "enabled", True):
        steps.append(AuthorizeStep(authorizer))
    steps += [
        ApprovalStep(),
        CacheStep(state.cache),
        IdempotencyStep(
            idempotency if idempotency is not None else state.idempotency, state.key_locks
        ),
        BreakerStep(state.breakers),
        RunStep(),
    ]
    return steps


class ToolExecutor:
    """Runs tool calls of ``registry`` through the chain of ``steps`` (default:
    :func:`default_steps` of ``state``, ``authorizer`` and ``idempotency``).

    ``state`` holds the breakers, the result cache, the per-key locks and the in-process
    idempotency records (default: the process-wide one). ``idempotency``: where the keys of
    ``idempotency_key`` tools live (:mod:`hermes.tools.pipeline.idempotency_records`) — one
    set of records, or :class:`RecordsPerWorkspace`; ``None``: the in-process records of
    ``state``, exactly-once within this process but not durable (an ``Agent``'s executor gets
    durable SQLite records from the composition root). ``max_output_chars`` bounds a text
    output unless the tool sets its own.
    Add a step of your own with :meth:`insert` (before the first call, or any time: the chains
    are rebuilt), swap one with :meth:`replace`.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        state: PolicyState | None = None,
        authorizer: Checker | None = None,
        idempotency: IdempotencyRecords | RecordsPerWorkspace | None = None,
        max_output_chars: int = 20_000,
        steps: Iterable[Step] | None = None,
    ) -> None:
        self.registry = registry
        self.state = state if state is not None else DEFAULT_POLICY_STATE
        self.max_output_chars = max_output_chars
        built = (
            default_steps(self.state, authorizer=authorizer, idempotency=idempotency)
            if steps is None
            else list(steps)
        )
        self._steps: list[Step] = []
        for step in built:
            self._check(step)
            self._steps.append(step)
        if not self._steps or self._steps[-1].name != "run":
            raise ValueError("the last step of a tool pipeline must be the run step")
        self._chains: dict[int, tuple[Tool, Next]] = {}

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps, in chain order."""
        return tuple(self._steps)

    def steps_for(self, tool: Tool) -> tuple[str, ...]:
        """The names of the steps a call of ``tool`` goes through (the others do not apply)."""
        return tuple(s.name for s in self._steps if _applies(s, tool))

    def step(self, name: str) -> Step | None:
        """The step called ``name``, or None."""
        return next((s for s in self._steps if s.name == name), None)

    def insert(self, step: Step, *, before: str | None = None, after: str | None = None) -> None:
        """Add ``step`` before or after the step called so (default: just before ``run``).
        ``ValueError`` for an unknown place, a second step of one name, or after ``run``."""
        self._check(step)
        if (before is None) == (after is None) and before is not None:
            raise ValueError("insert a step either before or after another one, not both")
        anchor = before if before is not None else after if after is not None else "run"
        index = self._index(anchor) + (1 if after is not None else 0)
        if index >= len(self._steps):
            raise ValueError("no step can come after the run step: it ends every chain")
        self._steps.insert(index, step)
        self._chains.clear()

    def replace(self, name: str, step: Step) -> Step:
        """Put ``step`` in the place of the step called ``name``; returns the one replaced."""
        index = self._index(name)
        old = self._steps[index]
        if step.name != old.name:
            self._check(step)
        if name == "run" and step.name != "run":
            raise ValueError("the run step can only be replaced by a step named 'run'")
        self._steps[index] = step
        self._chains.clear()
        return old

    async def run(
        self,
        call: ToolCall,
        context: CallContext | ToolContext,
        *,
        signals: SignalMode = "result",
        max_output_chars: int | None = None,
    ) -> ToolResult:
        """Run ``call``; never raises for a failure of the call (see the module docstring)."""
        start = perf_counter()
        tool = self.registry.get(call.name)
        if tool is None:
            return refused("unknown_tool", _unknown_tool_message(call.name, self.registry), start)
        ctx = (
            context if isinstance(context, CallContext) else CallContext.from_tool_context(context)
        )
        if not ctx.call_id:  # the call's own id, for the steps and the tool
            ctx = ctx.for_call(call.id)
        timer = StepTimer(start) if logger.is_enabled("DEBUG") else None
        limit = self.max_output_chars if max_output_chars is None else max_output_chars
        travelling = Call(tool, call, ctx, limit=limit, start=start, timer=timer)
        try:
            result = await self._chain(tool)(travelling)
        except ToolSignal as signal:
            if signals == "raise" and not isinstance(signal, RetryWith):
                raise
            result = refused(signal.error_type, signal.message, start)
        if timer is not None:
            logger.debug(
                "tool_pipeline",
                tool=call.name,
                call_id=call.id,
                ok=result.ok,
                error_type=result.error.type if result.error is not None else None,
                attempts=result.attempts,
                cached=result.cached,
                cost_ms=round((perf_counter() - start) * 1000, 3),
                steps=timer.costs,
            )
        return result

    def _chain(self, tool: Tool) -> Next:
        held = self._chains.get(id(tool))
        if held is not None and held[0] is tool:
            return held[1]
        chain = _link([s for s in self._steps if _applies(s, tool)])
        if len(self._chains) >= _MAX_CHAINS:
            self._chains.clear()
        self._chains[id(tool)] = (tool, chain)  # the tool held: its id is not reused meanwhile
        return chain

    def _index(self, name: str) -> int:
        for i, step in enumerate(self._steps):
            if step.name == name:
                return i
        known = ", ".join(s.name for s in self._steps)
        raise ValueError(f"no step named {name!r} in this pipeline (steps: {known})")

    def _check(self, step: Step) -> None:
        name = getattr(step, "name", None)
        if not isinstance(name, str) or not name or not callable(step):
            raise TypeError(
                "a pipeline step needs a non-empty name and an async (call, next) method, "
                f"got {step!r}"
            )
        if any(s.name == name for s in self._steps):
            raise ValueError(f"the pipeline has a step named {name!r} already")


def _applies(step: Step, tool: Tool) -> bool:
    applies = getattr(step, "applies", None)
    return True if applies is None else bool(applies(tool))


def _link(steps: Sequence[Step]) -> Next:
    """``steps`` as one callable: each step's ``next`` is the rest of the chain."""
    handler: Next = _past_the_end
    for step in reversed(steps):
        handler = _bind(step, handler)
    return handler


def _bind(step: Step, rest: Next) -> Next:
    return lambda call: step(call, rest)


async def _past_the_end(call: Call) -> ToolResult:
    message = (
        f"the pipeline of tool {call.tool.name!r} ended without running it "
        "(a step called next after the run step)"
    )
    return refused("execution_error", message, call.start)


def _unknown_tool_message(name: str, registry: ToolRegistry) -> str:
    names = registry.names()
    shown = ", ".join(names[:_MAX_LISTED_TOOLS])
    if len(names) > _MAX_LISTED_TOOLS:
        shown += f", … ({len(names) - _MAX_LISTED_TOOLS} more)"
    return f"no tool named {name!r}; available: {shown or '(none)'}"
