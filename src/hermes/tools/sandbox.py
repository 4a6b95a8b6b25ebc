"""Running a tool in a separate, limited process (seed 003 §2.2, second layer; seed 000 §4.5).

A tool marked ``sandbox="process"`` runs through :func:`run_sandboxed`: in a fresh Python
process with CPU-time, memory, file-size, open-file and process-count rlimits, a wall-clock
deadline, bounded output, and an environment that holds only ``PATH``, ``LANG``, ``LC_ALL`` and
the names a caller allows — never the parent's secrets. ``HOME`` is a new empty folder made for
the call (``TMPDIR`` is inside it) and removed after it, whatever happened, so the tool cannot
read ``~/.hermes``, ``~/.netrc`` and the like through ``$HOME``. The working directory is the
``ToolContext.workspace`` of the call, or that fresh ``HOME`` — never the parent's. Its crash,
OOM, infinite loop or flood of output becomes a typed :class:`SandboxError` (a ``ToolError``:
the executor turns it into a ``ToolResult``) while the agent goes on; a tool's own network
failure comes back flagged ``retryable`` (see :class:`SandboxError`).

:class:`Sandbox` is the interface; :class:`ProcessSandbox` is the local implementation. A
container or remote executor implements the same ``run`` later.

Limits of the process sandbox: it is resource containment, not a security boundary against
hostile code (no filesystem or network isolation: an absolute path such as ``/root/.netrc``
still works; a grandchild that calls ``setsid`` leaves the process group and outlives the kill).
``RLIMIT_NPROC`` counts every process of the real user and the kernel ignores it for root (and
for CAP_SYS_RESOURCE / CAP_SYS_ADMIN): running as root, a fork loop is stopped only by the
wall clock and the process-group kill (see ``_sandbox_child.py``). Use a container sandbox for
untrusted code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from time import perf_counter
from typing import Any, Protocol

import hermes
from hermes.errors import ErrorCode, ToolError
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolContext
from hermes.tools.decorator import TOOL_ATTRIBUTE

__all__ = [
    "CONTEXT_MARKER",
    "DEFAULT_LIMITS",
    "ProcessSandbox",
    "Sandbox",
    "SandboxCrashError",
    "SandboxError",
    "SandboxLimits",
    "SandboxMemoryError",
    "SandboxOutputError",
    "SandboxTimeoutError",
    "default_sandbox",
    "run_sandboxed",
    "sandbox_target",
]

logger = get_logger("tools.sandbox")

#: Marks a serialized ToolContext among the arguments (the child rebuilds it, without extras).
CONTEXT_MARKER = "__hermes_tool_context__"
_CHILD_SCRIPT = str(Path(__file__).with_name("_sandbox_child.py"))
_BASE_ENV = ("PATH", "LANG", "LC_ALL")
#: Always the sandbox's own (the fresh per-call folder), never passed through from the parent.
_OWN_ENV = frozenset({"HOME", "TMPDIR"})
_MAX_MESSAGE = 500
_STDERR_TAIL = 2048


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What one sandboxed call may use. Times in seconds, sizes as named.

    ``cpu_seconds`` is rounded up to whole seconds (the rlimit's unit). ``max_output_bytes``
    bounds both the result and everything the tool prints. ``env_allow`` names extra
    environment variables passed through from the parent (e.g. ``("HTTPS_PROXY",)``; not
    ``HOME`` or ``TMPDIR``, which are always the call's own fresh folder). ``max_processes``
    is how many more processes/threads the tool may start (``RLIMIT_NPROC`` = what the user
    already runs + this; not enforced by the kernel for root, see the module docstring).
    """

    cpu_seconds: float = 5.0
    memory_mb: int = 256
    wall_seconds: float = 10.0
    max_output_bytes: int = 1024 * 1024
    env_allow: tuple[str, ...] = ()
    file_size_mb: int = 16
    open_files: int = 256
    max_processes: int = 64

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "memory_mb", "wall_seconds", "max_output_bytes"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"SandboxLimits.{name} must be a positive number, got {value!r}")
        if self.file_size_mb < 0 or self.open_files < 16:
            raise ValueError("SandboxLimits needs file_size_mb >= 0 and open_files >= 16")
        allow: object = self.env_allow
        if not isinstance(allow, tuple) or not all(isinstance(name, str) for name in allow):
            raise ValueError("SandboxLimits.env_allow must be a tuple of names")
        if _OWN_ENV.intersection(allow):
            raise ValueError("SandboxLimits.env_allow cannot pass HOME or TMPDIR (always fresh)")
        count: object = self.max_processes
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError("SandboxLimits.max_processes must be a positive integer")


DEFAULT_LIMITS = SandboxLimits()


class SandboxError(ToolError):
    """A sandboxed call failed: the tool raised (``"Type: message"``), its target cannot be
    imported by the child, or its output is not JSON. A ``ToolError`` the tool raised on
    purpose keeps its own ``code`` (as it would in-process).

    ``retryable`` (an attribute, and in ``details``) says whether another attempt may succeed:
    for a failure the tool raised, the child classifies the exception as
    ``hermes.tools.policies.retry.is_retryable`` would in-process (``ConnectionError``,
    ``TimeoutError``, a network ``OSError``, HTTP 429/5xx … → true), and
    ``details["error_type"]`` names its class. ``is_retryable`` reads the attribute, so a retry
    policy retries a sandboxed network failure as it would an in-process one.
    """

    code: str = "sandbox_error"  # or the code of a tool's own ToolError raised in the child
    status = 500

    def __init__(
        self, message: str, *, code: str | None = None, retryable: bool = False, **details: Any
    ) -> None:
        super().__init__(_clip(message), retryable=retryable, **details)
        self.retryable = retryable
        if code is not None:
            self.code = code


class SandboxTimeoutError(SandboxError):
    """The call ran past its wall-clock deadline or its CPU-time limit."""

    code: ErrorCode = "sandbox_timeout"
    status = 504


class SandboxMemoryError(SandboxError):
    """The call exceeded its memory limit."""

    code: ErrorCode = "sandbox_memory"


class SandboxCrashError(SandboxError):
    """The process ended without a result: a non-zero exit, a signal, ``sys.exit``."""

    code: ErrorCode = "sandbox_crash"


class SandboxOutputError(SandboxError):
    """The call printed or returned more than ``max_output_bytes``; it was killed."""

    code: ErrorCode = "sandbox_output"


class Sandbox(Protocol):
    """Somewhere a tool function can run isolated: a process, later a container or a host."""

    async def run(self, target: str, arguments: dict[str, Any], limits: SandboxLimits) -> Any:
        """Call ``target`` (``"package.module:qualname"``) with ``arguments`` (JSON data);
        return its JSON output or raise a :class:`SandboxError` subclass."""
        ...


class ProcessSandbox:
    """Runs each call in a new ``python -I`` process, in its own session and process group.

    ``max_concurrency`` bounds the live sandbox processes (per event loop); a call waiting for a
    slot counts against its wall-clock limit. A serialized ``ToolContext`` among the arguments
    (``{CONTEXT_MARKER: {..., "workspace": path}}``, as :func:`run_sandboxed` sends it) makes
    that workspace the child's working directory; without one it is the call's fresh ``HOME``.
    """

    def __init__(self, *, python: str = sys.executable, max_concurrency: int = 8) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self._python = python
        self._max_concurrency = max_concurrency
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._slots = weakref.WeakKeyDictionary()

    async def run(self, target: str, arguments: dict[str, Any], limits: SandboxLimits) -> Any:
        start = perf_counter()
        module, _, qualname = target.partition(":")
        if not module or not qualname:
            raise SandboxError(f"sandbox target {target!r} is not 'package.module:qualname'")
        payload = _request(target, arguments)
        workspace = _workspace_of(arguments, target)
        argv = [self._python, "-I", _CHILD_SCRIPT, _limits_arg(limits), *_import_roots(module)]
        deadline = asyncio.timeout(limits.wall_seconds)
        try:
            async with deadline, self._slot(), _fresh_home() as home:
                env = _child_env(limits.env_allow, home)
                return await _call(argv, payload, target, limits, cwd=workspace or home, env=env)
        except TimeoutError:
            if not deadline.expired():
                raise
            message = f"sandboxed tool {target} did not finish within {limits.wall_seconds:g} s"
            error: SandboxError = SandboxTimeoutError(message)
        except SandboxError as exc:
            error = exc
        cost_ms = round((perf_counter() - start) * 1000, 2)
        logger.warning("sandbox_failed", target=target, error_type=error.code, cost_ms=cost_ms)
        raise error

    def _slot(self) -> asyncio.Semaphore:
        # asyncio primitives bind to one loop; tests and apps may run several loops in turn.
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = asyncio.Semaphore(self._max_concurrency)
        return slots


_default = ProcessSandbox()


def default_sandbox() -> ProcessSandbox:
    """The module-level sandbox :func:`run_sandboxed` uses."""
    return _default


async def run_sandboxed(
    tool: Tool,
    arguments: dict[str, Any],
    *,
    timeout: float,  # noqa: ASYNC109 - the interface fixed for the executor (ISSUE3.md §1)
    limits: SandboxLimits | None = None,
    sandbox: Sandbox | None = None,
) -> Any:
    """Run ``tool.fn(**arguments)`` in a separate process; return its JSON-serializable output.

    ``timeout`` is the wall-clock limit (with explicit ``limits``, the smaller of the two).
    A ``ToolContext`` argument reaches the tool rebuilt in the child, without ``extras`` and
    with ``workspace`` made absolute; the child runs in that workspace (else in its fresh
    ``HOME``). ``sandbox`` runs the call elsewhere (default: :func:`default_sandbox`).
    Raises a :class:`SandboxError` subclass: ``sandbox_timeout``, ``sandbox_memory``,
    ``sandbox_crash``, ``sandbox_output`` or ``sandbox_error`` — the latter also, at once, for
    a tool function the child cannot import (a lambda, closure, method or ``__main__`` function).
    """
    target = sandbox_target(tool)
    wall = timeout if limits is None else min(timeout, limits.wall_seconds)
    limits = replace(limits or DEFAULT_LIMITS, wall_seconds=wall)
    context = arguments.get(tool.context_param) if tool.context_param is not None else None
    if isinstance(context, ToolContext):
        assert tool.context_param is not None
        arguments = {**arguments, tool.context_param: _context_data(context)}
    return await (_default if sandbox is None else sandbox).run(target, arguments, limits)


def sandbox_target(tool: Tool) -> str:
    """``"package.module:qualname"`` of ``tool.fn``, checked to name that very function (or
    the ``@tool`` function it belongs to); raises :class:`SandboxError` otherwise."""
    fn = tool.fn
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    why = None
    if not isinstance(module, str) or not isinstance(qualname, str):
        why = "it has no module and qualified name"
    elif "<" in qualname:  # <lambda>, <locals>
        why = "a lambda or a function defined inside another function cannot be imported"
    elif module == "__main__":
        why = "it is defined in __main__; move it into an importable module"
    else:
        found: Any = sys.modules.get(module)
        for part in qualname.split("."):
            found = getattr(found, part, None)
        attached = getattr(found, TOOL_ATTRIBUTE, None)
        if found is fn or getattr(attached, "fn", None) is fn:
            return f"{module}:{qualname}"
        why = (
            f"{module}.{qualname} is not that function (a method, a partial, or a wrapper with "
            "converted parameter types that is not declared with @tool)"
        )
    raise SandboxError(f"tool {tool.name!r} cannot run in the sandbox: {why}")


def _context_data(ctx: ToolContext) -> dict[str, Any]:
    fields = {
        "session_id": ctx.session_id,
        "user_id": ctx.user_id,
        "trace_id": ctx.trace_id,
        "call_id": ctx.call_id,
        # Absolute: the child's working directory is the workspace itself, so a relative path
        # would no longer name it there.
        "workspace": os.path.abspath(ctx.workspace),
    }
    return {CONTEXT_MARKER: fields}


def _workspace_of(arguments: dict[str, Any], target: str) -> str | None:
    """The workspace of a serialized ``ToolContext`` among ``arguments``, if there is one;
    raises :class:`SandboxError` when it is not an existing folder."""
    for value in arguments.values():
        if isinstance(value, dict) and value.keys() == {CONTEXT_MARKER}:
            fields = value[CONTEXT_MARKER]
            workspace = fields.get("workspace") if isinstance(fields, dict) else None
            if not isinstance(workspace, str):
                continue
            if not os.path.isdir(workspace):
                raise SandboxError(
                    f"workspace {workspace} of sandboxed tool {target} is not a folder"
                )
            return workspace
    return None


def _request(target: str, arguments: dict[str, Any]) -> bytes:
    try:
        text = json.dumps({"target": target, "arguments": arguments}, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        message = f"arguments of sandboxed tool {target} are not JSON: {type(exc).__name__}: {exc}"
        raise SandboxError(message) from None
    return text.encode("ascii") + b"\n"


def _limits_arg(limits: SandboxLimits) -> str:
    cpu = max(1, math.ceil(limits.cpu_seconds))
    sizes = f"{limits.memory_mb},{limits.file_size_mb},{limits.open_files}"
    return f"{cpu},{sizes},{limits.max_processes}"


@lru_cache(maxsize=256)
def _import_roots(module: str) -> tuple[str, ...]:
    """sys.path entries the child needs: where ``hermes`` lives and where ``module`` lives
    (``-I`` drops PYTHONPATH and the script directory, so both are passed explicitly)."""
    roots = [str(Path(hermes.__file__ or "").resolve().parent.parent)]
    loaded = sys.modules.get(module)
    file = getattr(loaded, "__file__", None)
    if isinstance(file, str):
        path = Path(file).resolve()
        if path.name == "__init__.py":
            path = path.parent
        root = str(path.parents[module.count(".")])
        if root not in roots:
            roots.append(root)
    return tuple(roots)


def _child_env(allow: tuple[str, ...], home: str) -> dict[str, str]:
    # Built from names, never by copying os.environ: secrets stay in the parent.
    env = {name: os.environ[name] for name in (*_BASE_ENV, *allow) if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = home
    env["TMPDIR"] = os.path.join(home, "tmp")
    return env


@contextlib.asynccontextmanager
async def _fresh_home() -> AsyncIterator[str]:
    """A new empty folder (mode 0700) with a ``tmp`` folder inside, removed on exit — after a
    result, a crash, a timeout or a cancellation alike."""
    try:
        home = tempfile.mkdtemp(prefix="hermes-sandbox-")
    except OSError as exc:
        raise SandboxError(f"could not create a sandbox home folder: {exc}") from exc
    try:
        os.mkdir(os.path.join(home, "tmp"), 0o700)
        yield home
    finally:
        # In a thread, so a tool that filled its home does not stall the loop; shielded, so a
        # second cancellation cannot stop the removal half-way (the thread finishes it).
        await asyncio.shield(asyncio.to_thread(_remove_home, home))


def _remove_home(home: str) -> None:
    """Delete a call's home folder; a failure is logged (the folder is named), not raised."""
    try:
        shutil.rmtree(home)
    except OSError as exc:  # e.g. a (non-root) tool made a sub-folder read-only
        logger.warning("sandbox_home_left", path=home, error=f"{type(exc).__name__}: {exc}")


async def _call(
    argv: list[str],
    payload: bytes,
    target: str,
    limits: SandboxLimits,
    *,
    cwd: str,
    env: dict[str, str],
) -> Any:
    # A SubprocessProtocol rather than asyncio.subprocess.Process: on Python 3.11,
    # Process.wait() returns only once every pipe is closed, so a stream we stop reading (after
    # too much output) or a pipe held open by a grandchild would hang it. Here the exit is a
    # callback and transport.close() releases the pipes whatever the tool did.
    loop = asyncio.get_running_loop()
    child = _ChildProtocol(loop, limits.max_output_bytes)
    try:
        transport, _ = await loop.subprocess_exec(
            lambda: child,
            *argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:  # e.g. EAGAIN: too many processes
        raise SandboxError(f"could not start a sandbox process: {exc}") from exc
    start = perf_counter()
    try:
        stdin = transport.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
        stdin.write(payload)  # a child that dies before reading: its exit status says why
        try:
            line = await child.result
        except _TooMuchOutput as exc:
            message = (
                f"sandboxed tool {target} {exc.what} more than {limits.max_output_bytes} bytes"
            )
            raise SandboxOutputError(message) from None
        if line is not None:
            return _outcome(line, target, limits)
        await child.exited
        await asyncio.wait((child.stderr_closed,), timeout=0.5)  # its last words, if any
        returncode = transport.get_returncode()
        assert returncode is not None
        raise _exit_error(returncode, target, limits, perf_counter() - start, bytes(child.tail))
    finally:
        await _finish(transport, child)


async def _finish(transport: asyncio.SubprocessTransport, child: _ChildProtocol) -> None:
    """Kill the process group (the tool and anything it started) and reap the child."""
    # The child waits for us after writing its result, so on success the group leader is alive
    # here and its pid is still ours. When it died on its own, the pgid stays reserved while
    # any member lives; with none left, pids are allocated cyclically (pid_max), so signalling
    # a reused number within microseconds of the exit is not a practical risk.
    with contextlib.suppress(ProcessLookupError):  # the whole group is already gone
        os.killpg(transport.get_pid(), signal.SIGKILL)
    transport.close()
    if child.result.done() and not child.result.cancelled():
        child.result.exception()  # mark an unawaited _TooMuchOutput as seen (no loop warning)
    # Reaped by asyncio's child watcher; waiting for it leaves no zombie behind us. SIGKILL
    # cannot be ignored, so this is prompt.
    await asyncio.shield(child.exited)


class _TooMuchOutput(Exception):
    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class _ChildProtocol(asyncio.SubprocessProtocol):
    """Collects the result line (fd 1) and a short tail of what the tool prints (fd 2).

    ``result`` resolves to the line, to ``None`` when stdout ends without one, or fails with
    ``_TooMuchOutput``. Nothing beyond ``limit`` bytes is kept, so the parent stays small
    whatever the tool writes.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        self.result: asyncio.Future[bytes | None] = loop.create_future()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.stderr_closed: asyncio.Future[None] = loop.create_future()
        self.tail = bytearray()
        self._line = bytearray()
        self._printed = 0
        self._limit = limit

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 2:
            self._printed += len(data)
            self.tail += data
            del self.tail[:-_STDERR_TAIL]
            if self._printed > self._limit and not self.result.done():
                self.result.set_exception(_TooMuchOutput("printed"))
        elif fd == 1 and not self.result.done():
            end = data.find(b"\n")
            self._line += data if end < 0 else data[:end]
            if len(self._line) > self._limit:
                self.result.set_exception(_TooMuchOutput("returned"))
            elif end >= 0:
                self.result.set_result(bytes(self._line))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.result.done():
            self.result.set_result(None)
        elif fd == 2 and not self.stderr_closed.done():
            self.stderr_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def _outcome(line: bytes, target: str, limits: SandboxLimits) -> Any:
    try:
        reply = json.loads(line)
        ok = reply["ok"]
    except (ValueError, TypeError, KeyError):
        raise SandboxCrashError(f"sandboxed tool {target} wrote a malformed result") from None
    if ok is True:
        return reply.get("output")
    error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
    kind, kind_type, text = error.get("kind"), error.get("type"), error.get("message")
    described = f"{kind_type}: {text}" if text else str(kind_type)
    if kind == "memory":
        message = f"sandboxed tool {target} exceeded its memory limit of {limits.memory_mb} MB"
        raise SandboxMemoryError(message)
    if kind == "exit":
        raise SandboxCrashError(f"sandboxed tool {target} called sys.exit({text})")
    if kind == "output":
        raise SandboxError(f"output of sandboxed tool {target} is not JSON: {described}")
    if kind == "import":
        raise SandboxError(f"sandbox cannot load tool {target}: {described}")
    if kind == "setup":
        raise SandboxError(f"sandbox could not apply its limits: {described}")
    # A failure the tool raised: its class and whether a retry may help, as the child judged.
    retryable, error_type = error.get("retryable") is True, str(kind_type)
    code = error.get("code")
    if isinstance(code, str) and text:  # a ToolError raised on purpose: its code and words
        raise SandboxError(str(text), code=code, retryable=retryable, error_type=error_type)
    raise SandboxError(described, retryable=retryable, error_type=error_type)


def _exit_error(
    returncode: int, target: str, limits: SandboxLimits, elapsed: float, stderr: bytes
) -> SandboxError:
    """The error for a child that ended without writing a result."""
    details: dict[str, Any] = {
        "returncode": returncode,
        "stderr_tail": stderr.decode("utf-8", "replace"),
    }
    if returncode >= 0:
        message = f"sandboxed tool {target} exited with status {returncode} without a result"
        return SandboxCrashError(message, **details)
    signum = -returncode
    cpu_limit = f"sandboxed tool {target} exceeded its CPU time limit of {limits.cpu_seconds:g} s"
    if signum == signal.SIGXCPU:
        return SandboxTimeoutError(cpu_limit, **details)
    if signum == signal.SIGKILL:
        # Not our kill (that is a wall timeout, handled by the caller): either the CPU hard
        # limit (possible only once the CPU budget is spent) or the kernel's OOM killer.
        if elapsed >= limits.cpu_seconds:
            return SandboxTimeoutError(cpu_limit, **details)
        message = f"sandboxed tool {target} was killed, most likely for using too much memory"
        return SandboxMemoryError(message, **details)
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = str(signum)
    return SandboxCrashError(f"sandboxed tool {target} was killed by signal {name}", **details)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"
