"""The ``hermes`` command line (typer + rich).

stdout carries what a person or a program asked for (the reply, or one JSON object with
``--json``); errors go to stderr as one clear sentence, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from hermes.agent.agent import Agent
from hermes.agent.factory import build_agent
from hermes.config import LoadedConfig, load_config
from hermes.errors import HermesError, InvalidInputError

T = TypeVar("T")

app = typer.Typer(
    name="hermes",
    help="Hermes — a strict, fast, message-driven agent runtime. / 消息驱动的智能体运行时。",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
sessions_app = typer.Typer(
    help="Inspect stored sessions. / 查看已保存的会话。", no_args_is_help=True
)
tools_app = typer.Typer(help="Inspect available tools. / 查看可用工具。", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")
app.add_typer(tools_app, name="tools")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="Config file (else $HERMES_CONFIG, ./hermes.yaml, "
        "~/.hermes/hermes.yaml, embedded defaults).",
    ),
]


class CliState:
    config_path: Path | None = None


STATE = CliState()


@app.callback()
def _root(config: ConfigOption = None) -> None:
    STATE.config_path = config


def loaded_config() -> LoadedConfig:
    return load_config(STATE.config_path)


def run_async(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine from a synchronous command."""

    async def main() -> T:
        return await factory()

    return asyncio.run(main())


async def _with_agent(agent: Agent, fn: Callable[[Agent], Awaitable[T]]) -> T:
    try:
        return await fn(agent)
    finally:
        await agent.aclose()


def read_stdin_text() -> str:
    """Standard input as UTF-8 text; invalid bytes give a clear error, not a traceback."""
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"standard input is not valid UTF-8 (byte {exc.start}) / 标准输入不是有效的 UTF-8 文本"
        ) from exc


@app.command()
def run(
    text: Annotated[str, typer.Argument(help="The message; '-' reads it from standard input.")],
    session: Annotated[str | None, typer.Option("--session", "-s", help="Session id.")] = None,
    user: Annotated[str | None, typer.Option("--user", "-u", help="User id.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Run one turn and print the reply. / 运行一轮对话并输出回复。"""
    try:
        message = read_stdin_text() if text == "-" else text
        agent = build_agent(loaded_config())
        result = run_async(
            lambda: _with_agent(
                agent, lambda a: a.run(message, session_id=session, user_id=user, channel="cli")
            )
        )
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        out.print_json(json.dumps(result.to_json_dict(), ensure_ascii=False))
    else:
        out.print(result.reply)
        err.print(f"[dim]session {result.session_id} · state {result.state}[/dim]")


@tools_app.command("list")
def tools_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the tools the agent offers. / 列出可用工具。"""
    try:
        agent = build_agent(loaded_config(), log_to_file=False)
        specs = agent.tools.specs()
        run_async(agent.aclose)
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        data = [
            {"name": s.name, "description": s.description, "parameters": s.parameters}
            for s in specs
        ]
        out.print_json(json.dumps(data, ensure_ascii=False))
        return
    table = Table("tool", "description", "arguments")
    for s in specs:
        table.add_row(s.name, s.description, ", ".join(s.parameters.get("properties", {})))
    out.print(table)


@sessions_app.command("list")
def sessions_list(
    user: Annotated[str | None, typer.Option("--user", "-u", help="Only this user's.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List sessions, most recent first. / 列出会话（最近的在前）。"""
    try:
        agent = build_agent(loaded_config(), log_to_file=False)
        records = run_async(
            lambda: _with_agent(agent, lambda a: a.store.list_sessions(user_id=user, limit=limit))
        )
    except HermesError as exc:
        fail(exc, as_json)
    rows: list[dict[str, Any]] = [
        {
            "session_id": r.session_id,
            "user_id": r.user_id,
            "state": r.state.fsm_state,
            "items": r.item_count,
            "last_active": r.last_active,
        }
        for r in records
    ]
    if as_json:
        out.print_json(json.dumps(rows, ensure_ascii=False))
        return
    table = Table("session", "user", "state", "items", "last active")
    for row in rows:
        table.add_row(
            row["session_id"],
            row["user_id"] or "-",
            row["state"],
            str(row["items"]),
            _when(row["last_active"]),
        )
    out.print(table)


@sessions_app.command("show")
def sessions_show(
    session_id: Annotated[str, typer.Argument(help="Session id.")],
    limit: Annotated[int, typer.Option(help="Show the last N items.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show a session's state and latest items. / 显示会话状态与最近的消息。"""
    try:
        agent = build_agent(loaded_config(), log_to_file=False)
        record, items = run_async(lambda: _with_agent(agent, lambda a: _show(a, session_id, limit)))
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        out.print_json(json.dumps({"session": record, "items": items}, ensure_ascii=False))
        return
    out.print(
        f"[bold]{record['session_id']}[/bold] user={record['user_id'] or '-'} "
        f"state={record['state']} items={record['items']}"
    )
    for it in items:
        label = it["kind"] if it["kind"] != "text" else it["role"]
        name = f" {it['tool_name']}" if it.get("tool_name") else ""
        out.print(f"[dim]#{it['seq']}[/dim] [cyan]{label}{name}[/cyan] {it['content']}")


async def _show(agent: Agent, session_id: str, limit: int) -> tuple[dict[str, Any], list[Any]]:
    from hermes.session.ids import validate_session_id

    sid = validate_session_id(session_id)
    record = await agent.store.load_session(sid)
    if record is None:
        raise InvalidInputError(f"no session '{sid}' / 没有会话 '{sid}'")
    items = await agent.store.read_items(
        sid, after_seq=max(0, record.last_seq - limit), limit=limit
    )
    return (
        {
            "session_id": record.session_id,
            "user_id": record.user_id,
            "state": record.state.fsm_state,
            "items": record.item_count,
        },
        [
            {
                "seq": i.seq,
                "role": i.role,
                "kind": i.kind,
                "content": i.content,
                "tool_name": i.tool_name,
                "tool_call_id": i.tool_call_id,
            }
            for i in items
        ],
    )


def _when(ts: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def fail(exc: HermesError, as_json: bool = False) -> NoReturn:
    """Report a HermesError as one clear message and exit with code 2."""
    if as_json:
        out.print_json(json.dumps({"error": exc.to_dict()}, ensure_ascii=False))
    else:
        err.print(f"[red]error:[/red] {exc.message}", markup=True)
    raise typer.Exit(code=2)


def main() -> None:
    """Console-script entry point."""
    from hermes.channels import chat  # registers `chat` and `demo`

    del chat
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted / 已中断")
        raise SystemExit(130) from None
