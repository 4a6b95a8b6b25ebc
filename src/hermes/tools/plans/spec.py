"""The plan format (DESIGN.md, "Multi-call plans"; seed 003 §2.3: a DAG of tool calls as data).

::

    {"name"?, "description"?, "params"?: {NAME: JSON Schema},
     "nodes": [{"id", "tool", "params", "depends_on": [IDs],
                "compensate"?: {"tool", "params"},
                "when"?: "all_success" | "all_done" | "none_failed"}],
     "outputs"?: {NAME: TEMPLATE}}

JSON or YAML. Unknown fields are refused (constraint over freedom: a misspelt ``depends_on``
must not silently drop an edge). :func:`load_plan` reads a file, :func:`parse_plan` a text or
already-parsed data; both raise :class:`~hermes.errors.PlanInvalidError` naming the nodes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hermes.errors import PlanInvalidError

__all__ = [
    "NODE_ID",
    "CompensateSpec",
    "NodeSpec",
    "PlanSpec",
    "TriggerRule",
    "load_plan",
    "parse_plan",
]

#: Airflow's names: run when every upstream node succeeded (default), when all ended whatever
#: their outcome, or when none failed (skipped ones allowed).
TriggerRule = Literal["all_success", "all_done", "none_failed"]
#: A node id: what ``{{ID.result…}}`` and ``depends_on`` name.
NODE_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,127}")
_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
#: The largest plan file read (bytes): a 10,000-node plan fits with room to spare.
MAX_PLAN_BYTES = 16 * 1024 * 1024
_MAX_SHOWN_PROBLEMS = 20


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CompensateSpec(_Strict):
    """What undoes a node that succeeded (saga): one more tool call, templates allowed
    (``{{n1.result.booking_id}}`` is the node's own result)."""

    tool: str = Field(min_length=1, max_length=128)
    params: dict[str, Any] = Field(default_factory=dict)


class NodeSpec(_Strict):
    """One tool call of the plan."""

    id: str
    tool: str = Field(min_length=1, max_length=128)
    params: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[str] = Field(default_factory=list)
    compensate: CompensateSpec | None = None
    when: TriggerRule = "all_success"

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if value == "params" or not NODE_ID.fullmatch(value):
            raise ValueError(
                f"invalid node id {value[:60]!r}: use 1-128 of A-Z a-z 0-9 _ - starting with a "
                "letter, digit or _ (and not 'params') / 节点 id 不合法"
            )
        return value

    @field_validator("depends_on", mode="before")
    @classmethod
    def _one_dependency(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class PlanSpec(_Strict):
    """A whole plan: its nodes, declared parameters (JSON Schemas) and outputs (templates)."""

    name: str = Field(default="plan", min_length=1, max_length=256)
    description: str | None = Field(default=None, max_length=2000)
    params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    nodes: list[NodeSpec] = Field(min_length=1)
    outputs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("params")
    @classmethod
    def _check_param_names(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name in value:
            if not _PARAM_NAME.fullmatch(name):
                raise ValueError(f"invalid plan parameter name {name[:60]!r}: use A-Z a-z 0-9 _")
        return value

    def to_data(self) -> dict[str, Any]:
        """The plan as JSON data (what a run record keeps: ``PlanRuns.create(spec=…)``)."""
        return self.model_dump(mode="json", exclude_none=True)


def parse_plan(source: str | bytes | Mapping[str, Any], *, what: str = "the plan") -> PlanSpec:
    """The plan in ``source`` (JSON or YAML text, or parsed data); ``PlanInvalidError`` with
    every problem, each naming its nodes."""
    data: Any = source
    if isinstance(source, bytes | str):
        data = _parse_text(source if isinstance(source, str) else _decode(source, what), what)
    if not isinstance(data, Mapping):
        kind = type(data).__name__
        raise PlanInvalidError(f"{what} must be an object with 'nodes', got {kind} / 计划格式错误")
    try:
        return PlanSpec.model_validate(data)
    except ValidationError as exc:
        problems = _problems(exc, data)
        raise PlanInvalidError(_summary(what, problems), problems=problems) from None


def load_plan(path: str | Path) -> PlanSpec:
    """The plan file at ``path`` (``.json``, ``.yaml``/``.yml``, or either by content); its
    ``name`` defaults to the file's stem."""
    file = Path(path)
    try:
        if file.stat().st_size > MAX_PLAN_BYTES:
            raise PlanInvalidError(
                f"plan file {file} is larger than {MAX_PLAN_BYTES // (1024 * 1024)} MiB "
                "/ 计划文件过大"
            )
        raw = file.read_bytes()
    except OSError as exc:
        raise PlanInvalidError(
            f"cannot read plan file {file}: {exc.strerror or exc} / 无法读取计划文件"
        ) from None
    spec = parse_plan(raw, what=f"plan file {file}")
    if "name" not in spec.model_fields_set and file.stem:
        # ``hermes plan list`` then tells one file's runs from another's.
        spec = spec.model_copy(update={"name": file.stem[:256]})
    return spec


def _decode(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise PlanInvalidError(f"{what} is not UTF-8 text / 计划不是 UTF-8 文本") from None


def _parse_text(text: str, what: str) -> Any:
    if len(text) > MAX_PLAN_BYTES:
        raise PlanInvalidError(f"{what} is too large / 计划过大")
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(text)
        except ValueError:
            pass  # YAML flow style also starts with "{"
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise PlanInvalidError(
            f"{what} is neither valid JSON nor YAML{where} / 计划既不是合法的 JSON 也不是 YAML"
        ) from None


def _problems(exc: ValidationError, data: Mapping[str, Any]) -> list[tuple[list[str], str]]:
    nodes = data.get("nodes")
    problems: list[tuple[list[str], str]] = []
    for error in exc.errors():
        loc = list(error["loc"])
        named: list[str] = []
        if len(loc) >= 2 and loc[0] == "nodes" and isinstance(loc[1], int):
            named = [_node_label(nodes, loc[1])]
            loc = loc[2:]
        field = ".".join(str(part) for part in loc) or "(the node)"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown field (not part of the plan format)"
        where = f"node {named[0]}: " if named else ""
        problems.append((named, f"{where}{field}: {message}"))
    return problems


def _node_label(nodes: Any, index: int) -> str:
    if isinstance(nodes, list) and index < len(nodes):
        node = nodes[index]
        if isinstance(node, Mapping) and isinstance(node.get("id"), str) and node["id"]:
            return str(node["id"])[:128]
    return f"#{index + 1}"


def _summary(what: str, problems: list[tuple[list[str], str]]) -> str:
    shown = "; ".join(message for _, message in problems[:_MAX_SHOWN_PROBLEMS])
    more = len(problems) - _MAX_SHOWN_PROBLEMS
    if more > 0:
        shown += f"; … ({more} more)"
    return f"{what} is invalid: {shown} / 计划无效"
