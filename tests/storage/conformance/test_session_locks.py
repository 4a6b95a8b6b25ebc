"""The SessionLocks contract (``hermes.session.locks``): every implementation
(``tests.storage.backends.LOCKS_BACKENDS``) must pass every test here."""

from __future__ import annotations

import asyncio

import pytest

from hermes.errors import SessionBusyError
from tests.storage.conformance.conftest import LocksFactory

SESSION = "session-lock-1"


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
