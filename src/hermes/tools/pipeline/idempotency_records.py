"""The idempotency records protocol: where the idempotency step keeps the claims and results of
its keys (STYLE.md §11: the protocol beside its pipeline step; the backends in ``storage/``).

A record is one ``(tool, key)`` pair in one of two states:

- **pending** — claimed by one ``owner`` (an opaque token, :func:`~hermes.tools.policies.new_owner`)
  until its lease ends: that caller is running the call;
- **done** — the JSON text of the call's result, kept until its ttl ends.

A record whose time has passed (lease or ttl) is as good as absent: the next claim takes it.

What every backend must do (the conformance suite is
``tests/storage/conformance/test_idempotency_records.py``; a PostgreSQL backend passes it too):

1. **The claim is atomic across processes.** Of any number of callers claiming one absent
   key at once — coroutines, threads, processes, machines sharing the backend — exactly one
   gets the claim (``None``); the others wait while it is live and then get the stored result.
   (SQLite: one ``INSERT … ON CONFLICT DO UPDATE … WHERE expired`` statement; PostgreSQL: the
   same statement, or ``INSERT … ON CONFLICT DO NOTHING`` then a read, inside one transaction —
   no session-level advisory lock, which a transaction pooler would break.)
2. **A waiting claim polls, bounded.** A caller that meets a live claim re-reads it (every
   ~50 ms, or sooner when the lease ends) until it is done, released or expired; it never
   returns while the other claim is live.
3. **Leases expire.** A claim blocks others for ``lease`` seconds from when it was taken; after
   that a new caller takes the key over (the old owner died), and the old owner's
   :meth:`~IdempotencyRecords.complete` returns ``False`` and changes nothing.
4. **Only what the step completes is stored, for its ttl.** :meth:`~IdempotencyRecords.complete`
   turns the owner's pending record into a done one kept ``ttl`` seconds from now; the step
   completes successful results (and ``outcome_unknown`` markers), never a failure: a failure
   is :meth:`~IdempotencyRecords.release`\\ d, and the next caller runs the call itself.
5. **Owners are checked.** ``complete`` and ``release`` act only on a pending record held by
   ``owner``: a lost claim never overwrites or frees the new owner's record.
6. **Time is wall-clock seconds** (epoch): expiry must mean the same after a restart.
7. **Failures are** :class:`~hermes.errors.StoreError` with one clear sentence (the step
   refuses the call with ``store_error`` rather than run it without a record).
8. **Fire-and-forget variants.** :meth:`~IdempotencyRecords.complete_soon` and
   :meth:`~IdempotencyRecords.release_soon` are called from a task being cancelled: they must
   not await, must still land (a worker thread, a connection pool's own thread …) and log
   their failures instead of raising them.

Durability is the backend's to state: SQLite commits each call (WAL, ``synchronous=NORMAL``);
the in-process records of :class:`~hermes.tools.policies.LocalIdempotencyRecords` (the default
of a bare :class:`~hermes.tools.pipeline.ToolExecutor`) end with the process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["IdempotencyRecords", "RecordsPerWorkspace"]


class IdempotencyRecords(Protocol):
    """The claims and stored results of idempotency keys (the contract: module docstring)."""

    async def claim(self, tool: str, key: str, *, owner: str, lease: float) -> str | None:
        """The stored result (JSON text) of an earlier successful call with this key, or
        ``None`` once ``owner`` holds the claim and must run the call, then :meth:`complete`
        or :meth:`release` it. Waits while another owner holds a live claim; ``lease`` is how
        many seconds this claim blocks others if its owner dies before ending it."""
        ...

    async def complete(
        self, tool: str, key: str, *, owner: str, result_json: str, ttl: float
    ) -> bool:
        """Store the result of ``owner``'s claimed call for ``ttl`` seconds; ``False`` (nothing
        changed) when the claim was lost meanwhile (its lease ran out and another took it)."""
        ...

    async def release(self, tool: str, key: str, *, owner: str) -> None:
        """Give up ``owner``'s claim (the call failed): the next caller with this key runs it.
        Nothing happens when ``owner`` does not hold it."""
        ...

    def complete_soon(
        self, tool: str, key: str, *, owner: str, result_json: str, ttl: float
    ) -> None:
        """:meth:`complete` without awaiting (from a cancelled task); failures are logged."""
        ...

    def release_soon(self, tool: str, key: str, *, owner: str) -> None:
        """:meth:`release` without awaiting (from a cancelled task); failures are logged."""
        ...


@dataclass(frozen=True, slots=True)
class RecordsPerWorkspace:
    """Records chosen by each call's workspace: ``open(workspace)`` (the call's
    ``CallContext.workspace_path()`` as text) returns them — the same object for the same
    workspace, opened on first use. What an agent without a file of its own uses (its records
    go to ``<workspace>/.hermes/idempotency.db``; see ``hermes.storage.open``)."""

    open: Callable[[str], IdempotencyRecords]
