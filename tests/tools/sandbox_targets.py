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
