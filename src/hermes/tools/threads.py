"""Worker threads for sync tools.

Why not ``asyncio.to_thread``: it uses the event loop's default executor, whose few threads
(``cpu + 4``) are not daemons. A sync tool that hangs past its timeout keeps its thread, so a
handful of hung calls would make every later sync tool of every session queue behind them,
and ``asyncio.run`` would wait for the hung threads at exit — forever, on Python 3.11. Here
the threads are daemons (a hung tool never keeps the process alive), a new one is started
whenever none is idle, up to a hard limit, and past that limit a call is refused at once with
a clear error instead of queueing behind stuck ones. Idle threads beyond ``keep`` exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from hermes.errors import ToolExecutionError

T = TypeVar("T")


class ToolThreads:
    def __init__(self, *, keep: int = 4, limit: int = 64, idle_exit_s: float = 30.0) -> None:
        self._keep = keep
        self._limit = limit
        self._idle_exit_s = idle_exit_s
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    @property
    def threads(self) -> int:
        return self._threads

    async def run(self, fn: Callable[..., T], /, **kwargs: Any) -> T:
        """Run ``fn(**kwargs)`` on a worker thread and await its result.

        Cancelling the await (a tool timeout) abandons the call: its thread finishes on its
        own and the result is dropped.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()

        def job() -> None:
            try:
                result = context.run(fn, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
                _deliver(loop, future, None, exc)
            else:
                _deliver(loop, future, result, None)

        self._submit(job)
        return await future

    def _submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle > 0:
                self._idle -= 1  # an idle worker will take it
                spawn = False
            elif self._threads >= self._limit:
                raise ToolExecutionError(
                    f"all {self._limit} tool threads are busy (calls still running past their "
                    "timeout); refusing to queue another sync tool call"
                )
            else:
                self._threads += 1
                spawn = True
        self._jobs.put(job)
        if spawn:
            threading.Thread(target=self._work, name="hermes-tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self._idle_exit_s)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0 and self._threads > self._keep:
                        self._idle -= 1
                        self._threads -= 1
                        return
                continue
            job()
            with self._lock:
                self._idle += 1


def _deliver(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    result: Any,
    exc: BaseException | None,
) -> None:
    def settle() -> None:
        if future.done():  # abandoned after a timeout
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)

    # A closed loop raises RuntimeError: nobody is waiting for this abandoned call any more.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(settle)


#: The process-wide pool the executor uses for sync tools.
TOOL_THREADS = ToolThreads()
