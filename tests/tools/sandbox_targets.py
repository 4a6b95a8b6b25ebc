"""Tool functions the sandbox tests run in a child process.

They live in an importable module (the child imports them by ``module:qualname``) and do not
import ``hermes``, so the child starts fast.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def add(a: int, b: int) -> int:
    return a + b


async def greet(name: str) -> str:
    await asyncio.sleep(0)
    return f"你好, {name}!"


def echo(value: Any) -> Any:
    return value


def chatty(words: int) -> str:
    print("noise " * words)
    os.write(1, b"raw noise on fd 1\n")
    return "quiet result"


def sleep_with_grandchild(pid_file: str) -> None:
    """Start a grandchild, record both pids, then never return."""
    grandchild = subprocess.Popen(["sleep", "60"])
    Path(pid_file).write_text(f"{os.getpid()} {grandchild.pid}")
    time.sleep(3600)


def spawn_background() -> int:
    """Return while a background process it started is still running."""
    return subprocess.Popen(["sleep", "60"]).pid


def burn_cpu() -> None:
    while True:
        pass


def hog_memory() -> int:
    return len(bytearray(2 * 1024**3))


def exit_hard() -> None:
    print("last words", file=sys.stderr, flush=True)
    os._exit(3)


def call_sys_exit() -> None:
    sys.exit(4)


def segfault() -> None:
    import ctypes

    ctypes.string_at(0)


def flood() -> str:
    chunk = "x" * (1024 * 1024)
    for _ in range(50):
        sys.stdout.write(chunk)
    return "unreachable"


def huge_result() -> str:
    return "x" * (2 * 1024 * 1024)


def fail(message: str) -> None:
    raise ValueError(message)


def not_json() -> Any:
    return {1, 2, 3}


def environment() -> dict[str, str]:
    return dict(os.environ)


def read_stdin() -> str:
    return sys.stdin.read()


def write_file(path: str, megabytes: int) -> int:
    with open(path, "wb") as handle:
        for _ in range(megabytes):
            handle.write(b"\0" * (1024 * 1024))
    return megabytes


def describe_context(ctx: Any, label: str) -> dict[str, Any]:
    return {
        "type": type(ctx).__name__,
        "session_id": ctx.session_id,
        "user_id": ctx.user_id,
        "workspace": str(ctx.workspace),
        "label": label,
    }


def make_closure() -> Any:
    def inner(a: int) -> int:
        return a

    return inner


def weekday(day: datetime.date) -> int:
    """Its ``date`` parameter makes ``make_tool`` wrap it in an argument converter."""
    return day.isoweekday()


def spawn_escapee() -> int:
    """Start a process in its own session (out of the sandbox's group) that keeps the
    inherited stderr pipe open for a few seconds."""
    return subprocess.Popen(["sleep", "5"], start_new_session=True).pid


def home_and_cwd() -> dict[str, Any]:
    import tempfile

    home = os.environ["HOME"]
    return {
        "home": home,
        "home_entries": sorted(os.listdir(home)),
        "tmpdir": os.environ["TMPDIR"],
        "gettempdir": tempfile.gettempdir(),
        "cwd": os.getcwd(),
    }


def working_directory(ctx: Any) -> dict[str, str]:
    return {"cwd": os.getcwd(), "workspace": str(ctx.workspace)}


def fill_home_then(ending: str, report: str) -> None:
    """Write into HOME, record where HOME is, then crash (``"crash"``) or hang (``"hang"``)."""
    home = Path(os.environ["HOME"])
    (home / "notes.txt").write_text("left behind?")
    (home / "tmp" / "scratch").write_bytes(b"\0" * 1024)
    Path(report).write_text(str(home))
    if ending == "crash":
        os._exit(3)
    time.sleep(3600)


def fork_loop(cap: int, report: str = "") -> dict[str, Any]:
    """Fork sleeping children until fork fails or ``cap`` is reached (a bound for the host's
    sake when no process limit applies); then hang until the wall clock ends the call.

    Records its process group in ``report`` (if given) first. Returns (only when fork failed)
    how many children it made and the process group.
    """
    if report:
        Path(report).write_text(str(os.getpgrp()))
    forked = 0
    while forked < cap:
        try:
            pid = os.fork()
        except OSError as exc:
            return {"forked": forked, "error": type(exc).__name__, "pgid": os.getpgrp()}
        if pid == 0:  # a child: never return into the sandbox's own code
            time.sleep(60)
            os._exit(0)
        forked += 1
    time.sleep(3600)
    return {"forked": forked, "error": None, "pgid": os.getpgrp()}


class _StatusError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status


def _exception(kind: str) -> BaseException:
    import errno
    import socket

    from hermes.errors import ModelError, ToolTimeoutError

    made: dict[str, BaseException] = {
        "connection_refused": ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
        "timeout": TimeoutError("read timed out"),
        "dns": socket.gaierror(-2, "Name or service not known"),
        "oserror_network": OSError(errno.ENETUNREACH, "Network is unreachable"),
        "oserror_disk": OSError(errno.ENOSPC, "No space left on device"),
        "file_not_found": FileNotFoundError(errno.ENOENT, "No such file", "x.txt"),
        "value": ValueError("bad value"),
        "http_503": _StatusError(503),
        "http_404": _StatusError(404),
        "model_retryable": ModelError("overloaded", retryable=True),
        "model_final": ModelError("bad request"),
        "tool_timeout": ToolTimeoutError("slow"),
    }
    return made[kind]


EXCEPTION_KINDS = (
    "connection_refused",
    "timeout",
    "dns",
    "oserror_network",
    "oserror_disk",
    "file_not_found",
    "value",
    "http_503",
    "http_404",
    "model_retryable",
    "model_final",
    "tool_timeout",
)


def raise_kind(kind: str) -> None:
    raise _exception(kind)
