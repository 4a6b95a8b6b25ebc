"""The public surface, pinned (STYLE.md §3; DESIGN.md "Public contracts → Python").

Tests outside this repository rely on these names, signatures and JSON keys. When one of these
snapshots fails, a public contract changed: if the change is deliberate, update the snapshot in
the same change and record it (DESIGN.md, release notes); if not, undo it.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import hermes
import hermes.testing
import hermes.tools.pipeline
from hermes import Agent, RunResult, ToolCallRecord, ToolContext, tool
from hermes.models.base import ToolCall
from hermes.models.hermes_format import parse_tool_calls
from hermes.tools import ToolArgumentError, ToolRegistry, execute_tool_call, validate_arguments
from hermes.tools.pipeline import STEP_ORDER, CallContext, ToolExecutor

REPO_ROOT = Path(__file__).resolve().parent.parent


@tool
def add_numbers(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def assert_contract(what: str, actual: object, expected: object) -> None:
    """Compare a snapshot; on a mismatch, say plainly that a public contract changed."""
    assert actual == expected, (
        f"PUBLIC CONTRACT CHANGED: {what}.\n"
        "Code outside this repository depends on it (DESIGN.md 'Public contracts', STYLE.md §3). "
        "Change it only deliberately: update the snapshot in tests/test_public_api.py in the "
        "same commit and record the change in DESIGN.md and the release notes.\n"
        f"  expected: {expected!r}\n"
        f"  actual:   {actual!r}"
    )


# names ----------------------------------------------------------------------------------------

HERMES_ALL = [
    "Agent",
    "AgentEvent",
    "ConfigError",
    "HermesError",
    "InvalidIdError",
    "InvalidInputError",
    "Message",
    "ModelError",
    "RunResult",
    "SessionAccessError",
    "SessionBusyError",
    "StoreError",
    "Tool",
    "ToolArgumentError",
    "ToolCallRecord",
    "ToolContext",
    "ToolResult",
    "__version__",
    "tool",
]

PIPELINE_ALL = [
    "ApprovalRequired",
    "ApprovalStep",
    "AuthorizeStep",
    "BreakerStep",
    "CacheStep",
    "Call",
    "CallContext",
    "IdempotencyRecords",  # added with the records protocol (hermes.tools.pipeline)
    "IdempotencyStep",
    "Next",
    "RecordsPerWorkspace",
    "RetryWith",
    "RunStep",
    "STEP_ORDER",
    "SandboxUnavailableError",
    "SignalMode",
    "Step",
    "ToolExecutor",
    "ToolSignal",
    "ValidateStep",
    "default_steps",
    "json_safe",
    "refused",
    "reused",
]

TESTING_ALL = [
    "FunctionModel",
    "ScriptExhaustedError",
    "ScriptedModel",
    "allow_model_requests",
    "block_model_requests",
    "call",
    "calls",
    "say",
]


def test_hermes_all_is_pinned() -> None:
    assert_contract("hermes.__all__", sorted(hermes.__all__), HERMES_ALL)


def test_hermes_tools_pipeline_all_is_pinned() -> None:
    assert_contract(
        "hermes.tools.pipeline.__all__", sorted(hermes.tools.pipeline.__all__), PIPELINE_ALL
    )


def test_the_call_context_and_the_tool_context_fields_are_pinned() -> None:
    call_fields = [f.name for f in dataclasses.fields(CallContext)]
    assert_contract(
        "the fields of CallContext",
        call_fields,
        ["session_id", "user_id", "trace_id", "call_id", "workspace", "approved", "extras"],
    )
    tool_fields = [f.name for f in dataclasses.fields(ToolContext)]
    assert_contract(
        "the fields of ToolContext",
        tool_fields,
        ["session_id", "user_id", "trace_id", "call_id", "workspace", "extras"],
    )
    assert_contract("the built-in step order", list(STEP_ORDER), [
        "validate", "authorize", "approval", "cache", "idempotency", "breaker", "run"
    ])  # fmt: skip


async def test_tool_context_extras_no_longer_carry_the_pipelines_dependencies() -> None:
    """Changed deliberately when the pipeline became steps (docs/tool-pipeline.md): the
    authorizer, approvals, idempotency path, policy state and memory are given to the
    executor when it is built; a context still carrying one is refused, never ignored."""
    registry = ToolRegistry([add_numbers])
    call = ToolCall("c1", "add_numbers", {"a": 1, "b": 2})
    with pytest.raises(ValueError, match="authorizer"):
        await execute_tool_call(registry, call, ToolContext(extras={"authorizer": object()}))
    ok = await execute_tool_call(registry, call, ToolContext(extras={"http_allow": []}))
    assert ok.output == 3


def test_hermes_testing_all_is_pinned() -> None:
    assert_contract("hermes.testing.__all__", sorted(hermes.testing.__all__), TESTING_ALL)


@pytest.mark.parametrize(
    "module", [hermes, hermes.testing, hermes.tools.pipeline], ids=lambda m: m.__name__
)
def test_every_public_name_exists_and_is_listed_once(module: types.ModuleType) -> None:
    names = module.__all__
    assert len(names) == len(set(names)), f"{module.__name__}.__all__ has duplicates"
    missing = [name for name in names if not hasattr(module, name)]
    assert not missing, f"{module.__name__}.__all__ names missing attributes: {missing}"


# signatures -----------------------------------------------------------------------------------

SIGNATURES: dict[str, str] = {
    "Agent.__init__": (
        "(self, model: 'Model | None' = None, tools: 'Iterable[ToolLike] | None' = None, "
        "store: 'Store | str | Path | None' = None, *, instructions: 'str | None' = None, "
        "max_iterations: 'int' = 8, turn_timeout: 'float' = 120.0, "
        "context_rounds: 'int' = 12, context_budget_tokens: 'int' = 6000, "
        "max_message_chars: 'int' = 100000, max_unknown_tools: 'int' = 3, "
        "summary_min_backlog: 'int' = 8, workspace: 'str | Path | None' = None, "
        "summarizer: 'Summarizer | None' = None, states_file: 'str | Path | None' = None, "
        # Added for permissions and toolsets (keyword-only, defaults keep the old behaviour).
        "authorizer: 'Authorizer | None' = None, toolset_limit: 'int' = 20, "
        "http_allow: 'Sequence[str]' = (), "
        # Added for MCP servers.
        "mcp_servers: 'Mapping[str, ServerConfig] | McpManager | None' = None, "
        # Added for memory (keyword-only, off by default).
        "memory: 'Memory | str | Path | None' = None) -> 'None'"
    ),
    "Agent.run": (
        "(self, text: 'str', *, session_id: 'str | None' = None, "
        "user_id: 'str | None' = None, channel: 'str' = 'python', "
        "trace_id: 'str | None' = None) -> 'RunResult'"
    ),
    "Agent.stream": (
        "(self, text: 'str', *, session_id: 'str | None' = None, "
        "user_id: 'str | None' = None, channel: 'str' = 'python', "
        "trace_id: 'str | None' = None) -> 'AsyncIterator[AgentEvent]'"
    ),
    "Agent.handle": "(self, message: 'Message') -> 'Message'",
    "Agent.import_history": (
        "(self, session_id: 'str', messages: 'Sequence[dict[str, Any]]', *, "
        "user_id: 'str | None' = None) -> 'int'"
    ),
    # Added for human approval (seed 004 §4.3).
    "Agent.approve": (
        "(self, approval_id: 'str', *, session_id: 'str', user_id: 'str | None' = None) "
        "-> 'RunResult'"
    ),
    "Agent.reject": (
        "(self, approval_id: 'str', *, session_id: 'str', user_id: 'str | None' = None) "
        "-> 'RunResult'"
    ),
    "hermes.tools.validate_arguments": (
        "(schema: 'dict[str, Any]', args: 'Any') -> 'dict[str, Any]'"
    ),
    "hermes.models.hermes_format.parse_tool_calls": (
        "(text: 'str', *, tool_names: 'Iterable[str] | None' = None) -> 'ParsedOutput'"
    ),
    "hermes.testing.call": (
        "(name: 'str', arguments: 'dict[str, Any] | None' = None, *, "
        "id: 'str | None' = None, text: 'str' = '') -> 'ModelResponse'"
    ),
    "hermes.testing.calls": (
        "(*specs: 'tuple[str, dict[str, Any]]', ids: 'list[str] | None' = None, "
        "text: 'str' = '') -> 'ModelResponse'"
    ),
    "hermes.testing.say": "(text: 'str') -> 'ModelResponse'",
    # Added when the tool pipeline became steps (hermes.tools.pipeline). Changed deliberately
    # when the idempotency records got a protocol (docs/tool-pipeline.md): the executor is
    # handed records (``idempotency=``), not a path — tools/ opens no database itself.
    "ToolExecutor.__init__": (
        "(self, registry: 'ToolRegistry', *, state: 'PolicyState | None' = None, "
        "authorizer: 'Checker | None' = None, "
        "idempotency: 'IdempotencyRecords | RecordsPerWorkspace | None' = None, "
        "max_output_chars: 'int' = 20000, steps: 'Iterable[Step] | None' = None) -> 'None'"
    ),
    "ToolExecutor.run": (
        "(self, call: 'ToolCall', context: 'CallContext | ToolContext', *, "
        "signals: 'SignalMode' = 'result', max_output_chars: 'int | None' = None) "
        "-> 'ToolResult'"
    ),
    "ToolExecutor.insert": (
        "(self, step: 'Step', *, before: 'str | None' = None, after: 'str | None' = None) -> 'None'"
    ),
    "ToolExecutor.replace": "(self, name: 'str', step: 'Step') -> 'Step'",
    "hermes.tools.execute_tool_call": (
        "(registry: 'ToolRegistry', call: 'ToolCall', ctx: 'ToolContext | CallContext', *, "
        "max_output_chars: 'int' = 20000) -> 'ToolResult'"
    ),
    "hermes.testing.ScriptedModel.__init__": (
        "(self, steps: 'Iterable[Step]' = (), *, name: 'str' = 'scripted') -> 'None'"
    ),
    "hermes.testing.FunctionModel.__init__": (
        "(self, fn: 'ScriptFn', *, name: 'str' = 'function') -> 'None'"
    ),
}

CALLABLES: dict[str, Callable[..., Any]] = {
    "Agent.__init__": Agent.__init__,
    "Agent.run": Agent.run,
    "Agent.stream": Agent.stream,
    "Agent.handle": Agent.handle,
    "Agent.import_history": Agent.import_history,
    "Agent.approve": Agent.approve,
    "Agent.reject": Agent.reject,
    "hermes.tools.validate_arguments": validate_arguments,
    "hermes.models.hermes_format.parse_tool_calls": parse_tool_calls,
    "hermes.testing.call": hermes.testing.call,
    "hermes.testing.calls": hermes.testing.calls,
    "hermes.testing.say": hermes.testing.say,
    "ToolExecutor.__init__": ToolExecutor.__init__,
    "ToolExecutor.run": ToolExecutor.run,
    "ToolExecutor.insert": ToolExecutor.insert,
    "ToolExecutor.replace": ToolExecutor.replace,
    "hermes.tools.execute_tool_call": execute_tool_call,
    "hermes.testing.ScriptedModel.__init__": hermes.testing.ScriptedModel.__init__,
    "hermes.testing.FunctionModel.__init__": hermes.testing.FunctionModel.__init__,
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_public_signature_is_pinned(name: str) -> None:
    assert_contract(
        f"the signature of {name}", str(inspect.signature(CALLABLES[name])), SIGNATURES[name]
    )


@pytest.mark.parametrize(
    ("name", "kind"),
    [("Agent.run", "coroutine"), ("Agent.handle", "coroutine"), ("Agent.stream", "async gen")],
)
def test_agent_turn_methods_are_async(name: str, kind: str) -> None:
    fn = CALLABLES[name]
    actual = "async gen" if inspect.isasyncgenfunction(fn) else "coroutine"
    if actual == "coroutine":
        assert inspect.iscoroutinefunction(fn), f"{name} is neither async nor an async generator"
    assert_contract(f"{name} being a {kind} function", actual, kind)


# JSON -----------------------------------------------------------------------------------------


def _result(error: dict[str, str] | None = None) -> RunResult:
    return RunResult(
        reply="5",
        session_id="session-0001",
        state="awaiting_feedback",
        trace_id="t" * 32,
        tool_calls=[ToolCallRecord("add", {"a": 2, "b": 3}, True, call_id="c1")],
        outcome="ok" if error is None else "error",
        error=error,
    )


def test_run_result_json_keys_are_pinned() -> None:
    data = _result().to_json_dict()
    assert_contract(
        "the keys of RunResult.to_json_dict()",
        sorted(data),
        ["reply", "session_id", "state", "tool_calls", "trace_id"],
    )
    assert_contract(
        "the keys of a tool call in RunResult.to_json_dict()",
        sorted(data["tool_calls"][0]),
        ["arguments", "name", "ok"],
    )


def test_run_result_json_adds_error_only_for_a_failed_turn() -> None:
    data = _result({"type": "model_error", "message": "down"}).to_json_dict()
    assert_contract(
        "the keys of a failed RunResult.to_json_dict()",
        sorted(data),
        ["error", "reply", "session_id", "state", "tool_calls", "trace_id"],
    )
    assert_contract("the keys of RunResult error", sorted(data["error"]), ["message", "type"])


# the documented helpers behave as documented ------------------------------------------------


def test_parse_tool_calls_contract_shape() -> None:
    parsed = parse_tool_calls('Sure. <tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>')
    assert parsed.content == "Sure."
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("add", {"a": 1})]
    broken = parse_tool_calls("<tool_call>{not json")  # never raises
    assert broken.tool_calls == []


def test_validate_arguments_contract_names_every_offending_field() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    assert validate_arguments(schema, {"a": 1, "b": 2}) == {"a": 1, "b": 2}
    with pytest.raises(ToolArgumentError) as caught:
        validate_arguments(schema, {"a": "x"})
    message = str(caught.value)
    assert "a: expected integer" in message
    assert "b: missing required field" in message
    assert ToolArgumentError is hermes.ToolArgumentError


# the DESIGN.md example, executed -------------------------------------------------------------

# Copied verbatim from DESIGN.md "Public contracts → Python". It uses top-level ``await`` and a
# free name ``messages`` (a chat-format conversation), which the test provides.
DESIGN_EXAMPLE = '''\
from hermes import Agent, tool
from hermes.testing import FunctionModel, ScriptedModel, call, say

@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

def script(request):                      # request.messages: OpenAI chat-format dicts
    if request.messages[-1]["role"] == "tool":
        return say("The answer is 5.")
    return call("add", {"a": 2, "b": 3})

agent = Agent(model=FunctionModel(script), tools=[add], store="path/to/hermes.db")
result = await agent.run("what is 2+3?", session_id="session-0001", user_id="u1")
result.reply, result.state, result.trace_id
result.tool_calls                         # [.name, .arguments, .ok]
agent.import_history("session-0001", messages)   # bring an existing chat-format conversation in
'''

IMPORTED = [
    {"role": "user", "content": "Earlier question: what is 1+1?"},
    {"role": "assistant", "content": "Earlier answer: 2."},
]


async def test_design_example_runs_as_documented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the example's relative "path/to/hermes.db" lands here
    (tmp_path / "path" / "to").mkdir(parents=True)
    namespace: dict[str, Any] = {"messages": IMPORTED, "__name__": "design_example"}
    code = compile(DESIGN_EXAMPLE, "DESIGN.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    pending = eval(code, namespace)  # a coroutine, because the example awaits at top level
    assert inspect.iscoroutine(pending)
    await pending
    agent: Agent = namespace["agent"]
    try:
        result = namespace["result"]
        assert (result.reply, result.state) == ("The answer is 5.", "awaiting_feedback")
        assert len(result.trace_id) == 32
        assert [(c.name, c.arguments, c.ok) for c in result.tool_calls] == [
            ("add", {"a": 2, "b": 3}, True)
        ]
        items = await agent.store.read_items("session-0001", after_seq=0, limit=100)
        assert [i.content for i in items[-2:]] == [m["content"] for m in IMPORTED]
    finally:
        await agent.aclose()
    assert (tmp_path / "path" / "to" / "hermes.db").is_file()


def test_design_example_matches_the_design_document() -> None:
    """When the repository carries DESIGN.md, the pinned example must be its current text."""
    # The design map lives in the steering repo, laid beside this one as ../shared/.
    candidates = [REPO_ROOT.parent / "shared" / "DESIGN.md", REPO_ROOT / "docs" / "DESIGN.md"]
    found = [path for path in candidates if path.is_file()]
    if not found:
        pytest.skip("DESIGN.md is not in this repository (expected at ./ or docs/)")
    text = found[0].read_text(encoding="utf-8")
    assert_contract(
        f"the Python example of {found[0].name} (copied in DESIGN_EXAMPLE)",
        DESIGN_EXAMPLE in text,
        True,
    )


def test_run_result_json_adds_tools_failed_and_usage_only_when_they_apply() -> None:
    result = _result()
    result.tools_failed = True
    result.usage = {"prompt_tokens": 12, "completion_tokens": 7}
    data = result.to_json_dict()
    assert_contract(
        "the keys of RunResult.to_json_dict() with tools_failed and usage",
        sorted(data),
        ["reply", "session_id", "state", "tool_calls", "tools_failed", "trace_id", "usage"],
    )
    assert data["tools_failed"] is True
    assert_contract(
        "the keys of usage", sorted(data["usage"]), ["completion_tokens", "prompt_tokens"]
    )
