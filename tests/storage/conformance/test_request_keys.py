"""The RequestKeys contract (``hermes.channels.http.request_keys``; DESIGN.md, "Public contracts",
HTTP, ``Idempotency-Key``): every backend (``tests.storage.backends.REQUEST_KEYS_BACKENDS``)
must pass every test here."""

from __future__ import annotations

import asyncio
import time

import pytest

from hermes.channels.http.request_keys import (
    RequestKeys,
    request_body_hash,
    request_scope,
)
from hermes.errors import InvalidInputError, LeaseLostError
from tests.storage.backends import RequestKeysBackend
from tests.storage.conformance import racers
from tests.storage.conformance.conftest import FakeClock

SCOPE = request_scope("key:0", "POST /v1/chat")
BODY = request_body_hash({"message": "今天的报警是什么？", "session_id": "s-1"})
OTHER_BODY = request_body_hash({"message": "something else", "session_id": "s-1"})
REPLY = {"session_id": "s-1", "reply": "两条报警 / two alerts", "error": None}
HOUR = 3600.0


async def _claim(keys: RequestKeys, key: str = "k-1", **kwargs: object):
    fields: dict[str, object] = {"body_hash": BODY, "user_id": "alice", **kwargs}
    return await keys.claim(SCOPE, key, **fields)  # type: ignore[arg-type]


# -- outcomes --------------------------------------------------------------------------------


async def test_a_first_request_is_new_and_processing(request_keys: RequestKeys):
    claim = await _claim(request_keys)
    assert claim.outcome == "new"
    record = claim.record
    assert (record.scope, record.key, record.user_id) == (SCOPE, "k-1", "alice")
    assert (record.status, record.attempts, record.body_hash) == ("processing", 1, BODY)
    assert (record.status_code, record.response) == (None, None)
    assert await request_keys.get(SCOPE, "k-1") == record


async def test_a_retry_while_the_first_runs_is_in_progress(request_keys: RequestKeys):
    first = await _claim(request_keys)
    again = await _claim(request_keys)
    assert again.outcome == "in_progress"
    assert again.token == first.token  # nothing changed hands


async def test_a_retry_of_a_finished_request_replays_its_status_and_body(
    request_keys: RequestKeys,
):
    first = await _claim(request_keys)
    done = await request_keys.finish(SCOPE, "k-1", first.token, status_code=200, body=REPLY)
    assert (done.status, done.lease_until, done.status_code, done.response) == (
        "done", None, 200, REPLY,
    )  # fmt: skip
    for _ in range(3):
        again = await _claim(request_keys)
        assert again.outcome == "replay"
        assert (again.record.status_code, again.record.response) == (200, REPLY)
        assert again.record.attempts == 1


@pytest.mark.parametrize("finished", [False, True])
async def test_the_same_key_with_another_body_is_a_conflict_whatever_its_state(
    request_keys: RequestKeys, finished: bool
):
    first = await _claim(request_keys)
    if finished:
        await request_keys.finish(SCOPE, "k-1", first.token, status_code=200, body=REPLY)
    clash = await _claim(request_keys, body_hash=OTHER_BODY)
    assert clash.outcome == "conflict"
    assert clash.record.body_hash == BODY  # the stored request is untouched


async def test_a_released_request_is_forgotten(request_keys: RequestKeys):
    first = await _claim(request_keys)
    await request_keys.release(SCOPE, "k-1", first.token)
    assert await request_keys.get(SCOPE, "k-1") is None
    again = await _claim(request_keys, body_hash=OTHER_BODY)  # no conflict: never seen
    assert (again.outcome, again.record.attempts) == ("new", 1)


async def test_keys_are_per_scope(request_keys: RequestKeys):
    other_scope = request_scope("key:1", "POST /v1/chat")
    one = await request_keys.claim(SCOPE, "k-1", body_hash=BODY)
    two = await request_keys.claim(other_scope, "k-1", body_hash=OTHER_BODY)
    assert (one.outcome, two.outcome) == ("new", "new")
    assert await request_keys.get(request_scope("key:0", "POST /v1/other"), "k-1") is None


async def test_malformed_keys_and_scopes_are_refused(request_keys: RequestKeys):
    bad = [(SCOPE, ""), (SCOPE, "k" * 256), (SCOPE, "a\nb"), (SCOPE, "ключ"), ("", "k")]
    for scope, key in bad:
        with pytest.raises(InvalidInputError):
            await request_keys.claim(scope, key, body_hash=BODY)
    longest = await request_keys.claim(SCOPE, "k" * 255, body_hash=BODY)
    assert longest.outcome == "new"


async def test_a_response_that_is_not_json_is_refused_and_the_claim_stands(
    request_keys: RequestKeys,
):
    first = await _claim(request_keys)
    with pytest.raises(InvalidInputError):
        await request_keys.finish(SCOPE, "k-1", first.token, status_code=200, body={1j})
    assert (await _claim(request_keys)).outcome == "in_progress"


# -- leases and fencing ----------------------------------------------------------------------


async def test_a_holder_that_died_leaves_the_key_once_its_lease_passed(
    request_keys: RequestKeys, clock: FakeClock
):
    first = await _claim(request_keys, lease=30.0)
    clock.advance(29.0)
    assert (await _claim(request_keys)).outcome == "in_progress"
    clock.advance(2.0)
    again = await _claim(request_keys, lease=30.0, user_id="bob")
    assert (again.outcome, again.record.attempts, again.record.user_id) == ("new", 2, "bob")
    for write in (
        request_keys.finish(SCOPE, "k-1", first.token, status_code=200, body=REPLY),
        request_keys.renew(SCOPE, "k-1", first.token, lease=30.0),
        request_keys.release(SCOPE, "k-1", first.token),
    ):
        with pytest.raises(LeaseLostError):
            await write
    stored = await request_keys.get(SCOPE, "k-1")
    assert stored is not None
    assert (stored.token, stored.status) == (again.token, "processing")


async def test_a_renewed_claim_stays_held_past_its_first_lease(
    request_keys: RequestKeys, clock: FakeClock
):
    first = await _claim(request_keys, lease=30.0)
    clock.advance(20.0)
    renewed = await request_keys.renew(SCOPE, "k-1", first.token, lease=30.0)
    assert renewed.lease_until == pytest.approx(clock.now + 30.0)
    clock.advance(20.0)  # past the first lease, within the renewal
    assert (await _claim(request_keys)).outcome == "in_progress"


async def test_a_finished_claim_cannot_finish_again(request_keys: RequestKeys):
    first = await _claim(request_keys)
    await request_keys.finish(SCOPE, "k-1", first.token, status_code=200, body=REPLY)
    with pytest.raises(LeaseLostError):
        await request_keys.finish(SCOPE, "k-1", first.token, status_code=200, body={})
    with pytest.raises(LeaseLostError):
        await request_keys.release(SCOPE, "k-1", first.token)
    stored = await request_keys.get(SCOPE, "k-1")
    assert stored is not None
    assert stored.response == REPLY


# -- the window and erasure ------------------------------------------------------------------


async def test_a_key_is_kept_for_its_window_then_forgotten(
    request_keys: RequestKeys, clock: FakeClock
):
    first = await _claim(request_keys, keep=24 * HOUR)
    await request_keys.finish(SCOPE, "k-1", first.token, status_code=200, body=REPLY)
    clock.advance(23 * HOUR)
    assert (await _claim(request_keys)).outcome == "replay"
    assert await request_keys.expire() == 0
    clock.advance(2 * HOUR)
    assert await request_keys.get(SCOPE, "k-1") is None
    again = await _claim(request_keys, body_hash=OTHER_BODY)
    assert (again.outcome, again.record.attempts) == ("new", 1)  # as if never seen


async def test_expire_deletes_the_keys_past_their_window_only(
    request_keys: RequestKeys, clock: FakeClock
):
    for key in ("old-1", "old-2"):
        claim = await _claim(request_keys, key, keep=HOUR)
        await request_keys.finish(SCOPE, key, claim.token, status_code=200, body=REPLY)
    clock.advance(2 * HOUR)
    await _claim(request_keys, "fresh", keep=HOUR)
    assert await request_keys.expire() == 2
    assert await request_keys.get(SCOPE, "fresh") is not None
    assert await request_keys.expire() == 0


async def test_a_key_under_a_live_lease_never_expires(request_keys: RequestKeys, clock: FakeClock):
    first = await _claim(request_keys, keep=60.0, lease=600.0)
    clock.advance(120.0)  # past the window, within the lease: a turn still running
    assert await request_keys.expire() == 0
    assert (await _claim(request_keys)).outcome == "in_progress"
    await request_keys.finish(SCOPE, "k-1", first.token, status_code=200, body=REPLY)


async def test_forgetting_a_user_deletes_the_replies_kept_for_them(request_keys: RequestKeys):
    for key, user in (("k-1", "alice"), ("k-2", "alice"), ("k-3", "bob")):
        claim = await _claim(request_keys, key, user_id=user)
        await request_keys.finish(SCOPE, key, claim.token, status_code=200, body=REPLY)
    assert await request_keys.forget_user("alice") == 2
    assert await request_keys.get(SCOPE, "k-1") is None
    assert await request_keys.get(SCOPE, "k-3") is not None
    assert await request_keys.forget_user("alice") == 0


# -- several workers, restarts ---------------------------------------------------------------


async def test_of_many_concurrent_claims_in_one_process_exactly_one_is_new(
    request_keys_backend: RequestKeysBackend, clock: FakeClock
):
    handles = [request_keys_backend.open_request_keys(clock) for _ in range(4)]
    try:
        claims = await asyncio.gather(
            *(handle.claim(SCOPE, "k-1", body_hash=BODY) for handle in handles * 3)
        )
        assert sorted(claim.outcome for claim in claims) == ["in_progress"] * 11 + ["new"]
    finally:
        for handle in handles:
            await handle.close()


@pytest.fixture
def cross_process_keys(request_keys_backend: RequestKeysBackend) -> RequestKeysBackend:
    if not request_keys_backend.cross_process:
        pytest.skip(f"{request_keys_backend.name} cannot be reached from another process")
    return request_keys_backend


def test_of_processes_claiming_one_key_at_once_exactly_one_is_new(
    cross_process_keys: RequestKeysBackend,
):
    outcomes = racers.race(cross_process_keys, "request", (SCOPE, "k-race", BODY, 60.0), 4)
    assert sorted(outcomes) == ["in_progress"] * 3 + ["new"]


async def test_a_claim_of_a_killed_process_expires_by_its_lease(
    cross_process_keys: RequestKeysBackend,
):
    outcome, token = racers.hold_then_kill(
        cross_process_keys, "request", (SCOPE, "k-kill", BODY, 1.5)
    )
    assert outcome == "new"
    keys = cross_process_keys.open_request_keys()
    try:
        held = await keys.get(SCOPE, "k-kill")
        assert held is not None
        assert held.lease_until is not None
        if time.time() < held.lease_until - 0.2:  # still within the dead holder's lease
            assert (await _claim(keys, "k-kill")).outcome == "in_progress"
        racers.wait_past(held.lease_until)
        again = await _claim(keys, "k-kill")
        assert (again.outcome, again.record.attempts) == ("new", 2)
        assert again.token != token
    finally:
        await keys.close()


async def test_a_finished_response_is_replayed_after_a_reopen(
    request_keys_backend: RequestKeysBackend, clock: FakeClock
):
    if not request_keys_backend.durable:
        pytest.skip(f"{request_keys_backend.name} keeps nothing across a reopen")
    first = request_keys_backend.open_request_keys(clock)
    claim = await _claim(first)
    await first.finish(SCOPE, "k-1", claim.token, status_code=200, body=REPLY)
    await first.close()
    reopened = request_keys_backend.open_request_keys(clock)
    try:
        replay = await _claim(reopened)
        assert (replay.outcome, replay.record.status_code, replay.record.response) == (
            "replay", 200, REPLY,
        )  # fmt: skip
        assert (await _claim(reopened, body_hash=OTHER_BODY)).outcome == "conflict"
    finally:
        await reopened.close()
