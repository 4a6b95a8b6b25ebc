"""The EventDedupe contract (``hermes.channels.dedupe``; DESIGN.md, "Public contracts", Events):
every backend (``tests.storage.backends.RUNS_BACKENDS``) must pass every test here."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.channels.dedupe import DEFAULT_ROUTE, EventDedupe, event_body_hash
from hermes.errors import InvalidInputError, LeaseLostError
from tests.storage.backends import RunsBackend
from tests.storage.conformance import racers
from tests.storage.conformance.conftest import FakeClock

BODY = event_body_hash({"msg_id": "alert-001", "type": "alert", "content": "连接池使用率 85%"})
OTHER_BODY = event_body_hash({"msg_id": "alert-001", "type": "alert", "content": "resolved"})
HOUR = 3600.0


async def _claim(dedupe: EventDedupe, msg_id: str = "alert-001", **kwargs: object):
    fields: dict[str, object] = {"body_hash": BODY, "trace_id": "trace-1", **kwargs}
    return await dedupe.claim(DEFAULT_ROUTE, msg_id, **fields)  # type: ignore[arg-type]


# -- outcomes --------------------------------------------------------------------------------


async def test_a_first_delivery_is_new_and_processing(dedupe: EventDedupe):
    claim = await _claim(dedupe)
    assert claim.outcome == "new"
    delivery = claim.delivery
    assert (delivery.route, delivery.msg_id, delivery.trace_id) == (
        "default",
        "alert-001",
        "trace-1",
    )
    assert (delivery.status, delivery.attempts, delivery.body_hash) == ("processing", 1, BODY)
    assert await dedupe.get(DEFAULT_ROUTE, "alert-001") == delivery


async def test_a_delivery_while_the_first_is_processed_is_in_progress_with_its_trace(
    dedupe: EventDedupe,
):
    first = await _claim(dedupe)
    again = await _claim(dedupe, trace_id="trace-2")
    assert again.outcome == "in_progress"
    assert again.delivery.trace_id == "trace-1"
    assert again.delivery.token == first.token  # nothing changed hands


async def test_a_duplicate_of_a_done_delivery_returns_the_first_trace_and_runs_nothing(
    dedupe: EventDedupe,
):
    first = await _claim(dedupe)
    done = await dedupe.finish(DEFAULT_ROUTE, "alert-001", first.token, status="done")
    assert (done.status, done.lease_until) == ("done", None)
    for attempt in range(3):
        again = await _claim(dedupe, trace_id=f"trace-retry-{attempt}")
        assert again.outcome == "duplicate"
        assert again.delivery.trace_id == "trace-1"
        assert again.delivery.attempts == 1


@pytest.mark.parametrize("first_outcome", [None, "done", "failed"])
async def test_the_same_msg_id_with_another_body_is_a_conflict_whatever_its_state(
    dedupe: EventDedupe, first_outcome: str | None
):
    first = await _claim(dedupe)
    if first_outcome is not None:
        await dedupe.finish(DEFAULT_ROUTE, "alert-001", first.token, status=first_outcome)  # type: ignore[arg-type]
    clash = await _claim(dedupe, body_hash=OTHER_BODY, trace_id="trace-2")
    assert clash.outcome == "conflict"
    assert clash.delivery.body_hash == BODY  # the stored delivery is untouched
    assert clash.delivery.trace_id == "trace-1"


async def test_a_failed_delivery_is_processed_again_when_sent_again(dedupe: EventDedupe):
    first = await _claim(dedupe)
    failed = await dedupe.finish(
        DEFAULT_ROUTE, "alert-001", first.token, status="failed", error="model down"
    )
    assert (failed.status, failed.error) == ("failed", "model down")
    again = await _claim(dedupe, trace_id="trace-2")
    assert again.outcome == "new"
    assert (again.delivery.attempts, again.delivery.trace_id) == (2, "trace-2")
    assert (again.delivery.status, again.delivery.error) == ("processing", None)
    assert again.token != first.token
    with pytest.raises(LeaseLostError):  # the first claim is over
        await dedupe.finish(DEFAULT_ROUTE, "alert-001", first.token, status="done")
    await dedupe.finish(DEFAULT_ROUTE, "alert-001", again.token, status="done")
    assert (await _claim(dedupe, trace_id="trace-3")).delivery.trace_id == "trace-2"


async def test_a_released_delivery_is_not_seen(dedupe: EventDedupe):
    first = await _claim(dedupe)
    await dedupe.release(DEFAULT_ROUTE, "alert-001", first.token)
    assert await dedupe.get(DEFAULT_ROUTE, "alert-001") is None
    again = await _claim(dedupe, body_hash=OTHER_BODY, trace_id="trace-2")  # no conflict
    assert (again.outcome, again.delivery.attempts) == ("new", 1)


async def test_keys_are_per_route(dedupe: EventDedupe):
    one = await dedupe.claim("alertmanager", "m-1", body_hash=BODY, trace_id="t-a")
    two = await dedupe.claim("github", "m-1", body_hash=OTHER_BODY, trace_id="t-b")
    assert (one.outcome, two.outcome) == ("new", "new")
    assert await dedupe.get("grafana", "m-1") is None


async def test_malformed_routes_and_msg_ids_are_refused(dedupe: EventDedupe):
    for route, msg_id in [("", "m"), ("r", ""), ("r" * 129, "m"), ("r", "m" * 257), ("r", "a\nb")]:
        with pytest.raises(InvalidInputError):
            await dedupe.claim(route, msg_id, body_hash=BODY, trace_id="t")


def test_the_body_hash_ignores_key_order_but_not_content():
    assert event_body_hash({"a": 1, "b": [1, 2]}) == event_body_hash({"b": [1, 2], "a": 1})
    assert event_body_hash({"a": 1}) != event_body_hash({"a": 2})
    assert event_body_hash(b"raw") == event_body_hash("raw")


# -- leases and fencing ----------------------------------------------------------------------


async def test_a_holder_that_died_leaves_the_key_once_its_lease_passed(
    dedupe: EventDedupe, clock: FakeClock
):
    first = await _claim(dedupe, lease=30.0)
    clock.advance(29.0)
    assert (await _claim(dedupe, trace_id="trace-2")).outcome == "in_progress"
    clock.advance(2.0)
    again = await _claim(dedupe, trace_id="trace-2", lease=30.0)
    assert (again.outcome, again.delivery.attempts, again.delivery.trace_id) == (
        "new",
        2,
        "trace-2",
    )
    for write in (
        dedupe.finish(DEFAULT_ROUTE, "alert-001", first.token, status="done"),
        dedupe.renew(DEFAULT_ROUTE, "alert-001", first.token, lease=30.0),
        dedupe.release(DEFAULT_ROUTE, "alert-001", first.token),
    ):
        with pytest.raises(LeaseLostError):
            await write
    stored = await dedupe.get(DEFAULT_ROUTE, "alert-001")
    assert stored is not None
    assert stored.token == again.token
    assert stored.status == "processing"


async def test_a_renewed_claim_stays_held_past_its_first_lease(
    dedupe: EventDedupe, clock: FakeClock
):
    first = await _claim(dedupe, lease=30.0)
    clock.advance(20.0)
    renewed = await dedupe.renew(DEFAULT_ROUTE, "alert-001", first.token, lease=30.0)
    assert renewed.lease_until == pytest.approx(clock.now + 30.0)
    clock.advance(20.0)  # 40 s after the claim: past the first lease, within the renewal
    assert (await _claim(dedupe, trace_id="trace-2")).outcome == "in_progress"


async def test_a_holder_past_its_lease_may_still_finish_while_nobody_took_over(
    dedupe: EventDedupe, clock: FakeClock
):
    first = await _claim(dedupe, lease=30.0)
    clock.advance(60.0)
    done = await dedupe.finish(DEFAULT_ROUTE, "alert-001", first.token, status="done")
    assert done.status == "done"


async def test_a_finished_claim_cannot_finish_again(dedupe: EventDedupe):
    first = await _claim(dedupe)
    await dedupe.finish(DEFAULT_ROUTE, "alert-001", first.token, status="done")
    with pytest.raises(LeaseLostError):
        await dedupe.finish(DEFAULT_ROUTE, "alert-001", first.token, status="failed")
    stored = await dedupe.get(DEFAULT_ROUTE, "alert-001")
    assert stored is not None
    assert stored.status == "done"


async def test_an_unknown_key_cannot_be_finished(dedupe: EventDedupe):
    with pytest.raises(LeaseLostError):
        await dedupe.finish(DEFAULT_ROUTE, "never-seen", 1, status="done")


# -- the window ------------------------------------------------------------------------------


async def test_a_key_is_kept_for_its_window_then_forgotten(dedupe: EventDedupe, clock: FakeClock):
    first = await _claim(dedupe, keep=72 * HOUR)
    await dedupe.finish(DEFAULT_ROUTE, "alert-001", first.token, status="done")
    clock.advance(71 * HOUR)
    assert (await _claim(dedupe, trace_id="trace-2")).outcome == "duplicate"
    assert await dedupe.expire() == 0
    clock.advance(2 * HOUR)
    assert await dedupe.get(DEFAULT_ROUTE, "alert-001") is None
    again = await _claim(dedupe, body_hash=OTHER_BODY, trace_id="trace-3")
    assert (again.outcome, again.delivery.attempts) == ("new", 1)  # as if never seen


async def test_expire_deletes_the_keys_past_their_window_only(
    dedupe: EventDedupe, clock: FakeClock
):
    for msg_id in ("old-1", "old-2"):
        claim = await _claim(dedupe, msg_id, keep=HOUR)
        await dedupe.finish(DEFAULT_ROUTE, msg_id, claim.token, status="done")
    clock.advance(2 * HOUR)
    await _claim(dedupe, "fresh", keep=HOUR)
    assert await dedupe.expire() == 2
    assert await dedupe.get(DEFAULT_ROUTE, "fresh") is not None
    assert await dedupe.expire() == 0


async def test_a_key_under_a_live_lease_never_expires(dedupe: EventDedupe, clock: FakeClock):
    first = await _claim(dedupe, keep=60.0, lease=600.0)
    clock.advance(120.0)  # past the window, within the lease: a turn still running
    assert await dedupe.expire() == 0
    assert (await _claim(dedupe, trace_id="trace-2")).outcome == "in_progress"
    await dedupe.finish(DEFAULT_ROUTE, "alert-001", first.token, status="done")


# -- any sequence of deliveries --------------------------------------------------------------

_KEEP = 1000.0  # the window; a claim's lease is shorter or (a long turn) longer
_steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("claim"), st.sampled_from([BODY, OTHER_BODY]), st.sampled_from([100.0, 3000.0])
        ),
        st.tuples(st.just("finish"), st.sampled_from(["done", "failed"]), st.booleans()),
        st.tuples(st.just("release"), st.booleans()),
        st.tuples(st.just("advance"), st.sampled_from([30.0, 150.0, 1200.0])),
    ),
    max_size=14,
)


@dataclass(frozen=True)
class _Row:
    """What the contract says is stored (the reference model of the test below)."""

    body: str
    status: str
    token: int
    attempts: int
    lease_until: float
    expires_at: float

    def gone(self, now: float) -> bool:
        live = self.status == "processing" and self.lease_until > now
        return self.expires_at <= now and not live


def _expected_claim(row: _Row | None, body: str, now: float) -> str:
    if row is None or row.gone(now):
        return "new"
    if row.body != body:
        return "conflict"
    if row.status == "done":
        return "duplicate"
    return "in_progress" if row.status == "processing" and row.lease_until > now else "new"


async def _play(
    dedupe: EventDedupe, clock: FakeClock, steps: list[tuple[Any, ...]], msg_id: str
) -> None:
    row: _Row | None = None
    tokens: list[int] = [-1]  # every token handed out; -1 was never anyone's
    for step in steps:
        now = clock.now
        if step[0] == "advance":
            clock.advance(step[1])
        elif step[0] == "claim":
            expected = _expected_claim(row, step[1], now)
            got = await dedupe.claim(DEFAULT_ROUTE, msg_id, body_hash=step[1], trace_id="t",
                                     lease=step[2], keep=_KEEP)  # fmt: skip
            assert got.outcome == expected, (step, row)
            if expected == "new":
                fresh = row is None or row.gone(now)
                attempts = 1 if fresh or row is None else row.attempts + 1
                row = _Row(step[1], "processing", got.token, attempts, now + step[2], now + _KEEP)
                tokens.append(got.token)
        else:
            token = tokens[-1] if step[-1] else tokens[0]
            holds = row is not None and row.status == "processing" and row.token == token
            try:
                if step[0] == "finish":
                    await dedupe.finish(DEFAULT_ROUTE, msg_id, token, status=step[1])
                else:
                    await dedupe.release(DEFAULT_ROUTE, msg_id, token)
            except LeaseLostError:
                assert not holds, (step, row)
                continue
            assert holds, (step, row)
            row = None if step[0] == "release" else replace(row, status=step[1])  # type: ignore[arg-type]
        stored = await dedupe.get(DEFAULT_ROUTE, msg_id)
        alive = row is not None and not row.gone(clock.now)
        assert (stored is not None) == alive, (step, row, stored)
        if stored is not None and row is not None:
            assert (stored.status, stored.attempts, stored.token) == (
                row.status, row.attempts, row.token,
            )  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=_steps)
def test_any_sequence_of_deliveries_gets_the_answers_the_contract_gives(
    runs_backend: RunsBackend, steps: list[tuple[Any, ...]]
):
    """Claims with either body, finishes and releases with the standing or a stale token, and
    time passing over leases and windows: every answer and every stored state is the one the
    reference model of the contract (``_Row``, ``_expected_claim``) gives."""

    async def run() -> None:
        clock = FakeClock()
        dedupe = runs_backend.open_event_dedupe(clock)
        try:
            await _play(dedupe, clock, steps, f"m-{uuid.uuid4().hex}")
        finally:
            await dedupe.close()

    asyncio.run(run())


# -- several workers, restarts ---------------------------------------------------------------


async def test_of_many_concurrent_claims_in_one_process_exactly_one_is_new(
    runs_backend: RunsBackend, clock: FakeClock
):
    handles = [runs_backend.open_event_dedupe(clock) for _ in range(4)]
    try:
        claims = await asyncio.gather(
            *(
                handle.claim(DEFAULT_ROUTE, "alert-001", body_hash=BODY, trace_id=f"t-{i}")
                for i, handle in enumerate(handles * 3)
            )
        )
        assert sorted(claim.outcome for claim in claims) == ["in_progress"] * 11 + ["new"]
        winner = next(claim for claim in claims if claim.outcome == "new")
        assert {claim.delivery.trace_id for claim in claims} == {winner.delivery.trace_id}
    finally:
        for handle in handles:
            await handle.close()


def test_of_processes_claiming_one_key_at_once_exactly_one_is_new(cross_process: RunsBackend):
    outcomes = racers.race(cross_process, "event", (DEFAULT_ROUTE, "alert-race", BODY, 60.0), 4)
    assert sorted(outcomes) == ["in_progress"] * 3 + ["new"]


async def test_a_claim_of_a_killed_process_expires_by_its_lease(cross_process: RunsBackend):
    lease = 1.5
    outcome, token = racers.hold_then_kill(
        cross_process, "event", (DEFAULT_ROUTE, "alert-kill", BODY, lease)
    )
    assert outcome == "new"
    dedupe = cross_process.open_event_dedupe()
    try:
        held = await dedupe.get(DEFAULT_ROUTE, "alert-kill")
        assert held is not None
        assert held.lease_until is not None
        if time.time() < held.lease_until - 0.2:  # still within the dead holder's lease
            assert (await _claim(dedupe, "alert-kill", trace_id="t-2")).outcome == "in_progress"
        racers.wait_past(held.lease_until)
        again = await _claim(dedupe, "alert-kill", trace_id="t-2")
        assert (again.outcome, again.delivery.attempts) == ("new", 2)
        assert again.token != token
    finally:
        await dedupe.close()


async def test_outcomes_survive_a_reopen(durable: RunsBackend, clock: FakeClock):
    first = durable.open_event_dedupe(clock)
    claim = await _claim(first)
    failed = await _claim(first, "alert-002")
    await first.finish(DEFAULT_ROUTE, "alert-001", claim.token, status="done")
    await first.finish(DEFAULT_ROUTE, "alert-002", failed.token, status="failed")
    await first.close()
    reopened = durable.open_event_dedupe(clock)
    try:
        duplicate = await _claim(reopened, trace_id="trace-2")
        assert (duplicate.outcome, duplicate.delivery.trace_id) == ("duplicate", "trace-1")
        assert (await _claim(reopened, "alert-002", trace_id="trace-2")).outcome == "new"
    finally:
        await reopened.close()
