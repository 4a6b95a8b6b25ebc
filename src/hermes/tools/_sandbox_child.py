"""The child side of :class:`hermes.tools.sandbox.ProcessSandbox`: run ONE tool call, then wait.

The parent starts ``python -I <this file> CPU,MEMORY_MB,FILE_MB,NOFILE,NPROC [import roots ...]``
(run by path, not ``-m``, so that starting the child does not import the ``hermes`` package;
``-I`` keeps the parent's PYTHON* variables, user site and script directory out of it).

Protocol (one JSON line each way, ASCII, ``\\n``-terminated):

* stdin: ``{"target": "package.module:qualname", "arguments": {...}}``. The child keeps its
  stdin pipe as a private control channel afterwards; the tool itself sees ``/dev/null``.
* the ORIGINAL stdout fd is the result channel: ``{"ok": true, "output": ...}`` or
  ``{"ok": false, "error": {"kind", "type", "message", "retryable", "code"?}}``. ``kind`` is one of
  ``raised`` (the tool raised), ``memory``, ``output`` (not JSON-serializable), ``import``
  (the target could not be imported), ``exit`` (the tool called ``sys.exit``), ``setup``
  (limits could not be applied). ``type`` is the exception's class name; ``retryable`` says
  whether ``hermes.tools.policies.retry.is_retryable`` would retry it in-process (mirrored by
  :func:`_retryable`, as this module cannot import it). The tool's own prints (fd 1) go to
  stderr, so they can never corrupt the result.

Process count (``NPROC``): ``RLIMIT_NPROC`` caps the tasks (processes and threads) of the
process's REAL USER, all of them, not of this process tree. So the limit is set to what that
user runs now (counted in ``/proc``) plus ``NPROC``: a fork loop gets ``NPROC`` more tasks at
most — fewer if the user's other programs (or other sandbox calls) start some meanwhile. The
kernel does not enforce it for root (nor with CAP_SYS_RESOURCE or CAP_SYS_ADMIN), so as root it
is not set at all: a fork loop then runs until the wall-clock deadline, when the parent kills the
process group (a forked process that calls ``setsid`` escapes that kill).

After writing the result the child blocks on the control channel until the parent kills its
process group: the group leader is then certainly alive while the parent signals the group,
which makes the final ``killpg`` safe against pid reuse (see ``sandbox.py``).

This module must stay importable without ``hermes`` (only the standard library at top level).
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import resource
import sys
from typing import Any

__all__ = ["main"]

_MIB = 1024 * 1024
#: The attribute a ``@tool`` function carries (``hermes.tools.decorator.TOOL_ATTRIBUTE``).
_TOOL_ATTRIBUTE = "__hermes_tool__"
#: Marks a serialized ``ToolContext`` among the arguments (``sandbox.CONTEXT_MARKER``).
_CONTEXT_MARKER = "__hermes_tool_context__"
_MAX_MESSAGE = 2000
# Prebuilt, so reporting an exhausted memory limit needs no allocation.
_MEMORY_REPLY = (
    b'{"ok": false, "error": {"kind": "memory", "type": "MemoryError", '
    b'"message": "memory limit exceeded", "retryable": false}}\n'
)
#: ``retry._NETWORK_ERRNOS``: a plain ``OSError`` with one of these is a network failure.
#: A copy, not an import: this file runs as a script, and importing ``hermes`` would cost the
#: child its light start-up (tests/tools/test_policy_retry.py keeps the two equal).
_NETWORK_ERRNOS = frozenset(
    getattr(errno, name)
    for name in (
        "ECONNABORTED",
        "ECONNREFUSED",
        "ECONNRESET",
        "EHOSTDOWN",
        "EHOSTUNREACH",
        "ENETDOWN",
        "ENETRESET",
        "ENETUNREACH",
        "EPIPE",
        "ETIMEDOUT",
    )
    if hasattr(errno, name)
)
_HTTPX_RETRYABLE = ("TimeoutException", "NetworkError", "RemoteProtocolError")


def main() -> None:
    """Run one call as described in the module docstring; never returns."""
    control = os.dup(0)  # dup'ed fds are non-inheritable (PEP 446): a tool's subprocess
    result_fd = os.dup(1)  # never sees the protocol channels
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        _apply_limits(sys.argv[1])
    except (IndexError, ValueError, OSError) as exc:
        # Fail closed: a tool never runs without its limits.
        _write(result_fd, _failure("setup", exc))
        os._exit(2)
    sys.path[:0] = [path for path in sys.argv[2:] if path not in sys.path]
    reply = _serve(_read_request(control))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: its text is only diagnostics
            continue
    _write(result_fd, reply)
    os.read(control, 1)  # returns when the parent closes stdin; usually it kills us first
    os._exit(0)


def _apply_limits(spec: str) -> None:
    cpu, memory_mb, file_mb, nofile, nproc = (int(part) for part in spec.split(","))
    _limit(resource.RLIMIT_CORE, 0)
    # Soft limit → SIGXCPU (ends the process); the hard limit one second later → SIGKILL,
    # for a tool that ignores SIGXCPU.
    _limit(resource.RLIMIT_CPU, cpu, cpu + 1)
    _limit(resource.RLIMIT_AS, memory_mb * _MIB)
    _limit(resource.RLIMIT_FSIZE, file_mb * _MIB)
    _limit(resource.RLIMIT_NOFILE, nofile)
    uid = os.getuid()
    if uid != 0:  # ignored by the kernel for root: see the module docstring
        _limit(resource.RLIMIT_NPROC, _tasks_of(uid) + nproc)


def _tasks_of(uid: int) -> int:
    """The tasks (threads) whose real uid is ``uid``: what the kernel counts for RLIMIT_NPROC.

    A process whose effective uid differs (a setuid program the user runs) is missed, which
    only makes the limit tighter. Raises ``OSError`` without ``/proc`` (the call then fails
    closed, as for any limit that cannot be applied).
    """
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            # /proc/<pid> belongs to the effective uid: a cheap filter before reading status.
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            with open(f"/proc/{name}/status", "rb") as handle:
                status = handle.read()
        except OSError:  # it exited while we looked
            continue
        try:
            real_uid = int(status.split(b"\nUid:", 1)[1].split(None, 1)[0])
            threads = int(status.split(b"\nThreads:", 1)[1].split(None, 1)[0])
        except (IndexError, ValueError):
            threads, real_uid = 1, uid  # an unexpected format: count the process, once
        if real_uid == uid:
            total += threads
    return total


def _limit(which: int, soft: int, hard: int | None = None) -> None:
    """Lower a limit; soft and hard both, so the tool cannot raise it again."""
    hard = soft if hard is None else hard
    _, current_hard = resource.getrlimit(which)
    if current_hard != resource.RLIM_INFINITY:
        hard = min(hard, current_hard)
    resource.setrlimit(which, (min(soft, hard), hard))


def _read_request(control: int) -> dict[str, Any]:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(control, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    request = json.loads(b"".join(chunks))
    if not isinstance(request, dict):
        raise TypeError("the sandbox request must be a JSON object")
    return request


def _serve(request: dict[str, Any]) -> bytes:
    try:
        fn = _resolve(str(request["target"]))
        arguments = _arguments(request["arguments"])
    except MemoryError:
        return _MEMORY_REPLY
    except Exception as exc:  # noqa: BLE001 - reported to the parent as an import failure
        return _failure("import", exc)
    try:
        output = fn(**arguments)
        if hasattr(output, "__await__"):
            output = _await(output)
    except MemoryError:
        return _MEMORY_REPLY
    except SystemExit as exc:
        return _failure("exit", exc, message=repr(exc.code))
    except Exception as exc:  # noqa: BLE001 - any tool failure is reported, typed, to the parent
        return _failure("raised", exc)
    try:
        return (json.dumps({"ok": True, "output": output}) + "\n").encode("ascii")
    except MemoryError:
        return _MEMORY_REPLY
    except (TypeError, ValueError, RecursionError) as exc:
        return _failure("output", exc)


def _resolve(target: str) -> Any:
    module_name, _, qualname = target.partition(":")
    found: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        found = getattr(found, part)
    # A @tool function: call what the in-process executor calls (its argument converter).
    attached_fn = getattr(getattr(found, _TOOL_ATTRIBUTE, None), "fn", None)
    fn = attached_fn if callable(attached_fn) else found
    if not callable(fn):
        raise TypeError(f"{target} is not callable")
    return fn


def _arguments(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise TypeError("arguments must be a JSON object")
    for name, value in raw.items():
        if isinstance(value, dict) and value.keys() == {_CONTEXT_MARKER}:
            raw[name] = _tool_context(value[_CONTEXT_MARKER])
    return raw


def _tool_context(fields: dict[str, Any]) -> Any:
    from pathlib import Path

    from hermes.tools.base import ToolContext

    return ToolContext(
        session_id=fields["session_id"],
        user_id=fields["user_id"],
        trace_id=fields["trace_id"],
        call_id=fields["call_id"],
        workspace=Path(fields["workspace"]),
    )


def _await(awaitable: Any) -> Any:
    import asyncio

    async def wait() -> Any:
        return await awaitable

    return asyncio.run(wait())


def _failure(kind: str, exc: BaseException, *, message: str | None = None) -> bytes:
    error: dict[str, Any] = {
        "kind": kind,
        "type": type(exc).__name__,
        "message": (_text(exc) if message is None else message)[:_MAX_MESSAGE],
        "retryable": kind == "raised" and _retryable(exc),
    }
    errors = sys.modules.get("hermes.errors")
    if errors is not None and isinstance(exc, errors.ToolError):
        # A failure the tool reports on purpose keeps its own code, as in-process.
        error["code"] = str(exc.code)
    return (json.dumps({"ok": False, "error": error}) + "\n").encode("ascii")


def _retryable(exc: BaseException) -> bool:
    """``hermes.tools.policies.retry.is_retryable``, rule for rule (a test keeps the two in
    step). Hermes and httpx classes are looked up only if already imported: an exception of a
    module nobody imported cannot have been raised."""
    errors = sys.modules.get("hermes.errors")
    if errors is not None and isinstance(exc, errors.ToolArgumentError):
        return False
    status = _status_code(exc)
    if status is not None:
        return status == 429 or 500 <= status <= 599
    if errors is not None and isinstance(exc, errors.HermesError):
        flagged = getattr(exc, "retryable", None)
        if flagged is None:
            flagged = exc.details.get("retryable")
        return flagged is True or isinstance(exc, errors.ToolTimeoutError)
    socket = sys.modules.get("socket")
    if isinstance(exc, ConnectionError | TimeoutError) or (
        socket is not None and isinstance(exc, socket.gaierror)
    ):
        return True
    if type(exc) is OSError:  # subclasses (FileNotFoundError …) are not network failures
        return exc.errno in _NETWORK_ERRNOS
    httpx = sys.modules.get("httpx")
    kinds = tuple(k for k in (getattr(httpx, n, None) for n in _HTTPX_RETRYABLE) if k)
    return bool(kinds) and isinstance(exc, kinds)


def _status_code(exc: BaseException) -> int | None:
    for holder in (exc, _attribute(exc, "response")):
        code = _attribute(holder, "status_code")
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    return None


def _attribute(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a property that raises (httpx's .request) means "absent"
        return None


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception as inner:  # noqa: BLE001 - a broken __str__ must not hide the failure
        return f"<unprintable {type(exc).__name__}: {type(inner).__name__}>"


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


if __name__ == "__main__":
    main()
