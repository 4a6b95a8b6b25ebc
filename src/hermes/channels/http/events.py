"""``POST /v1/events`` and ``POST /v1/events/{route}``: inbound events, each handled once
(DESIGN.md, "Public contracts", HTTP Events; seed 002 §3.3 and §4.2: "相同msg_id的告警只处理一次").

    POST /v1/events/db-alerts {"msg_id", "type", "content", "meta"?, "session_id"?, "user_id"?}
    → 202 {"status": "accepted"|"duplicate", "msg_id", "trace_id"}

The order of a delivery, and what a refusal leaves behind:

1. **Checked** — the route exists (``default``, or one of ``webhooks.routes``: else 404), the
   signature (``webhooks.secret`` or the route's; else a bearer key when the service has
   keys), the body (Hermes's own, or an adapter's ``?format=``), the ids, the text. A refusal
   here (4xx) claims nothing: the delivery was never "seen".
2. **Claimed** — ``(route, msg_id)`` in the durable dedupe (``events.db``) with the hash of
   the event: ``conflict`` (the id came with another body) is 409; ``duplicate`` (processed
   already, or being processed now) is 202 with the first delivery's ``trace_id`` and runs
   nothing. Concurrent deliveries in this process wait until the first one's turn started
   or was refused, so none is told "duplicate" of a delivery that then ran nothing.
3. **Started** — the event becomes one inbound text item of its session (its content
   verbatim, channel ``webhook``) through the one intake, with the route's handler as the
   turn's directive; a turn refused before it started (busy, store down, shutting down)
   releases the key and answers its error, so the sender's retry runs it.
4. **202** — once the turn holds its session and the item is stored (or, queued behind
   another turn of its session with ``server.busy: enqueue``, after 5 s). The turn goes on in the
   background (``GET /v1/turns/{trace_id}/events`` follows it). When it ends, its outcome is
   recorded with the key: ``done``, or ``failed`` (it raised, was stopped, ended with an
   ``error``, or every tool call failed) — and a failed delivery is processed again when it
   is sent again (Nous #84257: a key recorded before the outcome poisons retries).

Graceful shutdown drains these turns with the others (finished or checkpointed — a
checkpointed one is recorded ``failed``), then writes the outcomes, then closes the dedupe.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse

from hermes.agent import compose
from hermes.channels.dedupe import DEFAULT_ROUTE, DedupeClaim, EventDedupe
from hermes.channels.http import event_handlers
from hermes.channels.http.auth import Caller, acting_user, authenticate
from hermes.channels.http.chat import incoming_trace, raise_refusal, shutting_down, store_down
from hermes.channels.http.errors import ApiError
from hermes.channels.http.event_adapters import Event, EventBody, EventFormat, parse_event
from hermes.channels.http.health import METRICS_PART
from hermes.channels.http.shutdown import drain
from hermes.channels.http.signatures import check_github_signature, check_signature
from hermes.channels.http.state import Service, service
from hermes.channels.http.turn_task import TurnTask, intake_of, open_trace, start_turn
from hermes.channels.http.turns import turn_events
from hermes.config.webhooks import WebhooksConfig
from hermes.errors import HermesError, LeaseLostError, StoreError
from hermes.messages.message import new_id
from hermes.observe import get_logger
from hermes.session.ids import validate_session_id, validate_user_id

if TYPE_CHECKING:
    from hermes.messages import Message
    from hermes.observe.metrics import Metrics

log = get_logger("hermes.channels.http")

#: Where the event intake lives in ``Service.parts``.
PART = "events"
#: A claim's lease: a turn may wait ``agent.turn_timeout`` for its session, then run as long;
#: renewed every third of it while the turn runs.
MIN_LEASE_SECONDS = 300.0
#: How long a delivery waits for its turn to hold the session before it is answered anyway.
START_WAIT_SECONDS = 5.0
#: How many times a delivery that waited on a concurrent one claims again.
_RECLAIMS = 5


@dataclass(eq=False)
class EventIntake:
    """The events side of one service: the durable dedupe, the settings, the claims this
    process holds but has not settled yet (concurrent deliveries wait on them), and the
    tasks writing outcomes (shutdown waits for them)."""

    dedupe: EventDedupe
    settings: WebhooksConfig
    lease: float
    unsettled: dict[tuple[str, str], asyncio.Event] = field(default_factory=dict)
    outcomes: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def keep(self) -> float:
        return self.settings.dedupe_hours * 3600.0


def event_intake(svc: Service) -> EventIntake:
    """The service's :class:`EventIntake` (opened on first use: ``events.db`` beside the
    agent's store)."""
    found: EventIntake | None = svc.parts.get(PART)
    if found is None:
        loaded = svc.loaded
        settings = loaded.config.webhooks if loaded is not None else WebhooksConfig()
        base_dir = loaded.base_dir if loaded is not None else None
        dedupe = compose.open_event_dedupe(svc.agent.store, base_dir=base_dir)
        lease = max(MIN_LEASE_SECONDS, 2 * svc.agent.turn_timeout + 60)
        found = svc.parts[PART] = EventIntake(dedupe, settings, lease)
    return found


async def close_event_intake(svc: Service) -> None:
    """Wait for the outcomes being written, then close the dedupe (after the turns drained)."""
    found: EventIntake | None = svc.parts.pop(PART, None)
    if found is None:
        return
    if found.outcomes:
        await asyncio.gather(*set(found.outcomes), return_exceptions=True)
    await found.dedupe.close()


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Nested inside the application's lifespan, so this exit runs first: drain the turns
    # (idempotent: the application's own drain then finds it done), record their outcomes,
    # close the dedupe.
    yield
    svc: Service = app.state.hermes
    if PART in svc.parts:
        await drain(svc)
        await close_event_intake(svc)


router = APIRouter(lifespan=_lifespan)

_ERROR: dict[str, object] = {"description": '`{"error": {"type", "message"}}`'}
RESPONSES: dict[int | str, dict[str, object]] = {
    202: {"description": '`{"status": "accepted"|"duplicate", "msg_id", "trace_id"}`'},
    400: _ERROR,
    401: {"description": "`invalid_signature`, or no valid API key"},
    404: {"description": "`unknown_route`"},
    409: {"description": "`event_conflict` (the msg_id came with another body), `session_busy`"},
    422: _ERROR,
    503: {"description": "`shutting_down`, or the store is down"},
}
_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": EventBody.model_json_schema()}},
    }
}
FormatQuery = Annotated[
    EventFormat,
    Query(
        alias="format",
        description="The payload's sender: hermes (default), alertmanager, grafana, github.",
    ),
]
ServiceDep = Annotated[Service, Depends(service)]


@router.post("/v1/events", status_code=202, responses=RESPONSES, openapi_extra=_BODY)
async def post_event(
    request: Request, svc: ServiceDep, fmt: FormatQuery = "hermes"
) -> JSONResponse:
    """Receive an event on the ``default`` route."""
    return await receive(svc, request, DEFAULT_ROUTE, fmt)


@router.post("/v1/events/{route}", status_code=202, responses=RESPONSES, openapi_extra=_BODY)
async def post_route_event(
    route: str, request: Request, svc: ServiceDep, fmt: FormatQuery = "hermes"
) -> JSONResponse:
    """Receive an event on a route of ``webhooks.routes``."""
    return await receive(svc, request, route, fmt)


async def receive(svc: Service, request: Request, route: str, fmt: EventFormat) -> JSONResponse:
    """One delivery, start to 202 (see the module docstring)."""
    if svc.stopping:
        raise shutting_down()
    intake = event_intake(svc)
    settings = intake.settings
    if route != DEFAULT_ROUTE and route not in settings.routes:
        known = ", ".join(sorted(settings.routes)) or "none"
        raise ApiError(
            404,
            "unknown_route",
            f"no event route {route[:64]!r} (webhooks.routes: {known}) / 未配置该事件路由",
        )
    raw = await request.body()
    caller = await _authenticate(svc, request, route, fmt, raw)
    event = parse_event(fmt, raw, request.headers)
    message = _message(svc, settings, route, event, caller)
    key = (route, event.msg_id)
    wanted = incoming_trace(request)
    for _ in range(_RECLAIMS):
        claim = await _claim(intake, route, event, _fresh_trace(svc, wanted))
        match claim.outcome:
            case "new":
                return await _process(svc, intake, claim, message, event)
            case "conflict":
                _count(svc, route, "conflict")
                raise ApiError(
                    409,
                    "event_conflict",
                    f"event {event.msg_id[:80]!r} was received with another body; a new event "
                    "needs a new msg_id / 该 msg_id 已用于另一条不同的事件，请使用新的 msg_id",
                )
            case "in_progress" if key in intake.unsettled:
                await intake.unsettled[key].wait()  # then claim again: started, or released
                continue
            case _:  # "duplicate", or another process holds it
                return _answer(svc, route, "duplicate", event.msg_id, claim.delivery.trace_id)
    return _answer(svc, route, "duplicate", event.msg_id, claim.delivery.trace_id)


async def _authenticate(
    svc: Service, request: Request, route: str, fmt: EventFormat, raw: bytes
) -> Caller | None:
    """The caller behind a delivery: ``None`` when a signature vouches for it (the route's
    secret authenticates it, an API key is not needed: senders such as GitHub cannot send
    one), else the bearer key's caller (401 without one once keys exist)."""
    settings = event_intake(svc).settings
    secret = settings.secret_of(route)
    if secret is None:
        return await authenticate(request, svc)
    if fmt == "github":
        check_github_signature(secret, request.headers, raw)
    else:
        tolerance = settings.signature_tolerance_seconds
        check_signature(secret, request.headers, raw, tolerance=tolerance)
    return None


def _message(
    svc: Service, settings: WebhooksConfig, route: str, event: Event, caller: Caller | None
) -> Message:
    """The request Message of ``event``: its session (the body's, else the route's, else
    ``events-ROUTE``), user, the handler's directive (400 for bad ids or text)."""
    config = settings.route(route)
    session_id = validate_session_id(event.session_id or config.session_id or f"events-{route}")
    user_id = event.user_id if event.user_id is not None else config.user_id
    if user_id is not None:
        user_id = validate_user_id(user_id)
    if caller is not None and event.user_id is not None:
        user_id = acting_user(caller, event.user_id)  # a key acts for its own user only
    elif caller is not None and user_id is None:
        user_id = caller.user_id
    directive = event_handlers.directive(config.handler, event, route, session_id, user_id)
    event_handlers.check_available(svc.agent, directive, route)
    message = intake_of(svc).message(
        event.content, channel="webhook", session_id=session_id, user_id=user_id
    )
    message.meta["event"] = {
        "route": route, "msg_id": event.msg_id, "type": event.type, "meta": event.meta,
    }  # fmt: skip
    if directive is not None:
        message.meta["directive"] = directive.to_meta()
    return message


def _fresh_trace(svc: Service, wanted: str | None) -> str:
    """The request's trace id unless a turn uses it already, else a new one."""
    if wanted is not None and not turn_events(svc).known(wanted):
        return wanted
    return new_id()


async def _claim(intake: EventIntake, route: str, event: Event, trace_id: str) -> DedupeClaim:
    try:
        return await intake.dedupe.claim(
            route, event.msg_id, body_hash=event.body_hash(), trace_id=trace_id,
            lease=intake.lease, keep=intake.keep,
        )  # fmt: skip
    except StoreError as exc:
        raise store_down(exc) from None


async def _process(
    svc: Service, intake: EventIntake, claim: DedupeClaim, message: Message, event: Event
) -> JSONResponse:
    """Start the claimed event's turn; 202 once it holds its session, the key released for
    a turn refused before that."""
    delivery = claim.delivery
    key = (delivery.route, delivery.msg_id)
    settled = intake.unsettled[key] = asyncio.Event()
    try:
        session_id = message.session_id or ""
        trace_id = open_trace(turn_events(svc), delivery.trace_id, session_id)
        if trace_id != delivery.trace_id:  # its id was taken meanwhile: the turn has another
            log.warning("event_trace_taken", route=delivery.route, trace_id=delivery.trace_id)
        message.meta["trace_id"] = trace_id
        turn = start_turn(svc, message, busy=svc.settings.busy)
        # A turn queued behind another of its session (``server.busy: enqueue``) is answered
        # once it has waited a moment: the claim holds the key, the outcome is recorded later.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(START_WAIT_SECONDS):
                await turn.wait_started()
        raise_refusal(turn)
    except BaseException:  # released, then re-raised
        await _release(intake, claim)
        raise
    finally:
        settled.set()
        intake.unsettled.pop(key, None)
    task = asyncio.create_task(_record_outcome(svc, intake, claim, turn))
    intake.outcomes.add(task)
    task.add_done_callback(intake.outcomes.discard)
    log.info("event_accepted", route=delivery.route, msg_id=event.msg_id, trace_id=trace_id,
             attempts=delivery.attempts)  # fmt: skip
    return _answer(svc, delivery.route, "accepted", event.msg_id, delivery.trace_id)


async def _release(intake: EventIntake, claim: DedupeClaim) -> None:
    delivery = claim.delivery
    try:
        await intake.dedupe.release(delivery.route, delivery.msg_id, claim.token)
    except (LeaseLostError, StoreError) as exc:  # the lease lapses on its own
        log.warning("event_release_failed", type=exc.code, route=delivery.route)


async def _record_outcome(
    svc: Service, intake: EventIntake, claim: DedupeClaim, turn: TurnTask
) -> None:
    """When the turn ends, record its outcome with the key (renewing the lease until then)."""
    delivery = claim.delivery
    route, msg_id = delivery.route, delivery.msg_id
    heartbeat = asyncio.create_task(_heartbeat(intake, claim))
    try:
        await asyncio.wait({turn.task})
    finally:
        heartbeat.cancel()
    status, error = _outcome_of(turn)
    try:
        await intake.dedupe.finish(route, msg_id, claim.token, status=status, error=error)
    except (LeaseLostError, StoreError) as exc:
        log.warning("event_finish_failed", type=exc.code, route=route, msg_id=msg_id)
        return
    metrics: Metrics | None = svc.parts.get(METRICS_PART)
    if metrics is not None:
        metrics.webhook_processed.labels(route, status).inc()
    (log.info if status == "done" else log.warning)(
        "event_processed", route=route, msg_id=msg_id, status=status, error=error,
        trace_id=turn.trace_id,
    )  # fmt: skip


def _outcome_of(turn: TurnTask) -> tuple[Literal["done", "failed"], str | None]:
    task = turn.task
    if task.cancelled():
        return "failed", "cancelled: the turn was stopped (shutdown or a cancel request)"
    exc = task.exception()
    if exc is not None:
        code = exc.code if isinstance(exc, HermesError) else type(exc).__name__
        return "failed", f"the turn raised {code}"
    result = task.result()
    if result.error is not None:
        return "failed", f"{result.error.get('type', 'error')}: {result.error.get('message', '')}"[
            :300
        ]
    if result.tools_failed:
        return "failed", "every tool call of the turn failed"
    return "done", None


async def _heartbeat(intake: EventIntake, claim: DedupeClaim) -> None:
    delivery = claim.delivery
    while True:
        await asyncio.sleep(intake.lease / 3)
        try:
            await intake.dedupe.renew(
                delivery.route, delivery.msg_id, claim.token, lease=intake.lease
            )
        except LeaseLostError:
            log.warning("event_lease_lost", route=delivery.route, msg_id=delivery.msg_id)
            return
        except StoreError as exc:  # tried again at the next beat, within the lease
            log.warning("event_renew_failed", type=exc.code, route=delivery.route)


def _count(svc: Service, route: str, outcome: str) -> None:
    metrics: Metrics | None = svc.parts.get(METRICS_PART)
    if metrics is not None:
        metrics.webhook_events.labels(route, outcome).inc()


def _answer(
    svc: Service, route: str, status: Literal["accepted", "duplicate"], msg_id: str, trace: str
) -> JSONResponse:
    _count(svc, route, status)
    body: dict[str, Any] = {"status": status, "msg_id": msg_id, "trace_id": trace}
    return JSONResponse(body, status_code=202, headers={"X-Hermes-Trace-Id": trace})
