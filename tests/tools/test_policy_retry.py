"""Retry policy: which failures are retried, how many runs happen, what the caller sees."""

from __future__ import annotations

import asyncio
import errno
import json
import socket
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.errors import (
    FieldProblem,
    ModelError,
    ToolArgumentError,
    ToolError,
    ToolExecutionError,
    ToolTimeoutError,
)
from hermes.models.base import ToolCall
from hermes.observe import configure_logging, reset_logging
from hermes.tools import ToolRegistry, ToolResult, tool
from hermes.tools.pipeline import CallContext, ToolExecutor
from hermes.tools.policies import PolicyState, RetryPolicy, is_retryable
from hermes.tools.policies.retry import status_code_of

FAST = RetryPolicy(max_attempts=3, initial_wait=0.001, max_wait=0.002)


class HTTPFailure(Exception):
    """An HTTP client error carrying ``status_code`` (as many clients raise)."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


class _Response:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


class ResponseFailure(Exception):
    """An error carrying ``response.status_code`` (httpx.HTTPStatusError's shape)."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.response = _Response(status_code)


class RaisingProperty(Exception):
    @property
    def response(self) -> Any:
        raise RuntimeError("no response attached")


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (ConnectionResetError("reset by peer"), True),
        (ConnectionRefusedError("refused"), True),
        (TimeoutError("read timed out"), True),
        (socket.gaierror(socket.EAI_AGAIN, "temporary failure in name resolution"), True),
        (OSError(errno.ECONNRESET, "connection reset"), True),
        (OSError(errno.ENETUNREACH, "network unreachable"), True),
        (OSError(errno.EACCES, "permission denied"), False),
        (FileNotFoundError(errno.ENOENT, "no such file"), False),
        (HTTPFailure(429), True),
        (HTTPFailure(500), True),
        (HTTPFailure(503), True),
        (ResponseFailure(502), True),
        (HTTPFailure(400), False),
        (HTTPFailure(401), False),
        (HTTPFailure(403), False),
        (ResponseFailure(404), False),
        (ToolArgumentError([FieldProblem("a", "expected integer")]), False),
        (ValueError("bad value"), False),
        (KeyError("missing"), False),
        (ToolTimeoutError("attempt ran out of time"), True),
        (ModelError("server overloaded", retryable=True), True),
        (ModelError("bad request", retryable=False), False),
        (ModelError("gateway", status_code=504), True),
        (ToolExecutionError("tool refused"), False),
        (ToolError("upstream busy", retryable=True), True),
        (RaisingProperty("odd"), False),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else str(value),
)
def test_retry_classification(error: BaseException, retryable: bool) -> None:
    assert is_retryable(error) is retryable


@given(st.integers(min_value=100, max_value=599))
def test_only_429_and_5xx_statuses_are_retried(status: int) -> None:
    assert is_retryable(HTTPFailure(status)) is (status == 429 or status >= 500)


def test_status_code_is_read_from_the_response_too() -> None:
    assert status_code_of(ResponseFailure(418)) == 418
    assert status_code_of(ValueError("x")) is None


def test_httpx_transport_errors_are_retried_when_httpx_is_in_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = types.ModuleType("httpx")

    class TransportError(Exception): ...

    class TimeoutException(TransportError): ...

    class NetworkError(TransportError): ...

    class RemoteProtocolError(TransportError): ...

    class UnsupportedProtocol(TransportError): ...

    for cls in (TimeoutException, NetworkError, RemoteProtocolError, UnsupportedProtocol):
        setattr(fake, cls.__name__, cls)
    monkeypatch.setitem(sys.modules, "httpx", fake)
    assert is_retryable(TimeoutException("read timeout"))
    assert is_retryable(NetworkError("connection dropped"))
    assert not is_retryable(UnsupportedProtocol("ftp://"))


def test_retry_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(TypeError, match="max_attempts"):
        RetryPolicy(max_attempts=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_wait"):
        RetryPolicy(initial_wait=2, max_wait=1)
    with pytest.raises(ValueError, match="initial_wait"):
        RetryPolicy(initial_wait=float("nan"))


def test_worst_case_wait_is_bounded_by_max_wait() -> None:
    policy = RetryPolicy(max_attempts=4, initial_wait=1, max_wait=3, jitter=False)
    assert policy.worst_case_wait() == 1 + 2 + 3


# -- through the executor ------------------------------------------------------------------


class Flaky:
    """Fails with ``error`` for the first ``failures`` runs, then answers ``"ok"``."""

    def __init__(self, failures: int, error: BaseException) -> None:
        self.failures = failures
        self.error = error
        self.runs = 0

    async def __call__(self) -> str:
        self.runs += 1
        if self.runs <= self.failures:
            raise self.error
        return "ok"


def flaky_tool(flaky: Flaky, retry: Any = FAST, **options: Any) -> ToolRegistry:
    async def flaky_call() -> str:
        return await flaky()

    return ToolRegistry([tool(name="flaky", retry=retry, **options)(flaky_call)])


async def run(registry: ToolRegistry, name: str = "flaky", **args: Any) -> ToolResult:
    executor = ToolExecutor(registry, state=PolicyState())
    return await executor.run(ToolCall("c1", name, args), CallContext(call_id="c1"))


async def test_network_error_is_retried_until_success() -> None:
    flaky = Flaky(2, ConnectionResetError("reset"))
    result = await run(flaky_tool(flaky))
    assert (result.ok, result.output, result.attempts, flaky.runs) == (True, "ok", 3, 3)


async def test_http_503_is_retried_and_the_last_error_returned() -> None:
    flaky = Flaky(10, HTTPFailure(503))
    result = await run(flaky_tool(flaky))
    assert result.error is not None
    assert (result.error.type, result.error.message) == ("execution_error", "HTTPFailure: HTTP 503")
    assert (result.attempts, flaky.runs) == (3, 3)


@pytest.mark.parametrize(
    "error",
    [HTTPFailure(401), HTTPFailure(400), ValueError("bad"), ToolExecutionError("no")],
    ids=["401", "400", "ValueError", "ToolExecutionError"],
)
async def test_non_retryable_errors_run_once(error: Exception) -> None:
    flaky = Flaky(1, error)
    result = await run(flaky_tool(flaky))
    assert (result.ok, result.attempts, flaky.runs) == (False, 1, 1)


async def test_argument_error_raised_by_the_tool_is_never_retried() -> None:
    flaky = Flaky(1, ToolArgumentError([FieldProblem("city", "unknown city")]))
    result = await run(flaky_tool(flaky))
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert "city: unknown city" in result.error.message
    assert flaky.runs == 1


async def test_without_a_policy_a_network_error_runs_once() -> None:
    flaky = Flaky(1, ConnectionResetError("reset"))
    result = await run(flaky_tool(flaky, retry=None))
    assert (result.ok, result.attempts, flaky.runs) == (False, 1, 1)


async def test_retry_shorthand_sets_the_attempt_count() -> None:
    registry = flaky_tool(Flaky(0, ValueError()), retry=5)
    policy = registry.get("flaky").retry  # type: ignore[union-attr]
    assert policy is not None
    assert policy.max_attempts == 5


async def test_custom_retry_on_decides() -> None:
    policy = RetryPolicy(max_attempts=2, initial_wait=0.001, retry_on=lambda e: "again" in str(e))
    flaky = Flaky(1, ValueError("try again"))
    result = await run(flaky_tool(flaky, retry=policy))
    assert (result.ok, result.attempts) == (True, 2)


async def test_an_attempt_that_times_out_is_retried() -> None:
    runs = 0

    async def sometimes_hangs() -> str:
        nonlocal runs
        runs += 1
        if runs == 1:
            await asyncio.sleep(30)
        return "second time lucky"

    registry = ToolRegistry([tool(name="hangs_once", timeout=0.05, retry=FAST)(sometimes_hangs)])
    result = await run(registry, "hangs_once")
    assert (result.ok, result.output, result.attempts) == (True, "second time lucky", 2)


async def test_every_attempt_timing_out_is_a_timeout_error() -> None:
    async def always_hangs() -> str:
        await asyncio.sleep(30)
        return "never"

    policy = RetryPolicy(max_attempts=2, initial_wait=0.001)
    registry = ToolRegistry([tool(name="hangs", timeout=0.02, retry=policy)(always_hangs)])
    result = await run(registry, "hangs")
    assert result.error is not None
    assert (result.error.type, result.attempts) == ("timeout", 2)
    assert result.error.message == "tool 'hangs' did not finish within 0.02 s"


class StallingSandbox:
    """A sandbox (``hermes.tools.sandbox.Sandbox``) that stalls past every deadline on its
    first call — a remote one that hung — and answers on the next."""

    def __init__(self) -> None:
        self.calls = 0

    async def run(self, target: str, arguments: dict[str, Any], limits: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            await asyncio.sleep(30)
        return "second time lucky"


async def test_a_sandboxed_sync_tool_whose_attempt_timed_out_is_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Unlike a worker thread, a sandboxed attempt is stopped at its deadline, so a new attempt
    # never runs beside the old one.
    import sandbox_targets as targets

    from hermes.tools import sandbox
    from hermes.tools.decorator import make_tool
    from hermes.tools.pipeline import run as run_step

    stalling = StallingSandbox()
    monkeypatch.setattr(sandbox, "_default", stalling)
    monkeypatch.setattr(run_step, "SANDBOX_GRACE_S", 0.0)
    add = make_tool(targets.add, name="sandboxed_add", sandbox="process", timeout=0.05, retry=FAST)
    result = await run(ToolRegistry([add]), "sandboxed_add", a=2, b=3)
    assert (result.ok, result.output, result.attempts) == (True, "second time lucky", 2)
    assert stalling.calls == 2


async def test_sync_tools_are_retried_too() -> None:
    runs = 0

    def sync_flaky() -> str:
        nonlocal runs
        runs += 1
        if runs < 2:
            raise ConnectionAbortedError("aborted")
        return "ok"

    registry = ToolRegistry([tool(name="sync_flaky", retry=FAST)(sync_flaky)])
    result = await run(registry, "sync_flaky")
    assert (result.ok, result.attempts) == (True, 2)


async def test_each_retry_is_logged(tmp_path: Path) -> None:
    log_file = tmp_path / "hermes.log"
    configure_logging(log_file, "INFO")
    try:
        await run(flaky_tool(Flaky(2, ConnectionResetError("reset"))))
    finally:
        reset_logging()
    lines = [json.loads(line) for line in log_file.read_text().splitlines()]
    retries = [line for line in lines if line["event"] == "tool_retry"]
    assert [line["attempt"] for line in retries] == [1, 2]
    assert {line["error_type"] for line in retries} == {"ConnectionResetError"}
    assert all(0 <= line["wait_s"] <= 0.002 for line in retries)


def test_the_real_http_client_transport_errors_are_retried() -> None:
    """http_request and the openai SDK raise httpx2's errors: they must count as network ones."""
    import httpx2

    from hermes.tools.policies.retry import is_retryable

    assert is_retryable(httpx2.ConnectError("refused"))
    assert is_retryable(httpx2.ReadTimeout("slow"))
    assert not is_retryable(httpx2.InvalidURL("nope"))


def test_the_sandbox_child_classifies_network_errors_like_the_retry_policy() -> None:
    """The child keeps its own copy of the network errnos (it runs without importing hermes)."""
    from hermes.tools import _sandbox_child
    from hermes.tools.policies import retry

    assert _sandbox_child._NETWORK_ERRNOS == retry._NETWORK_ERRNOS
