"""The executor cases of ``executor_overhead.py``, one source tree against another, side by side.

Two worker processes, one per tree (``--a`` and ``--b``: directories holding the ``hermes``
package), each calling the same async no-op tools (``executor_overhead.py``'s ``plain`` and
``guarded``, and one tool per policy made from them) through its tree's executor, so a call's
time is the executor's own cost. The driver alternates small batches between them (A B A B …,
``ab_workers.alternate``), so a shared, noisy machine slows both alike, and prints each side's
median per case and the B/A ratio. The cases:

- ``plain``: the plain tool, no dependencies handed in (``executor_overhead.py``'s plain path);
  ``plain, full context``: the same tool with every dependency there, as the agent calls it;
- one case per policy, the plain tool with only that policy on: retry, circuit breaker,
  idempotency (a new key each call: a claim and a record, two SQLite writes), result cache (a
  miss), permissions (an allow-all authorizer), approval (approved), output checks (parser,
  output schema, ``post_validate``, output limit);
- ``all policies (new key)`` and ``all policies (replay)``: ``guarded``, every policy on, as in
  ``executor_overhead.py`` (replay: arguments already seen, answered by the idempotency store).

The worker speaks both executor APIs, chosen when it starts by what its tree holds: the old one
(one ``execute_tool_call``, dependencies in each call's ``ToolContext.extras``) and the
pipeline (``hermes.tools.pipeline``: a ``ToolExecutor`` built once per case with its
dependencies, a ``CallContext`` per call). The process sandbox is left out (its time is the
child interpreter's start; ``executor_overhead.py --sandbox-calls`` measures it). Run, against
the commit before the pipeline:

    mkdir -p /tmp/before && git archive bdc31f1 src | tar -x -C /tmp/before
    .venv/bin/python bench/ab_executor.py --a /tmp/before/src --b src [--rounds 30 --batch 200]

(``--a src --b src`` measures the noise: every ratio should be about 1.0.)
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import inspect
import itertools
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ab_workers import ab_parser, alternate, print_medians, start

if TYPE_CHECKING:
    from hermes.models.base import ToolCall
    from hermes.tools import Tool, ToolRegistry, ToolResult
    from hermes.tools.policies import PolicyState

#: One call through a case's executor.
Run = Callable[["ToolCall"], Awaitable["ToolResult"]]
#: An executor API: ``full`` -> the run of one case (``full``: every dependency handed in).
Api = Callable[[bool], Run]

SESSION, USER = "bench-session", "u1"

#: case -> the policy fields of ``guarded`` the plain tool gets for it.
POLICIES = {
    "retry": ("retry",),
    "circuit breaker": ("circuit_breaker",),
    "idempotency (new key)": ("idempotency_key",),
    "cache_ttl (miss)": ("cache_ttl",),
    "permissions": ("permissions",),
    "approval (approved)": ("requires_approval",),
    "output checks": ("parser", "output_schema", "post_validate", "max_output_chars"),
}
#: case -> (tool, every dependency handed in?, new arguments each call?)
CASES: dict[str, tuple[str, bool, bool]] = {
    "plain": ("plain", False, True),
    "plain, full context": ("plain", True, True),
    **{case: (f"policy_{i}", True, True) for i, case in enumerate(POLICIES)},
    "all policies (new key)": ("guarded", True, True),
    "all policies (replay)": ("guarded", True, False),
}


def old_api(registry: ToolRegistry, state: PolicyState, authorizer: Any, path: Path) -> Api:
    """Commit bdc31f1: ``execute_tool_call``; the dependencies travel in each call's extras."""
    from hermes.tools import ToolContext
    from hermes.tools.executor import execute_tool_call

    def for_case(full: bool) -> Run:
        def run(call: ToolCall) -> Awaitable[ToolResult]:
            extras: dict[str, Any] = {}
            if full:
                extras = {
                    "policy_state": state,
                    "authorizer": authorizer,
                    "approved_call_ids": frozenset({call.id}),
                    "idempotency_path": path,
                }
            ctx = ToolContext(session_id=SESSION, user_id=USER, call_id=call.id, extras=extras)
            return execute_tool_call(registry, call, ctx)

        return run

    return for_case


def new_api(registry: ToolRegistry, state: PolicyState, authorizer: Any, path: Path) -> Api:
    """The pipeline: a ``ToolExecutor`` given its dependencies once, a ``CallContext`` a call."""
    from hermes.tools.pipeline import CallContext, ToolExecutor

    records: dict[str, Any] = {"idempotency_path": path}  # before the records protocol
    if "idempotency" in inspect.signature(ToolExecutor).parameters:
        from hermes.storage.sqlite.idempotency import SQLiteIdempotencyRecords

        records = {"idempotency": SQLiteIdempotencyRecords(path)}  # what an agent gets

    def for_case(full: bool) -> Run:
        if full:
            executor = ToolExecutor(registry, state=state, authorizer=authorizer, **records)
        else:
            executor = ToolExecutor(registry)

        def run(call: ToolCall) -> Awaitable[ToolResult]:
            ctx = CallContext(session_id=SESSION, user_id=USER, call_id=call.id, approved=full)
            return executor.run(call, ctx)

        return run

    return for_case


def _tools() -> list[Tool]:
    from executor_overhead import guarded, plain
    from hermes.tools import as_tool

    base, full = as_tool(plain), as_tool(guarded)
    one_policy = [
        dataclasses.replace(base, name=f"policy_{i}", **{f: getattr(full, f) for f in fields})
        for i, fields in enumerate(POLICIES.values())
    ]
    return [base, full, *one_policy]


async def _serve(runs: dict[str, Run]) -> None:
    """Read a case and a count per line, answer with the times of that many calls (µs)."""
    print(json.dumps({"ready": True}), flush=True)
    from hermes.models.base import ToolCall

    counters = {case: itertools.count() for case in CASES}
    for line in sys.stdin:
        command = json.loads(line)
        case = command["case"]
        name, _, fresh = CASES[case]
        times = []
        for _ in range(command["count"]):
            i = next(counters[case])
            call = ToolCall(f"call-{i}", name, {"n": i if fresh else i % 8})
            started = time.perf_counter_ns()
            result = await runs[case](call)
            times.append((time.perf_counter_ns() - started) / 1000)
            assert result.ok, result
        print(json.dumps(times), flush=True)


async def _worker() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    import hermes
    from executor_overhead import AllowAll
    from hermes.tools import ToolRegistry
    from hermes.tools.policies import PolicyState

    pipeline = importlib.util.find_spec("hermes.tools.pipeline") is not None
    api_of = new_api if pipeline else old_api
    print("ready", hermes.__file__, api_of.__name__, file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        state = PolicyState()
        api = api_of(ToolRegistry(_tools()), state, AllowAll(), Path(tmp) / "idempotency.db")
        await _serve({case: api(full) for case, (_, full, _) in CASES.items()})
        await state.close()


def main() -> None:
    args = ab_parser(__doc__.splitlines()[0], rounds=30, batch=200).parse_args()
    if args.worker:
        asyncio.run(_worker())
        return
    sides = {"A": start(__file__, args.a), "B": start(__file__, args.b)}
    cases = dict.fromkeys(CASES, ("A", "B"))
    times = alternate(sides, cases, args)
    print(json.dumps(print_medians(times, cases, "µs")))


if __name__ == "__main__":
    main()
