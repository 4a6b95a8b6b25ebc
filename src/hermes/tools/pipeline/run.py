"""The last step: run the tool — under its timeout (per attempt), with its retry policy, on the
loop (async), a worker thread (sync) or in the process sandbox — then shape the output
(:mod:`hermes.tools.pipeline.output`). Only cancellation of the calling task propagates."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from hermes.errors import ErrorCode, ToolError, ToolTimeoutError
from hermes.tools.base import Tool, ToolResult
from hermes.tools.pipeline.call import Call, Next
from hermes.tools.pipeline.output import shape
from hermes.tools.pipeline.results import failed, refused
from hermes.tools.pipeline.signals import RetryWith
from hermes.tools.policies import counts_as_failure
from hermes.tools.policies.retry import Attempts, RetryPolicy, call_with_retry
from hermes.tools.threads import TOOL_THREADS

__all__ = ["SANDBOX_GRACE_S", "RunStep", "SandboxUnavailableError"]

#: Extra wall time a sandboxed call gets beyond its timeout before we stop waiting for the
#: sandbox itself (which kills the child at ``timeout``).
SANDBOX_GRACE_S = 2.0
_MAX_POLICIES = 4096


class SandboxUnavailableError(ToolError):
    """A tool marked ``sandbox="process"`` cannot run: the sandbox module is missing."""

    code: ErrorCode = "sandbox_error"
    status = 500


class RunStep:
    """Runs the tool and returns its shaped result; the end of every chain (``next`` is never
    called). Sets ``call.verdict.health`` for the breaker step."""

    name = "run"

    def __init__(self) -> None:
        #: Each tool's retry policy as the run applies it, made once (tool held: id not reused).
        self._policies: dict[int, tuple[Tool, RetryPolicy]] = {}

    def applies(self, tool: Tool) -> bool:
        return True

    def _policy(self, tool: Tool) -> RetryPolicy:
        held = self._policies.get(id(tool))
        if held is not None and held[0] is tool:
            return held[1]
        policy = _retry_policy_for(tool)
        if len(self._policies) >= _MAX_POLICIES:
            self._policies.clear()
        self._policies[id(tool)] = (tool, policy)
        return policy

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        tool = call.tool
        arguments = call.arguments
        if tool.context_param is not None:
            arguments = {**arguments, tool.context_param: call.context.tool_context()}
        counter: Attempts | None = None
        try:
            if tool.retry is None:  # the plain path: no retry wrapper at all
                raw = await _attempt(tool, arguments)
            else:
                counter = Attempts()
                raw = await call_with_retry(
                    self._policy(tool),
                    lambda: _attempt(tool, arguments),
                    counter,
                    tool=tool.name,
                )
        except RetryWith as signal:  # on purpose: the model reads what to change
            call.mark("run")
            return refused(signal.error_type, signal.message, call.start, _count(counter))
        except Exception as exc:  # noqa: BLE001 - any tool failure becomes data for the model
            call.verdict.health = "failed" if counts_as_failure(exc) else None
            call.mark("run")
            return failed(tool, exc, _count(counter), call.start)
        call.verdict.health = "ok"
        call.mark("run")
        return shape(call, raw, _count(counter))


def _count(counter: Attempts | None) -> int:
    return 1 if counter is None else counter.count


def _retry_policy_for(tool: Tool) -> RetryPolicy:
    """The tool's retry policy, never retrying a signal; a sync tool outside the sandbox never
    retries a timeout either: its timed-out thread cannot be stopped, so a new attempt would
    run beside the old one."""
    policy = tool.retry
    assert policy is not None
    retry_on = policy.retry_on
    if tool.is_async or tool.sandbox == "process":
        return dataclasses.replace(
            policy, retry_on=lambda exc: not isinstance(exc, RetryWith) and retry_on(exc)
        )
    return dataclasses.replace(
        policy,
        retry_on=lambda exc: not isinstance(exc, ToolTimeoutError | RetryWith) and retry_on(exc),
    )


async def _attempt(tool: Tool, arguments: dict[str, Any]) -> Any:
    """One run under the tool's timeout: in the sandbox, on the loop, or on a worker thread."""
    sandboxed = tool.sandbox == "process"
    deadline = asyncio.timeout(tool.timeout + (SANDBOX_GRACE_S if sandboxed else 0.0))
    try:
        async with deadline:
            if sandboxed:
                return await _sandbox_runner(tool)(tool, arguments, timeout=tool.timeout)
            if tool.is_async:
                return await tool.fn(**arguments)
            result = await TOOL_THREADS.run(tool.fn, **arguments)
            if inspect.isawaitable(result):  # a sync callable that hands back a coroutine
                return await result
            return result
    except TimeoutError:
        # Only our deadline is a "timeout"; a TimeoutError the tool raised itself (a socket
        # timeout, say) is an execution error with its own message. A sync tool's thread
        # cannot be killed: it runs on in the background and its result is dropped; the
        # process sandbox is what stops runaway code.
        if deadline.expired():
            message = f"tool {tool.name!r} did not finish within {tool.timeout:g} s"
            raise ToolTimeoutError(message) from None
        raise


def _sandbox_runner(tool: Tool) -> Callable[..., Awaitable[Any]]:
    # Imported here so the executor works (and plain tools stay light) without the sandbox.
    try:
        module = importlib.import_module("hermes.tools.sandbox")
    except ImportError as exc:
        raise SandboxUnavailableError(
            f"tool {tool.name!r} must run in the process sandbox, which is not available: {exc}"
        ) from exc
    runner: Callable[..., Awaitable[Any]] = module.run_sandboxed
    return runner
