"""What only the OS file locks beside a SQLite file do (``hermes.storage.sqlite.session_locks``):
the locks a store gets, other processes, a holder killed with SIGKILL. What every
``SessionLocks`` does is in ``tests/storage/conformance/test_session_locks.py``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.errors import SessionBusyError
from hermes.session.locks import LocalSessionLocks
from hermes.storage.open import open_locks
from hermes.storage.sqlite.session_locks import FileSessionLocks
from hermes.storage.sqlite.sessions import SQLiteStore

SESSION = "session-lock-1"


#: The OS lock kinds this machine has: byte ranges (Linux), one file per session (everywhere).
FILE_KINDS = [True, False] if sys.platform == "linux" else [False]


# -- what the store picks ---------------------------------------------------------------------


async def test_a_sqlite_file_gets_file_locks_beside_it_and_memory_gets_local_ones(
    tmp_path: Path,
):
    store = SQLiteStore(tmp_path / "h.db")
    memory = SQLiteStore(":memory:")
    try:
        locks = open_locks(store)
        assert isinstance(locks, FileSessionLocks)
        async with locks.claim(SESSION, wait=0) as claim:
            assert claim.cross_process
        if sys.platform == "linux":  # one lock file for every session, beside the database
            assert [n for n in os.listdir(tmp_path) if "lock" in n] == ["h.db.lock"]
        else:
            assert (tmp_path / "h.db.locks" / f"{SESSION}.lock").is_file()
        locks.close()
        in_memory = open_locks(memory)
        assert isinstance(in_memory, LocalSessionLocks)
        async with in_memory.claim(SESSION, wait=0) as claim:
            assert claim.cross_process  # nobody else can reach a :memory: store
    finally:
        await store.close()
        await memory.close()


# -- OS file locks: other processes -----------------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from hermes.storage.sqlite.session_locks import FileSessionLocks

    async def main():
        locks = FileSessionLocks(sys.argv[1], ranges=sys.argv[3] == "ranges")
        async with locks.claim(sys.argv[2], wait=0) as claim:
            print(claim.token, flush=True)
            await asyncio.sleep(60)

    asyncio.run(main())
    """
)


@pytest.fixture(params=FILE_KINDS, ids=lambda ranges: "ranges" if ranges else "per-session")
def ranges(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
def holder(tmp_path: Path, ranges: bool) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the claim of SESSION (it prints its token once it holds it)."""
    kind = "ranges" if ranges else "per-session"
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path / "h.db"), SESSION, kind],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # its token once it holds the lock; "" if it died
        assert line.strip().isdigit(), line
        proc.token = int(line)  # type: ignore[attr-defined]
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


async def test_a_claim_held_by_another_process_is_refused(
    tmp_path: Path, holder: subprocess.Popen[str], ranges: bool
):
    locks = FileSessionLocks(tmp_path / "h.db", ranges=ranges)
    try:
        with pytest.raises(SessionBusyError, match="another process"):
            async with locks.claim(SESSION, wait=0.1):
                pytest.fail("claimed a session another process holds")
        async with locks.claim("session-lock-other", wait=0):
            pass  # other sessions are free
    finally:
        locks.close()


async def test_a_claim_whose_process_was_killed_is_free_at_once_with_a_higher_token(
    tmp_path: Path, holder: subprocess.Popen[str], ranges: bool
):
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=10)
    locks = FileSessionLocks(tmp_path / "h.db", ranges=ranges)
    try:
        # No wait at all: the kernel dropped the dead process's lock (no ghost lock, no timeout).
        async with locks.claim(SESSION, wait=0) as claim:
            assert claim.token > holder.token  # type: ignore[attr-defined]
    finally:
        locks.close()
