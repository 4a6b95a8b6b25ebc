"""The pipeline as steps: which steps a tool's calls go through, custom steps, the signals,
and the call context that crosses a process boundary (DESIGN "Layers → tools")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.errors import PermissionDeniedError
from hermes.models.base import ToolCall
from hermes.tools import Tool, ToolContext, ToolRegistry, ToolResult, execute_tool_call, tool
from hermes.tools.pipeline import (
    STEP_ORDER,
    ApprovalRequired,
    Call,
    CallContext,
    Next,
    RetryWith,
    ToolExecutor,
    refused,
)
from hermes.tools.policies import BreakerPolicy, PolicyState, RetryPolicy


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(
    name="guarded",
    retry=RetryPolicy(max_attempts=2),
    circuit_breaker=BreakerPolicy(failures=3),
    idempotency_key=("n",),
    cache_ttl=60,
    permissions=("x:run",),
    requires_approval=True,
)
async def guarded(n: int) -> int:
    """Everything on."""
    return n


class Recorder:
    """A custom step: notes what it sees, then passes the call on."""

    def __init__(self, name: str = "recorder") -> None:
        self.name = name
        self.seen: list[tuple[str, dict[str, Any], CallContext]] = []

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        self.seen.append((call.tool.name, dict(call.arguments), call.context))
        return await next(call)


class AllowAll:
    def check(self, user_id: str | None, tool: Tool, *, session_id: str, trace_id: str) -> None:
        return None


class DenyAll:
    def check(self, user_id: str | None, tool: Tool, *, session_id: str, trace_id: str) -> None:
        raise PermissionDeniedError(f"user {user_id!r} may not use {tool.name!r}", tool=tool.name)


def _executor(*tools: Tool, **options: Any) -> ToolExecutor:
    return ToolExecutor(ToolRegistry(list(tools)), state=PolicyState(), **options)


def _tool(executor: ToolExecutor, name: str) -> Tool:
    found = executor.registry.get(name)
    assert found is not None
    return found


# which steps a call goes through -----------------------------------------------------------


def test_a_plain_tool_goes_through_validation_and_the_run_only() -> None:
    executor = _executor(add, guarded)
    assert executor.steps_for(_tool(executor, "add")) == ("validate", "run")


def test_a_tool_with_every_policy_goes_through_every_step_in_order() -> None:
    executor = _executor(add, guarded, authorizer=AllowAll())
    assert [s.name for s in executor.steps] == list(STEP_ORDER)
    assert executor.steps_for(_tool(executor, "guarded")) == STEP_ORDER


def test_with_an_authorizer_every_tool_is_authorized() -> None:
    executor = _executor(add, authorizer=AllowAll())
    assert executor.steps_for(_tool(executor, "add")) == ("validate", "authorize", "run")


# custom steps ------------------------------------------------------------------------------


async def test_a_custom_step_sees_validated_arguments_and_the_call_context() -> None:
    executor = _executor(add)
    recorder = Recorder()
    executor.insert(recorder)  # default: just before the run step
    assert [s.name for s in executor.steps][-2:] == ["recorder", "run"]
    ctx = CallContext(session_id="s-1", user_id="u1", trace_id="t-1", call_id="c1")
    result = await executor.run(ToolCall("c1", "add", {"a": "2", "b": 3}), ctx)
    assert (result.ok, result.output) == (True, 5)
    assert recorder.seen == [("add", {"a": 2, "b": 3}, ctx)]  # coerced before it saw them


async def test_a_step_inserted_after_the_first_calls_is_in_every_chain_from_then_on() -> None:
    executor = _executor(add)
    await executor.run(ToolCall("c1", "add", {"a": 1, "b": 1}), CallContext())
    recorder = Recorder()
    executor.insert(recorder, after="validate")
    await executor.run(ToolCall("c2", "add", {"a": 1, "b": 1}), CallContext())
    assert len(recorder.seen) == 1


async def test_a_step_can_answer_a_call_itself_without_running_the_tool() -> None:
    runs: list[int] = []

    @tool(name="count")
    def count(n: int) -> int:
        """Count."""
        runs.append(n)
        return n

    class Quota:
        name = "quota"

        async def __call__(self, call: Call, next: Next) -> ToolResult:
            if call.context.user_id == "over":
                return refused("quota_exceeded", "this user's quota is used up", call.start)
            return await next(call)

    executor = _executor(count)
    executor.insert(Quota(), before="validate")
    blocked = await executor.run(ToolCall("c1", "count", {"n": 1}), CallContext(user_id="over"))
    allowed = await executor.run(ToolCall("c2", "count", {"n": 2}), CallContext(user_id="ok"))
    assert blocked.error is not None
    assert (blocked.error.type, allowed.ok, runs) == ("quota_exceeded", True, [2])


async def test_a_step_can_change_the_arguments_the_tool_gets() -> None:
    class Double:
        name = "double"

        async def __call__(self, call: Call, next: Next) -> ToolResult:
            doubled = {k: v * 2 for k, v in call.arguments.items()}
            return await next(call.replace(arguments=doubled))

    executor = _executor(add)
    executor.insert(Double())
    result = await executor.run(ToolCall("c1", "add", {"a": 1, "b": 2}), CallContext())
    assert result.output == 6


async def test_the_breaker_hears_of_a_failure_behind_a_step_that_replaced_the_call() -> None:
    @tool(name="down", circuit_breaker=BreakerPolicy(failures=2, reset_after=60))
    async def down(n: int) -> int:
        """Always fails."""
        raise ConnectionError("upstream down")

    class Passthrough:
        name = "passthrough"

        async def __call__(self, call: Call, next: Next) -> ToolResult:
            return await next(call.replace(arguments=dict(call.arguments)))

    executor = _executor(down)
    executor.insert(Passthrough())  # between the breaker and the run
    for i in range(2):
        await executor.run(ToolCall(f"c{i}", "down", {"n": i}), CallContext())
    refused_now = await executor.run(ToolCall("c9", "down", {"n": 9}), CallContext())
    assert refused_now.error is not None
    assert refused_now.error.type == "service_unavailable"


def test_misplaced_or_malformed_steps_are_refused_with_the_reason() -> None:
    executor = _executor(add)
    with pytest.raises(ValueError, match="no step named 'nope'"):
        executor.insert(Recorder(), before="nope")
    with pytest.raises(ValueError, match="after the run step") as after_run:
        executor.insert(Recorder(), after="run")
    assert str(after_run.value) == "no step can come after the run step: it ends every chain"
    with pytest.raises(ValueError, match="either before or after") as both:
        executor.insert(Recorder(), before="validate", after="validate")
    assert str(both.value) == "insert a step either before or after another one, not both"
    executor.insert(Recorder())
    with pytest.raises(ValueError, match="a step named 'recorder' already"):
        executor.insert(Recorder())
    with pytest.raises(TypeError, match="non-empty name"):
        executor.insert(Recorder(name=""))
    with pytest.raises(ValueError, match="last step"):
        ToolExecutor(ToolRegistry([add]), steps=[Recorder()])
    with pytest.raises(ValueError, match="named 'run'"):
        executor.replace("run", Recorder(name="other"))


def test_a_step_inserted_after_another_comes_right_after_it() -> None:
    executor = _executor(add)
    executor.insert(Recorder(), after="validate")
    assert [s.name for s in executor.steps][:3] == ["validate", "recorder", "approval"]


def test_replace_puts_a_step_in_another_ones_place_and_returns_the_old_one() -> None:
    executor = _executor(add)
    new = Recorder(name="cache")
    old = executor.replace("cache", new)
    assert old.name == "cache"
    assert executor.step("cache") is new


# signals -----------------------------------------------------------------------------------


async def test_a_tool_raising_retry_with_tells_the_model_and_is_never_retried() -> None:
    attempts: list[int] = []

    @tool(name="picky", retry=RetryPolicy(max_attempts=3, retry_on=lambda exc: True))
    async def picky(city: str) -> str:
        """Wants a city code."""
        attempts.append(1)
        raise RetryWith("use the three-letter city code, e.g. 'PEK'")

    result = await _executor(picky).run(ToolCall("c1", "picky", {"city": "Beijing"}), CallContext())
    assert result.error is not None
    assert (result.error.type, result.attempts, len(attempts)) == ("retry_with", 1, 1)
    assert "PEK" in result.error.message


async def test_retry_with_never_opens_the_circuit() -> None:
    @tool(name="picky", circuit_breaker=BreakerPolicy(failures=1))
    async def picky(city: str) -> str:
        """Wants a city code."""
        raise RetryWith("use a city code")

    executor = _executor(picky)
    for i in range(3):
        result = await executor.run(ToolCall(f"c{i}", "picky", {"city": "x"}), CallContext())
        assert result.error is not None
        assert result.error.type == "retry_with"


async def test_retry_with_from_a_step_is_a_result_even_when_signals_are_raised() -> None:
    class Strict:
        name = "strict"

        async def __call__(self, call: Call, next: Next) -> ToolResult:
            raise RetryWith("say which account")

    executor = _executor(add)
    executor.insert(Strict())
    call = ToolCall("c1", "add", {"a": 1, "b": 1})
    result = await executor.run(call, CallContext(), signals="raise")
    assert result.error is not None
    assert (result.error.type, result.error.message) == ("retry_with", "say which account")


async def test_an_unapproved_call_raises_approval_required_with_its_valid_arguments() -> None:
    executor = _executor(guarded, authorizer=AllowAll())
    with pytest.raises(ApprovalRequired) as raised:
        await executor.run(ToolCall("c7", "guarded", {"n": "4"}), CallContext(), signals="raise")
    signal = raised.value
    assert (signal.tool, signal.call_id, signal.arguments) == ("guarded", "c7", {"n": 4})


async def test_without_raise_the_signal_is_an_approval_required_result() -> None:
    executor = _executor(guarded, authorizer=AllowAll())
    result = await executor.run(ToolCall("c7", "guarded", {"n": 4}), CallContext())
    assert result.error is not None
    assert (result.error.type, result.attempts) == ("approval_required", 0)


async def test_nobody_is_asked_about_a_call_that_is_invalid_or_not_allowed() -> None:
    allowed = _executor(guarded, authorizer=AllowAll())
    invalid = await allowed.run(ToolCall("c1", "guarded", {}), CallContext(), signals="raise")
    denied = await _executor(guarded, authorizer=DenyAll()).run(
        ToolCall("c2", "guarded", {"n": 1}), CallContext(user_id="eve"), signals="raise"
    )
    assert invalid.error is not None
    assert denied.error is not None
    assert (invalid.error.type, denied.error.type) == ("invalid_arguments", "permission_denied")


async def test_an_approved_call_runs() -> None:
    executor = _executor(guarded, authorizer=AllowAll())
    ctx = CallContext(user_id="u1", approved=True)
    result = await executor.run(ToolCall("c1", "guarded", {"n": 4}), ctx, signals="raise")
    assert (result.ok, result.output) == (True, 4)


# the call context --------------------------------------------------------------------------

_text = st.text(max_size=20)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


@given(
    session_id=_text,
    user_id=st.none() | _text,
    trace_id=_text,
    call_id=_text,
    workspace=_text,
    approved=st.booleans(),
    extras=st.dictionaries(st.text(max_size=8), _json, max_size=4),
)
def test_a_call_context_crosses_json_unchanged(**fields: Any) -> None:
    ctx = CallContext(**fields)
    assert CallContext.from_dict(json.loads(json.dumps(ctx.to_dict()))) == ctx


def test_a_call_context_with_live_objects_cannot_be_serialized() -> None:
    with pytest.raises(ValueError, match="JSON data"):
        CallContext(extras={"client": object()}).to_dict()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"session_id": 3}, "call context field 'session_id' must be a string"),
        ({"trace_id": 3}, "call context field 'trace_id' must be a string"),
        ({"call_id": None}, "call context field 'call_id' must be a string"),
        ({"workspace": ["/w"]}, "call context field 'workspace' must be a string"),
        ({"user_id": 7}, "call context field 'user_id' must be a string or null"),
        ({"approved": "yes"}, "call context field 'approved' must be true or false"),
        ({"extras": []}, "call context field 'extras' must be an object"),
        ({"authorizer": "x"}, "unknown call context field(s): authorizer"),
        ({"memory": 1, "authorizer": 2}, "unknown call context field(s): authorizer, memory"),
        ([], "a call context must be an object, got list"),
    ],
)
def test_a_wrong_call_context_names_the_field(data: Any, message: str) -> None:
    with pytest.raises(ValueError, match="call context") as raised:
        CallContext.from_dict(data)
    assert str(raised.value) == message


def test_an_empty_call_context_object_is_the_default_context_not_approved() -> None:
    ctx = CallContext.from_dict({})
    assert ctx == CallContext()
    assert (ctx.approved, ctx.extras) == (False, {})


def test_for_call_keeps_everything_but_the_call_id_and_approval() -> None:
    ctx = CallContext(session_id="s", user_id="u", trace_id="t", workspace="/w", extras={"k": 1})
    one = ctx.for_call("c9")
    approved = ctx.for_call("c10", approved=True)
    assert (one.call_id, one.approved, one.extras, one.session_id) == ("c9", False, {"k": 1}, "s")
    assert (approved.call_id, approved.approved) == ("c10", True)


async def test_a_tool_gets_a_tool_context_built_from_the_call_context(tmp_path: Any) -> None:
    seen: list[ToolContext] = []
    settings_seen: list[dict[str, Any]] = []

    @tool(name="whoami")
    def whoami(ctx: ToolContext) -> str:
        """Who is calling."""
        seen.append(ctx)
        settings_seen.append(dict(ctx.extras))
        ctx.extras["changed"] = True  # a tool cannot change what the next call sees
        return ctx.user_id or ""

    settings = {"http_allow": ["example.org"]}
    ctx = CallContext(
        session_id="s-1", user_id="u1", trace_id="t", workspace=str(tmp_path), extras=settings
    )
    executor = _executor(whoami)
    await executor.run(ToolCall("c1", "whoami", {}), ctx.for_call("c1"))
    await executor.run(ToolCall("c2", "whoami", {}), ctx.for_call("c2"))
    first = seen[0]
    assert (first.session_id, first.user_id, first.call_id, first.workspace) == (
        "s-1",
        "u1",
        "c1",
        tmp_path,
    )
    assert settings_seen[1] == {"http_allow": ["example.org"]}
    assert settings == {"http_allow": ["example.org"]}


# the convenience function ------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["authorizer", "approved_call_ids", "policy_state", "idempotency_path", "tool_memory"]
)
async def test_execute_tool_call_refuses_the_removed_pipeline_extras(key: str) -> None:
    ctx = ToolContext(extras={key: object()})
    with pytest.raises(ValueError, match=key):
        await execute_tool_call(ToolRegistry([add]), ToolCall("c1", "add", {"a": 1, "b": 2}), ctx)


async def test_execute_tool_call_takes_a_call_context_too() -> None:
    result = await execute_tool_call(
        ToolRegistry([add]), ToolCall("c1", "add", {"a": 1, "b": 2}), CallContext()
    )
    assert result.output == 3
