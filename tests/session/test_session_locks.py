"""The SessionLocks protocol: one conformance suite run on every implementation, then what only
OS file locks do (other processes, a holder killed with SIGKILL), then the store's fence."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hermes.errors import ClaimLostError, SessionBusyError
from hermes.session.items import Item, SessionState
from hermes.session.locks import FileSessionLocks, LocalSessionLocks, SessionLocks
from hermes.session.open import open_locks
from hermes.session.sqlite_store import SQLiteStore

LocksFactory = Callable[[], SessionLocks]
SESSION = "session-lock-1"


#: The OS lock kinds this machine has: byte ranges (Linux), one file per session (everywhere).
FILE_KINDS = [True, False] if sys.platform == "linux" else [False]


@pytest.fixture
def closing() -> Iterator[list[SessionLocks]]:
    made: list[SessionLocks] = []
    yield made
    for locks in made:
        locks.close()


@pytest.fixture(params=["local", "file-ranges", "file-per-session"])
def make_locks(
    request: pytest.FixtureRequest, tmp_path: Path, closing: list[SessionLocks]
) -> LocksFactory:
    """Each call: another locks object on the same sessions (another Agent, same store)."""
    if request.param == "local":
        shared = LocalSessionLocks(cross_process=True)
        return lambda: shared
    ranges = request.param == "file-ranges"
    if ranges and sys.platform != "linux":
        pytest.skip("byte-range session locks are Linux's (F_OFD_SETLK)")

    def make() -> SessionLocks:
        locks = FileSessionLocks(tmp_path / "h.db", ranges=ranges)
        closing.append(locks)
        return locks

    return make


# -- conformance: every SessionLocks ----------------------------------------------------------


async def test_a_claim_excludes_every_other_claim_of_its_session(make_locks: LocksFactory):
    first, second = make_locks(), make_locks()
    async with first.claim(SESSION, wait=0) as claim:
        assert claim.session_id == SESSION
        assert first.busy(SESSION)
        with pytest.raises(SessionBusyError, match="busy"):
            async with second.claim(SESSION, wait=0):
                pytest.fail("two claims of one session at once")
    async with second.claim(SESSION, wait=0):
        pass  # released: free again
    assert not first.busy(SESSION)


async def test_claims_of_different_sessions_do_not_wait_for_each_other(
    make_locks: LocksFactory,
):
    locks = make_locks()
    async with locks.claim("session-lock-a", wait=0), make_locks().claim("session-lock-b", wait=0):
        pass


async def test_a_bounded_wait_ends_in_session_busy_naming_the_session(make_locks: LocksFactory):
    holder, waiter = make_locks(), make_locks()
    async with holder.claim(SESSION, wait=0):
        with pytest.raises(SessionBusyError) as caught:
            async with waiter.claim(SESSION, wait=0.05):
                pytest.fail("claimed while held")
    assert caught.value.code == "session_busy"
    assert SESSION in caught.value.message
    assert "会话" in caught.value.message  # one sentence, English and Chinese


async def test_a_waiter_gets_the_claim_once_the_holder_ends(make_locks: LocksFactory):
    holder, waiter = make_locks(), make_locks()
    order: list[str] = []
    held, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with holder.claim(SESSION, wait=0):
            order.append("held")
            held.set()
            await release.wait()
            order.append("released")

    task = asyncio.create_task(hold())
    await held.wait()

    async def wait_for_it() -> None:
        async with waiter.claim(SESSION, wait=30):
            order.append("claimed")

    waiting = asyncio.create_task(wait_for_it())
    await asyncio.sleep(0.02)
    release.set()
    await asyncio.gather(task, waiting)
    assert order == ["held", "released", "claimed"]


async def test_tokens_rise_with_every_claim(make_locks: LocksFactory):
    tokens = []
    for _ in range(5):
        async with make_locks().claim(SESSION, wait=0) as claim:
            tokens.append(claim.token)
    assert tokens == sorted(tokens)
    assert len(set(tokens)) == 5


async def test_a_claim_is_released_when_its_holder_is_cancelled(make_locks: LocksFactory):
    locks = make_locks()

    async def hold_forever() -> None:
        async with locks.claim(SESSION, wait=0):
            await asyncio.Event().wait()

    task = asyncio.create_task(hold_forever())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with make_locks().claim(SESSION, wait=0):
        pass


async def test_no_entry_is_kept_for_an_idle_session(make_locks: LocksFactory):
    locks = make_locks()
    async with locks.claim(SESSION, wait=0):
        pass
    assert not locks.busy(SESSION)
    assert len(locks) == 0  # type: ignore[arg-type]


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
    from hermes.session.locks import FileSessionLocks

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


# -- the store's fence ------------------------------------------------------------------------


async def test_a_write_with_an_older_claim_token_is_refused_and_writes_nothing(tmp_path: Path):
    store = SQLiteStore(tmp_path / "h.db")
    try:
        await store.ensure_session(SESSION, None)
        await store.append(SESSION, [Item("user", "text", "newer turn")], fence=200)
        busy = SessionState(fsm_state="parsing_intent", state_entered_at=1.0)
        with pytest.raises(ClaimLostError) as caught:
            await store.append(SESSION, [Item("assistant", "text", "stale")], busy, fence=100)
        assert caught.value.code == "session_busy"
        items = await store.read_items(SESSION)
        assert [i.content for i in items] == ["newer turn"]
        record = await store.load_session(SESSION)
        assert record is not None
        assert record.state.fsm_state == "idle"  # the stale state was not saved either
        assert record.last_seq == 1
    finally:
        await store.close()


async def test_the_claimant_keeps_writing_and_a_newer_claim_takes_over(tmp_path: Path):
    store = SQLiteStore(tmp_path / "h.db")
    try:
        await store.ensure_session(SESSION, None)
        await store.append(SESSION, [Item("user", "text", "a")], fence=10)
        await store.append(SESSION, [Item("assistant", "text", "a2")], fence=10)
        await store.append(SESSION, [Item("user", "text", "b")], fence=11)
        with pytest.raises(ClaimLostError):
            await store.append(SESSION, [Item("assistant", "text", "a3")], fence=10)
        await store.append(SESSION, [], SessionState(fsm_state="idle"), fence=11)
        # Writes without a fence (imports, tools of older callers) are not fenced.
        await store.append(SESSION, [Item("system", "text", "note")])
        assert [i.content for i in await store.read_items(SESSION)] == ["a", "a2", "b", "note"]
    finally:
        await store.close()


async def test_a_fenced_write_to_a_missing_session_is_a_store_error(tmp_path: Path):
    from hermes.errors import StoreError

    store = SQLiteStore(tmp_path / "h.db")
    try:
        with pytest.raises(StoreError, match="does not exist"):
            await store.append("session-missing", [Item("user", "text", "x")], fence=1)
    finally:
        await store.close()
