"""The idempotency records contract (``hermes.tools.pipeline.idempotency_records``): claim,
complete, replay, release on failure, lease and ttl expiry, owners checked, exactly-once among
racing callers — across processes for the backends that are shared. Every backend
(``tests.storage.backends.IDEMPOTENCY_BACKENDS``) must pass every test here."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.tools.pipeline.idempotency_records import IdempotencyRecords
from tests.storage.backends import IdempotencyBackend

REPO_ROOT = Path(__file__).resolve().parents[3]
RESULT = '{"output": {"refund_id": "R1"}, "summary": "refunded A-1"}'


class WallClock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def records(idempotency_backend: IdempotencyBackend) -> IdempotencyRecords:
    return idempotency_backend.open()


async def test_a_new_key_is_claimed(records: IdempotencyRecords) -> None:
    assert await records.claim("refund", "k", owner="one", lease=30) is None


async def test_a_completed_key_replays_its_result(records: IdempotencyRecords) -> None:
    assert await records.claim("refund", "k", owner="one", lease=30) is None
    assert await records.complete("refund", "k", owner="one", result_json=RESULT, ttl=60)
    assert await records.claim("refund", "k", owner="two", lease=30) == RESULT
    assert await records.claim("refund", "k", owner="three", lease=30) == RESULT


async def test_a_released_claim_lets_the_next_caller_run(records: IdempotencyRecords) -> None:
    assert await records.claim("refund", "k", owner="one", lease=30) is None
    await records.release("refund", "k", owner="one")  # the call failed
    assert await records.claim("refund", "k", owner="two", lease=30) is None


async def test_keys_are_per_tool(records: IdempotencyRecords) -> None:
    assert await records.claim("refund", "k", owner="one", lease=30) is None
    assert await records.complete("refund", "k", owner="one", result_json=RESULT, ttl=60)
    assert await records.claim("charge", "k", owner="two", lease=30) is None
    assert await records.claim("refund", "other", owner="three", lease=30) is None


async def test_a_live_claim_makes_the_next_caller_wait_for_its_result(
    records: IdempotencyRecords,
) -> None:
    assert await records.claim("refund", "k", owner="one", lease=30) is None
    waiting = asyncio.ensure_future(records.claim("refund", "k", owner="two", lease=30))
    await asyncio.sleep(0.2)
    assert not waiting.done()  # it never returns while the first claim is live
    assert await records.complete("refund", "k", owner="one", result_json=RESULT, ttl=60)
    assert await asyncio.wait_for(waiting, 10) == RESULT


async def test_a_waiter_claims_the_key_its_first_owner_released(
    records: IdempotencyRecords,
) -> None:
    assert await records.claim("refund", "k", owner="one", lease=30) is None
    waiting = asyncio.ensure_future(records.claim("refund", "k", owner="two", lease=30))
    await asyncio.sleep(0.1)
    await records.release("refund", "k", owner="one")
    assert await asyncio.wait_for(waiting, 10) is None
    assert await records.complete("refund", "k", owner="two", result_json=RESULT, ttl=60)


async def test_of_many_concurrent_claims_exactly_one_runs(records: IdempotencyRecords) -> None:
    async def caller(owner: str) -> str:
        stored = await records.claim("refund", "k", owner=owner, lease=30)
        if stored is not None:
            return f"replayed {stored}"
        await asyncio.sleep(0.05)
        assert await records.complete("refund", "k", owner=owner, result_json=owner, ttl=60)
        return f"ran {owner}"

    outcomes = await asyncio.gather(*(caller(f"owner-{i}") for i in range(8)))
    ran = [o for o in outcomes if o.startswith("ran ")]
    assert len(ran) == 1
    winner = ran[0].removeprefix("ran ")
    assert sorted(outcomes) == sorted([f"ran {winner}"] + [f"replayed {winner}"] * 7)


async def test_a_claim_whose_lease_ended_is_taken_over(
    idempotency_backend: IdempotencyBackend,
) -> None:
    clock = WallClock()
    records = idempotency_backend.open(clock)
    assert await records.claim("refund", "k", owner="dead", lease=30) is None
    clock.now += 29
    waiting = asyncio.ensure_future(records.claim("refund", "k", owner="early", lease=30))
    await asyncio.sleep(0.1)
    assert not waiting.done()  # still the dead owner's
    clock.now += 1  # its lease ends: the owner died and never completed
    assert await asyncio.wait_for(waiting, 10) is None
    assert not await records.complete("refund", "k", owner="dead", result_json="{}", ttl=60)
    assert await records.complete("refund", "k", owner="early", result_json=RESULT, ttl=60)
    assert await records.claim("refund", "k", owner="third", lease=30) == RESULT


async def test_the_stored_result_expires_after_its_ttl(
    idempotency_backend: IdempotencyBackend,
) -> None:
    clock = WallClock()
    records = idempotency_backend.open(clock)
    assert await records.claim("refund", "k", owner="one", lease=30) is None
    assert await records.complete("refund", "k", owner="one", result_json=RESULT, ttl=60)
    clock.now += 59
    assert await records.claim("refund", "k", owner="two", lease=30) == RESULT
    clock.now += 1
    assert await records.claim("refund", "k", owner="three", lease=30) is None


async def test_only_the_owner_completes_or_releases_a_claim(records: IdempotencyRecords) -> None:
    assert await records.claim("refund", "k", owner="one", lease=30) is None
    await records.release("refund", "k", owner="intruder")
    assert not await records.complete("refund", "k", owner="intruder", result_json="{}", ttl=60)
    waiting = asyncio.ensure_future(records.claim("refund", "k", owner="two", lease=30))
    await asyncio.sleep(0.1)
    assert not waiting.done()  # the intruder freed nothing
    assert await records.complete("refund", "k", owner="one", result_json=RESULT, ttl=60)
    assert await asyncio.wait_for(waiting, 10) == RESULT


async def test_a_done_record_is_not_completed_or_released_again(
    records: IdempotencyRecords,
) -> None:
    assert await records.claim("refund", "k", owner="one", lease=30) is None
    assert await records.complete("refund", "k", owner="one", result_json=RESULT, ttl=60)
    assert not await records.complete("refund", "k", owner="one", result_json="{}", ttl=60)
    await records.release("refund", "k", owner="one")
    assert await records.claim("refund", "k", owner="two", lease=30) == RESULT


async def test_the_fire_and_forget_variants_land(records: IdempotencyRecords) -> None:
    assert await records.claim("refund", "a", owner="one", lease=30) is None
    assert await records.claim("refund", "b", owner="one", lease=30) is None
    records.complete_soon("refund", "a", owner="one", result_json=RESULT, ttl=60)
    records.release_soon("refund", "b", owner="one")
    # They land on the backend's own time (a worker thread …); until then a claim waits.
    assert await asyncio.wait_for(records.claim("refund", "a", owner="two", lease=30), 10) == (
        RESULT
    )
    assert await asyncio.wait_for(records.claim("refund", "b", owner="two", lease=30), 10) is None


async def test_results_survive_reopening(idempotency_backend: IdempotencyBackend) -> None:
    if not idempotency_backend.durable:
        pytest.skip(f"{idempotency_backend.name} records end with their object")
    first = idempotency_backend.open()
    assert await first.claim("refund", "k", owner="one", lease=30) is None
    assert await first.complete("refund", "k", owner="one", result_json=RESULT, ttl=60)
    await idempotency_backend.close()  # the process ends
    again = idempotency_backend.open()
    assert await again.claim("refund", "k", owner="two", lease=30) == RESULT


async def test_two_processes_racing_for_one_key_run_it_once(
    idempotency_backend: IdempotencyBackend, tmp_path: Path
) -> None:
    location = idempotency_backend.location
    if not idempotency_backend.shared or location is None:
        pytest.skip(f"{idempotency_backend.name} records are not shared between processes")
    outputs = await asyncio.to_thread(_race, location, tmp_path / "go", 3)
    verbs = sorted(verb for verb, _owner in outputs)
    assert verbs == ["ran", "replayed", "replayed"]
    assert len({owner for _verb, owner in outputs}) == 1  # everyone got the one run's result


def _race(location: str, go: Path, count: int) -> list[list[str]]:
    """``count`` child processes on the records at ``location``, claiming one key at once."""
    child = "tests.storage.conformance.idempotency_child"
    children = [
        subprocess.Popen(
            [sys.executable, "-m", child, location, str(go), "0.3"],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    try:
        for process in children:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        go.touch()  # all open: they claim at once
        outputs = [process.communicate(timeout=60)[0].split() for process in children]
    finally:
        for process in children:
            if process.poll() is None:
                process.kill()
    assert [process.returncode for process in children] == [0] * count
    return outputs
