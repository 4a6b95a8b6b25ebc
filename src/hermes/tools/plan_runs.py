"""The record of multi-call plan runs: the ``PlanRuns`` protocol (DESIGN.md, "Multi-call plans"
and "Public contracts", Plans; seed 003 §2.3: a DAG of tool calls, every node's state visible).

Beside the plan runner (``plans.py`` of this package: the DAG on the tools chain) because it is
the runner's memory: a run is created with every node ``pending``, each node's outcome is
persisted the moment it ends, and a run cut off by a dead worker is *claimed* again and
resumed (``hermes plan resume RUN_ID``, or a worker that finds it orphaned)::

    claim = await runs.create("book-meeting", spec=..., params=..., node_ids=["n1", "n2"], ...)
    await runs.set_node(claim.run.run_id, claim.token, "n1", "running")
    await runs.set_node(claim.run.run_id, claim.token, "n1", "succeeded", result={...})
    ...
    await runs.finish(claim.run.run_id, claim.token, status="succeeded", outputs={...})

The contract every backend keeps (SQLite: ``hermes.storage.sqlite.plan_runs``; a PostgreSQL
backend: a run row and one row per node; every write checks the run's token and status in the
same transaction, ``UPDATE … WHERE run_id = ? AND token = ?`` or ``SELECT … FOR UPDATE`` — a
lease row, not a session-level advisory lock):

- **One holder.** A run is held by one claim at a time: the creator's, then — once its lease
  passed without renewal or it was released — whoever :meth:`~PlanRuns.claim` s it first.
  However many workers claim one run at once, exactly one gets ``claimed``; the others get
  ``held`` (or ``finished``). Each claim has a larger ``token``.
- **Fencing.** Every write (``set_node``, ``record_compensation``, ``finish``, ``renew``,
  ``release``) carries the token; one that is not the run's standing token, or a write to a
  finished run, raises ``LeaseLostError`` and writes nothing. A holder whose lease passed may
  still write while nobody has claimed the run since.
- **Node states.** A node moves only along :data:`NODE_TRANSITIONS` (else
  ``NodeTransitionError``): ``pending → running | skipped | failed``; ``running → running``
  (run again on resume) ``| succeeded | failed``; compensation of a ``succeeded`` node
  (:meth:`~PlanRuns.record_compensation`) makes it ``compensated``, or keeps it ``succeeded``
  with ``compensation_error``. Every transition is committed at once (``set_nodes``: several
  in one commit, all or none): a crash loses nothing that ended.
- **Results by archive hash.** A node's result is kept in the backend's L3 archive (the
  content-addressed blob store of ``hermes.memory.archive``) and its record holds the blob's
  hash (``NodeRun.result_hash``). The blob is written *before* the commit that names it, so a
  crash leaves at worst a blob no record names, never a record naming a missing blob. Every
  read gives ``result`` back exactly as it was written (the JSON value, object keys in their
  order); a blob that is missing, corrupt or not this node's raises
  :class:`PlanResultLostError` naming the run and the node — never ``None`` in its place.
  Records written before results moved to the archive (the result inline in the record)
  read as they always did. A backend may keep a small result in the record itself (SQLite:
  up to 1,000 bytes of JSON, less than a file costs to create; ``hermes.storage.sqlite.
  plan_results``), and one with no directory to write beside (a ``:memory:`` database) keeps
  every result there; ``result_hash`` is then ``None``.
- **Finishing.** ``finish`` takes ``succeeded``, ``failed`` or ``compensated`` (with the
  outputs or the run's error) and refuses while a node is ``running``; a finished run is
  immutable and can no longer be claimed (``finished``).
- **Cancel.** :meth:`~PlanRuns.request_cancel` marks the run (``cancel_requested_at``); the
  holder sees it on its next ``renew``/``get`` and stops, compensating as the saga says.
- Reads see every committed write at once, across workers; ``list_runs`` is newest first.
- :meth:`~PlanRuns.delete_user` removes a user's runs and their result blobs
  (``DELETE /v1/users/{id}`` erases a user everywhere: a run's params and results may hold
  what the user said). A blob belongs to one node of one run (it names them), so deleting it
  never takes another run's result.

Times are seconds since the epoch from the backend's clock (``clock=`` of the SQLite backend).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from hermes.errors import ErrorCode, InvalidInputError, NodeTransitionError, StoreError

#: How long a claim holds its run unless renewed.
DEFAULT_LEASE_SECONDS = 120.0
#: Longest plan name and node id a backend accepts (characters).
MAX_PLAN_NAME_LENGTH = 256
MAX_NODE_ID_LENGTH = 128

#: ``running`` until finished as ``succeeded``, ``failed`` or ``compensated`` (DESIGN.md).
PlanStatus = Literal["running", "succeeded", "failed", "compensated"]
FinalPlanStatus = Literal["succeeded", "failed", "compensated"]
NodeStatus = Literal["pending", "running", "succeeded", "failed", "skipped", "compensated"]
#: What :meth:`PlanRuns.claim` found: ``claimed`` (yours now), ``held`` (by a live lease
#: elsewhere), ``finished`` (nothing left to run).
PlanClaimOutcome = Literal["claimed", "held", "finished"]

#: The moves ``set_node`` allows (``compensated`` is reached through ``record_compensation``).
NODE_TRANSITIONS: Mapping[NodeStatus, frozenset[NodeStatus]] = {
    "pending": frozenset({"running", "skipped", "failed"}),
    "running": frozenset({"running", "succeeded", "failed"}),
    "succeeded": frozenset(),
    "failed": frozenset(),
    "skipped": frozenset(),
    "compensated": frozenset(),
}


@dataclass(frozen=True, slots=True)
class RunError:
    """Why a node or a run failed: a stable ``type`` (a tool's error type, ``outcome_unknown``,
    ``cancelled`` …) and one sentence."""

    type: str
    message: str


@dataclass(frozen=True, slots=True)
class NodeChange:
    """One move of :meth:`PlanRuns.set_nodes`: what :meth:`PlanRuns.set_node` takes."""

    node_id: str
    status: NodeStatus
    result: Any = None
    error: RunError | None = None


@dataclass(frozen=True, slots=True)
class NodeRun:
    """One node of a run. ``result`` is the tool's output once ``succeeded``; ``error`` why it
    failed; ``compensation_error`` why its compensation failed; ``attempts`` counts its moves
    to ``running``; ``result_hash`` names the archived blob that holds ``result`` (``None``
    for a node without a result, or one whose result is kept in the record itself)."""

    node_id: str
    status: NodeStatus
    result: Any = None
    error: RunError | None = None
    compensation_error: RunError | None = None
    attempts: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    result_hash: str | None = None


class PlanResultLostError(StoreError):
    """A node's result cannot be read back: the archived blob its record names is missing,
    corrupt, or holds another node's result (``reason`` says which: ``missing``, ``corrupt``,
    ``unreadable``, ``not_this_node``). Names the run, the node and the blob's hash; nothing is
    served in the result's place."""

    code: ErrorCode = "plan_result_lost"

    def __init__(self, run_id: str, node_id: str, digest: str, reason: str, detail: str) -> None:
        super().__init__(
            f"the result of node {node_id!r} of plan run {run_id!r} cannot be read: its "
            f"archived blob {digest} {detail} / 计划节点结果丢失或损坏",
            run_id=run_id,
            node_id=node_id,
            digest=digest,
            reason=reason,
        )
        self.run_id = run_id
        self.node_id = node_id
        self.digest = digest
        self.reason = reason


@dataclass(frozen=True, slots=True)
class PlanRunSummary:
    """A line of ``hermes plan list``: run_id, plan, status, started_at (and a little more)."""

    run_id: str
    plan: str
    status: PlanStatus
    started_at: float
    finished_at: float | None
    user_id: str | None
    session_id: str | None
    trace_id: str | None
    lease_until: float | None


@dataclass(frozen=True, slots=True)
class PlanRun:
    """A whole run: what it runs (``spec``, the plan as data, and its ``params``), who for, its
    nodes in creation order, and the claim that stands (``token``; ``lease_until`` is ``None``
    once released or finished; ``claims`` counts the claims, 1 for a run never resumed)."""

    run_id: str
    plan: str
    spec: Mapping[str, Any]
    params: Mapping[str, Any]
    user_id: str | None
    session_id: str | None
    trace_id: str | None
    status: PlanStatus
    started_at: float
    finished_at: float | None
    outputs: Mapping[str, Any] | None
    error: RunError | None
    cancel_requested_at: float | None
    token: int
    lease_until: float | None
    claims: int
    nodes: Mapping[str, NodeRun]


@dataclass(frozen=True, slots=True)
class PlanClaim:
    """The outcome of ``create``/``claim`` and the run as it stands; ``run.token`` is the
    caller's token only when ``outcome`` is ``claimed``."""

    outcome: PlanClaimOutcome
    run: PlanRun

    @property
    def token(self) -> int:
        return self.run.token


@runtime_checkable
class PlanRuns(Protocol):
    """Durable records of plan runs (the module docstring is the contract)."""

    async def create(
        self,
        plan: str,
        *,
        spec: Mapping[str, Any],
        params: Mapping[str, Any],
        node_ids: Sequence[str],
        user_id: str | None = None,
        session_id: str | None = None,
        trace_id: str | None = None,
        lease: float = DEFAULT_LEASE_SECONDS,
    ) -> PlanClaim:
        """A new ``running`` run (a fresh ``run_id``), every node ``pending``, claimed by the
        caller. Raises ``InvalidInputError`` for a bad name, node id or a non-JSON value."""
        ...

    async def claim(self, run_id: str, *, lease: float = DEFAULT_LEASE_SECONDS) -> PlanClaim:
        """Take the run over for resuming: ``claimed`` when it is running and nobody holds a
        live lease, else ``held`` or ``finished``. ``RunNotFoundError`` for an unknown id;
        ``PlanResultLostError`` when a node's result cannot be read (a claim taken is then
        released again: nothing can be resumed without the results it renders from)."""
        ...

    async def renew(self, run_id: str, token: int, *, lease: float) -> PlanRun:
        """Hold the run ``lease`` more seconds from now (fenced: ``LeaseLostError``)."""
        ...

    async def release(self, run_id: str, token: int) -> None:
        """Give the claim up without finishing (a checkpoint at shutdown): the next claim
        succeeds at once. Fenced as ``renew``."""
        ...

    async def set_node(
        self,
        run_id: str,
        token: int,
        node_id: str,
        status: NodeStatus,
        *,
        result: Any = None,
        error: RunError | None = None,
    ) -> NodeRun:
        """Move a node along :data:`NODE_TRANSITIONS` and commit it at once; ``result`` is
        kept for ``succeeded`` (its blob archived before the commit), ``error`` for
        ``failed``. Fenced; ``NodeTransitionError`` for a move not allowed;
        ``InvalidInputError`` for an unknown node or a non-JSON (or too large) result."""
        ...

    async def set_nodes(
        self, run_id: str, token: int, changes: Sequence[NodeChange]
    ) -> list[NodeRun]:
        """Several :meth:`set_node` moves, in order (a node may move twice: ``running`` then
        its outcome), committed together: all or none (one that is not allowed, or a lost
        claim, writes nothing of the batch). Returns each node named, as the batch left it,
        in the order first named. What a runner whose nodes end at once uses: one commit
        instead of one per move."""
        ...

    async def record_compensation(
        self, run_id: str, token: int, node_id: str, *, error: RunError | None = None
    ) -> NodeRun:
        """A ``succeeded`` node's compensation ran: ``compensated`` (no ``error``) or still
        ``succeeded`` with ``compensation_error``. Fenced; ``NodeTransitionError`` otherwise."""
        ...

    async def finish(
        self,
        run_id: str,
        token: int,
        *,
        status: FinalPlanStatus,
        outputs: Mapping[str, Any] | None = None,
        error: RunError | None = None,
    ) -> PlanRun:
        """End the run (no node may be ``running``: ``NodeTransitionError``). Fenced."""
        ...

    async def request_cancel(self, run_id: str) -> PlanRun:
        """Mark the run to be cancelled (kept on a finished run: nothing changes then);
        ``RunNotFoundError`` for an unknown id."""
        ...

    async def get(self, run_id: str) -> PlanRun | None:
        """The run with its nodes, ``None`` when unknown; ``PlanResultLostError`` when a
        node's archived result cannot be read (as for every read that returns nodes)."""
        ...

    async def list_runs(
        self,
        *,
        limit: int = 50,
        before: str | None = None,
        user_id: str | None = None,
        status: PlanStatus | None = None,
    ) -> list[PlanRunSummary]:
        """Runs newest first (by ``started_at``, then ``run_id``), started before the run
        ``before`` names (the cursor of the next page), of ``user_id`` / with ``status`` if
        given, at most ``limit``."""
        ...

    async def delete_user(self, user_id: str) -> int:
        """Delete every run of ``user_id`` with its nodes; the count."""
        ...

    async def close(self) -> None:
        """Release connections and threads."""
        ...


def new_plan_run_id() -> str:
    """A new plan run id: ``plan-`` and 24 random hex digits."""
    return f"plan-{os.urandom(12).hex()}"


def check_new_run(plan: str, node_ids: Sequence[str]) -> None:
    """Raise ``InvalidInputError`` for an empty or overlong plan name, no nodes, or a node id
    that is empty, overlong, not printable or repeated (every backend checks with this)."""
    if not isinstance(plan, str) or not plan or len(plan) > MAX_PLAN_NAME_LENGTH:
        raise InvalidInputError(f"a plan name must be 1 to {MAX_PLAN_NAME_LENGTH} characters")
    if not node_ids:
        raise InvalidInputError("a plan run needs at least one node")
    seen: set[str] = set()
    for node_id in node_ids:
        if not isinstance(node_id, str) or not node_id or len(node_id) > MAX_NODE_ID_LENGTH:
            raise InvalidInputError(f"a node id must be 1 to {MAX_NODE_ID_LENGTH} characters")
        if not node_id.isprintable():
            raise InvalidInputError("a node id must not contain control characters")
        if node_id in seen:
            raise InvalidInputError(f"node id {node_id!r} appears twice in the plan")
        seen.add(node_id)


def check_node_transition(node_id: str, current: NodeStatus, new: NodeStatus) -> None:
    """Raise ``NodeTransitionError`` unless :data:`NODE_TRANSITIONS` allows ``current → new``."""
    if new not in NODE_TRANSITIONS[current]:
        raise NodeTransitionError(
            f"plan node {node_id!r} cannot go from {current} to {new}",
            node_id=node_id,
            current=current,
            new=new,
        )
