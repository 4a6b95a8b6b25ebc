"""Validation of a plan before anything runs (DESIGN.md, "Multi-call plans"; seed 003 §2.3).

:func:`check_plan` returns every problem, each naming its nodes:

- unknown tools (a node may call any tool the agent offers; a built-in that is not switched
  on is unknown) — of the node and of its compensation;
- unknown, missing or repeated node ids, self-dependencies and cycles (stdlib ``graphlib``);
- templates that are malformed, name an unknown plan parameter or a node that is not upstream
  (a node's compensation may also read the node itself; outputs may read any node);
- params that fail their tool's JSON Schema as far as they are known: a top-level argument
  holding a template is taken as present and unknown until the run resolves it;
- for a run nobody can approve, nodes whose tool needs a person's approval.

Linear in the size of the plan: a 10,000-node plan validates in well under a second
(``tests/tools/plans/test_validate.py`` holds one; ancestors are bitsets, schemas are compiled
once per tool and set of templated arguments).
"""

from __future__ import annotations

import graphlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hermes.errors import PlanInvalidError, ToolArgumentError
from hermes.tools.base import Tool
from hermes.tools.plans.spec import NodeSpec, PlanSpec
from hermes.tools.plans.templates import Ref, TemplateError, lookup_path, references, render
from hermes.tools.validation import validate_arguments

__all__ = [
    "PlanProblem",
    "ToolLookup",
    "approval_problems",
    "check_params",
    "check_plan",
    "raise_problems",
]

_MAX_SHOWN = 20
_MAX_CYCLE_SHOWN = 12


class ToolLookup(Protocol):
    """What holds the offered tools: a ``ToolRegistry`` or a ``dict`` of them."""

    def get(self, name: str, /) -> Tool | None: ...


@dataclass(frozen=True, slots=True)
class PlanProblem:
    """One reason a plan is refused: the nodes it is about and one sentence."""

    nodes: tuple[str, ...]
    message: str

    def to_dict(self) -> dict[str, Any]:
        """``{"nodes": [IDs], "message"}`` (``hermes plan validate --json``)."""
        return {"nodes": list(self.nodes), "message": self.message}


def check_plan(
    spec: PlanSpec,
    tools: ToolLookup,
    *,
    params: Mapping[str, Any] | None = None,
    approved: bool = True,
) -> list[PlanProblem]:
    """Every problem of ``spec`` against ``tools`` (empty: the plan may run). ``params``: the
    plan parameters when known (their values then stand in for ``{{params.…}}``);
    ``approved=False``: whoever starts the run cannot approve calls, so a node whose tool (or
    compensation) needs a person's approval is a problem too (:func:`approval_problems`)."""
    problems: list[PlanProblem] = []
    by_id = _index(spec.nodes, problems)
    _check_dependencies(spec.nodes, by_id, problems)
    order = _topological(spec.nodes, by_id, problems)
    ancestors = _Ancestors(spec.nodes, order)
    schemas = _SchemaChecks()
    for node in spec.nodes:
        _check_tools(node, tools, problems)
        _check_templates(node, spec, by_id, ancestors, problems)
        _check_arguments(node, tools, params, schemas, problems)
    for name, value in spec.outputs.items():
        _check_output(name, value, spec, by_id, problems)
    if not approved:
        problems.extend(approval_problems(spec, tools))
    return problems


def approval_problems(
    spec: PlanSpec, tools: ToolLookup, *, skip: Iterable[str] = ()
) -> list[PlanProblem]:
    """The nodes (not in ``skip``) whose tool or compensation needs a person's approval (seed
    004 §4.3), for a run nobody can approve: it is refused before anything runs rather than
    failing half-way, after other nodes took effect (a plan does not stop to ask)."""
    left_out = set(skip)
    problems: list[PlanProblem] = []
    for node in spec.nodes:
        if node.id in left_out:
            continue
        needs = [node.tool] if _needs_approval(tools, node.tool) else []
        if node.compensate is not None and _needs_approval(tools, node.compensate.tool):
            needs.append(node.compensate.tool)
        if needs:
            named = " and ".join(repr(name) for name in dict.fromkeys(needs))
            problems.append(
                PlanProblem(
                    (node.id,),
                    f"node {node.id} calls {named}, which needs a person's approval, and this "
                    "run cannot ask for one (approve it when starting: hermes plan run --approve)",
                )
            )
    return problems


def _needs_approval(tools: ToolLookup, name: str) -> bool:
    tool = tools.get(name)
    return tool is not None and tool.requires_approval


def raise_problems(problems: list[PlanProblem], *, what: str = "the plan") -> None:
    """``PlanInvalidError`` naming the problems (nothing when there are none)."""
    if not problems:
        return
    shown = "; ".join(p.message for p in problems[:_MAX_SHOWN])
    if len(problems) > _MAX_SHOWN:
        shown += f"; … ({len(problems) - _MAX_SHOWN} more)"
    raise PlanInvalidError(
        f"{what} is invalid: {shown} / 计划无效",
        problems=[(list(p.nodes), p.message) for p in problems],
    )


def check_params(spec: PlanSpec, given: Mapping[str, Any]) -> dict[str, Any]:
    """The plan's parameters ``given`` checked and coerced by their declared JSON Schemas
    (defaults filled in); ``PlanInvalidError`` naming every unknown, missing or wrong one."""
    properties = dict(spec.params)
    required = sorted(name for name, schema in spec.params.items() if "default" not in schema)
    schema = {"type": "object", "properties": properties, "required": required}
    try:
        return validate_arguments(schema, dict(given))
    except ToolArgumentError as exc:
        message = str(exc).replace("invalid arguments", f"invalid params of plan {spec.name!r}", 1)
        raise PlanInvalidError(f"{message} / 计划参数无效", problems=[([], message)]) from None
    except ValueError as exc:  # a declared schema that is not a JSON Schema
        message = f"plan {spec.name!r} declares params with an invalid schema: {exc}"
        raise PlanInvalidError(message, problems=[([], message)]) from None


def _index(nodes: list[NodeSpec], problems: list[PlanProblem]) -> dict[str, NodeSpec]:
    by_id: dict[str, NodeSpec] = {}
    for node in nodes:
        if node.id in by_id:
            problems.append(PlanProblem((node.id,), f"node id {node.id!r} appears twice"))
        by_id[node.id] = node
    return by_id


def _check_dependencies(
    nodes: list[NodeSpec], by_id: Mapping[str, NodeSpec], problems: list[PlanProblem]
) -> None:
    for node in nodes:
        for dep in node.depends_on:
            if dep == node.id:
                problems.append(PlanProblem((node.id,), f"node {node.id} depends on itself"))
            elif dep not in by_id:
                problems.append(
                    PlanProblem((node.id,), f"node {node.id} depends on unknown node {dep!r}")
                )


def _topological(
    nodes: list[NodeSpec], by_id: Mapping[str, NodeSpec], problems: list[PlanProblem]
) -> list[str]:
    """The node ids in an order where dependencies come first. With a cycle (a problem noted)
    the order holds only the nodes neither on a cycle nor downstream of one, so the checks of
    the rest of the plan still run: every problem is reported at once."""
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for node in nodes:
        sorter.add(node.id, *(d for d in node.depends_on if d in by_id and d != node.id))
    try:
        return list(sorter.static_order())
    except graphlib.CycleError as exc:
        cycle = list(dict.fromkeys(exc.args[1]))
        shown = " → ".join([*cycle[:_MAX_CYCLE_SHOWN], cycle[0]])
        problems.append(PlanProblem(tuple(cycle), f"the dependencies form a cycle: {shown}"))
    return _acyclic_order(nodes, by_id)


def _acyclic_order(nodes: list[NodeSpec], by_id: Mapping[str, NodeSpec]) -> list[str]:
    """Kahn's algorithm over the nodes reachable without passing a cycle (graphlib stops at the
    first cycle it meets and gives no partial order)."""
    deps = {node.id: {d for d in node.depends_on if d in by_id and d != node.id} for node in nodes}
    dependants: dict[str, list[str]] = {node_id: [] for node_id in deps}
    for node_id, upstream in deps.items():
        for dep in upstream:
            dependants[dep].append(node_id)
    waiting = {node_id: len(upstream) for node_id, upstream in deps.items()}
    order = [node_id for node_id, count in waiting.items() if count == 0]
    for node_id in order:  # grows while it is walked
        for dependant in dependants[node_id]:
            waiting[dependant] -= 1
            if waiting[dependant] == 0:
                order.append(dependant)
    return order


class _Ancestors:
    """Who is upstream of whom: one bitset of ancestors per node, built in topological order."""

    def __init__(self, nodes: list[NodeSpec], order: list[str]) -> None:
        self._bit = {node_id: 1 << i for i, node_id in enumerate(order)}
        by_id = {node.id: node for node in nodes}
        self._upstream: dict[str, int] = {}
        for node_id in order:
            mask = 0
            for dep in by_id[node_id].depends_on:
                if dep in self._bit:
                    mask |= self._upstream.get(dep, 0) | self._bit[dep]
            self._upstream[node_id] = mask

    def is_upstream(self, ancestor: str, node: str) -> bool | None:
        """Whether ``ancestor`` is upstream of ``node``; None when ``node`` is on a cycle or
        downstream of one (no order to tell)."""
        if node not in self._upstream:
            return None
        return bool(self._upstream[node] & self._bit.get(ancestor, 0))


def _check_tools(node: NodeSpec, tools: ToolLookup, problems: list[PlanProblem]) -> None:
    if tools.get(node.tool) is None:
        problems.append(PlanProblem((node.id,), f"node {node.id} calls unknown tool {node.tool!r}"))
    if node.compensate is not None and tools.get(node.compensate.tool) is None:
        problems.append(
            PlanProblem(
                (node.id,),
                f"the compensation of node {node.id} calls unknown tool {node.compensate.tool!r}",
            )
        )


def _check_templates(
    node: NodeSpec,
    spec: PlanSpec,
    by_id: Mapping[str, NodeSpec],
    ancestors: _Ancestors,
    problems: list[PlanProblem],
) -> None:
    sources: list[tuple[str, Any, bool]] = [("params", node.params, False)]
    if node.compensate is not None:
        sources.append(("compensation params", node.compensate.params, True))
    for where, value, may_read_self in sources:
        try:
            refs = list(references(value))
        except TemplateError as exc:
            problems.append(PlanProblem((node.id,), f"node {node.id} {where}: {exc}"))
            continue
        for ref in refs:
            message = _reference_problem(ref, node, spec, by_id, ancestors, may_read_self)
            if message is not None:
                named = (
                    (node.id,) if ref.node is None or ref.node == node.id else (node.id, ref.node)
                )
                problems.append(PlanProblem(named, f"node {node.id} {where}: {message}"))


def _reference_problem(  # noqa: PLR0917 - one check, its whole context
    ref: Ref,
    node: NodeSpec,
    spec: PlanSpec,
    by_id: Mapping[str, NodeSpec],
    ancestors: _Ancestors,
    may_read_self: bool,
) -> str | None:
    if ref.node is None:
        name = ref.path[0]
        if name not in spec.params:
            declared = ", ".join(sorted(spec.params)) or "none"
            return f"{ref.text} names undeclared plan parameter {name!r} (declared: {declared})"
        return None
    if ref.node not in by_id:
        return f"{ref.text} reads unknown node {ref.node!r}"
    if ref.node == node.id:
        return None if may_read_self else f"{ref.text} reads the node's own result"
    if ref.node in node.depends_on:
        return None
    if ancestors.is_upstream(ref.node, node.id) is False:
        return (
            f"{ref.text} reads node {ref.node}, which is not upstream of {node.id} "
            f"(add it to depends_on)"
        )
    return None


def _check_output(
    name: str,
    value: Any,
    spec: PlanSpec,
    by_id: Mapping[str, NodeSpec],
    problems: list[PlanProblem],
) -> None:
    try:
        refs = list(references(value))
    except TemplateError as exc:
        problems.append(PlanProblem((), f"output {name!r}: {exc}"))
        return
    for ref in refs:
        if ref.node is None and ref.path[0] not in spec.params:
            problems.append(
                PlanProblem((), f"output {name!r}: {ref.text} names an undeclared parameter")
            )
        elif ref.node is not None and ref.node not in by_id:
            problems.append(
                PlanProblem((), f"output {name!r}: {ref.text} reads unknown node {ref.node!r}")
            )


class _SchemaChecks:
    """Tool schemas with their templated arguments opened up, compiled once per (tool, set
    of templated arguments) — ``validate_arguments`` caches by schema identity."""

    def __init__(self) -> None:
        self._schemas: dict[tuple[int, frozenset[str]], dict[str, Any]] = {}

    def schema(self, tool: Tool, templated: frozenset[str]) -> dict[str, Any]:
        if not templated:
            return tool.parameters
        key = (id(tool.parameters), templated)
        held = self._schemas.get(key)
        if held is None:
            properties = dict(tool.parameters.get("properties") or {})
            for name in templated:
                if name in properties:
                    properties[name] = {}  # known at run time: any value passes now
            held = {**tool.parameters, "properties": properties}
            self._schemas[key] = held
        return held


def _check_arguments(
    node: NodeSpec,
    tools: ToolLookup,
    params: Mapping[str, Any] | None,
    schemas: _SchemaChecks,
    problems: list[PlanProblem],
) -> None:
    calls: list[tuple[str, str, dict[str, Any]]] = [("params", node.tool, node.params)]
    if node.compensate is not None:
        calls.append(("compensation params", node.compensate.tool, node.compensate.params))
    for where, tool_name, arguments in calls:
        tool = tools.get(tool_name)
        if tool is None:
            continue
        known, templated = _known_arguments(arguments, params)
        if known is None:
            continue  # a malformed template: reported by _check_templates
        try:
            validate_arguments(schemas.schema(tool, templated), known)
        except ToolArgumentError as exc:
            text = str(exc).replace("invalid arguments", f"invalid {where}", 1)
            problems.append(PlanProblem((node.id,), f"node {node.id} ({tool_name}): {text}"))
        except ValueError:
            continue  # the tool's own schema is broken: its calls will say so


def _known_arguments(
    arguments: Mapping[str, Any], params: Mapping[str, Any] | None
) -> tuple[dict[str, Any] | None, frozenset[str]]:
    """The arguments whose values are known now (``{{params.…}}`` filled in when ``params``
    are given), and the names of the others (held open: ``None`` placeholders)."""
    known: dict[str, Any] = {}
    templated: list[str] = []
    for name, value in arguments.items():
        try:
            refs = list(references(value))
        except TemplateError:
            return None, frozenset()
        if not refs:
            known[name] = value
        elif params is not None and all(r.node is None for r in refs):
            try:
                known[name] = render(value, lambda ref: _param_value(ref, params))
            except TemplateError:
                templated.append(name)
                known[name] = None
        else:
            templated.append(name)
            known[name] = None
    return known, frozenset(templated)


def _param_value(ref: Ref, params: Mapping[str, Any]) -> Any:
    return lookup_path(params, ref, what="the plan's params")


def node_ids(nodes: Iterable[NodeSpec]) -> list[str]:
    """The ids of ``nodes`` in plan order."""
    return [node.id for node in nodes]
