"""Running a plan's nodes: ready nodes concurrently (bounded), trigger rules, each outcome
persisted the moment it ends (DESIGN.md, "Multi-call plans"; seed 003 §2.3).

A node becomes *ready* once every node it depends on has ended (succeeded, failed or
skipped); its trigger rule then decides: ``all_success`` runs only when all of them
succeeded, ``none_failed`` when none failed, ``all_done`` whatever happened; otherwise it is
``skipped`` (and so are, in turn, its own ``all_success`` dependants). Every node's call goes
through the ordinary tool chain with the key run id + node id (:mod:`.node_key`).

On resume (:class:`Execution` built from a stored run) ended nodes stay as they are; a node
found ``running`` was cut off mid-call: it runs again when its tool is read-only for these
arguments or idempotent, else only its stored result may answer it (``outcome_unknown``
otherwise, and the saga runs).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes.models.base import ToolCall
from hermes.tools.base import ToolResult
from hermes.tools.pipeline import CallContext, ToolExecutor
from hermes.tools.plan_runs import NodeChange, NodeStatus, PlanRun, PlanRuns, RunError
from hermes.tools.plans.events import EventSink, PlanEvent
from hermes.tools.plans.node_key import NODE_KEY_EXTRA, REPLAY_ONLY_EXTRA
from hermes.tools.plans.spec import NodeSpec, PlanSpec
from hermes.tools.plans.templates import Ref, TemplateError, lookup_path, render
from hermes.tools.plans.writes import NodeWrites

__all__ = ["Execution", "node_result"]

ENDED: frozenset[NodeStatus] = frozenset({"succeeded", "failed", "skipped", "compensated"})
#: A read-only call that ends this soon commits ``running`` and its outcome together.
RUNNING_GRACE_S = 0.005


def node_result(output: Any) -> Any:
    """A tool's output as a node's result: a JSON text of an object or a list is parsed."""
    if isinstance(output, str) and output.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(output)
        except ValueError:
            return output
    return output


@dataclass(slots=True)
class Execution:
    """The live state of one run while this process holds it."""

    spec: PlanSpec
    run: PlanRun
    runs: PlanRuns
    executor: ToolExecutor
    context: CallContext
    on_event: EventSink
    concurrency: int
    status: dict[str, NodeStatus] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, RunError] = field(default_factory=dict)
    #: Succeeded nodes in the order they ended (the saga undoes them backwards).
    completed: list[str] = field(default_factory=list)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    _by_id: dict[str, NodeSpec] = field(default_factory=dict)
    _dependants: dict[str, list[str]] = field(default_factory=dict)
    _waiting: dict[str, int] = field(default_factory=dict)
    writes: NodeWrites = field(init=False)
    _tasks: set[asyncio.Task[str]] = field(default_factory=set)
    _limit: asyncio.Semaphore = field(default_factory=asyncio.Semaphore)
    _idle: asyncio.Event = field(default_factory=asyncio.Event)
    #: What stopped the run (the store's error, a lost lease), raised by ``execute``.
    _failure: BaseException | None = None

    def __post_init__(self) -> None:
        self.writes = NodeWrites(self.runs, self.run.run_id, self.run.token)
        self._by_id = {node.id: node for node in self.spec.nodes}
        self._dependants = {node.id: [] for node in self.spec.nodes}
        for node in self.spec.nodes:
            for dep in dict.fromkeys(node.depends_on):
                self._dependants[dep].append(node.id)
        stored = self.run.nodes
        for node in self.spec.nodes:
            held = stored.get(node.id)
            self.status[node.id] = held.status if held is not None else "pending"
            if held is not None and held.status in ("succeeded", "compensated"):
                self.results[node.id] = held.result
            if held is not None and held.error is not None:
                self.errors[node.id] = held.error
        ended = sorted(
            (n for n in stored.values() if n.status == "succeeded" and n.finished_at is not None),
            key=lambda n: (n.finished_at or 0.0, n.node_id),
        )
        self.completed = [n.node_id for n in ended]
        for node in self.spec.nodes:
            self._waiting[node.id] = sum(
                1 for dep in dict.fromkeys(node.depends_on) if self.status[dep] not in ENDED
            )

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def token(self) -> int:
        return self.run.token

    def node_error(self, node_id: str) -> RunError | None:
        """Why ``node_id`` failed, if it did."""
        return self.errors.get(node_id)

    async def execute(self) -> None:
        """Run every node that has not ended yet, until none is left or the run is cancelled
        (then the nodes not started are skipped). Raises what the store raises
        (``LeaseLostError`` when another runner took the run over) after the running calls
        were stopped."""
        self._limit = asyncio.Semaphore(self.concurrency)
        for node in self.spec.nodes:
            if self._waiting[node.id] == 0 and self._open(node.id):
                self._launch(node.id)
        try:
            if self._tasks:
                await self._idle.wait()
        except BaseException:  # every node stopped, then re-raised
            await self._stop_all()
            raise
        if self._failure is not None:
            await self._stop_all()
            raise self._failure

    def _launch(self, node_id: str) -> None:
        task = asyncio.create_task(self._advance(node_id, self._limit))
        self._tasks.add(task)
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[str]) -> None:
        """A node's task ended: release its dependants (each completion costs only its own
        edges — no wait over every running task)."""
        self._tasks.discard(task)
        if task.cancelled() or task.exception() is not None:
            if self._failure is None:
                self._failure = task.exception() or asyncio.CancelledError()
            self._idle.set()
            return
        if self._failure is None:
            for node_id in self._released_by(task.result()):
                self._launch(node_id)
        if not self._tasks:
            self._idle.set()

    async def _stop_all(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _open(self, node_id: str) -> bool:
        return self.status[node_id] in ("pending", "running")

    def _released_by(self, ended: str) -> list[str]:
        ready: list[str] = []
        for dependant in self._dependants[ended]:
            self._waiting[dependant] -= 1
            if self._waiting[dependant] == 0 and self._open(dependant):
                ready.append(dependant)
        return ready

    async def _advance(self, node_id: str, limit: asyncio.Semaphore) -> str:
        """Decide and run (or skip) one ready node; its id once it ended."""
        node = self._by_id[node_id]
        if self.status[node_id] == "pending" and (
            self.cancelled.is_set() or not self._triggered(node)
        ):
            await self._set(node_id, "skipped")
            return node_id
        async with limit:
            if self.cancelled.is_set() and self.status[node_id] == "pending":
                await self._set(node_id, "skipped")
            else:
                await self._run_node(node)
        return node_id

    def _triggered(self, node: NodeSpec) -> bool:
        upstream = [self.status[dep] for dep in node.depends_on]
        match node.when:
            case "all_success":
                return all(s == "succeeded" for s in upstream)
            case "none_failed":
                return all(s != "failed" for s in upstream)
            case "all_done":
                return True

    async def _run_node(self, node: NodeSpec) -> None:
        resumed = self.status[node.id] == "running"
        try:
            arguments = render(node.params, self.resolver())
        except TemplateError as exc:
            if resumed:
                await self._set(node.id, "running")
            await self._fail(node.id, RunError("template_error", f"node {node.id}: {exc}"))
            return
        extras = {**self.context.extras, NODE_KEY_EXTRA: f"{self.run_id}/{node.id}"}
        if resumed and self.cancelled.is_set():
            message = f"node {node.id} was cut off mid-call and the run was cancelled"
            await self._set(node.id, "running")
            await self._fail(node.id, RunError("cancelled", message))
            return
        if resumed and not self._safe_to_repeat(node, arguments):
            extras[REPLAY_ONLY_EXTRA] = True
        call_id = f"{self.run_id}:{node.id}"
        if self._read_only(node, arguments):
            await self._run_read_only(node, call_id, arguments, extras)
            return
        await self._set(node.id, "running")  # on disk before anything can take effect
        result = await self._call(node.tool, call_id, arguments, extras)
        await self._apply([self._outcome(node.id, result)])

    async def _run_read_only(
        self, node: NodeSpec, call_id: str, arguments: dict[str, Any], extras: dict[str, Any]
    ) -> None:
        """A read-only call need not be ``running`` on disk before it starts (cut off before
        that, it is pending on resume and simply runs again): one that ends within
        :data:`RUNNING_GRACE_S` commits ``running`` and its outcome together."""
        call = asyncio.ensure_future(self._call(node.tool, call_id, arguments, extras))
        try:
            done, _ = await asyncio.wait({call}, timeout=RUNNING_GRACE_S)
            if done:
                await self._apply(
                    [NodeChange(node.id, "running"), self._outcome(node.id, call.result())]
                )
                return
            await self._set(node.id, "running")
            result = await call
        except BaseException:  # the call cancelled, then re-raised
            call.cancel()
            raise
        await self._apply([self._outcome(node.id, result)])

    def _read_only(self, node: NodeSpec, arguments: Mapping[str, Any]) -> bool:
        tool = self.executor.registry.get(node.tool)
        return tool is not None and not tool.has_side_effects(arguments)

    def _safe_to_repeat(self, node: NodeSpec, arguments: Mapping[str, Any]) -> bool:
        tool = self.executor.registry.get(node.tool)
        if tool is None:
            return True  # nothing to repeat: the call is refused as unknown_tool
        return tool.idempotency_key is not None or not tool.has_side_effects(arguments)

    async def _call(
        self, tool: str, call_id: str, arguments: dict[str, Any], extras: dict[str, Any]
    ) -> ToolResult:
        ctx = CallContext(
            session_id=self.context.session_id,
            user_id=self.context.user_id,
            trace_id=self.context.trace_id,
            call_id=call_id,
            workspace=self.context.workspace,
            approved=self.context.approved,
            extras=extras,
        )
        return await self.executor.run(ToolCall(id=call_id, name=tool, arguments=arguments), ctx)

    def _outcome(self, node_id: str, result: ToolResult) -> NodeChange:
        if result.ok:
            return NodeChange(node_id, "succeeded", result=node_result(result.output))
        error = result.error
        kind, message = (error.type, error.message) if error is not None else ("error", "failed")
        return NodeChange(node_id, "failed", error=RunError(kind, message))

    async def _fail(self, node_id: str, error: RunError) -> None:
        await self._set(node_id, "failed", error=error)

    async def _set(
        self, node_id: str, status: NodeStatus, *, result: Any = None, error: RunError | None = None
    ) -> None:
        await self._apply([NodeChange(node_id, status, result, error)])

    async def _apply(self, changes: list[NodeChange]) -> None:
        """Commit ``changes`` (one batch), then act on them: states, results, events."""
        await self.writes.write_many(changes)
        for change in changes:
            node_id, status = change.node_id, change.status
            self.status[node_id] = status
            if status == "succeeded":
                self.results[node_id] = change.result
                self.completed.append(node_id)
            if change.error is not None:
                self.errors[node_id] = change.error
            self.on_event(
                PlanEvent("node", self.run_id, node_id=node_id, status=status, error=change.error)
            )

    def resolver(self) -> Callable[[Ref], Any]:
        """What renders templates against this run's params and results (nodes, outputs,
        the saga): ``TemplateError`` for a node without a result or a missing path."""

        def resolve(ref: Ref) -> Any:
            if ref.node is None:
                return lookup_path(self.run.params, ref, what="the plan's params")
            if ref.node not in self.results:
                state = self.status.get(ref.node, "unknown")
                raise TemplateError(f"{ref.text}: node {ref.node} has no result (it is {state})")
            return lookup_path(self.results[ref.node], ref, what=f"the result of node {ref.node}")

        return resolve

    async def call(
        self, tool: str, call_id: str, arguments: dict[str, Any], key: str
    ) -> ToolResult:
        """A call of the chain for this run under ``key`` (the saga's compensations)."""
        return await self._call(
            tool, call_id, arguments, {**self.context.extras, NODE_KEY_EXTRA: key}
        )
