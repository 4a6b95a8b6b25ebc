"""Other processes for the race and crash tests of the event dedupe, job runs, plan runs and
request keys suites: each function runs in a ``spawn``-ed child (a fresh interpreter: no
thread, lock or connection of the test's process comes along), opens the backend it was handed
and claims.

Racers wait on a barrier so that they claim at the same moment, then report
``(outcome, token)`` on the queue. Holders claim, report, and sleep until they are killed.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.context
import os
import time
from multiprocessing.synchronize import Barrier
from typing import Any

from tests.storage.backends import RequestKeysBackend, RunsBackend

#: What the children open: the runs' backends and the request keys' backends.
AnyBackend = RunsBackend | RequestKeysBackend

#: Seconds a test waits for a child's report (a spawned interpreter takes ~0.5 s to start).
REPORT_TIMEOUT = 60.0


def context() -> multiprocessing.context.SpawnContext:
    return multiprocessing.get_context("spawn")


async def _claim(opened: Any, kind: str, key: tuple[Any, ...]) -> Any:
    """One claim of ``key`` through the protocol ``kind`` names."""
    if kind == "event":
        route, msg_id, body_hash, lease = key
        trace = f"trace-{os.getpid()}"
        return await opened.claim(route, msg_id, body_hash=body_hash, trace_id=trace, lease=lease)
    if kind == "request":  # an HTTP Idempotency-Key (tests.storage.backends.RequestKeysBackend)
        scope, name, body_hash, lease = key
        return await opened.claim(scope, name, body_hash=body_hash, lease=lease)
    if kind == "job":
        job, due_at, lease = key
        return await opened.claim(job, due_at, trace_id=f"trace-{os.getpid()}", lease=lease)
    run_id, lease = key
    return await opened.claim(run_id, lease=lease)


def _open(backend: Any, kind: str) -> Any:
    if kind == "request":
        return backend.open_request_keys()
    if kind == "event":
        return backend.open_event_dedupe()
    if kind == "job":
        return backend.open_job_runs()
    return backend.open_plan_runs()


def _claim_in_child(
    backend: AnyBackend,
    kind: str,
    key: tuple[Any, ...],
    barrier: Barrier | None,
    queue: Any,
    hold: bool,
) -> None:
    async def main() -> None:
        opened = _open(backend, kind)
        try:
            if barrier is not None:
                barrier.wait(REPORT_TIMEOUT)
            result = await _claim(opened, kind, key)
            queue.put((result.outcome, result.token))
            if hold:
                await asyncio.sleep(600)
        finally:
            await opened.close()

    asyncio.run(main())


def race(backend: AnyBackend, kind: str, key: tuple[Any, ...], racers: int) -> list[str]:
    """``racers`` processes claim ``key`` at once; their outcomes (unordered)."""
    ctx = context()
    barrier = ctx.Barrier(racers)
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_claim_in_child, args=(backend, kind, key, barrier, queue, False))
        for _ in range(racers)
    ]
    for proc in procs:
        proc.start()
    try:
        outcomes = [queue.get(timeout=REPORT_TIMEOUT)[0] for _ in procs]
    finally:
        for proc in procs:
            proc.join(REPORT_TIMEOUT)
            if proc.is_alive():
                proc.kill()
    assert all(proc.exitcode == 0 for proc in procs), [proc.exitcode for proc in procs]
    return outcomes


def hold_then_kill(backend: AnyBackend, kind: str, key: tuple[Any, ...]) -> tuple[str, int]:
    """A child claims ``key``, reports, and is killed with SIGKILL while it holds the claim;
    its ``(outcome, token)``."""
    ctx = context()
    queue = ctx.Queue()
    proc = ctx.Process(target=_claim_in_child, args=(backend, kind, key, None, queue, True))
    proc.start()
    try:
        reported: tuple[str, int] = queue.get(timeout=REPORT_TIMEOUT)
    finally:
        proc.kill()  # SIGKILL: no finally block, no close, no release runs in the child
        proc.join(REPORT_TIMEOUT)
    return reported


def wait_past(deadline: float) -> None:
    """Sleep until the wall clock is past ``deadline``."""
    while time.time() <= deadline:
        time.sleep(max(0.01, deadline - time.time() + 0.01))
