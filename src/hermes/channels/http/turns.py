"""Replayable turn events: ``GET /v1/turns/{trace_id}/events`` (DESIGN.md, HTTP).

Every turn the service runs writes its events to a :class:`TurnEventLog` under its trace id:
``id`` 1, 2, 3… in order, the last one ``reply`` (the ``run --json`` object). A client whose
stream broke reconnects with ``Last-Event-ID`` (or ``?last_event_id=``) and gets what came
after, then the rest live while the turn runs. A finished turn's events are kept
``server.events_keep_seconds`` (default 1 h), then dropped; an unknown trace is 404.

:class:`MemoryTurnEvents` keeps them in this process, bounded: at most ``max_turns`` turns
(the oldest finished ones go first) and ``max_events`` events per turn (the text deltas past
it are dropped, never the ``reply``). A shared backend (Redis streams) keeps the same protocol.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import StreamingResponse
from fastapi.sse import KEEPALIVE_COMMENT, format_sse_event

from hermes.channels.http.auth import CallerDep
from hermes.channels.http.errors import ApiError
from hermes.channels.http.state import Service, service
from hermes.observe.trace_ids import is_trace_id

router = APIRouter()

#: The name of the last event of every turn.
REPLY_EVENT = "reply"
#: Where the service keeps its log (``svc.parts``).
PART = "turn_events"
DEFAULT_MAX_TURNS = 10_000
DEFAULT_MAX_EVENTS = 5_000
#: Seconds of silence after which a stream sends a keep-alive comment.
KEEPALIVE_SECONDS = 15.0


@dataclass(frozen=True, slots=True)
class TurnEvent:
    """One event of a turn: its ``id`` within the turn (from 1), type and JSON data."""

    id: int
    event: str
    data: dict[str, Any]

    def sse(self) -> bytes:
        """The event in the ``text/event-stream`` wire format."""
        text = json.dumps(self.data, ensure_ascii=False, separators=(",", ":"), default=str)
        return format_sse_event(data_str=text, event=self.event, id=str(self.id))


class TurnEventLog(Protocol):
    """The events of the turns a service runs, by trace id (see the module docstring)."""

    def open(self, trace_id: str, session_id: str) -> bool:
        """Start the log of a turn; False when ``trace_id`` has one already (pick another)."""
        ...

    def append(self, trace_id: str, event: str, data: dict[str, Any]) -> int:
        """Add an event of a running turn; its id (0 when it was dropped)."""
        ...

    def finish(self, trace_id: str, reply: dict[str, Any]) -> int:
        """Add the ``reply`` event and close the turn (kept ``keep`` seconds from now)."""
        ...

    def known(self, trace_id: str) -> bool:
        """Whether the trace's events are (still) here."""
        ...

    def session_of(self, trace_id: str) -> str | None:
        """The session of the trace's turn (None when its events are not here)."""
        ...

    def follow(self, trace_id: str, after: int = 0) -> AsyncIterator[TurnEvent]:
        """The events after id ``after``, then the new ones until ``reply`` (none when the
        trace is unknown)."""
        ...


@dataclass(eq=False, slots=True)
class _Turn:
    session_id: str
    events: list[TurnEvent] = field(default_factory=list)
    finished_at: float | None = None
    dropped: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, event: str, data: dict[str, Any]) -> int:
        number = len(self.events) + self.dropped + 1
        self.events.append(TurnEvent(number, event, data))
        self.changed.set()
        self.changed = asyncio.Event()
        return number


class MemoryTurnEvents:
    """The in-process :class:`TurnEventLog` (bounded; see the module docstring)."""

    def __init__(
        self,
        keep_seconds: float,
        *,
        max_turns: int = DEFAULT_MAX_TURNS,
        max_events: int = DEFAULT_MAX_EVENTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.keep_seconds = keep_seconds
        self.max_turns = max_turns
        self.max_events = max_events
        self._clock = clock
        self._turns: OrderedDict[str, _Turn] = OrderedDict()

    def open(self, trace_id: str, session_id: str) -> bool:
        self.expire()
        if trace_id in self._turns:
            return False
        self._turns[trace_id] = _Turn(session_id)
        self._trim()
        return True

    def append(self, trace_id: str, event: str, data: dict[str, Any]) -> int:
        turn = self._turns.get(trace_id)
        if turn is None or turn.finished_at is not None:
            return 0
        if len(turn.events) >= self.max_events - 1:  # room is kept for the reply
            turn.dropped += 1
            return 0
        return turn.add(event, data)

    def finish(self, trace_id: str, reply: dict[str, Any]) -> int:
        turn = self._turns.get(trace_id)
        if turn is None or turn.finished_at is not None:
            return 0
        number = turn.add(REPLY_EVENT, reply)
        turn.finished_at = self._clock()
        self._turns.move_to_end(trace_id)  # finished turns expire in the order they finished
        return number

    def known(self, trace_id: str) -> bool:
        self.expire()
        return trace_id in self._turns

    def session_of(self, trace_id: str) -> str | None:
        turn = self._turns.get(trace_id) if self.known(trace_id) else None
        return None if turn is None else turn.session_id

    async def follow(self, trace_id: str, after: int = 0) -> AsyncIterator[TurnEvent]:
        turn = self._turns.get(trace_id)
        while turn is not None:
            # Both read before the events: an event added while ours are being yielded sets
            # ``changed`` (so the next round sees it), and a turn seen finished here has its
            # ``reply`` among the events read below.
            changed = turn.changed
            finished = turn.finished_at is not None
            for item in list(turn.events):
                if item.id > after:
                    after = item.id
                    yield item
            if finished:
                return
            await changed.wait()

    def expire(self) -> int:
        """Drop the finished turns older than ``keep_seconds``; how many."""
        cutoff = self._clock() - self.keep_seconds
        old: list[str] = []
        # Finished turns stand in the order they finished (``finish`` moves each to the end),
        # between the running ones: the scan stops at the first one still kept, so a call
        # costs what it drops, not the whole log (run at every turn's start).
        for trace_id, turn in self._turns.items():
            if turn.finished_at is None:
                continue
            if turn.finished_at > cutoff:
                break
            old.append(trace_id)
        for trace_id in old:
            del self._turns[trace_id]
        return len(old)

    def _trim(self) -> None:
        while len(self._turns) > self.max_turns:
            victim = next((t for t, turn in self._turns.items() if turn.finished_at), None)
            if victim is None:
                return  # every turn is running: none may lose its events
            del self._turns[victim]

    def __len__(self) -> int:
        return len(self._turns)


def turn_events(svc: Service) -> TurnEventLog:
    """The service's turn-event log (an in-process one unless a part put another there)."""
    log: TurnEventLog | None = svc.parts.get(PART)
    if log is None:
        log = svc.parts[PART] = MemoryTurnEvents(svc.settings.events_keep_seconds)
    return log


async def follow_quietly(
    log: TurnEventLog, trace_id: str, after: int = 0
) -> AsyncIterator[TurnEvent | None]:
    """The trace's events after ``after`` as they come, and ``None`` after each quiet
    :data:`KEEPALIVE_SECONDS` (a long tool): the moment to send a keep-alive, so proxies and
    clients do not take the connection for dead. The wait for the next event is not cancelled
    by a keep-alive."""
    items = aiter(log.follow(trace_id, after))

    async def following() -> TurnEvent:
        return await anext(items)

    pending: asyncio.Future[TurnEvent] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(following())
            done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_SECONDS)
            if not done:
                yield None
                continue
            try:
                item = pending.result()
            except StopAsyncIteration:
                return
            pending = None
            yield item
    finally:
        if pending is not None:
            pending.cancel()


def event_stream(log: TurnEventLog, trace_id: str, after: int) -> StreamingResponse:
    """The ``text/event-stream`` response of the trace's events after ``after``."""

    async def body() -> AsyncIterator[bytes]:
        async for item in follow_quietly(log, trace_id, after):
            yield KEEPALIVE_COMMENT if item is None else item.sse()

    headers = {
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
        "X-Hermes-Trace-Id": trace_id,
    }
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


def replayed_stream(log: TurnEventLog, reply: Any) -> StreamingResponse:
    """The stream of a request replayed under its ``Idempotency-Key``: the first turn's
    events while they are kept, else its ``reply`` event alone (the recorded run object)."""
    trace_id = reply.get("trace_id") if isinstance(reply, dict) else None
    if isinstance(trace_id, str) and log.known(trace_id):
        return event_stream(log, trace_id, 0)
    only = TurnEvent(1, REPLY_EVENT, reply if isinstance(reply, dict) else {})

    async def body() -> AsyncIterator[bytes]:
        yield only.sse()

    headers = {"Cache-Control": "no-cache"}
    if isinstance(trace_id, str):
        headers["X-Hermes-Trace-Id"] = trace_id
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


@router.get("/v1/turns/{trace_id}/events", response_class=StreamingResponse)
async def replay_events(
    trace_id: str,
    svc: Annotated[Service, Depends(service)],
    caller: CallerDep,
    last_event_id: Annotated[str | None, Header()] = None,
    query_last: Annotated[str | None, Query(alias="last_event_id")] = None,
) -> StreamingResponse:
    """The turn's events after ``Last-Event-ID``, live while it runs, ending with ``reply``.

    Once keys exist, only the session's user (or an ``admin`` key) may read them: they hold
    what the user said, the reply and the tool arguments."""
    if not is_trace_id(trace_id):
        raise ApiError(400, "invalid_id", f"trace id {trace_id[:40]!r} is not valid / 跟踪编号无效")
    log = turn_events(svc)
    session_id = log.session_of(trace_id)
    if session_id is None:
        raise _no_events(trace_id)
    if caller.user_id is not None and not caller.admin:
        record = await svc.agent.store.load_session(session_id)
        if record is None or record.user_id != caller.user_id:
            raise _no_events(trace_id)  # another user's turn is not even said to exist
    return event_stream(log, trace_id, _after(last_event_id or query_last))


def _no_events(trace_id: str) -> ApiError:
    return ApiError(
        404,
        "not_found",
        f"no events for trace {trace_id!r} (unknown, or kept no longer) / 找不到该轮对话的事件",
    )


def _after(value: str | None) -> int:
    if value is None or not value.strip():
        return 0
    try:
        after = int(value.strip())
    except ValueError:
        raise ApiError(
            400, "invalid_request", "Last-Event-ID must be an integer / Last-Event-ID 必须是整数"
        ) from None
    return max(after, 0)
