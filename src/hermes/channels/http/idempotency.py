"""``Idempotency-Key`` at the HTTP edge (DESIGN.md, "Public contracts", HTTP): one helper a route
wraps its work in, over the durable ``RequestKeys`` records (``request_keys``)::

    return await idempotent(request, svc, caller, "POST /v1/chat", run, user_id=user_id)

``run`` does the route's work and returns ``(status_code, json_body)``; it may raise
``ApiError`` (or a typed Hermes error) to refuse. Without the header, ``run`` is simply called.
With it (1 to 255 printable ASCII characters, else 400 ``invalid_idempotency_key``):

- the first request with the key runs; a 2xx answer (a completed turn, an honest ``error``
  included) is stored for ``server.idempotency_hours``; a refusal (raised, or a 4xx/5xx
  answer) releases the key, so a retry runs again (Stripe's rule) — as does a turn stopped
  before it finished (``error.type`` ``cancelled``: checkpointed by a shutdown, or cancelled);
- a retry with the same body gets the stored status and JSON body with
  ``Idempotency-Replayed: true``; the same key with another body is 409
  ``idempotency_conflict``;
- a retry while the first still runs waits for it (polling with backoff, at most ``wait``
  seconds, then 409 ``idempotency_in_progress`` with ``Retry-After``); a first attempt whose
  worker died — its lease, renewed while ``run`` runs, passed — is run again by the retry.

The attempt runs as its own task: a client that leaves does not stop it, and its outcome is
still recorded (a retry then replays it).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from hermes.agent import compose
from hermes.channels.http.auth import Caller
from hermes.channels.http.errors import ApiError
from hermes.channels.http.request_keys import (
    DEFAULT_LEASE_SECONDS,
    KeyClaim,
    RequestKeys,
    check_request_key,
    request_body_hash,
    request_scope,
)
from hermes.channels.http.state import Service
from hermes.errors import InvalidInputError, LeaseLostError, StoreError
from hermes.observe import get_logger

log = get_logger("hermes.channels.http")

KEY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotency-Replayed"
#: Where the records live in ``Service.parts``.
PART = "request_keys"
#: How long a retry waits for a first attempt still running: an enqueued turn may wait the
#: turn timeout (120 s by default) for its session, then run as long again.
DEFAULT_WAIT_SECONDS = 240.0
#: What ``Retry-After`` says when the wait ran out.
RETRY_AFTER_SECONDS = 5
#: The polling of an in-progress key: first delay, growth, cap (seconds).
_POLL_FIRST, _POLL_GROWTH, _POLL_CAP = 0.05, 1.5, 1.0

#: What a route's work returns: the status and the JSON body.
Outcome = tuple[int, Any]

# Attempts running now: a task needs a strong reference while the request that started it
# may be gone.
_ATTEMPTS: set[asyncio.Task[Outcome]] = set()


def request_keys(svc: Service) -> RequestKeys:
    """The ``RequestKeys`` of ``svc``: set in ``svc.parts["request_keys"]``, else opened on
    first use beside the agent's store (``requests.db``)."""
    found = svc.parts.get(PART)
    if found is None:
        found = svc.parts[PART] = compose.open_request_keys(svc.agent.store)
    keys: RequestKeys = found
    return keys


async def close_request_keys(svc: Service) -> None:
    """Close the records of ``svc`` if they were opened (the app's shutdown)."""
    found = svc.parts.pop(PART, None)
    if found is not None:
        await found.close()


async def idempotent(
    request: Request,
    svc: Service,
    caller: Caller,
    route: str,
    run: Callable[[], Awaitable[Outcome]],
    *,
    body: bytes | Mapping[str, Any] | None = None,
    user_id: str | None = None,
    wait: float = DEFAULT_WAIT_SECONDS,
    lease: float = DEFAULT_LEASE_SECONDS,
) -> Response:
    """Answer ``request`` with ``run``'s outcome, once per ``Idempotency-Key`` (see the module
    docstring). ``route`` names the route in the key's scope (``"POST /v1/chat"``), ``body``
    the request's JSON (default: its raw body; bytes are hashed as canonical JSON when they
    parse), ``wait`` bounds the wait for a first attempt still running (seconds),
    ``user_id`` the user the request acts for (whose erasure deletes the record)."""
    claimed = await _claim_key(
        request, svc, caller, route, body=body, user_id=user_id, wait=wait, lease=lease
    )
    if claimed is None:
        status, payload = await run()
        return JSONResponse(payload, status_code=status)
    keys, claim = claimed
    if claim.outcome == "new":
        attempt = _start_attempt(keys, claim, run, lease)
        # Shielded: a client that leaves does not stop the attempt nor its record.
        status, payload = await asyncio.shield(attempt)
        return JSONResponse(payload, status_code=status)
    record = claim.record
    return JSONResponse(
        record.response, status_code=record.status_code or 200, headers={REPLAYED_HEADER: "true"}
    )


async def idempotent_start(
    request: Request,
    svc: Service,
    caller: Caller,
    route: str,
    start: Callable[[], Awaitable[tuple[Callable[[], Awaitable[Outcome]], Response]]],
    *,
    replay: Callable[[int, Any], Response],
    user_id: str | None = None,
    wait: float = DEFAULT_WAIT_SECONDS,
    lease: float = DEFAULT_LEASE_SECONDS,
) -> Response:
    """:func:`idempotent` for a route that answers before its work ends (a stream).

    ``start()`` begins the work (raising to refuse it: the key is released) and returns
    ``(finish, response)``: ``response`` is sent now, and ``finish()`` — awaited in the
    background — gives the outcome recorded under the key, as :func:`idempotent` records it.
    A retry gets ``replay(status, body)`` of the recorded outcome, with
    ``Idempotency-Replayed: true``; one while the first runs waits for it as there. Without
    the header, ``start`` runs and its response is sent."""
    claimed = await _claim_key(
        request, svc, caller, route, body=None, user_id=user_id, wait=wait, lease=lease
    )
    if claimed is None:
        return (await start())[1]
    keys, claim = claimed
    if claim.outcome == "new":
        scope, key, token = claim.record.scope, claim.record.key, claim.token
        # The lease is renewed while the start waits (its turn may queue behind another).
        heartbeat = asyncio.create_task(_heartbeat(keys, scope, key, token, lease))
        try:
            finish, response = await start()
        except BaseException:  # refused before it ran: forget the key, then re-raise
            heartbeat.cancel()
            await _release(keys, scope, key, token)
            raise
        heartbeat.cancel()
        _start_attempt(keys, claim, finish, lease)
        return response
    record = claim.record
    response = replay(record.status_code or 200, record.response)
    response.headers[REPLAYED_HEADER] = "true"
    return response


async def _claim_key(
    request: Request,
    svc: Service,
    caller: Caller,
    route: str,
    *,
    body: bytes | Mapping[str, Any] | None,
    user_id: str | None,
    wait: float,
    lease: float,
) -> tuple[RequestKeys, KeyClaim] | None:
    """The request's key claimed (``new`` or ``replay``), None without the header; 400 for a
    malformed key, 409 for another body under it (or one still running past ``wait``)."""
    key = request.headers.get(KEY_HEADER)
    if key is None:
        return None
    scope = request_scope(caller.scope, route)
    try:
        check_request_key(scope, key)
    except InvalidInputError as exc:
        raise ApiError(400, "invalid_idempotency_key", exc.message) from None
    keys = request_keys(svc)
    owner = user_id if user_id is not None else caller.user_id
    raw = await request.body() if body is None else body
    claim = await _claim_or_wait(
        keys, scope, key, body_hash=_hash(raw), user_id=owner, wait=wait, lease=lease
    )
    if claim.outcome in ("new", "replay"):
        return keys, claim
    # "conflict"; "in_progress" ends the wait with its own error
    raise ApiError(
        409,
        "idempotency_conflict",
        "this Idempotency-Key was used with another request body; use a new key / "
        "此 Idempotency-Key 已用于另一个请求体，请使用新的键",
    )


def _start_attempt(
    keys: RequestKeys, claim: KeyClaim, run: Callable[[], Awaitable[Outcome]], lease: float
) -> asyncio.Task[Outcome]:
    """:func:`_attempt` as its own task, kept referenced until it ends."""
    attempt = asyncio.create_task(_attempt(keys, claim, run, lease))
    _ATTEMPTS.add(attempt)
    attempt.add_done_callback(_ATTEMPTS.discard)
    return attempt


def _hash(body: bytes | Mapping[str, Any]) -> str:
    if isinstance(body, bytes | bytearray):
        try:
            return request_body_hash(json.loads(body))
        except ValueError:  # not JSON (or not UTF-8): the bytes as they came
            return request_body_hash(bytes(body))
    return request_body_hash(body)


async def _claim_or_wait(
    keys: RequestKeys,
    scope: str,
    key: str,
    *,
    body_hash: str,
    user_id: str | None,
    wait: float,
    lease: float,
) -> KeyClaim:
    """Claim the key; while another request runs it, poll (with backoff) until it is finished,
    released or dead, at most ``wait`` seconds."""
    deadline = time.monotonic() + wait
    delay = _POLL_FIRST
    while True:
        try:
            claim = await keys.claim(scope, key, body_hash=body_hash, user_id=user_id,
                                     lease=lease)  # fmt: skip
        except StoreError as exc:
            raise ApiError(
                503, exc.code, f"the store is unavailable / 存储不可用: {exc.message}"
            ) from None
        if claim.outcome != "in_progress":
            return claim
        left = deadline - time.monotonic()
        if left <= 0:
            raise ApiError(
                409,
                "idempotency_in_progress",
                "a request with this Idempotency-Key is still running; retry later / "
                "使用此 Idempotency-Key 的请求仍在运行，请稍后重试",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        await asyncio.sleep(min(delay, left))
        delay = min(delay * _POLL_GROWTH, _POLL_CAP)


async def _attempt(
    keys: RequestKeys, claim: KeyClaim, run: Callable[[], Awaitable[Outcome]], lease: float
) -> Outcome:
    """Run the claimed request with its lease renewed meanwhile; store a 2xx outcome, release
    the key for anything else (a refusal, a failure)."""
    scope, key, token = claim.record.scope, claim.record.key, claim.token
    heartbeat = asyncio.create_task(_heartbeat(keys, scope, key, token, lease))
    try:
        status, payload = await run()
    except BaseException:  # refused or failed: forget the key, then re-raise unchanged
        heartbeat.cancel()
        await _release(keys, scope, key, token)
        raise
    heartbeat.cancel()
    if not 200 <= status < 300 or _stopped(payload):
        await _release(keys, scope, key, token)
        return status, payload
    try:
        await keys.finish(scope, key, token, status_code=status, body=payload)
    except (LeaseLostError, StoreError) as exc:  # the answer stands; a retry may run again
        log.warning("idempotency_finish_failed", type=exc.code, key_scope=scope)
    return status, payload


def _stopped(payload: Any) -> bool:
    """Whether ``payload`` is the answer of a turn stopped before it finished (a shutdown's
    checkpoint, or a cancel): not an outcome to replay for a day — the retry runs it."""
    error = payload.get("error") if isinstance(payload, dict) else None
    return isinstance(error, dict) and error.get("type") == "cancelled"


async def _release(keys: RequestKeys, scope: str, key: str, token: int) -> None:
    try:
        await keys.release(scope, key, token)
    except (LeaseLostError, StoreError) as exc:  # the lease lapses on its own
        log.warning("idempotency_release_failed", type=exc.code, key_scope=scope)


async def _heartbeat(keys: RequestKeys, scope: str, key: str, token: int, lease: float) -> None:
    """Renew the claim every third of its lease until cancelled or lost."""
    every = max(lease / 3, 0.01)
    while True:
        await asyncio.sleep(every)
        try:
            await keys.renew(scope, key, token, lease=lease)
        except LeaseLostError:
            log.warning("idempotency_lease_lost", key_scope=scope)
            return
        except StoreError as exc:  # try again at the next beat, within the lease
            log.warning("idempotency_renew_failed", type=exc.code, key_scope=scope)
