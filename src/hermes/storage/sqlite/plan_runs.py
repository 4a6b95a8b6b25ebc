"""Plan runs on one SQLite file (the ``PlanRuns`` protocol of ``hermes.tools.plan_runs``):
``plans.db`` beside the session database by default (``hermes.storage.sqlite.leases`` says why
a file of its own).

A run row (its spec, params, status and the standing claim: ``token`` and ``lease_until``) and
one row per node. Every write is one ``BEGIN IMMEDIATE`` transaction that first checks the
run's token and status and then writes, so a claim taken over by another process (a larger
token) makes every later write of the old holder fail with ``LeaseLostError``, and two
processes resuming one run cannot both win (the second reads the first's live lease).

A node's result over ``inline_max`` bytes of JSON is a blob of the archive handed in
(``plan-results/`` beside the file: ``hermes.storage.sqlite.plan_results`` says why and what a
blob holds), put *before* the transaction that writes its hash into
``plan_nodes.result_hash``; a write refused after that (a lost claim, a move not allowed)
deletes the blobs it put. Rows of schema version 1 kept their result inline in
``plan_nodes.result``: they read as they always did (version 2 only added the column); so do
results up to ``inline_max``, and every result of a ``:memory:`` database, with no directory
beside it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes.errors import LeaseLostError, NodeTransitionError, RunNotFoundError, StoreError
from hermes.storage.sqlite.leases import Clock, RunsFile, dump_json, load_json, next_token
from hermes.storage.sqlite.migrations import Migration
from hermes.storage.sqlite.plan_results import NO_RESULT, PlanResults, StoredResult
from hermes.storage.sqlite.support import write_transaction
from hermes.tools.plan_runs import (
    DEFAULT_LEASE_SECONDS,
    FinalPlanStatus,
    NodeChange,
    NodeRun,
    NodeStatus,
    PlanClaim,
    PlanResultLostError,
    PlanRun,
    PlanRunSummary,
    PlanStatus,
    RunError,
    check_new_run,
    check_node_transition,
    new_plan_run_id,
)

if TYPE_CHECKING:  # the memory package loads only where an archive is opened (storage/open.py)
    from hermes.memory.archive import Archive

MIGRATIONS: list[Migration] = [
    (
        """
        CREATE TABLE plan_runs (
            run_id              TEXT PRIMARY KEY,
            plan                TEXT NOT NULL,
            spec                TEXT NOT NULL,
            params              TEXT NOT NULL,
            user_id             TEXT,
            session_id          TEXT,
            trace_id            TEXT,
            status              TEXT NOT NULL CHECK (status IN
                                    ('running', 'succeeded', 'failed', 'compensated')),
            started_at          REAL NOT NULL,
            finished_at         REAL,
            outputs             TEXT,
            error               TEXT,
            cancel_requested_at REAL,
            token               INTEGER NOT NULL,
            lease_until         REAL,
            claims              INTEGER NOT NULL
        )
        """,
        "CREATE INDEX plan_runs_by_start ON plan_runs (started_at DESC, run_id DESC)",
        "CREATE INDEX plan_runs_by_user ON plan_runs (user_id, started_at DESC)",
        """
        CREATE TABLE plan_nodes (
            run_id             TEXT NOT NULL REFERENCES plan_runs (run_id) ON DELETE CASCADE,
            node_id            TEXT NOT NULL,
            position           INTEGER NOT NULL,
            status             TEXT NOT NULL CHECK (status IN ('pending', 'running',
                                   'succeeded', 'failed', 'skipped', 'compensated')),
            result             TEXT,
            error              TEXT,
            compensation_error TEXT,
            attempts           INTEGER NOT NULL DEFAULT 0,
            started_at         REAL,
            finished_at        REAL,
            PRIMARY KEY (run_id, node_id)
        ) WITHOUT ROWID
        """,
    ),
    # 2: a succeeded node's result moves to the archive, the row keeps the blob's hash;
    # ``result`` stays for the rows written before (and a database with no archive).
    ("ALTER TABLE plan_nodes ADD COLUMN result_hash TEXT",),
]

_RUN_COLUMNS = (
    "run_id, plan, spec, params, user_id, session_id, trace_id, status, started_at, "
    "finished_at, outputs, error, cancel_requested_at, token, lease_until, claims"
)
_SUMMARY_COLUMNS = (
    "run_id, plan, status, started_at, finished_at, user_id, session_id, trace_id, lease_until"
)
_NODE_COLUMNS = (
    "node_id, status, result, error, compensation_error, attempts, started_at, finished_at, "
    "result_hash"
)
_SELECT_RUN = f"SELECT {_RUN_COLUMNS} FROM plan_runs WHERE run_id = ?"
_SELECT_NODES = f"SELECT {_NODE_COLUMNS} FROM plan_nodes WHERE run_id = ? ORDER BY position"
_SELECT_NODE = f"SELECT {_NODE_COLUMNS} FROM plan_nodes WHERE run_id = ? AND node_id = ?"


@dataclass(frozen=True, slots=True)
class _NewRun:
    plan: str
    spec: str
    params: str
    node_ids: tuple[str, ...]
    user_id: str | None
    session_id: str | None
    trace_id: str | None


def _dump_error(error: RunError | None) -> str | None:
    if error is None:
        return None
    return dump_json({"type": error.type, "message": error.message}, "a run error")


def _load_error(text: str | None) -> RunError | None:
    data = load_json(text, "run error")
    if not isinstance(data, dict):
        return None
    return RunError(type=str(data.get("type", "error")), message=str(data.get("message", "")))


def _node(row: Any) -> NodeRun:
    """A node as its row holds it: an archived result is still to be read (``result_hash``;
    :meth:`PlanResults.resolve`), an inline one is parsed here."""
    node_id, status, result, error, comp_error, attempts, started, finished, digest = row
    return NodeRun(
        node_id, status, load_json(result, "node result"), _load_error(error),
        _load_error(comp_error), attempts, started, finished, digest,
    )  # fmt: skip


def _load_run(conn: sqlite3.Connection, run_id: str) -> PlanRun | None:
    row = conn.execute(_SELECT_RUN, (run_id,)).fetchone()
    if row is None:
        return None
    nodes = {node.node_id: node for node in map(_node, conn.execute(_SELECT_NODES, (run_id,)))}
    (rid, plan, spec, params, user, session, trace, status, started, finished, outputs, error,
     cancel, token, lease_until, claims) = row  # fmt: skip
    return PlanRun(
        rid, plan, load_json(spec, "plan spec"), load_json(params, "plan params"), user, session,
        trace, status, started, finished, load_json(outputs, "plan outputs"), _load_error(error),
        cancel, token, lease_until, claims, nodes,
    )  # fmt: skip


def _read_run(conn: sqlite3.Connection, run_id: str) -> PlanRun | None:
    """The run and its nodes from one snapshot (a read transaction: another process's write
    between the two reads is seen by both or neither)."""
    conn.execute("BEGIN")
    try:
        return _load_run(conn, run_id)
    finally:
        conn.execute("COMMIT")


def _create(conn: sqlite3.Connection, new: _NewRun, lease: float, now: float) -> PlanClaim:
    run_id = new_plan_run_id()
    with write_transaction(conn):
        conn.execute(
            f"INSERT INTO plan_runs ({_RUN_COLUMNS}) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, 'running', ?, NULL, NULL, NULL, NULL, ?, ?, 1)",
            (run_id, new.plan, new.spec, new.params, new.user_id, new.session_id, new.trace_id,
             now, next_token(None), now + lease),
        )  # fmt: skip
        conn.executemany(
            "INSERT INTO plan_nodes (run_id, node_id, position, status) "
            "VALUES (?, ?, ?, 'pending')",
            [(run_id, node_id, i) for i, node_id in enumerate(new.node_ids)],
        )
        run = _load_run(conn, run_id)
    assert run is not None
    return PlanClaim("claimed", run)


def _claim(conn: sqlite3.Connection, run_id: str, lease: float, now: float) -> PlanClaim:
    with write_transaction(conn):
        run = _load_run(conn, run_id)
        if run is None:
            raise RunNotFoundError(f"no plan run {run_id!r}", run_id=run_id)
        if run.status != "running":
            return PlanClaim("finished", run)
        if run.lease_until is not None and run.lease_until > now:
            return PlanClaim("held", run)
        conn.execute(
            "UPDATE plan_runs SET token = ?, lease_until = ?, claims = claims + 1 WHERE run_id = ?",
            (next_token(run.token), now + lease, run_id),
        )
        claimed = _load_run(conn, run_id)
    assert claimed is not None
    return PlanClaim("claimed", claimed)


def _check_held(conn: sqlite3.Connection, run_id: str, token: int, what: str) -> None:
    """Raise unless ``token`` is the standing claim of a running run (inside the write)."""
    row = conn.execute("SELECT token, status FROM plan_runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise RunNotFoundError(f"no plan run {run_id!r}", run_id=run_id)
    if row[0] != token or row[1] != "running":
        state = "was taken over by a newer claim" if row[0] != token else f"is {row[1]}"
        raise LeaseLostError(
            f"cannot {what} plan run {run_id!r}: this claim no longer holds it (the run {state})",
            run_id=run_id,
        )


def _renew(conn: sqlite3.Connection, run_id: str, token: int, until: float | None) -> PlanRun:
    with write_transaction(conn):
        _check_held(conn, run_id, token, "renew" if until is not None else "release")
        conn.execute("UPDATE plan_runs SET lease_until = ? WHERE run_id = ?", (until, run_id))
        run = _load_run(conn, run_id)
    assert run is not None
    return run


def _node_for_write(
    conn: sqlite3.Connection, run_id: str, token: int, node_id: str, what: str
) -> NodeRun:
    _check_held(conn, run_id, token, what)
    row = conn.execute(_SELECT_NODE, (run_id, node_id)).fetchone()
    if row is None:
        raise NodeTransitionError(
            f"plan run {run_id!r} has no node {node_id!r}", run_id=run_id, node_id=node_id
        )
    return _node(row)


def _set_node(
    conn: sqlite3.Connection,
    key: tuple[str, int, str],
    status: NodeStatus,
    *,
    result: StoredResult,
    error: str | None,
    now: float,
) -> NodeRun:
    with write_transaction(conn):
        return _move_node(conn, key, status, result=result, error=error, now=now)


def _set_nodes(
    conn: sqlite3.Connection,
    run_id: str,
    token: int,
    changes: Sequence[tuple[str, NodeStatus, StoredResult, str | None]],
    now: float,
) -> list[NodeRun]:
    """The moves in one transaction: the claim checked once, the nodes read once, each move
    checked against the state the earlier moves of the batch left."""
    ids = list(dict.fromkeys(node_id for node_id, *_ in changes))
    marks = ", ".join("?" * len(ids))
    with write_transaction(conn):
        _check_held(conn, run_id, token, "set nodes of")
        current: dict[str, NodeStatus] = dict(
            conn.execute(
                f"SELECT node_id, status FROM plan_nodes WHERE run_id = ? AND node_id IN ({marks})",
                (run_id, *ids),
            ).fetchall()
        )
        for node_id, status, result, error in changes:
            if node_id not in current:
                raise NodeTransitionError(
                    f"plan run {run_id!r} has no node {node_id!r}", run_id=run_id, node_id=node_id
                )
            check_node_transition(node_id, current[node_id], status)
            current[node_id] = status
            _update_node(conn, (run_id, node_id), status, result=result, error=error, now=now)
        rows = conn.execute(
            f"SELECT {_NODE_COLUMNS} FROM plan_nodes WHERE run_id = ? AND node_id IN ({marks})",
            (run_id, *ids),
        ).fetchall()
    by_id = {node.node_id: node for node in map(_node, rows)}
    return [by_id[node_id] for node_id in ids]


def _move_node(
    conn: sqlite3.Connection,
    key: tuple[str, int, str],
    status: NodeStatus,
    *,
    result: StoredResult,
    error: str | None,
    now: float,
) -> NodeRun:
    """One node move inside the caller's write transaction (fenced, transition checked)."""
    run_id, token, node_id = key
    node = _node_for_write(conn, run_id, token, node_id, f"set node {node_id!r} of")
    check_node_transition(node_id, node.status, status)
    _update_node(conn, (run_id, node_id), status, result=result, error=error, now=now)
    return _node(conn.execute(_SELECT_NODE, (run_id, node_id)).fetchone())


def _update_node(
    conn: sqlite3.Connection,
    key: tuple[str, str],
    status: NodeStatus,
    *,
    result: StoredResult,
    error: str | None,
    now: float,
) -> None:
    if status == "running":
        sql = (
            "UPDATE plan_nodes SET status = 'running', attempts = attempts + 1, "
            "started_at = ?, finished_at = NULL, result = NULL, result_hash = NULL, error = NULL"
        )
        values: tuple[Any, ...] = (now,)
    else:
        kept = result if status == "succeeded" else NO_RESULT
        sql = (
            "UPDATE plan_nodes SET status = ?, finished_at = ?, result = ?, result_hash = ?, "
            "error = ?"
        )
        values = (status, now, kept.inline, kept.digest, error if status == "failed" else None)
    conn.execute(sql + " WHERE run_id = ? AND node_id = ?", (*values, *key))


def _compensate(conn: sqlite3.Connection, key: tuple[str, int, str], error: str | None) -> NodeRun:
    run_id, token, node_id = key
    with write_transaction(conn):
        node = _node_for_write(conn, run_id, token, node_id, f"compensate node {node_id!r} of")
        if node.status != "succeeded":
            raise NodeTransitionError(
                f"plan node {node_id!r} is {node.status}: only a succeeded node is compensated",
                node_id=node_id,
                current=node.status,
                new="compensated",
            )
        conn.execute(
            "UPDATE plan_nodes SET status = ?, compensation_error = ? "
            "WHERE run_id = ? AND node_id = ?",
            ("succeeded" if error else "compensated", error, run_id, node_id),
        )
        return _node(conn.execute(_SELECT_NODE, (run_id, node_id)).fetchone())


def _finish(
    conn: sqlite3.Connection,
    run_id: str,
    token: int,
    values: tuple[FinalPlanStatus, str | None, str | None],
    now: float,
) -> PlanRun:
    with write_transaction(conn):
        _check_held(conn, run_id, token, "finish")
        running = conn.execute(
            "SELECT node_id FROM plan_nodes WHERE run_id = ? AND status = 'running' LIMIT 1",
            (run_id,),
        ).fetchone()
        if running is not None:
            raise NodeTransitionError(
                f"plan run {run_id!r} cannot finish while node {running[0]!r} is running",
                run_id=run_id,
                node_id=running[0],
            )
        conn.execute(
            "UPDATE plan_runs SET status = ?, outputs = ?, error = ?, finished_at = ?, "
            "lease_until = NULL WHERE run_id = ?",
            (*values, now, run_id),
        )
        run = _load_run(conn, run_id)
    assert run is not None
    return run


def _request_cancel(conn: sqlite3.Connection, run_id: str, now: float) -> PlanRun:
    with write_transaction(conn):
        conn.execute(
            "UPDATE plan_runs SET cancel_requested_at = ? WHERE run_id = ? "
            "AND status = 'running' AND cancel_requested_at IS NULL",
            (now, run_id),
        )
        run = _load_run(conn, run_id)
    if run is None:
        raise RunNotFoundError(f"no plan run {run_id!r}", run_id=run_id)
    return run


def _list(
    conn: sqlite3.Connection,
    limit: int,
    before: str | None,
    user_id: str | None,
    status: PlanStatus | None,
) -> list[PlanRunSummary]:
    terms: list[str] = []
    values: list[Any] = []
    if before is not None:
        terms.append(
            "(started_at, run_id) < (SELECT started_at, run_id FROM plan_runs WHERE run_id = ?)"
        )
        values.append(before)
    if user_id is not None:
        terms.append("user_id = ?")
        values.append(user_id)
    if status is not None:
        terms.append("status = ?")
        values.append(status)
    where = f" WHERE {' AND '.join(terms)}" if terms else ""
    sql = (
        f"SELECT {_SUMMARY_COLUMNS} FROM plan_runs{where} "
        "ORDER BY started_at DESC, run_id DESC LIMIT ?"
    )
    return [PlanRunSummary(*row) for row in conn.execute(sql, (*values, limit)).fetchall()]


def _delete_user(conn: sqlite3.Connection, user_id: str) -> tuple[int, list[str]]:
    """Delete the user's runs (their nodes go with them); the count and the result blobs
    their nodes named (each one node's own: nothing else names them)."""
    with write_transaction(conn):
        digests = [
            row[0]
            for row in conn.execute(
                "SELECT n.result_hash FROM plan_nodes AS n JOIN plan_runs AS r USING (run_id) "
                "WHERE r.user_id = ? AND n.result_hash IS NOT NULL",
                (user_id,),
            )
        ]
        count = conn.execute("DELETE FROM plan_runs WHERE user_id = ?", (user_id,)).rowcount
    return count, digests


def _named(conn: sqlite3.Connection, run_id: str, digests: Sequence[str]) -> set[str]:
    """Which of ``digests`` a node of ``run_id`` names (a refused write's blobs that an
    earlier, committed write of the same content named already)."""
    marks = ", ".join("?" * len(digests))
    sql = f"SELECT result_hash FROM plan_nodes WHERE run_id = ? AND result_hash IN ({marks})"
    return {row[0] for row in conn.execute(sql, (run_id, *digests))}


class SQLitePlanRuns(RunsFile):
    """A :class:`~hermes.tools.plan_runs.PlanRuns` on one SQLite file (WAL); ``path``,
    ``clock`` and ``busy_timeout`` as for :class:`~hermes.storage.sqlite.leases.RunsFile`.
    ``archive`` holds the nodes' results over ``inline_max`` bytes of JSON (``storage/open.py``
    hands in ``plan-results/`` beside the file and 1,000 bytes); ``None`` keeps them all in
    the rows (a ``:memory:`` database).
    """

    kind = "plan runs store"
    migrations = MIGRATIONS
    thread = "hermes-plans"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        archive: Archive | None,
        inline_max: int = 0,
        clock: Clock = time.time,
        busy_timeout: float = 5.0,
    ) -> None:
        self.results = PlanResults(archive, inline_max=inline_max)
        super().__init__(path, clock=clock, busy_timeout=busy_timeout)

    def _prepare(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA foreign_keys = ON")
        super()._prepare(conn)

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
        """See :meth:`hermes.tools.plan_runs.PlanRuns.create`."""
        check_new_run(plan, node_ids)
        spec_json = dump_json(dict(spec), "the plan spec")
        params_json = dump_json(dict(params), "the plan params")
        new = _NewRun(plan, spec_json, params_json, tuple(node_ids), user_id, session_id, trace_id)
        return await self._run("create", _create, new, lease, self._clock())

    async def claim(self, run_id: str, *, lease: float = DEFAULT_LEASE_SECONDS) -> PlanClaim:
        """See :meth:`hermes.tools.plan_runs.PlanRuns.claim`."""
        claim = await self._run("claim", _claim, run_id, lease, self._clock())
        try:
            return PlanClaim(claim.outcome, await self.results.resolve(claim.run))
        except PlanResultLostError:
            if claim.outcome == "claimed":  # nothing can resume without its results
                await self.release(run_id, claim.token)
            raise

    async def renew(self, run_id: str, token: int, *, lease: float) -> PlanRun:
        """See :meth:`hermes.tools.plan_runs.PlanRuns.renew`."""
        run = await self._run("renew", _renew, run_id, token, self._clock() + lease)
        return await self.results.resolve(run)

    async def release(self, run_id: str, token: int) -> None:
        """See :meth:`hermes.tools.plan_runs.PlanRuns.release`."""
        await self._run("release", _renew, run_id, token, None)

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
        """See :meth:`hermes.tools.plan_runs.PlanRuns.set_node`."""
        stored = NO_RESULT
        if status == "succeeded":
            stored = await self.results.store(run_id, token, node_id, result)
        key = (run_id, token, node_id)
        try:
            node = await self._run(
                "set_node", _set_node, key, status, result=stored, error=_dump_error(error),
                now=self._clock(),
            )  # fmt: skip
        except BaseException:  # the blob put for a refused write is deleted, then re-raised
            await self._discard_unnamed(run_id, [stored.digest])
            raise
        return await self.results.resolve_node(run_id, node)

    async def set_nodes(
        self, run_id: str, token: int, changes: Sequence[NodeChange]
    ) -> list[NodeRun]:
        """See :meth:`hermes.tools.plan_runs.PlanRuns.set_nodes`."""
        if not changes:
            return []
        rows: list[tuple[str, NodeStatus, StoredResult, str | None]] = []
        try:
            for c in changes:  # every blob is written before the commit that names it
                stored = NO_RESULT
                if c.status == "succeeded":
                    stored = await self.results.store(run_id, token, c.node_id, c.result)
                rows.append((c.node_id, c.status, stored, _dump_error(c.error)))
            nodes = await self._run("set_nodes", _set_nodes, run_id, token, rows, self._clock())
        except BaseException:  # the blobs put for a refused batch are deleted, then re-raised
            await self._discard_unnamed(run_id, [row[2].digest for row in rows])
            raise
        return [await self.results.resolve_node(run_id, node) for node in nodes]

    async def _discard_unnamed(self, run_id: str, digests: Sequence[str | None]) -> None:
        """Delete the blobs of a refused write that no committed row names (one that names
        the same blob was written before by the same holder: it stays)."""
        put = [digest for digest in digests if digest is not None]
        if not put:
            return
        try:
            named = await self._run("check results", _named, run_id, put)
        except StoreError:
            return  # unknown: keep them (a blob no row names is served to nobody)
        await self.results.discard(digest for digest in put if digest not in named)

    async def record_compensation(
        self, run_id: str, token: int, node_id: str, *, error: RunError | None = None
    ) -> NodeRun:
        """See :meth:`hermes.tools.plan_runs.PlanRuns.record_compensation`."""
        key = (run_id, token, node_id)
        node = await self._run("record_compensation", _compensate, key, _dump_error(error))
        return await self.results.resolve_node(run_id, node)

    async def finish(
        self,
        run_id: str,
        token: int,
        *,
        status: FinalPlanStatus,
        outputs: Mapping[str, Any] | None = None,
        error: RunError | None = None,
    ) -> PlanRun:
        """See :meth:`hermes.tools.plan_runs.PlanRuns.finish`."""
        if status not in ("succeeded", "failed", "compensated"):
            raise ValueError(f"a plan run cannot finish as {status!r}")
        stored = None if outputs is None else dump_json(dict(outputs), "the plan outputs")
        values = (status, stored, _dump_error(error))
        run = await self._run("finish", _finish, run_id, token, values, self._clock())
        return await self.results.resolve(run)

    async def request_cancel(self, run_id: str) -> PlanRun:
        """See :meth:`hermes.tools.plan_runs.PlanRuns.request_cancel`."""
        run = await self._run("request_cancel", _request_cancel, run_id, self._clock())
        return await self.results.resolve(run)

    async def get(self, run_id: str) -> PlanRun | None:
        """See :meth:`hermes.tools.plan_runs.PlanRuns.get`."""
        run = await self._run("get", _read_run, run_id)
        return None if run is None else await self.results.resolve(run)

    async def list_runs(
        self,
        *,
        limit: int = 50,
        before: str | None = None,
        user_id: str | None = None,
        status: PlanStatus | None = None,
    ) -> list[PlanRunSummary]:
        """See :meth:`hermes.tools.plan_runs.PlanRuns.list_runs`."""
        if limit <= 0:
            return []
        return await self._run("list_runs", _list, limit, before, user_id, status)

    async def delete_user(self, user_id: str) -> int:
        """See :meth:`hermes.tools.plan_runs.PlanRuns.delete_user`."""
        count, digests = await self._run("delete_user", _delete_user, user_id)
        await self.results.discard(digests)  # after the commit: no row names them any more
        return count
