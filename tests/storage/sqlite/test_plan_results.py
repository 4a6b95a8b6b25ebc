"""Plan node results in the archive, on real files (the ``PlanRuns`` contract, "Results by
archive hash"; the conformance suite, ``tests/storage/conformance/test_plan_runs.py``, holds
the rest): a ``plans.db`` of the Hermes that kept results inline opens, reads as it did and
resumes; a writer killed with SIGKILL never leaves a node naming a blob that is not there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from hermes import tool
from hermes.agent.compose import open_plan_runs
from hermes.errors import StoreError
from hermes.memory.archive import ArchiveError
from hermes.storage.files.archive import LocalArchive
from hermes.storage.open import PLAN_RESULT_INLINE_MAX, PLAN_RESULTS_DIR
from hermes.storage.sqlite.plan_runs import MIGRATIONS, SQLitePlanRuns
from hermes.tools.pipeline import ToolExecutor
from hermes.tools.plan_runs import NodeChange, RunError
from hermes.tools.plans import PlanRunner, run_details
from hermes.tools.policies import PolicyState
from hermes.tools.registry import ToolRegistry
from tests.fixtures.make_plans_inline_v1 import runner

FIXTURE = Path(__file__).resolve().parent.parent.parent / "fixtures" / "plans-inline-v1"
EXPECTED: dict[str, Any] = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))


#: A result larger than the ``PLAN_RESULT_INLINE_MAX`` of ``storage/open.py``: archived.
BIG = {"terms": "条款 " * (PLAN_RESULT_INLINE_MAX // 4)}


def _archiving_every_result(path: Path) -> SQLitePlanRuns:
    return SQLitePlanRuns(path, archive=LocalArchive(path.with_name(PLAN_RESULTS_DIR)))


@pytest.fixture
def old_plans(tmp_path: Path) -> Path:
    """A copy of the fixture's ``plans.db`` (opening migrates it; the fixture stays as is)."""
    shutil.copy(FIXTURE / "plans.db", tmp_path / "plans.db")
    return tmp_path / "plans.db"


def _columns_and_version(path: Path) -> tuple[list[str], int]:
    conn = sqlite3.connect(path)
    try:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(plan_nodes)")]
        return columns, conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


async def test_a_plans_db_with_inline_results_is_migrated_and_reads_as_before(old_plans: Path):
    assert _columns_and_version(old_plans) == (
        ["run_id", "node_id", "position", "status", "result", "error", "compensation_error",
         "attempts", "started_at", "finished_at"], 1,
    )  # fmt: skip
    runs = open_plan_runs(old_plans)
    try:
        columns, version = _columns_and_version(old_plans)
        assert (columns[-1], version) == ("result_hash", len(MIGRATIONS))
        for name, expected in EXPECTED.items():
            run = await runs.get(expected["run_id"])
            assert run is not None, name
            # The very JSON of before, object keys in their order (not just equal values).
            assert json.dumps(run_details(run)) == json.dumps(expected), name
            assert all(node.result_hash is None for node in run.nodes.values())
    finally:
        await runs.close()
    assert not (old_plans.parent / PLAN_RESULTS_DIR).exists()  # reading wrote nothing


async def test_a_run_cut_off_before_the_move_resumes_from_its_inline_results(old_plans: Path):
    run_id = EXPECTED["cut-off"]["run_id"]
    runs = _archiving_every_result(old_plans)
    try:
        made: PlanRunner = runner(runs)
        run = await made.resume(run_id)
        assert run.status == "succeeded"
        assert run.outputs == {"room": "A101", "echo": "A101"}  # n3 rendered from n1 (inline)
        assert [run.nodes[n].result for n in ("n1", "n2", "n3")] == [
            EXPECTED["cut-off"]["nodes"]["n1"]["result"], "二楼", "A101",
        ]  # fmt: skip
        assert run.nodes["n1"].result_hash is None  # written before: stays in its row
        assert run.nodes["n2"].result_hash is not None  # written now: in the archive
        assert run.nodes["n3"].result_hash is not None
    finally:
        await runs.close()
    again = open_plan_runs(old_plans)
    try:
        stored = await again.get(run_id)
        assert stored is not None
        assert run_details(stored) == run_details(run)
    finally:
        await again.close()


# -- a writer killed mid-write -----------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from hermes.agent.compose import open_plan_runs

    async def main(path):
        runs = open_plan_runs(path)
        nodes = [f"n{i}" for i in range(50)]
        spec = {"name": "busy", "nodes": [{"id": n, "tool": "t", "params": {}} for n in nodes]}
        while True:
            claim = await runs.create("busy", spec=spec, params={}, node_ids=nodes)
            for i, node in enumerate(nodes):
                result = {"node": node, "payload": "x" * (1001 + i * 97 % 4000)}
                if i % 2:
                    await runs.set_node(claim.run.run_id, claim.token, node, "running")
                    await runs.set_node(claim.run.run_id, claim.token, node, "succeeded",
                                        result=result)
                else:
                    from hermes.tools.plan_runs import NodeChange
                    await runs.set_nodes(claim.run.run_id, claim.token, [
                        NodeChange(node, "running"), NodeChange(node, "succeeded", result=result)])
                print("ok", flush=True)

    asyncio.run(main(sys.argv[1]))
    """
)


def _kill_mid_write(path: Path, after: int) -> None:
    """Start a writer of node outcomes on ``path``, SIGKILL it after ``after`` of them."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, env=env
    )
    try:
        assert child.stdout is not None
        for _ in range(after):
            assert child.stdout.readline() == b"ok\n", "the writer stopped on its own"
        time.sleep(0.003 * (after % 7))  # land the kill anywhere in the next write
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL


@pytest.mark.parametrize("after", [7, 60, 133])
async def test_a_writer_killed_mid_write_never_leaves_a_node_naming_a_missing_blob(
    tmp_path: Path, after: int
):
    path = tmp_path / "plans.db"
    for round_ in range(3):
        _kill_mid_write(path, after + round_)
    runs = open_plan_runs(path)
    try:
        summaries = await runs.list_runs(limit=100)
        succeeded = 0
        for summary in summaries:
            run = await runs.get(summary.run_id)  # raises PlanResultLostError on a dangling hash
            assert run is not None
            for node in run.nodes.values():
                if node.status == "succeeded":
                    succeeded += 1
                    assert node.result_hash is not None
                    assert node.result["node"] == node.node_id
        assert succeeded >= 3 * after  # every outcome reported ok was on disk
    finally:
        await runs.close()


class _RefusingArchive(LocalArchive):
    """An archive whose writes fail (a full disk): what a write of a result does then."""

    def put_sync(self, data: bytes) -> str:
        raise ArchiveError("cannot write the archived blob: No space left on device")


async def test_the_blob_is_written_before_the_commit_that_names_it(tmp_path: Path):
    """Deterministic half of the SIGKILL test: a result whose blob cannot be written is never
    committed — the node stays as it was, nothing names a blob that is not there."""
    archive = _RefusingArchive(tmp_path / PLAN_RESULTS_DIR)
    runs = SQLitePlanRuns(tmp_path / "plans.db", archive=archive)
    try:
        claim = await runs.create("p", spec={}, params={}, node_ids=["n1", "n2"])
        run_id, token = claim.run.run_id, claim.token
        await runs.set_node(run_id, token, "n1", "running")
        with pytest.raises(StoreError, match="No space left"):
            await runs.set_node(run_id, token, "n1", "succeeded", result={"a": 1})
        with pytest.raises(StoreError, match="No space left"):
            await runs.set_nodes(run_id, token, [
                NodeChange("n2", "running"), NodeChange("n2", "succeeded", result={"b": 2}),
            ])  # fmt: skip
        stored = await runs.get(run_id)
        assert stored is not None
        assert [(n.status, n.result_hash) for n in stored.nodes.values()] == [
            ("running", None), ("pending", None),
        ]  # fmt: skip
        failed = await runs.set_node(run_id, token, "n1", "failed", error=RunError("x", "y"))
        assert failed.result_hash is None  # a move without a result writes no blob
    finally:
        await runs.close()
    assert not (tmp_path / PLAN_RESULTS_DIR).exists()


async def test_a_resume_renders_templates_and_the_saga_from_archived_results(tmp_path: Path):
    """Another process resumes (a fresh handle: every result read back from its blob)."""
    undone: list[str] = []

    @tool
    def book(room: str) -> dict[str, Any]:
        """Book a room (has effects: cut off mid-call, its outcome is unknown)."""
        return {"booking": f"b-{room}"}

    @tool
    def cancel(booking: str) -> str:
        """Undo a booking."""
        undone.append(booking)
        return "cancelled"

    undo = {"tool": "cancel", "params": {"booking": "{{n1.result.booking}}"}}
    spec = {"name": "saga", "nodes": [
        {"id": "n1", "tool": "book", "params": {"room": "r1"}, "compensate": undo},
        {"id": "n2", "tool": "book", "params": {"room": "{{n1.result.booking}}"},
         "depends_on": ["n1"]},
    ]}  # fmt: skip
    first = open_plan_runs(tmp_path / "plans.db")
    claim = await first.create("saga", spec=spec, params={}, node_ids=["n1", "n2"])
    run_id, token = claim.run.run_id, claim.token
    await first.set_node(run_id, token, "n1", "running")
    await first.set_node(run_id, token, "n1", "succeeded", result=BIG | {"booking": "b-r1"})
    await first.set_node(run_id, token, "n2", "running")  # then the process died
    await first.release(run_id, token)
    await first.close()
    fresh = open_plan_runs(tmp_path / "plans.db")
    try:
        executor = ToolExecutor(ToolRegistry([book, cancel]), state=PolicyState())
        run = await PlanRunner(executor, fresh).resume(run_id)
    finally:
        await fresh.close()
    assert run.status == "compensated"
    assert run.nodes["n2"].error is not None
    assert run.nodes["n2"].error.type == "outcome_unknown"
    assert undone == ["b-r1"]  # the compensation rendered from n1's archived result
    assert run.nodes["n1"].result == BIG | {"booking": "b-r1"}
    assert run.nodes["n1"].result_hash is not None


async def test_a_result_up_to_the_inline_limit_stays_in_its_row_a_larger_one_is_archived(
    tmp_path: Path,
):
    small = {"text": "x" * (PLAN_RESULT_INLINE_MAX - 11)}  # exactly the limit as JSON
    runs = open_plan_runs(tmp_path / "plans.db")
    try:
        claim = await runs.create("p", spec={}, params={}, node_ids=["small", "big"])
        for node_id, result in (("small", small), ("big", BIG)):
            await runs.set_node(claim.run.run_id, claim.token, node_id, "running")
            await runs.set_node(claim.run.run_id, claim.token, node_id, "succeeded", result=result)
    finally:
        await runs.close()
    fresh = open_plan_runs(tmp_path / "plans.db")
    try:
        run = await fresh.get(claim.run.run_id)
    finally:
        await fresh.close()
    assert run is not None
    assert run.nodes["small"].result == small
    assert run.nodes["small"].result_hash is None
    assert run.nodes["big"].result == BIG
    assert run.nodes["big"].result_hash is not None
    blobs = [p for p in (tmp_path / PLAN_RESULTS_DIR).rglob("*") if p.is_file()]
    assert len(blobs) == 1
