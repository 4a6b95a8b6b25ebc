"""A turn the service runs as its own task (DESIGN.md, HTTP: chat, SSE, resume, shutdown).

The task is independent of the request that started it: a client that goes away mid-stream
loses nothing (the turn finishes, is stored, and its events stay replayable). Every turn is
registered in ``svc.running`` (cancel, busy, shutdown), writes each event to the turn-event
log and hands it to every ``svc.observers`` callback (metrics, spans); its last event is
``reply``, the ``run --json`` object — for a turn that raised or was stopped too, then with
``error``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes.agent.events import AgentEvent, ToolCallFinished, ToolCallStarted, TurnFinished
from hermes.channels.http.turns import turn_events
from hermes.channels.intake import BusyPolicy, Intake
from hermes.errors import HermesError
from hermes.messages.message import new_id
from hermes.observe import get_logger

if TYPE_CHECKING:
    from hermes.agent.result import RunResult
    from hermes.channels.http.state import Service
    from hermes.channels.http.turns import TurnEventLog
    from hermes.messages import Message

log = get_logger("hermes.channels.http")

#: Where the service keeps its :class:`~hermes.channels.intake.Intake` (``svc.parts``).
INTAKE_PART = "intake"

STOPPED_TEXT = (
    "The turn was stopped before it finished; what was done is kept. / "
    "本轮对话在完成前被中止，已完成的部分已保存。"
)
FAILED_TEXT = "The turn failed; see the server log. / 本轮对话失败，请查看服务日志。"


def intake_of(svc: Service) -> Intake:
    """The service's inbound path (made on first use)."""
    found: Intake | None = svc.parts.get(INTAKE_PART)
    if found is None:
        found = svc.parts[INTAKE_PART] = Intake(svc.agent)
    return found


@dataclass(eq=False)
class TurnProgress:
    """What a running turn has done so far: started (it holds its session), its tool calls
    (from their events, for the reply of a turn that raised or was stopped) and its reply."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    reply: dict[str, Any] | None = None

    def saw(self, event: AgentEvent) -> None:
        self.started.set()
        if isinstance(event, ToolCallStarted):
            self.calls[event.call_id] = {
                "name": event.name,
                "arguments": event.arguments,
                "ok": False,
            }
        elif isinstance(event, ToolCallFinished) and event.call_id in self.calls:
            self.calls[event.call_id]["ok"] = event.ok


@dataclass(eq=False)
class TurnTask:
    """A running turn: its ids, its task and its progress."""

    trace_id: str
    session_id: str
    task: asyncio.Task[RunResult]
    progress: TurnProgress

    @property
    def started(self) -> asyncio.Event:
        return self.progress.started

    async def wait_started(self) -> None:
        """Until the turn holds its session (its first event) or ended before that."""
        waiter = asyncio.ensure_future(self.started.wait())
        try:
            await asyncio.wait({waiter, self.task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()

    def refusal(self) -> BaseException | None:
        """What the turn raised when it ended before it started (busy, a bad id…), else None."""
        if not self.task.done() or self.started.is_set() or self.task.cancelled():
            return None
        return self.task.exception()


def start_turn(svc: Service, message: Message, *, busy: BusyPolicy) -> TurnTask:
    """Run ``message``'s turn as a task of the service (see the module docstring).

    ``message`` comes from :meth:`Intake.message` (its session id is set) and its trace id is
    one :meth:`TurnEventLog.open` accepted (:func:`open_trace`).
    """
    session_id = message.session_id
    if session_id is None:
        raise ValueError("start_turn needs a message with its session id")
    progress = TurnProgress()
    coro = _run(svc, message, session_id, progress, busy)
    task = asyncio.get_running_loop().create_task(coro, name=f"turn-{message.trace_id}")
    task.add_done_callback(_retrieve)
    svc.running.add(session_id, task)
    return TurnTask(message.trace_id, session_id, task, progress)


def open_trace(events: TurnEventLog, wanted: str | None, session_id: str) -> str:
    """A trace id whose log is open: ``wanted`` unless it is taken, else a new one."""
    if wanted is not None and events.open(wanted, session_id):
        return wanted
    while True:
        fresh = new_id()
        if events.open(fresh, session_id):
            return fresh


async def _run(
    svc: Service, message: Message, session_id: str, progress: TurnProgress, busy: BusyPolicy
) -> RunResult:
    trace_id = message.trace_id
    events = turn_events(svc)

    def on_event(event: AgentEvent) -> None:
        progress.saw(event)
        observe(svc, trace_id, session_id, event)
        events.append(trace_id, event.type, event_data(event, trace_id))

    try:
        result = await intake_of(svc).submit(message, on_event=on_event, busy=busy)
    except asyncio.CancelledError:
        progress.reply = failure_reply(trace_id, session_id, None, progress)
        events.finish(trace_id, progress.reply)
        raise
    except Exception as exc:
        # Handed on as it is (the route maps it); the stream still ends with its reply.
        progress.reply = failure_reply(trace_id, session_id, exc, progress)
        events.finish(trace_id, progress.reply)
        raise
    observe(svc, trace_id, session_id, TurnFinished(result))
    progress.reply = result.to_json_dict()
    events.finish(trace_id, progress.reply)
    return result


def observe(svc: Service, trace_id: str, session_id: str, event: AgentEvent) -> None:
    """Hand ``event`` to every observer; one that raises is logged, never breaks the turn."""
    for observer in svc.observers:
        try:
            observer(trace_id, session_id, event)
        except Exception:  # an observer's bug must not break a turn
            log.exception("turn_observer_failed", observer=getattr(observer, "__name__", "?"))


def event_data(event: AgentEvent, trace_id: str) -> dict[str, Any]:
    """The JSON ``data`` of one SSE event: the event's fields and the trace id."""
    data = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
    data.setdefault("trace_id", trace_id)
    return data


def failure_reply(
    trace_id: str,
    session_id: str,
    exc: BaseException | None,
    progress: TurnProgress | None = None,
) -> dict[str, Any]:
    """The ``run --json`` object of a turn that raised (``exc``) or was stopped (``None``):
    the calls it made (a call cut off is not ``ok``), state ``idle`` (the agent closed it)."""
    if exc is None:
        reply, error = STOPPED_TEXT, {"type": "cancelled", "message": "the turn was stopped"}
    elif isinstance(exc, HermesError):
        reply, error = exc.message, {"type": exc.code, "message": exc.message}
    else:
        reply, error = FAILED_TEXT, {"type": "internal_error", "message": type(exc).__name__}
    return {
        "reply": reply,
        "session_id": session_id,
        "state": "idle",
        "tool_calls": [] if progress is None else list(progress.calls.values()),
        "trace_id": trace_id,
        "error": error,
    }


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark the task's outcome seen (the route or the stream reports it); log a crash."""
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None and not isinstance(exc, HermesError):
        log.error("turn_task_failed", error=type(exc).__name__, task=task.get_name())
