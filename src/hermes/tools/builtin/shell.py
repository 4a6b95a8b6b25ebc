"""The ``shell`` built-in: run one command with ``/bin/sh -c`` in the workspace.

Three layers stand between a model and the machine, outermost first:

1. a person approves every call (``requires_approval=True``; the agent asks before running,
   seed 004 §4.3);
2. the deny-list of :mod:`hermes.tools.builtin.shell_policy`, which no setting lifts, is
   checked before anyone is asked (the agent calls this module's precheck) and again here,
   before any process starts;
3. the call runs in the process sandbox (``sandbox="process"``): CPU, memory, file-size and
   wall-clock limits, an environment without the parent's secrets; the command itself gets a
   minimal environment too (``PATH``, ``HOME`` = the workspace, ``LANG``).

Output is bounded: stdout and stderr go to temporary files (never into memory whole; the
sandbox's file-size limit stops a flood) and at most :data:`MAX_STREAM_BYTES` of each is
returned, with ``truncated: true`` and a note.

Permissions: the tool requires the scope ``system:shell``. RBAC is off by default, so this
changes nothing until an operator turns it on; then only roles granted ``system:shell`` see
and use the tool (least privilege for the most powerful built-in).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from typing import IO, Any

from hermes.errors import ToolExecutionError, ToolTimeoutError
from hermes.tools.base import PRECHECK_ATTRIBUTE, ToolContext
from hermes.tools.builtin.shell_policy import check_command
from hermes.tools.decorator import tool

__all__ = ["COMMAND_TIMEOUT_S", "MAX_STREAM_BYTES", "SHELL_PERMISSION", "shell"]

#: Bytes of stdout and of stderr returned (each); the rest is cut with a note.
MAX_STREAM_BYTES = 64 * 1024
#: Seconds the command may run; below the tool's timeout (30 s), so a slow command ends as a
#: clear ``timeout`` error of ours rather than the sandbox killing everything.
COMMAND_TIMEOUT_S = 25.0
SHELL_PERMISSION = "system:shell"
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"


@tool(
    requires_approval=True,
    sandbox="process",
    timeout=30.0,
    parallel_safe=False,
    toolset="system",
    permissions=(SHELL_PERMISSION,),
    summary="exit code {exit_code}",
)
def shell(command: str, *, ctx: ToolContext) -> dict[str, Any]:
    """Run a shell command in the workspace and return its exit code and output.

    Every call needs the user's approval first. Destructive commands (``rm -rf /``, ``mkfs``,
    ``shutdown`` …) are always refused. Output is limited to 64 KiB per stream.

    Args:
        command: The command line, run with /bin/sh -c in the workspace (e.g. "ls -l").
    """
    check_command(command)  # raises DeniedCommandError (invalid_arguments): nothing runs
    workspace = str(ctx.workspace)
    if not os.path.isdir(workspace):
        raise ToolExecutionError(f"the workspace {workspace} is not a directory")
    env = {"PATH": _SAFE_PATH, "HOME": workspace, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            completed = subprocess.run(
                ["/bin/sh", "-c", command],
                cwd=workspace,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                timeout=COMMAND_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ToolTimeoutError(
                f"the command did not finish within {COMMAND_TIMEOUT_S:g} s and was stopped"
            ) from None
        stdout, cut_out = _read_capped(out)
        stderr, cut_err = _read_capped(err)
    result: dict[str, Any] = {
        "exit_code": completed.returncode,
        "stdout": stdout,
        "stderr": stderr,
        "truncated": cut_out or cut_err,
    }
    if cut_out or cut_err:
        result["note"] = f"output cut to the first {MAX_STREAM_BYTES // 1024} KiB of each stream"
    return result


def _precheck(arguments: dict[str, Any]) -> None:
    """Refuse a deny-listed command before a person is asked to approve it."""
    check_command(arguments.get("command"))  # type: ignore[arg-type]  # non-text is refused


setattr(shell, PRECHECK_ATTRIBUTE, _precheck)


def _read_capped(stream: IO[bytes]) -> tuple[str, bool]:
    """The first :data:`MAX_STREAM_BYTES` of ``stream`` as text, and whether there was more."""
    stream.seek(0)
    data = stream.read(MAX_STREAM_BYTES + 1)
    cut = len(data) > MAX_STREAM_BYTES
    text = data[:MAX_STREAM_BYTES].decode("utf-8", errors="replace")
    return text, cut
