"""Retrying a tool call: which failures are worth another try, and how long to wait.

Classification (``is_retryable``), first match wins:

1. ``ToolArgumentError`` — never: the same arguments fail the same way.
2. An HTTP status on the exception (``exc.status_code`` or ``exc.response.status_code``):
   429 and 5xx are retried; every other status (400, 401, 403, 404 …) never is.
3. A :class:`~hermes.errors.HermesError`: retried when it says so (a ``retryable`` attribute or
   ``details["retryable"]`` that is true, as ``ModelError(retryable=True)``) and for
   ``ToolTimeoutError`` (an attempt that ran out of time); otherwise never.
4. Network failures: ``ConnectionError``, ``TimeoutError``, DNS errors (``socket.gaierror``),
   an ``OSError`` with a network errno, and httpx transport errors (timeouts, network and
   remote-protocol errors) when httpx is in use. File-system ``OSError`` s are not retried.
5. Everything else (``ValueError``, ``KeyError``, bugs …) — never.

The first attempt runs without tenacity, so a call that succeeds pays nothing for its policy
(and tenacity, ~40 ms to import, is loaded only when a retry actually happens). After a
retryable failure, tenacity drives the remaining attempts with exponential backoff and jitter.
"""

from __future__ import annotations

import errno
import math
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hermes.errors import HermesError, ToolArgumentError, ToolTimeoutError
from hermes.observe import get_logger

__all__ = ["Attempts", "RetryPolicy", "call_with_retry", "is_retryable", "status_code_of"]

T = TypeVar("T")

logger = get_logger("tools")

_NETWORK_ERRNOS = frozenset(
    code
    for code in (
        getattr(errno, name, None)
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
    )
    if code is not None
)
_HTTPX_RETRYABLE = ("TimeoutException", "NetworkError", "RemoteProtocolError")


def status_code_of(exc: BaseException) -> int | None:
    """The HTTP status an exception carries (``status_code``, or ``response.status_code``)."""
    for holder in (exc, _attribute(exc, "response")):
        code = _attribute(holder, "status_code")
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    return None


def is_retryable(exc: BaseException) -> bool:
    """Whether another attempt may succeed where this one failed (see the module docstring)."""
    if isinstance(exc, ToolArgumentError):
        return False
    status = status_code_of(exc)
    if status is not None:
        return status == 429 or 500 <= status <= 599
    if isinstance(exc, HermesError):
        flagged = getattr(exc, "retryable", None)
        if flagged is None:
            flagged = exc.details.get("retryable")
        return flagged is True or isinstance(exc, ToolTimeoutError)
    if isinstance(exc, ConnectionError | TimeoutError | socket.gaierror):
        return True
    if type(exc) is OSError:  # subclasses (FileNotFoundError …) are not network failures
        return exc.errno in _NETWORK_ERRNOS
    return _is_httpx_transport_error(exc)


def _is_httpx_transport_error(exc: BaseException) -> bool:
    # Lazy by construction: if nothing imported the client, no exception can come from it.
    # httpx2 is what the openai SDK and http_request use; httpx for tools that bring their own.
    for module_name in ("httpx2", "httpx"):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        kinds = tuple(k for k in (getattr(module, n, None) for n in _HTTPX_RETRYABLE) if k)
        if kinds and isinstance(exc, kinds):
            return True
    return False


def _attribute(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a property that raises (httpx's .request) means "absent"
        return None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a tool call is retried: up to ``max_attempts`` runs in all (the first included),
    waiting ``initial_wait * 2**(n-1)`` seconds (capped at ``max_wait``) before run ``n+1``,
    plus a random jitter of up to ``initial_wait`` when ``jitter`` is true.
    ``retry_on(exc)`` decides which failures are retried (default :func:`is_retryable`)."""

    max_attempts: int = 3
    initial_wait: float = 0.2
    max_wait: float = 5.0
    jitter: bool = True
    retry_on: Callable[[BaseException], bool] = is_retryable

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise TypeError("RetryPolicy.max_attempts must be an integer")
        if self.max_attempts < 1:
            raise ValueError("RetryPolicy.max_attempts must be at least 1")
        for name in ("initial_wait", "max_wait"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"RetryPolicy.{name} must be a number of seconds")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"RetryPolicy.{name} must be a finite number >= 0")
        if self.max_wait < self.initial_wait:
            raise ValueError("RetryPolicy.max_wait must be >= initial_wait")
        if not callable(self.retry_on):
            raise TypeError("RetryPolicy.retry_on must be a callable exception -> bool")

    def worst_case_wait(self) -> float:
        """The longest total backoff of one call (for leases that must outlive a call)."""
        total = 0.0
        for n in range(1, self.max_attempts):
            total += min(self.max_wait, self.initial_wait * 2 ** (n - 1) + self.jitter_s)
        return total

    @property
    def jitter_s(self) -> float:
        return self.initial_wait if self.jitter else 0.0


class Attempts:
    """How many times the tool ran in one call; filled in by :func:`call_with_retry`."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


async def call_with_retry(
    policy: RetryPolicy | None,
    attempt: Callable[[], Awaitable[T]],
    attempts: Attempts,
    *,
    tool: str,
) -> T:
    """``await attempt()``, retried under ``policy`` (``None``: once); the last failure is
    re-raised unchanged. ``attempts.count`` says how many runs happened, failure or not."""
    attempts.count = 1
    if policy is None or policy.max_attempts == 1:
        return await attempt()
    try:
        return await attempt()
    except Exception as exc:
        if not policy.retry_on(exc):
            raise
        first = exc
    return await _retry_after_first_failure(policy, attempt, attempts, tool, first)


async def _retry_after_first_failure(
    policy: RetryPolicy,
    attempt: Callable[[], Awaitable[T]],
    attempts: Attempts,
    tool: str,
    first: Exception,
) -> T:
    from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
    from tenacity.wait import wait_exponential, wait_exponential_jitter

    pending: Exception | None = first

    async def replay_then_attempt() -> T:
        # tenacity's attempt 1 is the run that already failed: replay its error (no rerun),
        # so attempt numbers, waits and the stop rule all stay tenacity's own.
        nonlocal pending
        if pending is not None:
            failed, pending = pending, None
            raise failed
        attempts.count += 1
        return await attempt()

    def log_retry(state: RetryCallState) -> None:
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        logger.info(
            "tool_retry",
            tool=tool,
            attempt=state.attempt_number,
            error_type=type(error).__name__,
            wait_s=round(wait, 3),
        )

    wait = (
        wait_exponential_jitter(
            multiplier=policy.initial_wait, max=policy.max_wait, jitter=policy.jitter_s
        )
        if policy.jitter
        else wait_exponential(multiplier=policy.initial_wait, max=policy.max_wait)
    )
    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_attempts),
        wait=wait,
        retry=retry_if_exception(policy.retry_on),
        before_sleep=log_retry,
        reraise=True,
    )
    return await retrying(replay_then_attempt)
