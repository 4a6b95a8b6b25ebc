"""Authorization and approval gates, and the order of the pipeline's steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes.errors import PermissionDeniedError, StoreError
from hermes.models.base import ToolCall
from hermes.observe import configure_logging, reset_logging
from hermes.storage.sqlite.idempotency import SQLiteIdempotencyRecords
from hermes.tools import Tool, ToolRegistry, ToolResult, tool
from hermes.tools.pipeline import Call, CallContext, Next, ToolExecutor
from hermes.tools.policies import BreakerPolicy, PolicyState


class ScopeAuthorizer:
    """A tiny authorizer (the duck type the executor expects): users → scopes."""

    def __init__(self, scopes: dict[str, set[str]]) -> None:
        self.scopes = scopes
        self.checks: list[tuple[str | None, str, str, str]] = []

    def check(self, user_id: str | None, tool: Tool, *, session_id: str, trace_id: str) -> None:
        self.checks.append((user_id, tool.name, session_id, trace_id))
        missing = set(tool.permissions) - self.scopes.get(user_id or "", set())
        if missing:
            raise PermissionDeniedError(
                f"user {user_id!r} may not use tool {tool.name!r} (missing {sorted(missing)})",
                tool=tool.name,
                missing=tuple(sorted(missing)),
            )


class AsyncAuthorizer(ScopeAuthorizer):
    async def check(  # type: ignore[override]
        self, user_id: str | None, tool: Tool, *, session_id: str, trace_id: str
    ) -> None:
        super().check(user_id, tool, session_id=session_id, trace_id=trace_id)


class BrokenAuthorizer:
    def check(self, user_id: str | None, tool: Tool, **_: Any) -> None:
        raise KeyError("roles table missing")


class Backend:
    def __init__(self) -> None:
        self.runs = 0

    def registry(self, **options: Any) -> ToolRegistry:
        def delete_user(user: str) -> str:
            self.runs += 1
            return f"deleted {user}"

        return ToolRegistry([tool(name="delete_user", **options)(delete_user)])


@pytest.fixture
def backend() -> Backend:
    return Backend()


async def call(
    registry: ToolRegistry, call_id: str = "call-7", user: str = "alice", **extras: Any
) -> ToolResult:
    """One call through a pipeline built with ``authorizer``/``policy_state``/``idempotency_path``
    (each optional; the path: SQLite records on that file, as an agent has them);
    ``approved_call_ids``: the call counts as approved when its id is in it."""
    approved = call_id in extras.pop("approved_call_ids", ())
    path = extras.pop("idempotency_path", None)
    executor = ToolExecutor(
        registry,
        authorizer=extras.pop("authorizer", None),
        state=extras.pop("policy_state", None),
        idempotency=None if path is None else SQLiteIdempotencyRecords(path),
    )
    ctx = CallContext(
        session_id="session-0001",
        user_id=user,
        trace_id="trace-1",
        call_id=call_id,
        approved=approved,
        extras=extras,
    )
    return await executor.run(ToolCall(call_id, "delete_user", {"user": "x"}), ctx)


async def test_a_user_without_the_scope_is_refused_before_anything_runs(
    backend: Backend,
) -> None:
    authorizer = ScopeAuthorizer({"alice": {"users:read"}})
    result = await call(backend.registry(permissions=("users:admin",)), authorizer=authorizer)
    assert result.error is not None
    assert result.error.type == "permission_denied"
    assert result.error.message == (
        "user 'alice' may not use tool 'delete_user' (missing ['users:admin'])"
    )
    assert (backend.runs, result.attempts) == (0, 0)


async def test_the_authorizer_gets_user_tool_session_and_trace(backend: Backend) -> None:
    authorizer = ScopeAuthorizer({"alice": {"users:admin"}})
    result = await call(backend.registry(permissions="users:admin"), authorizer=authorizer)
    assert result.ok
    assert authorizer.checks == [("alice", "delete_user", "session-0001", "trace-1")]


async def test_an_async_authorizer_is_awaited(backend: Backend) -> None:
    authorizer = AsyncAuthorizer({})
    result = await call(backend.registry(permissions=("users:admin",)), authorizer=authorizer)
    assert result.error is not None
    assert result.error.type == "permission_denied"


async def test_a_broken_authorizer_refuses_the_call(backend: Backend) -> None:
    result = await call(backend.registry(), authorizer=BrokenAuthorizer())
    assert result.error is not None
    assert result.error.type == "permission_denied"
    assert "permission check for tool 'delete_user' failed" in result.error.message
    assert backend.runs == 0


async def test_an_authorizer_store_failure_also_refuses(backend: Backend) -> None:
    class Unreachable:
        def check(self, *args: Any, **kwargs: Any) -> None:
            raise StoreError("roles database is locked")

    result = await call(backend.registry(), authorizer=Unreachable())
    assert result.error is not None
    assert result.error.type == "permission_denied"


def log_lines(log_file: Path, event: str) -> list[dict[str, Any]]:
    """The lines of ``event`` in a JSON log file, without their timestamps."""
    lines = [json.loads(line) for line in log_file.read_text().splitlines()]
    found = [line for line in lines if line["event"] == event]
    return [{k: v for k, v in line.items() if k != "timestamp"} for line in found]


async def test_a_broken_authorizer_is_logged_with_the_tool_and_its_error_type(
    backend: Backend, tmp_path: Path
) -> None:
    # The error text of an unknown failure stays out of the log (it may hold anything).
    log_file = tmp_path / "hermes.log"
    configure_logging(log_file, "DEBUG")
    try:
        await call(backend.registry(), authorizer=BrokenAuthorizer())
    finally:
        reset_logging()
    assert log_lines(log_file, "authorizer_failed") == [
        {
            "level": "error",
            "event": "authorizer_failed",
            "module": "tools",
            "tool": "delete_user",
            "error_type": "KeyError",
        }
    ]


async def test_an_authorizer_store_failure_is_logged_with_its_code_and_message(
    backend: Backend, tmp_path: Path
) -> None:
    class Unreachable:
        def check(self, *args: Any, **kwargs: Any) -> None:
            raise StoreError("roles database is locked")

    log_file = tmp_path / "hermes.log"
    configure_logging(log_file, "DEBUG")
    try:
        await call(backend.registry(), authorizer=Unreachable())
    finally:
        reset_logging()
    assert log_lines(log_file, "authorizer_failed") == [
        {
            "level": "error",
            "event": "authorizer_failed",
            "module": "tools",
            "tool": "delete_user",
            "error_type": "store_error",
            "error": "roles database is locked",
        }
    ]


async def test_without_an_authorizer_scopes_are_not_checked(backend: Backend) -> None:
    assert (await call(backend.registry(permissions=("users:admin",)))).ok


async def test_a_call_needing_approval_is_held_and_names_the_tool(backend: Backend) -> None:
    result = await call(backend.registry(requires_approval=True))
    assert result.error is not None
    assert result.error.type == "approval_required"
    assert result.error.message == (
        "tool 'delete_user' needs a person's approval before it runs; the call was not executed"
    )
    assert backend.runs == 0


async def test_an_approved_call_runs(backend: Backend) -> None:
    registry = backend.registry(requires_approval=True)
    result = await call(registry, call_id="call-7", approved_call_ids={"call-7"})
    assert (result.ok, backend.runs) == (True, 1)


async def test_approval_of_another_call_does_not_count(backend: Backend) -> None:
    registry = backend.registry(requires_approval=True)
    result = await call(registry, call_id="call-8", approved_call_ids={"call-7"})
    assert result.error is not None
    assert result.error.type == "approval_required"


async def test_authorization_comes_before_approval(backend: Backend) -> None:
    registry = backend.registry(requires_approval=True, permissions=("users:admin",))
    result = await call(registry, authorizer=ScopeAuthorizer({}))
    assert result.error is not None
    assert result.error.type == "permission_denied"


async def test_invalid_arguments_are_refused_before_authorization(backend: Backend) -> None:
    authorizer = ScopeAuthorizer({})
    registry = backend.registry(permissions=("users:admin",))
    executor = ToolExecutor(registry, authorizer=authorizer)
    result = await executor.run(ToolCall("c", "delete_user", {}), CallContext(user_id="alice"))
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert authorizer.checks == []


async def test_a_refused_call_touches_no_policy_state(backend: Backend, tmp_path: Path) -> None:
    state = PolicyState()
    db = tmp_path / "idem.db"
    registry = backend.registry(
        permissions=("users:admin",),
        idempotent=True,
        cache_ttl=60,
        circuit_breaker=BreakerPolicy(failures=1),
        retry=3,
    )
    for _ in range(3):
        result = await call(
            registry, authorizer=ScopeAuthorizer({}), policy_state=state, idempotency_path=db
        )
        assert result.error is not None
        assert result.error.type == "permission_denied"
    assert backend.runs == 0
    assert state.breakers.peek("delete_user") is None
    assert len(state.cache) == 0
    assert not db.exists()


async def test_an_unapproved_call_touches_no_policy_state(backend: Backend, tmp_path: Path) -> None:
    state = PolicyState()
    db = tmp_path / "idem.db"
    registry = backend.registry(requires_approval=True, idempotent=True, cache_ttl=60)
    await call(registry, policy_state=state, idempotency_path=db)
    assert (backend.runs, len(state.cache), db.exists()) == (0, 0, False)


async def test_each_call_logs_its_steps_in_pipeline_order(backend: Backend, tmp_path: Path) -> None:
    state = PolicyState()
    registry = backend.registry(
        permissions=("users:admin",),
        requires_approval=True,
        idempotent=True,
        cache_ttl=60,
        circuit_breaker=True,
        retry=2,
        parser=lambda raw: {"message": raw},
        output_schema={"type": "object", "required": ["message"]},
    )
    log_file = tmp_path / "hermes.log"
    configure_logging(log_file, "DEBUG")
    try:
        result = await call(
            registry,
            authorizer=ScopeAuthorizer({"alice": {"users:admin"}}),
            approved_call_ids={"call-7"},
            policy_state=state,
            idempotency_path=tmp_path / "idem.db",
        )
    finally:
        reset_logging()
    assert result.ok
    lines = [json.loads(line) for line in log_file.read_text().splitlines()]
    (line,) = [line for line in lines if line["event"] == "tool_pipeline"]
    assert list(line["steps"]) == [
        "validate",
        "authorize",
        "cache",
        "idempotency",
        "breaker",
        "run",
        "parse",
        "check",
        "idempotency_store",
    ]
    assert all(isinstance(cost, float) and cost >= 0 for cost in line["steps"].values())
    assert (line["tool"], line["ok"], line["attempts"], line["cached"]) == (
        "delete_user",
        True,
        1,
        False,
    )
    await state.close()


async def test_no_pipeline_line_when_debug_is_off(backend: Backend, tmp_path: Path) -> None:
    log_file = tmp_path / "hermes.log"
    configure_logging(log_file, "INFO")
    try:
        assert (await call(backend.registry())).ok
    finally:
        reset_logging()
    assert "tool_pipeline" not in log_file.read_text()


async def test_the_pipeline_line_of_a_refused_call_names_the_call_and_the_error_type(
    backend: Backend, tmp_path: Path
) -> None:
    log_file = tmp_path / "hermes.log"
    configure_logging(log_file, "DEBUG")
    try:
        await call(backend.registry(requires_approval=True), call_id="call-9")
    finally:
        reset_logging()
    (line,) = log_lines(log_file, "tool_pipeline")
    assert (line["call_id"], line["ok"], line["error_type"]) == (
        "call-9",
        False,
        "approval_required",
    )


class TimerProbe:
    """A step of one's own that notes whether the call carries a step timer."""

    name = "timer_probe"

    def __init__(self) -> None:
        self.timers: list[object] = []

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        self.timers.append(call.timer)
        return await next(call)


async def test_without_debug_logging_no_step_costs_are_taken(
    backend: Backend, tmp_path: Path
) -> None:
    probe = TimerProbe()
    executor = ToolExecutor(backend.registry())
    executor.insert(probe)
    configure_logging(tmp_path / "hermes.log", "INFO")
    try:
        result = await executor.run(ToolCall("c", "delete_user", {"user": "x"}), CallContext())
    finally:
        reset_logging()
    assert result.ok
    assert probe.timers == [None]


async def test_the_pipeline_line_gives_the_calls_cost_in_milliseconds(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes.tools.pipeline import chain

    readings = iter([100.0, 100.0123456])  # the call's start, then its end: 12.3456 ms
    monkeypatch.setattr(chain, "perf_counter", lambda: next(readings))
    log_file = tmp_path / "hermes.log"
    configure_logging(log_file, "DEBUG")
    try:
        assert (await call(backend.registry())).ok
    finally:
        reset_logging()
    (line,) = log_lines(log_file, "tool_pipeline")
    assert line["cost_ms"] == 12.346
