"""``hermes plan validate|run|list|resume`` (DESIGN.md, "More CLI", Plans; docs/plans.md).

- ``plan validate FILE [--json]``: exit 0 valid, 2 invalid naming the nodes; ``--json``:
  ``{"valid", "errors": [{"nodes": [IDs], "message"}]}``. Params are checked against their
  tools' schemas as far as they are known, with the configured MCP servers connected (bounded).
- ``plan run FILE|TEMPLATE [--param K=V ...] [--json]``: an existing path is a file, else a
  template of ``plans.dir`` (default ``./plans``); ``V`` is JSON when it parses, else a string,
  then coerced by the param's schema. ``run_id: R`` goes to stderr as the run starts; a live
  table of node states on a terminal (plain lines otherwise); at the end the ``plan run --json``
  object (``--json``) or a table. Exit 0 succeeded, 3 failed or compensated, 2 refused.
- ``plan list [--json]``: the runs, newest first (run_id, plan, status, started_at).
- ``plan resume RUN_ID [--json]``: continue a run cut off by a crash, as ``plan run``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.live import Live
from rich.table import Table
from rich.text import Text

from hermes.channels.cli.app import JsonFlag, app, loaded_config, open_agent, run_async, with_agent
from hermes.channels.cli.output import err, fail, note, out, write_json, write_text
from hermes.errors import HermesError, InvalidInputError, PlanInvalidError
from hermes.session.ids import validate_session_id, validate_user_id
from hermes.tools.plans import PlanEvent, PlanSpec, load_plan, run_json
from hermes.tools.plans.validate import check_plan

if TYPE_CHECKING:
    from hermes.agent.agent import Agent
    from hermes.agent.plans import AgentPlans
    from hermes.tools.plan_runs import PlanRun

plan_app = typer.Typer(
    help="Multi-call plans: validate, run, list, resume. / 多步调用计划：校验、运行、列表、恢复。",
    no_args_is_help=True,
)
app.add_typer(plan_app, name="plan")

#: Exit code of ``plan run``/``resume`` when the run failed or was compensated.
EXIT_RUN_FAILED = 3
EXIT_INVALID = 2
#: How long ``plan validate`` waits for the configured MCP servers.
MCP_CONNECT_TIMEOUT_S = 15.0

TargetArg = Annotated[str, typer.Argument(help="A plan file, or a template of plans.dir.")]
ParamOption = Annotated[
    list[str] | None,
    typer.Option("--param", "-p", help="K=V (V is JSON when it parses, else a string)."),
]
SessionOpt = Annotated[
    str | None, typer.Option("--session", "-s", help="Session the finished run is recorded in.")
]
UserOpt = Annotated[
    str | None, typer.Option("--user", "-u", help="User id (default: agent.default_user).")
]
ApproveOpt = Annotated[
    bool,
    typer.Option(
        "--approve",
        help="You approve the calls of this run that need a person's approval (without it, "
        "a plan holding such a node is refused before anything runs).",
    ),
]


@plan_app.command("validate")
def plan_validate(target: TargetArg, as_json: JsonFlag = False) -> None:
    """Check a plan without running it. / 校验计划（不运行）。"""

    async def check(agent: Agent) -> list[dict[str, Any]]:
        spec = _load_spec(agent, target)
        await agent.connect_mcp(timeout=MCP_CONNECT_TIMEOUT_S)
        return [p.to_dict() for p in check_plan(spec, agent.tools)]

    try:
        errors = _with_agent(check)
    except PlanInvalidError as exc:
        errors = _problem_dicts(exc)
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json({"valid": not errors, "errors": errors})
    elif not errors:
        write_text(f"{target}: valid / 计划有效")
    else:
        for error in errors:
            nodes = ", ".join(error["nodes"]) or "(plan)"
            err.print(Text.assemble(("invalid ", "bold red"), f"[{nodes}] ", error["message"]))
    if errors:
        raise typer.Exit(code=EXIT_INVALID)


@plan_app.command("run")
def plan_run(
    target: TargetArg,
    *,
    param: ParamOption = None,
    session: SessionOpt = None,
    user: UserOpt = None,
    approve: ApproveOpt = False,
    as_json: JsonFlag = False,
) -> None:
    """Run a plan file or template. / 运行计划文件或模板。"""
    try:
        params = parse_params(param or [])
        session_id = None if session is None else validate_session_id(session)
        user_id = _user(user)
    except HermesError as exc:
        fail(exc, as_json)

    async def start(plans: AgentPlans, watch: Callable[[PlanEvent], None]) -> PlanRun:
        spec = _load_spec(plans.agent, target)
        await plans.agent.connect_mcp(timeout=MCP_CONNECT_TIMEOUT_S)
        return await plans.start(
            spec, params, user_id=user_id, session_id=session_id, on_event=watch
        )

    _finish(_drive(start, as_json, approve=approve), as_json)


@plan_app.command("resume")
def plan_resume(
    run_id: Annotated[str, typer.Argument(help="The run's id (hermes plan list).")],
    approve: ApproveOpt = False,
    as_json: JsonFlag = False,
) -> None:
    """Continue a run that was cut off. / 继续一个被中断的计划运行。"""

    async def resume(plans: AgentPlans, watch: Callable[[PlanEvent], None]) -> PlanRun:
        await plans.agent.connect_mcp(timeout=MCP_CONNECT_TIMEOUT_S)
        return await plans.resume(run_id, on_event=watch)

    _finish(_drive(resume, as_json, approve=approve), as_json)


@plan_app.command("list")
def plan_list(as_json: JsonFlag = False) -> None:
    """List plan runs, newest first. / 列出计划运行记录。"""
    from hermes.agent import compose

    loaded = loaded_config()
    path = loaded.store_path
    if not path.exists():  # no database yet: no run was ever recorded (and listing creates none)
        entries: list[dict[str, Any]] = []
    else:
        store = compose.open_store(path)
        runs = compose.open_plan_runs(store)
        run_async(store.close)  # only its place was needed: plans.db beside it

        async def listing() -> list[dict[str, Any]]:
            try:
                return [
                    {"run_id": r.run_id, "plan": r.plan, "status": r.status,
                     "started_at": _iso(r.started_at)}
                    for r in await runs.list_runs(limit=200)
                ]  # fmt: skip
            finally:
                await runs.close()

        entries = run_async(listing)
    if as_json:
        write_json(entries)
        return
    if not entries:
        note("no plan runs yet / 还没有计划运行记录")
        return
    table = Table()
    for column in ("run_id", "plan", "status", "started_at"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        table.add_row(entry["run_id"], entry["plan"], entry["status"], entry["started_at"])
    out.print(table)


def parse_params(items: list[str]) -> dict[str, Any]:
    """``K=V`` pairs as a dict: ``V`` is JSON when it parses, else the string as written."""
    params: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise InvalidInputError(f"--param takes K=V, got {item[:80]!r} / 参数格式应为 K=V")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        params[key.strip()] = value
    return params


def _user(user: str | None) -> str:
    if user is not None:
        return validate_user_id(user)
    return loaded_config().config.agent.default_user_id


def _load_spec(agent: Agent, target: str) -> PlanSpec:
    """An existing path is a plan file, else a template of ``plans.dir``."""
    from hermes.agent.plans import plan_setup

    if Path(target).exists():
        return load_plan(target)
    return plan_setup(agent).library.load(target)


def _problem_dicts(exc: PlanInvalidError) -> list[dict[str, Any]]:
    if exc.problems:
        return [{"nodes": nodes, "message": message} for nodes, message in exc.problems]
    return [{"nodes": [], "message": exc.message}]


def _with_agent(fn: Callable[[Agent], Awaitable[Any]]) -> Any:
    agent = open_agent(loaded_config())
    return run_async(lambda: with_agent(agent, fn))


def _drive(
    action: Callable[[AgentPlans, Callable[[PlanEvent], None]], Awaitable[PlanRun]],
    as_json: bool,
    *,
    approve: bool,
) -> PlanRun:
    """Run ``action`` with the agent's plans and a live view; refusals exit 2. ``approve``:
    the person at the terminal approves the calls that need it (``--approve``)."""
    from hermes.agent.plans import AgentPlans

    async def go(agent: Agent) -> PlanRun:
        async with AgentPlans(agent, approved=approve) as plans:
            view = _LiveView()
            try:
                return await action(plans, view.watch)
            finally:
                view.stop()

    try:
        result: PlanRun = _with_agent(go)
    except KeyboardInterrupt:
        raise typer.Exit(code=130) from None
    except HermesError as exc:
        fail(exc, as_json)
    return result


def _finish(run: PlanRun, as_json: bool) -> None:
    if as_json:
        write_json(run_json(run))
    else:
        out.print(_table(run))
        if run.outputs:
            write_text(json.dumps({"outputs": run.outputs}, ensure_ascii=False, default=str))
        if run.error is not None:
            err.print(Text.assemble(("error: ", "bold red"), run.error.message))
    if run.status != "succeeded":
        raise typer.Exit(code=EXIT_RUN_FAILED)


class _LiveView:
    """Node states as they change: a live table on a terminal, plain lines otherwise (stderr;
    stdout stays for the result). ``run_id: R`` is written as the run starts."""

    def __init__(self) -> None:
        self.states: dict[str, tuple[str, str]] = {}
        self.live: Live | None = None

    def watch(self, event: PlanEvent) -> None:
        if event.kind == "plan_started":
            sys.stderr.write(f"run_id: {event.run_id}\n")
            sys.stderr.flush()
            if err.is_terminal:
                self.live = Live(self._render(), console=err, refresh_per_second=8, transient=True)
                self.live.start()
            return
        if event.node_id is None:
            return
        detail = "" if event.error is None else f"{event.error.type}: {event.error.message}"
        status = str(event.status)
        if event.kind == "compensation" and event.error is not None:
            status = "compensation failed"
        self.states[event.node_id] = (status, detail)
        if self.live is not None:
            self.live.update(self._render())
        else:
            err.print(Text(f"{event.node_id} {status}" + (f" — {detail}" if detail else "")))

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def _render(self) -> Table:
        table = Table(title="plan")
        table.add_column("node")
        table.add_column("status")
        table.add_column("detail", overflow="fold")
        for node_id, (status, detail) in self.states.items():
            table.add_row(node_id, status, detail[:120])
        return table


def _table(run: PlanRun) -> Table:
    table = Table(title=f"{run.plan} · {run.run_id} · {run.status}")
    table.add_column("node")
    table.add_column("status")
    table.add_column("result / error", overflow="fold")
    for node_id, node in run.nodes.items():
        if node.error is not None:
            detail = f"{node.error.type}: {node.error.message}"
        elif node.status in ("succeeded", "compensated"):
            detail = json.dumps(node.result, ensure_ascii=False, default=str)[:200]
        else:
            detail = ""
        if node.compensation_error is not None:
            detail += f" (compensation failed: {node.compensation_error.message})"
        table.add_row(node_id, node.status, detail)
    return table


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")
