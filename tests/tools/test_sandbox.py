"""The process sandbox: results come back, and every way a tool can misbehave ends in a typed
error within its limits, with the process group gone."""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sandbox_targets as targets

from hermes.errors import ToolError
from hermes.tools import sandbox as sandbox_module
from hermes.tools.base import Tool, ToolContext
from hermes.tools.builtin.calculator import calculator
from hermes.tools.decorator import as_tool, make_tool
from hermes.tools.policies.retry import is_retryable
from hermes.tools.sandbox import (
    CONTEXT_MARKER,
    ProcessSandbox,
    SandboxCrashError,
    SandboxError,
    SandboxLimits,
    SandboxMemoryError,
    SandboxOutputError,
    SandboxTimeoutError,
    run_sandboxed,
    sandbox_target,
)

FAST = SandboxLimits(cpu_seconds=2, wall_seconds=5)


def _tool(fn: Callable[..., Any]) -> Tool:
    return make_tool(fn)


async def _run(fn: Callable[..., Any], limits: SandboxLimits = FAST, **arguments: Any) -> Any:
    return await run_sandboxed(_tool(fn), arguments, timeout=limits.wall_seconds, limits=limits)


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie waiting for its (new) parent to reap it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _live_group_members(pgid: int) -> list[int]:
    """Pids in process group ``pgid`` that are not zombies (``/proc/<pid>/stat`` fields)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited while we looked
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            members.append(int(entry.name))
    return members


async def _gone(pid: int) -> bool:
    """Poll briefly: a SIGKILLed process needs a moment to be torn down by the kernel."""
    for _ in range(100):
        if not _alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


# --- results ---------------------------------------------------------------------------------


async def test_sync_tool_result_comes_back() -> None:
    assert await _run(targets.add, a=2, b=3) == 5


async def test_async_tool_result_comes_back() -> None:
    assert await _run(targets.greet, name="Ada") == "你好, Ada!"


async def test_unicode_and_nested_arguments_round_trip() -> None:
    value = {"城市": "北京", "emoji": "🚀", "list": [1, 2.5, None, True], "nested": {"ß": "ü"}}
    assert await _run(targets.echo, value=value) == value


async def test_prints_of_the_tool_do_not_corrupt_the_result() -> None:
    assert await _run(targets.chatty, words=1000) == "quiet result"


async def test_decorated_async_tool_runs_its_hermes_contract_in_the_child() -> None:
    output = await run_sandboxed(as_tool(calculator), {"expression": "6*7"}, timeout=10)
    assert output["result"] == 42


async def test_tool_error_raised_on_purpose_keeps_its_code() -> None:
    with pytest.raises(ToolError) as caught:
        await run_sandboxed(as_tool(calculator), {"expression": "1/0"}, timeout=10)
    assert caught.value.code == "execution_error"


async def test_tool_context_reaches_the_tool_rebuilt_without_extras(tmp_path: Path) -> None:
    tool = Tool(
        name="describe_context",
        description="",
        parameters={"type": "object"},
        fn=targets.describe_context,
        context_param="ctx",
    )
    ctx = ToolContext(session_id="s-1", user_id="u-1", workspace=tmp_path, extras={"x": object()})
    output = await run_sandboxed(tool, {"ctx": ctx, "label": "标签"}, timeout=10)
    assert output == {
        "type": "ToolContext",
        "session_id": "s-1",
        "user_id": "u-1",
        "workspace": str(tmp_path),
        "label": "标签",
    }


async def test_tool_reading_stdin_sees_end_of_file_instead_of_hanging() -> None:
    assert await _run(targets.read_stdin) == ""


async def test_concurrent_sandboxed_calls_each_get_their_own_result() -> None:
    results = await asyncio.gather(*(_run(targets.add, a=n, b=n) for n in range(6)))
    assert results == [n + n for n in range(6)]


# --- limits ----------------------------------------------------------------------------------


async def test_wall_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    limits = SandboxLimits(cpu_seconds=5, wall_seconds=1.5)
    with pytest.raises(SandboxTimeoutError, match=r"did not finish within 1\.5 s"):
        await _run(targets.sleep_with_grandchild, limits, pid_file=str(pid_file))
    child, grandchild = (int(pid) for pid in pid_file.read_text().split())
    assert await _gone(child)
    assert await _gone(grandchild)
    assert _live_group_members(child) == []


async def test_run_sandboxed_timeout_is_the_wall_limit(tmp_path: Path) -> None:
    tool = _tool(targets.sleep_with_grandchild)
    with pytest.raises(SandboxTimeoutError, match="within 1 s"):
        await run_sandboxed(tool, {"pid_file": str(tmp_path / "pids")}, timeout=1)


async def test_background_process_of_a_finished_tool_is_killed() -> None:
    pid = await _run(targets.spawn_background)
    assert await _gone(pid)


async def test_escaped_grandchild_holding_the_pipes_does_not_hang_the_call() -> None:
    pid = await _run(targets.spawn_escapee)  # returns although the escapee keeps stderr open
    os.kill(pid, signal.SIGKILL)  # a setsid escapee is outside the sandbox's reach: tidy up
    assert await _gone(pid)


async def test_cpu_burn_is_stopped_by_the_cpu_limit() -> None:
    limits = SandboxLimits(cpu_seconds=1, wall_seconds=20)
    with pytest.raises(SandboxTimeoutError, match="CPU time limit"):
        await _run(targets.burn_cpu, limits)


async def test_memory_hog_is_reported_as_sandbox_memory() -> None:
    with pytest.raises(SandboxMemoryError, match="memory limit of 256 MB"):
        await _run(targets.hog_memory)


async def test_writing_a_file_past_the_size_limit_fails(tmp_path: Path) -> None:
    limits = SandboxLimits(wall_seconds=5, file_size_mb=1)
    with pytest.raises(SandboxError, match="File too large"):
        await _run(targets.write_file, limits, path=str(tmp_path / "big"), megabytes=4)


async def test_printing_50_mb_is_cut_and_the_parent_stays_small() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(SandboxOutputError, match="printed more than 1048576 bytes"):
        await _run(targets.flood)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 20 * 1024


async def test_result_larger_than_the_output_limit_is_refused() -> None:
    with pytest.raises(SandboxOutputError, match="returned more than"):
        await _run(targets.huge_result)


# --- crashes and failures ------------------------------------------------------------------


async def test_os_exit_is_a_crash() -> None:
    with pytest.raises(SandboxCrashError, match="exited with status 3"):
        await _run(targets.exit_hard)


async def test_crash_keeps_the_tail_of_stderr_for_the_log() -> None:
    with pytest.raises(SandboxCrashError) as caught:
        await _run(targets.exit_hard)
    assert caught.value.details["returncode"] == 3
    assert "last words" in caught.value.details["stderr_tail"]
    assert "last words" not in caught.value.message  # diagnostics, not the model's text


async def test_segfault_is_a_crash() -> None:
    with pytest.raises(SandboxCrashError, match="SIGSEGV"):
        await _run(targets.segfault)


async def test_sys_exit_is_a_crash() -> None:
    with pytest.raises(SandboxCrashError, match=r"sys\.exit\(4\)"):
        await _run(targets.call_sys_exit)


async def test_exception_becomes_type_and_message() -> None:
    with pytest.raises(SandboxError) as caught:
        await _run(targets.fail, message="城市 not found")
    assert type(caught.value) is SandboxError
    assert caught.value.code == "sandbox_error"
    assert caught.value.message == "ValueError: 城市 not found"


async def test_long_exception_text_is_clipped_to_500_characters() -> None:
    with pytest.raises(SandboxError) as caught:
        await _run(targets.fail, message="x" * 5000)
    assert len(caught.value.message) == 500
    assert caught.value.message.startswith("ValueError: xxx")


async def test_non_json_output_is_sandbox_error() -> None:
    with pytest.raises(SandboxError, match="not JSON: TypeError"):
        await _run(targets.not_json)


async def test_unimportable_target_is_sandbox_error() -> None:
    with pytest.raises(SandboxError, match="ModuleNotFoundError"):
        await ProcessSandbox().run("no_such_module_xyz:fn", {}, FAST)


async def test_malformed_target_is_refused() -> None:
    with pytest.raises(SandboxError, match=r"not 'package\.module:qualname'"):
        await ProcessSandbox().run("just_a_name", {}, FAST)


# --- environment -----------------------------------------------------------------------------


async def test_parent_secret_is_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_TEST_SECRET", "s3cr3t")
    env = await _run(targets.environment)
    assert "HERMES_TEST_SECRET" not in env
    # LC_CTYPE: Python's own C-locale coercion may add it.
    assert set(env) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE"}


async def test_allowed_names_are_passed_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_TEST_ALLOWED", "visible")
    monkeypatch.setenv("HERMES_TEST_SECRET", "s3cr3t")
    limits = SandboxLimits(wall_seconds=5, env_allow=("HERMES_TEST_ALLOWED",))
    env = await _run(targets.environment, limits)
    assert env["HERMES_TEST_ALLOWED"] == "visible"
    assert "HERMES_TEST_SECRET" not in env


# --- targets the child cannot import ---------------------------------------------------------


def test_closure_target_is_refused_clearly() -> None:
    with pytest.raises(SandboxError, match="defined inside another function"):
        sandbox_target(_tool(targets.make_closure()))


def test_lambda_target_is_refused_clearly() -> None:
    tool = Tool(name="anon", description="", parameters={"type": "object"}, fn=lambda: 1)
    with pytest.raises(SandboxError, match="lambda"):
        sandbox_target(tool)


def test_converting_wrapper_without_tool_declaration_is_refused() -> None:
    tool = make_tool(targets.weekday)
    assert tool.fn is not targets.weekday  # the converter wrapper carries weekday's names
    with pytest.raises(SandboxError, match="is not that function"):
        sandbox_target(tool)


async def test_refusal_happens_before_any_process_starts() -> None:
    with pytest.raises(SandboxError, match="cannot run in the sandbox"):
        await run_sandboxed(_tool(targets.make_closure()), {"a": 1}, timeout=5)


def test_importable_function_names_its_module_and_qualname() -> None:
    assert sandbox_target(_tool(targets.add)) == f"{targets.__name__}:add"


@pytest.mark.parametrize(
    "bad",
    [
        {"cpu_seconds": 0},
        {"memory_mb": -1},
        {"wall_seconds": float("inf")},
        {"max_output_bytes": 0},
        {"open_files": 3},
        {"env_allow": "PATH"},
        {"env_allow": ("HOME",)},
        {"max_processes": 0},
        {"max_processes": 2.5},
    ],
)
def test_nonsense_limits_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="SandboxLimits"):
        SandboxLimits(**bad)


def test_sigkill_before_the_cpu_budget_is_spent_reads_as_memory() -> None:
    from hermes.tools.sandbox import _exit_error

    error = _exit_error(-signal.SIGKILL, "m:f", SandboxLimits(cpu_seconds=5), 0.5, b"")
    assert isinstance(error, SandboxMemoryError)
    late = _exit_error(-signal.SIGKILL, "m:f", SandboxLimits(cpu_seconds=5), 6.0, b"")
    assert isinstance(late, SandboxTimeoutError)


# --- home, working directory -----------------------------------------------------------------


def _context_tool(fn: Callable[..., Any]) -> Tool:
    return Tool(
        name=fn.__name__, description="", parameters={"type": "object"}, fn=fn, context_param="ctx"
    )


def _exists(path: str) -> bool:
    return Path(path).exists()


async def test_home_is_a_fresh_empty_folder_with_tmpdir_inside() -> None:
    seen = await _run(targets.home_and_cwd)
    home = Path(seen["home"])
    assert home != Path.home()
    assert seen["home_entries"] == ["tmp"]
    assert seen["tmpdir"] == seen["gettempdir"] == str(home / "tmp")


async def test_home_is_gone_after_the_call() -> None:
    seen = await _run(targets.home_and_cwd)
    assert not _exists(seen["home"])


async def test_each_call_gets_its_own_home() -> None:
    first, second = await asyncio.gather(_run(targets.home_and_cwd), _run(targets.home_and_cwd))
    assert first["home"] != second["home"]


async def test_home_is_removed_after_a_crash(tmp_path: Path) -> None:
    report = tmp_path / "home"
    with pytest.raises(SandboxCrashError):
        await _run(targets.fill_home_then, ending="crash", report=str(report))
    assert not _exists(report.read_text())


async def test_home_is_removed_after_a_wall_timeout(tmp_path: Path) -> None:
    report = tmp_path / "home"
    limits = SandboxLimits(wall_seconds=1.5)
    with pytest.raises(SandboxTimeoutError):
        await _run(targets.fill_home_then, limits, ending="hang", report=str(report))
    assert not _exists(report.read_text())


async def test_tool_with_a_context_runs_in_its_workspace(tmp_path: Path) -> None:
    ctx = ToolContext(session_id="s-1", workspace=tmp_path)
    seen = await run_sandboxed(_context_tool(targets.working_directory), {"ctx": ctx}, timeout=10)
    assert seen == {"cwd": str(tmp_path), "workspace": str(tmp_path)}


async def test_relative_workspace_reaches_the_tool_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ws").mkdir()
    monkeypatch.chdir(tmp_path)
    ctx = ToolContext(session_id="s-1", workspace=Path("ws"))
    seen = await run_sandboxed(_context_tool(targets.working_directory), {"ctx": ctx}, timeout=10)
    assert seen == {"cwd": str(tmp_path / "ws"), "workspace": str(tmp_path / "ws")}


async def test_tool_without_a_context_runs_in_its_home_not_the_parents_cwd() -> None:
    seen = await _run(targets.home_and_cwd)
    assert seen["cwd"] == seen["home"]
    assert seen["cwd"] != os.getcwd()


async def test_missing_workspace_is_refused_clearly(tmp_path: Path) -> None:
    ctx = ToolContext(session_id="s-1", workspace=tmp_path / "gone")
    with pytest.raises(SandboxError, match="is not a folder"):
        await run_sandboxed(_context_tool(targets.working_directory), {"ctx": ctx}, timeout=10)


# --- fork loops ------------------------------------------------------------------------------


async def _group_gone(pgid: int) -> bool:
    for _ in range(250):
        if not _live_group_members(pgid):
            return True
        await asyncio.sleep(0.02)
    return False


@pytest.fixture
def readable_copy() -> Iterator[Path]:
    """A world-readable folder outside the checkout, removed afterwards.

    The checkout may sit in a private folder (a fresh ``mktemp -d`` clone is mode 0700), where a
    child running as ``nobody`` can read neither the child script nor the target module, and so
    may pytest's own ``tmp_path`` (``/tmp/pytest-of-root`` is 0700 too).
    """
    folder = Path(tempfile.mkdtemp(prefix="hermes-as-nobody-"))
    try:
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _as_nobody(tmp_path: Path, readable: Path) -> str:
    """As root, a python that runs as ``nobody`` (RLIMIT_NPROC binds only a normal user).

    The child script and the test targets are copied to ``readable``, and the wrapper runs
    those copies: the sandbox calls ``python -I CHILD_SCRIPT LIMITS ROOTS...`` and the wrapper
    keeps the limits (``$3``) but swaps the script and the import roots for the copies, so the
    test checks the same limit from whatever folder the checkout is in.
    """
    setpriv, python = shutil.which("setpriv"), "/usr/bin/python3.11"
    if setpriv is None or not os.access(python, os.X_OK):
        pytest.skip("needs setpriv and /usr/bin/python3.11 to run the child as a normal user")
    for source in (
        Path(sandbox_module.__file__ or "").with_name("_sandbox_child.py"),
        Path(targets.__file__ or ""),
    ):
        shutil.copy(source, readable / source.name)
        (readable / source.name).chmod(0o644)
    wrapper = tmp_path / "python-as-nobody"
    wrapper.write_text(
        f'#!/bin/sh\n[ "$1" = -I ] || exit 97\n'
        f"exec {setpriv} --reuid=65534 --regid=65534 --clear-groups {python} -I"
        f' {readable}/_sandbox_child.py "$3" {readable}\n'
    )
    wrapper.chmod(0o755)
    return str(wrapper)


async def test_fork_loop_of_a_normal_user_is_stopped_by_the_process_limit(
    tmp_path: Path, readable_copy: Path
) -> None:
    as_nobody = os.getuid() == 0
    sandbox = ProcessSandbox(python=_as_nobody(tmp_path, readable_copy)) if as_nobody else None
    limits = SandboxLimits(wall_seconds=10, max_processes=16)
    tool = _tool(targets.fork_loop)
    seen = await run_sandboxed(tool, {"cap": 200}, timeout=10, limits=limits, sandbox=sandbox)
    assert seen["error"] == "BlockingIOError"
    assert seen["forked"] <= 16
    assert await _group_gone(seen["pgid"])


@pytest.mark.skipif(os.getuid() != 0, reason="as root the kernel ignores RLIMIT_NPROC")
async def test_fork_loop_as_root_ends_at_the_wall_clock_with_its_group_killed(
    tmp_path: Path,
) -> None:
    report = tmp_path / "pgid"
    limits = SandboxLimits(wall_seconds=2, max_processes=16)
    with pytest.raises(SandboxTimeoutError, match="did not finish within 2 s"):
        await _run(targets.fork_loop, limits, cap=100, report=str(report))
    assert await _group_gone(int(report.read_text()))


def test_process_count_of_this_user_includes_our_own_threads() -> None:
    import threading

    from hermes.tools._sandbox_child import _tasks_of

    assert _tasks_of(os.getuid()) >= threading.active_count()


# --- retryable failures ----------------------------------------------------------------------


async def test_connection_error_in_the_child_is_a_retryable_sandbox_error() -> None:
    with pytest.raises(SandboxError) as caught:
        await _run(targets.raise_kind, kind="connection_refused")
    assert caught.value.details["error_type"] == "ConnectionRefusedError"
    assert caught.value.details["retryable"] is True
    assert is_retryable(caught.value)


async def test_value_error_in_the_child_is_not_retryable() -> None:
    with pytest.raises(SandboxError) as caught:
        await _run(targets.raise_kind, kind="value")
    assert caught.value.details["retryable"] is False
    assert not is_retryable(caught.value)


@pytest.mark.parametrize("kind", targets.EXCEPTION_KINDS)
async def test_child_judges_retryable_as_is_retryable_does_in_process(kind: str) -> None:
    with pytest.raises(SandboxError) as caught:
        await _run(targets.raise_kind, kind=kind)
    assert is_retryable(caught.value) is is_retryable(targets._exception(kind))


def test_crash_is_not_retryable() -> None:
    from hermes.tools.sandbox import _exit_error

    assert not is_retryable(_exit_error(3, "m:f", SandboxLimits(), 0.1, b""))


# --- other sandboxes -------------------------------------------------------------------------


class _RecordingSandbox:
    """Another ``Sandbox`` implementation: answers without a process, keeps what it got."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], SandboxLimits]] = []

    async def run(self, target: str, arguments: dict[str, Any], limits: SandboxLimits) -> Any:
        self.calls.append((target, arguments, limits))
        return "from elsewhere"


async def test_run_sandboxed_uses_the_sandbox_it_is_given(tmp_path: Path) -> None:
    other = _RecordingSandbox()
    ctx = ToolContext(session_id="s-1", workspace=tmp_path)
    tool = _context_tool(targets.working_directory)
    assert await run_sandboxed(tool, {"ctx": ctx}, timeout=3, sandbox=other) == "from elsewhere"
    [(target, arguments, limits)] = other.calls
    assert target == f"{targets.__name__}:working_directory"
    assert arguments["ctx"][CONTEXT_MARKER]["workspace"] == str(tmp_path)
    assert limits.wall_seconds == 3
