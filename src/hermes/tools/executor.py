"""Running one tool call: the one pipeline every call goes through (DESIGN "Layers → tools").

::

    validate+coerce → authorize → approval gate → idempotency → result cache → circuit breaker
      → timeout + retry → (process sandbox) → parse → output schema + post_validate → ToolResult

Every outcome is a :class:`ToolResult` — a failed call is data the model can react to (DESIGN
principle 2, seed 001 §3.2), never an exception out of here; only cancellation of the calling
task propagates. Stable error types: ``unknown_tool``, ``invalid_arguments``,
``permission_denied``, ``approval_required``, ``service_unavailable`` (circuit open),
``timeout``, ``execution_error``, ``invalid_output``, ``store_error`` (idempotency record
unavailable), ``sandbox_*``, or the ``code`` of a :class:`~hermes.errors.ToolError` the tool
raised on purpose. ``attempts`` counts the runs of the tool (0 when it never ran: refused,
or replayed — then ``cached`` is true).

A plain tool pays only for the steps it uses: each policy step is skipped unless the tool
declares it. What a call's context may carry in ``ctx.extras``:

- ``"authorizer"``: an object with ``check(user_id, tool, *, session_id, trace_id)`` that
  raises an error with code ``permission_denied`` (``hermes.tools.permissions.Authorizer``);
  duck-typed, may be async. Any other failure of it refuses the call too (fail closed).
- ``"approved_call_ids"``: the ids of calls a person approved (for ``requires_approval``).
- ``"idempotency_path"``: the SQLite file of idempotency records (default
  ``<workspace>/.hermes/idempotency.db``).
- ``"policy_state"``: a :class:`~hermes.tools.policies.PolicyState` instead of the process-wide
  one (breakers, cache, clocks).
- ``"tool_memory"`` (:data:`TOOL_MEMORY_KEY`): a :class:`hermes.memory.tiers.ToolMemory`. Every
  executed call (one that passed validation, authorization and the approval gate) is then
  recorded in its L2 index and L3 archive, and a ``cache_ttl`` tool's identical call within its
  TTL is answered from its L1 → L2 + L3 instead of the process-wide result cache: scoped per
  user (per session without one), matched on the tool's identity too (its fingerprint of
  name, schemas and function, recorded as the L2 row's ``tool_version`` beside an
  ``input_hash`` of the arguments alone: a changed tool never reuses the old one's results),
  and surviving a restart (the fingerprint names the function by module and qualified name,
  so the same code after a restart has the same version). The memory
  tools (toolset ``"memory"``) are recorded in L2 with their output's hash only, never
  archived in L3 (their output is the user's memories, which forgetting must erase).
- ``"memory_background"`` (:data:`MEMORY_BACKGROUND_KEY`): an object with
  ``spawn(coroutine, *, what)`` (``hermes.memory.facade.Memory``) that runs the recording in
  the background. Recording (an L3 write, an L2 commit) measured ~0.7 ms p50 per call on the
  2-vCPU dev VM — many times a plain call (~40 µs there) — so the agent records off the call's
  path, which leaves ~45 µs inline (hashing the arguments, scheduling the task). The price is
  a window in which a crash loses the record of calls that already returned: the records
  still pending, typically the last millisecond or so of calls; the call's result itself is
  never lost (it is in the session log). Without a spawner the call awaits its record.

Without ``tool_memory`` the pipeline is the same as before: one dict lookup is all memory costs
(``bench/executor_overhead.py`` numbers unchanged).

With DEBUG logging on, each call logs one ``tool_pipeline`` line with ``steps``: the cost in
ms of each step it went through; with DEBUG off nothing is timed beyond ``duration_ms``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
import json
import math
import os
import traceback
from collections.abc import Awaitable, Callable, Coroutine
from time import perf_counter
from typing import TYPE_CHECKING, Any, Protocol

from jsonschema import Draft202012Validator
from pydantic_core import to_jsonable_python

from hermes.errors import HermesError, StoreError, ToolArgumentError, ToolError, ToolTimeoutError
from hermes.models.base import ToolCall
from hermes.observe import get_logger
from hermes.tools._fastcheck import Check, compile_fast_check
from hermes.tools._problems import problems_from_errors
from hermes.tools.base import Tool, ToolContext, ToolResult
from hermes.tools.builtin.memory_tools import MEMORY_TOOLS
from hermes.tools.policies import (
    DEFAULT_POLICY_STATE,
    POLICY_STATE_KEY,
    PolicyState,
    canonical_json,
    counts_as_failure,
    idempotency_key,
)
from hermes.tools.policies.breaker import CircuitBreaker, Ticket
from hermes.tools.policies.cache import CachedResult
from hermes.tools.policies.idempotency import IdempotencyStore, new_owner
from hermes.tools.policies.retry import Attempts, RetryPolicy, call_with_retry
from hermes.tools.registry import ToolRegistry
from hermes.tools.threads import TOOL_THREADS
from hermes.tools.validation import validate_arguments

if TYPE_CHECKING:
    from hermes.memory.tiers import CallKey, ToolMemory

__all__ = [
    "APPROVED_CALLS_KEY",
    "AUTHORIZER_KEY",
    "IDEMPOTENCY_PATH_KEY",
    "MEMORY_BACKGROUND_KEY",
    "TOOL_MEMORY_KEY",
    "SandboxUnavailableError",
    "execute_tool_call",
    "json_safe",
]

logger = get_logger("tools")

AUTHORIZER_KEY = "authorizer"
APPROVED_CALLS_KEY = "approved_call_ids"
IDEMPOTENCY_PATH_KEY = "idempotency_path"
TOOL_MEMORY_KEY = "tool_memory"
MEMORY_BACKGROUND_KEY = "memory_background"


class _Background(Protocol):
    """Where recordings run off the call's path (``hermes.memory.facade.Memory`` fits)."""

    def spawn(self, work: Coroutine[Any, Any, Any], *, what: str) -> None: ...


#: How many registered names an ``unknown_tool`` error lists (bounded for huge registries).
_MAX_LISTED_TOOLS = 20
_JSON_SCALARS = (str, int, float, bool, type(None))
#: Extra wall time a sandboxed call gets beyond its timeout before we stop waiting for the
#: sandbox itself (which kills the child at ``timeout``).
_SANDBOX_GRACE_S = 2.0
#: Extra life of an idempotency claim beyond the worst-case length of the call.
_LEASE_MARGIN_S = 5.0
_MAX_OUTPUT_PROBLEMS = 5
_MAX_OUTPUT_VALIDATORS = 1024
#: The tools whose calls are recorded in L2 without their output in L3: what they return is
#: the user's long-term memories (or their ids), which must be gone when the user forgets
#: them — an archived copy would outlive the forgetting.
MEMORY_TOOLSET = "memory"
#: Fingerprints of the tools seen on the memory path, by id (the Tool kept alive beside it,
#: so an id is never reused while its entry lives); cleared when it grows past the bound.
_FINGERPRINTS: dict[int, tuple[Tool, str]] = {}
_MAX_FINGERPRINTS = 4096


class SandboxUnavailableError(ToolError):
    """A tool marked ``sandbox="process"`` cannot run: the sandbox module is missing."""

    code = "sandbox_error"
    status = 500


async def execute_tool_call(
    registry: ToolRegistry,
    call: ToolCall,
    ctx: ToolContext,
    *,
    max_output_chars: int = 20_000,
) -> ToolResult:
    """Run ``call`` against ``registry`` through the pipeline; never raises for a failure.

    Sync tools run in a worker thread, async ones on the loop; both under ``tool.timeout``
    (per attempt). Outputs are made JSON-safe; text longer than the tool's
    ``max_output_chars`` (else ``max_output_chars``) is truncated with a note.
    Cancellation of the calling task propagates (it is not a tool failure).
    """
    start = perf_counter()
    steps = _Steps(start) if logger.is_enabled("DEBUG") else None
    result = await _pipeline(registry, call, ctx, limit=max_output_chars, start=start, steps=steps)
    if steps is not None:
        logger.debug(
            "tool_pipeline",
            tool=call.name,
            call_id=call.id,
            ok=result.ok,
            error_type=result.error.type if result.error is not None else None,
            attempts=result.attempts,
            cached=result.cached,
            cost_ms=round((perf_counter() - start) * 1000, 3),
            steps=steps.costs,
        )
    return result


class _Steps:
    """Per-step costs of one call (only built when DEBUG logging is on)."""

    __slots__ = ("_last", "costs")

    def __init__(self, start: float) -> None:
        self._last = start
        self.costs: dict[str, float] = {}

    def mark(self, step: str) -> None:
        now = perf_counter()
        self.costs[step] = round((now - self._last) * 1000, 3)
        self._last = now


class _Call:
    """One call on its way through the pipeline."""

    __slots__ = (
        "_arguments_json",
        "arguments",
        "ctx",
        "limit",
        "memory",
        "memory_key",
        "start",
        "state",
        "steps",
        "tool",
    )

    def __init__(
        self,
        tool: Tool,
        arguments: dict[str, Any],
        ctx: ToolContext,
        *,
        limit: int,
        start: float,
        steps: _Steps | None,
    ) -> None:
        self.tool = tool
        self.arguments = arguments  # validated; never holds the ToolContext
        self.ctx = ctx
        self.limit = tool.max_output_chars if tool.max_output_chars is not None else limit
        self.start = start
        self.steps = steps
        state = ctx.extras.get(POLICY_STATE_KEY)
        self.state: PolicyState = state if state is not None else DEFAULT_POLICY_STATE
        self._arguments_json: str | None = None
        self.memory: ToolMemory | None = None  # set by _remembered
        self.memory_key: CallKey | None = None

    def arguments_json(self) -> str:
        if self._arguments_json is None:
            self._arguments_json = canonical_json(self.arguments)
        return self._arguments_json

    def mark(self, step: str) -> None:
        if self.steps is not None:
            self.steps.mark(step)


async def _pipeline(
    registry: ToolRegistry,
    call: ToolCall,
    ctx: ToolContext,
    *,
    limit: int,
    start: float,
    steps: _Steps | None,
) -> ToolResult:
    tool = registry.get(call.name)
    if tool is None:
        return _refused("unknown_tool", _unknown_tool_message(call.name, registry), start)
    if call.arguments_error is not None:
        message = f"arguments of tool {tool.name!r} are not a JSON object: {call.arguments_error}"
        return _refused("invalid_arguments", message, start)
    try:
        arguments = validate_arguments(tool.parameters, call.arguments)
    except ToolArgumentError as exc:
        return _refused("invalid_arguments", _named(exc, tool.name), start)
    if steps is not None:
        steps.mark("validate")
    memory: ToolMemory | None = None
    if ctx.extras:
        authorizer = ctx.extras.get(AUTHORIZER_KEY)
        if authorizer is not None:
            denial = await _authorize(authorizer, tool, ctx)
            if steps is not None:
                steps.mark("authorize")
            if denial is not None:
                return _refused("permission_denied", denial, start)
        memory = ctx.extras.get(TOOL_MEMORY_KEY)
    if tool.requires_approval:
        approved = ctx.extras.get(APPROVED_CALLS_KEY)
        if approved is None or call.id not in approved:
            message = (
                f"tool {tool.name!r} needs a person's approval before it runs; "
                "the call was not executed"
            )
            return _refused("approval_required", message, start)
    run = _Call(tool, arguments, ctx, limit=limit, start=start, steps=steps)
    if memory is not None:
        return await _remembered(run, memory)
    if tool.idempotency_key is not None:  # as _policies, inlined: the plain path's cost
        return await _idempotent(run)
    if tool.cache_ttl is not None:
        return await _cached(run)
    return await _guarded(run)


async def _policies(run: _Call) -> ToolResult:
    if run.tool.idempotency_key is not None:
        return await _idempotent(run)
    if run.tool.cache_ttl is not None:
        return await _cached(run)
    return await _guarded(run)


async def _remembered(run: _Call, memory: ToolMemory) -> ToolResult:
    """The call with the memory tiers: reuse (``cache_ttl``) in :func:`_cached`, then the
    record of what happened (see the module docstring)."""
    ctx = run.ctx
    try:
        key = memory.key(
            run.tool.name,
            run.arguments,
            user_id=ctx.user_id,
            session_id=ctx.session_id,
            tool_version=_fingerprint(run.tool),
        )
    except Exception as exc:  # noqa: BLE001 - memory must never stop a call: run it without
        logger.error("tool_memory_key_failed", tool=run.tool.name, error_type=type(exc).__name__)
        return await _policies(run)
    run.memory, run.memory_key = memory, key
    result = await _policies(run)
    record = memory.record_call(
        key,
        result,
        reuse_ttl=run.tool.cache_ttl,
        call_id=ctx.call_id,
        trace_id=ctx.trace_id,
        archive=not _is_memory_tool(run.tool),
    )
    background: _Background | None = ctx.extras.get(MEMORY_BACKGROUND_KEY)
    if background is not None:
        background.spawn(record, what="tool_record")
    else:
        try:
            await record
        except Exception as exc:  # noqa: BLE001 - the call happened: its result still goes back
            logger.error("tool_record_failed", tool=run.tool.name, error_type=type(exc).__name__)
    run.mark("memory")
    return result


def _is_memory_tool(tool: Tool) -> bool:
    # By name too: a program may register its own tool under a memory tool's name (the test
    # suite's stand-ins do); its output is taken to be memory text, and not archived either.
    return tool.toolset == MEMORY_TOOLSET or tool.name in MEMORY_TOOLS


def _fingerprint(tool: Tool) -> str:
    """The tool's identity, the ``tool_version`` of its calls: its name, parameters and output
    schemas and where its function lives (``hermes.memory.tiers.tool_fingerprint``), computed
    once per tool."""
    held = _FINGERPRINTS.get(id(tool))
    if held is not None and held[0] is tool:
        return held[1]
    from hermes.memory.tiers import tool_fingerprint  # the memory path has loaded it already

    fn = tool.fn
    where = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
    value = tool_fingerprint(tool.name, tool.parameters, [tool.output_schema, where])
    if len(_FINGERPRINTS) >= _MAX_FINGERPRINTS:
        _FINGERPRINTS.clear()
    _FINGERPRINTS[id(tool)] = (tool, value)
    return value


async def _authorize(authorizer: Any, tool: Tool, ctx: ToolContext) -> str | None:
    """None when allowed, else why not. Fails closed: a broken authorizer refuses."""
    try:
        outcome = authorizer.check(
            ctx.user_id, tool, session_id=ctx.session_id, trace_id=ctx.trace_id
        )
        if inspect.isawaitable(outcome):
            await outcome
    except HermesError as exc:
        if exc.code == "permission_denied":
            return exc.message
        logger.error("authorizer_failed", tool=tool.name, error_type=exc.code, error=exc.message)
    except Exception as exc:  # noqa: BLE001 - a broken authorizer refuses, never lets through
        logger.error("authorizer_failed", tool=tool.name, error_type=type(exc).__name__)
    else:
        return None
    return f"the permission check for tool {tool.name!r} failed, so the call was refused"


async def _idempotent(run: _Call) -> ToolResult:
    """Replay the stored result of an earlier call with the same key, or run and store."""
    tool = run.tool
    assert tool.idempotency_key is not None
    fields = tool.idempotency_key
    material = (
        canonical_json({f: run.arguments.get(f) for f in fields})
        if fields
        else run.arguments_json()
    )
    key = idempotency_key(run.ctx.user_id, material)
    store = run.state.idempotency_store(_idempotency_path(run.ctx))
    async with run.state.key_locks.hold((tool.name, key)):
        owner = new_owner()
        try:
            stored = await store.claim(tool.name, key, owner=owner, lease=_lease(tool))
        except StoreError as exc:
            message = f"tool {tool.name!r} was not run: its idempotency record is unavailable"
            return _refused(exc.code, f"{message} ({exc.message})", run.start)
        except BaseException:  # cancelled: the claim may still land on the worker; undo it
            store.release_soon(tool.name, key, owner=owner)
            raise
        run.mark("idempotency")
        if stored is not None:
            return _replayed(tool, stored, run.start)
        try:
            result = await _cached(run)
        except BaseException:  # record "unknown", then re-raise unchanged
            # Cancelled while the tool may be running or may have had its effect: whether it
            # happened is unknown, so the key must not simply run again (it could pay twice).
            store.complete_soon(
                tool.name, key, owner=owner, result_json=_UNKNOWN_OUTCOME, ttl=tool.idempotency_ttl
            )
            raise
        await _settle(store, tool, key, owner, result)
        run.mark("idempotency_store")
        return result


async def _settle(
    store: IdempotencyStore, tool: Tool, key: str, owner: str, result: ToolResult
) -> None:
    try:
        if result.ok or _outcome_unknown(result):
            payload = (
                json.dumps(
                    {"output": result.output, "summary": result.summary},
                    ensure_ascii=False,
                    default=str,
                )
                if result.ok
                else _UNKNOWN_OUTCOME
            )
            kept = await store.complete(
                tool.name, key, owner=owner, result_json=payload, ttl=tool.idempotency_ttl
            )
            if not kept:
                logger.warning("idempotency_claim_lost", tool=tool.name)
        else:
            # It failed before doing anything (it raised, or was refused): the next call with
            # this key may try again.
            await store.release(tool.name, key, owner=owner)
    except StoreError as exc:
        # The call did run: its real result still goes back (the model must know what
        # happened); only the record of it is missing.
        logger.error("idempotency_record_failed", tool=tool.name, error=exc.message)


def _idempotency_path(ctx: ToolContext) -> str | os.PathLike[str]:
    path = ctx.extras.get(IDEMPOTENCY_PATH_KEY)
    if path is not None:
        return path  # type: ignore[no-any-return]
    return os.path.join(ctx.workspace, ".hermes", "idempotency.db")


def _retry_policy_for(tool: Tool) -> RetryPolicy:
    """The tool's retry policy; a sync tool outside the sandbox never retries a timeout: its
    timed-out thread cannot be stopped, so a new attempt would run beside the old one."""
    policy = tool.retry
    assert policy is not None
    if tool.is_async or tool.sandbox == "process":
        return policy
    retry_on = policy.retry_on
    return dataclasses.replace(
        policy, retry_on=lambda exc: not isinstance(exc, ToolTimeoutError) and retry_on(exc)
    )


def _lease(tool: Tool) -> float:
    """How long a claim must survive: every attempt timing out, plus every backoff wait."""
    retry = tool.retry
    attempts = retry.max_attempts if retry is not None else 1
    waits = retry.worst_case_wait() if retry is not None else 0.0
    per_attempt = tool.timeout + (_SANDBOX_GRACE_S if tool.sandbox == "process" else 0.0)
    return attempts * per_attempt + waits + _LEASE_MARGIN_S


#: Stored for a key whose call timed out or was cancelled while running: its effect is unknown.
_UNKNOWN_OUTCOME = json.dumps({"outcome_unknown": True})
_UNKNOWN_ERRORS = frozenset({"timeout", "sandbox_timeout"})


def _outcome_unknown(result: ToolResult) -> bool:
    return result.error is not None and result.error.type in _UNKNOWN_ERRORS and result.attempts > 0


def _replayed(tool: Tool, stored: str, start: float) -> ToolResult:
    try:
        data = json.loads(stored)
        if data.get("outcome_unknown"):
            message = (
                f"an earlier call of {tool.name!r} with the same idempotency key timed out or was "
                "interrupted while running, so whether it took effect is unknown; it is not run "
                "again — check its effect first"
            )
            return _refused("outcome_unknown", message, start)
        output, summary = data["output"], data.get("summary")
    except (ValueError, KeyError, TypeError):
        message = f"the stored result of tool {tool.name!r} for this idempotency key is unreadable"
        return _refused("store_error", message, start)
    return _reused(output, summary, start)


def _reused(output: Any, summary: str | None, start: float) -> ToolResult:
    return ToolResult.model_construct(
        ok=True,
        output=output,
        error=None,
        summary=summary,
        duration_ms=(perf_counter() - start) * 1000,
        attempts=0,
        cached=True,
    )


async def _cached(run: _Call) -> ToolResult:
    """Reuse a recent identical successful result (``cache_ttl``), or run and remember."""
    ttl = run.tool.cache_ttl
    if ttl is None:
        return await _guarded(run)
    if run.memory is not None and run.memory_key is not None:
        return await _tiered(run, run.memory, run.memory_key, ttl)
    # Scoped like the memory tiers: per user, an anonymous caller per session, and a call
    # with neither is never cached (two anonymous people must not share results). The
    # function's identity too: two agents in one process may each have a tool of this name.
    ctx = run.ctx
    scope = f"user:{ctx.user_id}" if ctx.user_id else f"session:{ctx.session_id}"
    if not ctx.user_id and not ctx.session_id:
        return await _guarded(run)
    key = (run.tool.name, id(run.tool.fn), scope, run.arguments_json())
    hit: CachedResult | None = run.state.cache.get(key)
    run.mark("cache")
    if hit is not None:
        return _reused(hit.output(), hit.summary, run.start)
    result = await _guarded(run)
    if result.ok:
        run.state.cache.put(key, result.output, result.summary, ttl)
    return result


async def _tiered(run: _Call, memory: ToolMemory, key: CallKey, ttl: float) -> ToolResult:
    """Reuse from the memory tiers (L1, else L2 + L3), or run; the caller records the result
    (with ``reuse_ttl``, which makes it reusable)."""
    try:
        hit = await memory.find_reusable(key, ttl=ttl)
    except Exception as exc:  # noqa: BLE001 - a broken tier is a miss, never a failed call
        logger.error("tool_reuse_failed", tool=run.tool.name, error_type=type(exc).__name__)
        hit = None
    run.mark("cache")
    if hit is not None:
        return _reused(hit.output, hit.summary, run.start)
    return await _guarded(run)


async def _guarded(run: _Call) -> ToolResult:
    """The circuit breaker around the run (timeout + retry + sandbox), then the output."""
    tool = run.tool
    breaker: CircuitBreaker | None = None
    ticket: Ticket = "run"
    if tool.circuit_breaker is not None:
        breaker = run.state.breakers.get(tool.name, tool.circuit_breaker)
        granted = breaker.allow()
        run.mark("breaker")
        if granted is None:
            wait = max(1, math.ceil(breaker.retry_in()))
            message = (
                f"tool {tool.name!r} is temporarily unavailable after repeated failures "
                f"(circuit open); try again in {wait} s"
            )
            return _refused("service_unavailable", message, run.start)
        ticket = granted
    arguments = run.arguments
    if tool.context_param is not None:
        arguments = {**arguments, tool.context_param: run.ctx}
    counter: Attempts | None = None
    try:
        if tool.retry is None:  # the plain path: no retry wrapper at all
            raw = await _attempt(tool, arguments)
        else:
            counter = Attempts()
            raw = await call_with_retry(
                _retry_policy_for(tool), lambda: _attempt(tool, arguments), counter, tool=tool.name
            )
    except Exception as exc:  # noqa: BLE001 - any tool failure becomes data for the model
        if breaker is not None:
            if counts_as_failure(exc):
                breaker.record(ticket, failed=True)
            else:
                breaker.release(ticket)
        run.mark("run")
        return _failed(tool, exc, 1 if counter is None else counter.count, run.start)
    except BaseException:  # cancelled: no verdict on the tool's health
        if breaker is not None:
            breaker.release(ticket)
        raise
    if breaker is not None:
        breaker.record(ticket, failed=False)
    run.mark("run")
    return _finish(run, raw, 1 if counter is None else counter.count)


async def _attempt(tool: Tool, arguments: dict[str, Any]) -> Any:
    """One run under the tool's timeout: in the sandbox, on the loop, or on a worker thread."""
    sandboxed = tool.sandbox == "process"
    deadline = asyncio.timeout(tool.timeout + (_SANDBOX_GRACE_S if sandboxed else 0.0))
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


def _finish(run: _Call, raw: Any, attempts: int) -> ToolResult:
    """Parse, check and shape a successful run's output."""
    tool, start = run.tool, run.start
    if isinstance(raw, ToolResult):  # the tool shaped its own result: pass it through
        raw.attempts = attempts
        if not raw.duration_ms:
            raw.duration_ms = (perf_counter() - start) * 1000
        return raw
    output = raw
    if tool.parser is not None:
        try:
            output = tool.parser(raw)
        except Exception as exc:  # noqa: BLE001 - a parser failure is the output's fault
            message = f"the parser of tool {tool.name!r} failed: {_exception_text(exc)}"
            return _refused("invalid_output", message, start, attempts)
        run.mark("parse")
    summary = _summary(tool, output)
    try:
        safe = json_safe(output)
    except Exception as exc:  # noqa: BLE001 - e.g. an object whose __str__ raises
        message = f"output of tool {tool.name!r} is not serializable: {type(exc).__name__}: {exc}"
        return _refused("execution_error", message, start, attempts)
    if tool.output_schema is not None or tool.post_validate is not None:
        problem = _output_problem(tool, output, safe)
        run.mark("check")
        if problem is not None:
            return _refused("invalid_output", problem, start, attempts)
    if isinstance(safe, str) and len(safe) > run.limit:
        safe = _truncate(safe, run.limit)
    return ToolResult.model_construct(
        ok=True,
        output=safe,
        error=None,
        summary=summary,
        duration_ms=(perf_counter() - start) * 1000,
        attempts=attempts,
        cached=False,
    )


# id(schema) → (schema, validator, fast check): holding the schema keeps its id from being
# reused. The fast check (~1 µs) answers for common shapes; jsonschema (~15 µs) for the rest.
_output_validators: dict[int, tuple[dict[str, Any], Draft202012Validator, Check | None]] = {}


def _output_problem(tool: Tool, parsed: Any, safe: Any) -> str | None:
    """Why the output is wrong (output schema, then ``post_validate``), or None."""
    schema = tool.output_schema
    if schema is not None:
        entry = _output_validators.get(id(schema))
        if entry is None or entry[0] is not schema:
            validator = Draft202012Validator(
                schema, format_checker=Draft202012Validator.FORMAT_CHECKER
            )
            if len(_output_validators) >= _MAX_OUTPUT_VALIDATORS:  # tools built per call
                _output_validators.pop(next(iter(_output_validators)))
            entry = (schema, validator, compile_fast_check(schema))
            _output_validators[id(schema)] = entry
        _, validator, fast_check = entry
        valid = fast_check is not None and fast_check(safe)
        problems = [] if valid else problems_from_errors(validator.iter_errors(safe))
        if problems:
            shown = "; ".join(str(p) for p in problems[:_MAX_OUTPUT_PROBLEMS])
            return f"output of tool {tool.name!r} does not match its output schema: {shown}"
    if tool.post_validate is not None:
        try:
            tool.post_validate(parsed)
        except Exception as exc:  # noqa: BLE001 - the check rejecting the output is its job
            return f"output of tool {tool.name!r} was rejected: {_exception_text(exc)}"
    return None


def _failed(tool: Tool, exc: Exception, attempts: int, start: float) -> ToolResult:
    """The result of a run that raised (call inside the ``except`` block: logs traceback)."""
    if isinstance(exc, ToolArgumentError):  # raised by argument conversion or by the tool
        return _refused("invalid_arguments", _named(exc, tool.name), start, attempts)
    if isinstance(exc, ToolError):  # a failure reported on purpose, with its own code
        return _refused(exc.code, exc.message, start, attempts)
    logger.warning("tool_raised", tool=tool.name, error_type=type(exc).__name__)
    if logger.is_enabled("DEBUG"):
        logger.debug("tool_traceback", tool=tool.name, traceback=traceback.format_exc())
    return _refused("execution_error", _exception_text(exc), start, attempts)


def json_safe(value: Any) -> Any:
    """``value`` as JSON-ready data: models → ``model_dump(mode="json")``, dataclasses → dicts,
    sets/tuples → lists, NaN/inf → null, bytes → text (or base64), anything else → ``str``."""
    if isinstance(value, _JSON_SCALARS) and not isinstance(value, float):
        return value
    try:
        return to_jsonable_python(value, fallback=str, inf_nan_mode="null")
    except UnicodeDecodeError:  # bytes that are not UTF-8
        return to_jsonable_python(value, fallback=str, inf_nan_mode="null", bytes_mode="base64")


def _summary(tool: Tool, output: Any) -> str | None:
    if tool.summary is not None:
        try:
            return str(tool.summary(output))
        except Exception as exc:  # noqa: BLE001 - a broken summary must not fail the call
            logger.warning("tool_summary_failed", tool=tool.name, error_type=type(exc).__name__)
            return None
    if isinstance(output, dict):
        summary = output.get("summary")
        if isinstance(summary, str):
            return summary
    return None


def _truncate(text: str, limit: int) -> str:
    kept = max(limit, 0)
    return f"{text[:kept]}\n…[truncated: showing {kept} of {len(text)} characters]"


def _refused(error_type: str, message: str, start: float, attempts: int = 0) -> ToolResult:
    """A failed result; ``attempts`` is how many times the tool ran (0: it never did)."""
    return ToolResult.failure(
        error_type, message, duration_ms=(perf_counter() - start) * 1000, attempts=attempts
    )


def _named(exc: ToolArgumentError, tool_name: str) -> str:
    return str(ToolArgumentError(exc.problems, tool=exc.tool or tool_name))


def _unknown_tool_message(name: str, registry: ToolRegistry) -> str:
    names = registry.names()
    shown = ", ".join(names[:_MAX_LISTED_TOOLS])
    if len(names) > _MAX_LISTED_TOOLS:
        shown += f", … ({len(names) - _MAX_LISTED_TOOLS} more)"
    return f"no tool named {name!r}; available: {shown or '(none)'}"


#: How much of an exception's text the model sees; the full text is in the debug log.
MAX_ERROR_CHARS = 500


def _exception_text(exc: BaseException) -> str:
    """ "TypeName: message", clipped: an exception may carry a whole payload or a secret."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"
