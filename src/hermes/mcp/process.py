"""The child process of a stdio MCP server: its command, environment, stderr log and pid.

The SDK's ``stdio_client`` spawns the server (in a new session, so the server leads its own
process group) and owns its shutdown. What it does not give back is kept here:

* the server's stderr goes to a private temporary file whose tail explains a failed start or
  a crash (:meth:`StdioLaunch.stderr_tail`);
* its pid (:meth:`StdioLaunch.find_pid`) — the SDK keeps the process object to itself, so the
  pid is found as "our child whose stderr is our private log file", read from ``/proc``
  (Linux; ``None`` elsewhere). Nothing about the SDK is patched for it;
* after the SDK's shutdown, :func:`sweep_process_group` stops what is left of the server's
  process group: the SDK kills the group only when the server itself outlives the grace
  period, so the children of a server that died (or exited on its own) would be left behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import TextIO, cast

from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS, StdioServerParameters

from hermes.mcp.config import ServerConfig
from hermes.observe import get_logger

__all__ = [
    "INHERITED_ENV",
    "StdioLaunch",
    "process_running",
    "resolve_command",
    "sweep_process_group",
]

logger = get_logger("mcp")

#: The only variables of our environment a stdio server inherits (besides its own ``env``).
INHERITED_ENV = ("PATH", "HOME", "LANG")
_STDERR_TAIL_CHARS = 600


class StdioLaunch:
    """One start of a stdio server. ``params`` is ``None`` when its command was not found.

    The caller closes it (:meth:`close`) after the transport has stopped the process and any
    failure report has read the stderr tail.
    """

    def __init__(self, config: ServerConfig) -> None:
        assert config.command is not None
        env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
        env.update(config.env)
        resolved = resolve_command(config.command, env.get("PATH", os.defpath), config.cwd)
        self.params: StdioServerParameters | None = None
        self.errlog: TextIO | None = None
        if resolved is None:
            return
        command, args = resolved, list(config.args)
        # The SDK always adds some of our variables (LOGNAME, SHELL, TERM, USER …) to the
        # child's environment; ``env -u`` removes the ones we did not choose, without putting
        # any value on a command line. ``env`` execs the server, so its pid is the server's.
        env_tool = shutil.which("env") if sys.platform != "win32" else None
        unwanted = [k for k in DEFAULT_INHERITED_ENV_VARS if k not in env]
        if env_tool is not None and unwanted:
            args = [arg for k in unwanted for arg in ("-u", k)] + [resolved, *args]
            command = env_tool
        errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - close() closes it
        self.errlog = cast(TextIO, errlog)
        self.params = StdioServerParameters(command=command, args=args, env=env, cwd=config.cwd)

    def find_pid(self) -> int | None:
        """The pid of the server process (our child writing to our log), if it can be told."""
        if self.errlog is None:
            return None
        try:
            target = os.fstat(self.errlog.fileno())
        except (OSError, ValueError):
            return None
        for pid in _child_pids():
            try:
                stderr = os.stat(f"/proc/{pid}/fd/2")
            except OSError:
                continue
            if (stderr.st_dev, stderr.st_ino) == (target.st_dev, target.st_ino):
                return pid
        return None

    def stderr_tail(self) -> str:
        """The last few hundred characters the server wrote to stderr."""
        errlog = self.errlog
        if errlog is None or not hasattr(os, "pread"):
            return ""
        try:
            errlog.flush()
            fd = errlog.fileno()
            size = os.fstat(fd).st_size
            # pread: the child shares this file's offset, so a seek+read would move its writes.
            data = os.pread(fd, _STDERR_TAIL_CHARS, max(0, size - _STDERR_TAIL_CHARS))
        except (OSError, ValueError) as exc:
            return f"(stderr unreadable: {exc})"
        return data.decode("utf-8", "replace").strip()

    def close(self) -> None:
        if self.errlog is not None:
            self.errlog.close()
            self.errlog = None


def resolve_command(command: str, path: str, cwd: str | None) -> str | None:
    """The absolute path of an executable ``command`` (searched on ``path`` if it has no
    directory part, else relative to ``cwd``), or ``None``."""
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        candidate = Path(command)
        if not candidate.is_absolute():
            candidate = Path(cwd or ".") / candidate
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate.absolute())  # not resolve(): a venv python is a symlink
        return None
    return shutil.which(command, path=path)


def process_running(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user (our pid was reused): not ours to judge
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True  # no /proc: existing is all we can tell
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def sweep_process_group(pid: int, server: str) -> None:
    """Stop what remains of the process group the server ``pid`` led (``start_new_session``).

    Usually the group is already empty and this does nothing. A pid is never reused as the
    id of a group that still has members, so this cannot reach another program's group.
    """
    if sys.platform == "win32":
        return  # the SDK's job object already took the whole tree down
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    logger.warning("mcp_server_children_killed", server=server, pgid=pid)


def _child_pids() -> list[int]:
    """Our direct children, from ``/proc/self/task/*/children`` (empty where there is none)."""
    pids: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for tid in tasks:
        try:
            text = Path(f"/proc/self/task/{tid}/children").read_text(encoding="ascii")
        except OSError:
            continue
        pids.extend(int(part) for part in text.split() if part.isdigit())
    return pids
