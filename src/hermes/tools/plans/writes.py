"""Group commit of node moves (DESIGN.md, "Multi-call plans": each node's outcome persisted
the moment it ends).

Every move still waits for the commit that carries it before the runner acts on it (a node's
dependants start only once its outcome is on disk); moves that arrive while a commit is under
way — the nodes of a wide plan ending together — go together in the next one
(``PlanRuns.set_nodes``: one transaction, all or none), so a fan-out of 200 nodes costs a few
commits, not 400 (BENCHMARKS.md, "Multi-call plans").
"""

from __future__ import annotations

import asyncio
import contextlib

from hermes.tools.plan_runs import NodeChange, PlanRuns

__all__ = ["NodeWrites"]


class NodeWrites:
    """The node moves of one run (its ``run_id`` and claim ``token``), committed in order."""

    def __init__(self, runs: PlanRuns, run_id: str, token: int) -> None:
        self.runs = runs
        self.run_id = run_id
        self.token = token
        self._pending: list[tuple[NodeChange, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def write(self, change: NodeChange) -> None:
        """Commit ``change`` (with whatever else is waiting); raises what the store raised."""
        await self.write_many([change])

    async def write_many(self, changes: list[NodeChange]) -> None:
        """Commit ``changes`` in one batch (with whatever else is waiting)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.extend((change, future) for change in changes)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        await asyncio.shield(future)  # a cancelled waiter leaves the batch intact

    async def close(self) -> None:
        """Wait for the commits under way (the runner's last step before it finishes)."""
        if self._flusher is not None:
            with contextlib.suppress(Exception):
                await self._flusher

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            futures = list(dict.fromkeys(future for _, future in batch))
            try:
                await self.runs.set_nodes(self.run_id, self.token, [c for c, _ in batch])
            except BaseException as exc:  # every waiter of the batch gets it, then re-raised
                for future in futures:
                    if not future.done():
                        future.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for future in futures:
                if not future.done():
                    future.set_result(None)
