"""The ``shell`` built-in: deny-list first, approval gate, sandbox, bounded output."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hermes.models.base import ToolCall
from hermes.tools import BUILTIN_TOOLS, ToolContext, ToolRegistry, execute_tool_call
from hermes.tools.builtin import shell as shell_module
from hermes.tools.builtin.shell import MAX_STREAM_BYTES, shell
from hermes.tools.builtin.shell_policy import DeniedCommandError
from hermes.tools.pipeline import CallContext

SHELL = BUILTIN_TOOLS["shell"]


def _ctx(workspace: Path) -> ToolContext:
    return ToolContext(session_id="s", trace_id="t", workspace=workspace)


def _call_ctx(workspace: Path, *, approved: bool) -> CallContext:
    return CallContext(session_id="s", trace_id="t", workspace=str(workspace), approved=approved)


def test_the_tool_declares_approval_sandbox_and_its_scope() -> None:
    assert SHELL.requires_approval is True
    assert SHELL.sandbox == "process"
    assert SHELL.parallel_safe is False
    assert SHELL.permissions == ("system:shell",)
    assert SHELL.toolset == "system"
    assert list(SHELL.parameters["properties"]) == ["command"]


def test_a_deny_listed_command_is_refused_before_any_process_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[object] = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: started.append(a))
    with pytest.raises(DeniedCommandError):
        shell("rm -rf /", ctx=_ctx(tmp_path))
    with pytest.raises(DeniedCommandError):
        shell_module._precheck({"command": "sudo mkfs.ext4 /dev/sda1"})
    assert started == []


def test_the_precheck_lets_an_ordinary_command_through() -> None:
    shell_module._precheck({"command": "ls -l"})  # no exception


async def test_without_approval_the_executor_does_not_run_it(tmp_path: Path) -> None:
    call = ToolCall("c1", "shell", {"command": "touch made"})
    result = await execute_tool_call(
        ToolRegistry([SHELL]), call, _call_ctx(tmp_path, approved=False)
    )
    assert result.error is not None
    assert result.error.type == "approval_required"
    assert not (tmp_path / "made").exists()


async def test_a_denied_command_is_refused_before_anyone_is_asked(tmp_path: Path) -> None:
    call = ToolCall("c1", "shell", {"command": "sudo mkfs.ext4 /dev/sda1"})
    result = await execute_tool_call(
        ToolRegistry([SHELL]), call, _call_ctx(tmp_path, approved=False)
    )
    assert result.error is not None
    assert (result.error.type, result.attempts) == ("invalid_arguments", 0)
    assert result.error.message == (
        "tool 'shell' refused the call before asking anyone: invalid arguments: command: "
        "refused: mkfs.ext4 formats or wipes a disk; no setting allows this "
        "(命令被拒绝：格式化或擦除磁盘，任何设置都不能解除)"
    )


async def test_an_approved_echo_runs_in_the_sandbox_in_the_workspace(tmp_path: Path) -> None:
    call = ToolCall("c1", "shell", {"command": "echo hi; pwd"})
    where = tmp_path.resolve()  # noqa: ASYNC240 - a test, before the call
    result = await execute_tool_call(
        ToolRegistry([SHELL]), call, _call_ctx(tmp_path, approved=True)
    )
    assert result.ok, result.error
    assert result.output["stdout"] == f"hi\n{where}\n"
    assert (result.output["exit_code"], result.output["truncated"]) == (0, False)
    assert result.summary == "exit code 0"


async def test_an_approved_deny_listed_command_is_still_refused(tmp_path: Path) -> None:
    call = ToolCall("c1", "shell", {"command": "rm -rf ~"})
    result = await execute_tool_call(
        ToolRegistry([SHELL]), call, _call_ctx(tmp_path, approved=True)
    )
    assert result.error is not None
    assert result.error.type == "invalid_arguments"


def test_long_output_is_capped_with_a_note(tmp_path: Path) -> None:
    output = shell("head -c 200000 /dev/zero | tr '\\0' a; echo oops >&2", ctx=_ctx(tmp_path))
    assert len(output["stdout"]) == MAX_STREAM_BYTES
    assert output["truncated"] is True
    assert "64 KiB" in output["note"]
    assert output["stderr"] == "oops\n"


def test_a_failing_command_reports_its_exit_code_and_stderr(tmp_path: Path) -> None:
    output = shell("ls no-such-file", ctx=_ctx(tmp_path))
    assert output["exit_code"] != 0
    assert "no-such-file" in output["stderr"]
    assert output["truncated"] is False
    assert "note" not in output


def test_the_command_gets_a_minimal_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_TEST_SECRET", "s3cret")
    output = shell("env", ctx=_ctx(tmp_path))
    assert "s3cret" not in output["stdout"]
    assert f"HOME={tmp_path}" in output["stdout"]


def test_a_command_past_its_time_limit_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes.errors import ToolTimeoutError

    monkeypatch.setattr(shell_module, "COMMAND_TIMEOUT_S", 0.2)
    with pytest.raises(ToolTimeoutError, match="did not finish"):
        shell("sleep 5", ctx=_ctx(tmp_path))


def test_a_missing_workspace_is_an_error(tmp_path: Path) -> None:
    from hermes.errors import ToolExecutionError

    with pytest.raises(ToolExecutionError, match="not a directory"):
        shell("echo hi", ctx=_ctx(tmp_path / "missing"))
