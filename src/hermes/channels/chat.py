"""Interactive commands: ``hermes chat`` (a REPL) and ``hermes demo`` (a guided tour).

While a turn runs, a spinner shows what the agent is doing (thinking, calling a tool), driven
by the turn's event stream.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.status import Status

from hermes.agent.agent import Agent
from hermes.agent.events import (
    ModelCallStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
)
from hermes.agent.factory import build_agent
from hermes.agent.result import RunResult
from hermes.channels.cli import app, err, fail, loaded_config, out, run_async
from hermes.errors import HermesError
from hermes.session.ids import new_session_id

EXIT_WORDS = {"/exit", "/quit", "exit", "quit", "退出"}

DEMO_SCRIPT: list[tuple[str, str]] = [
    ("你好", "A greeting: the offline brain answers in the user's language."),
    ("你能做什么？", "It lists the tools it really has (no made-up abilities)."),
    ("15乘以27等于多少？", "Intent + slots → a validated call to the calculator tool."),
    ("再加100呢？", "A follow-up resolved against the session's last result (405 + 100)."),
    ("帮我算一下", "A missing slot: the session moves to collecting_parameters and asks."),
    ("(3+4)*5", "The next message fills the slot and the call runs."),
    ("东京现在几点？", "The clock tool with a city name."),
    (
        "明天上海天气怎么样？",
        "No weather service is configured: an honest answer, no invented data.",
    ),
    ("what is 2 to the power of 10?", "English works too."),
]


async def _turn(agent: Agent, text: str, session_id: str, user_id: str | None) -> RunResult:
    """One turn with a live status line: thinking… / calling <tool>…"""
    result: RunResult | None = None
    with Status("思考中… / thinking…", console=err, spinner="dots") as status:
        async for event in agent.stream(
            text, session_id=session_id, user_id=user_id, channel="cli"
        ):
            if isinstance(event, ModelCallStarted):
                status.update("思考中… / thinking…")
            elif isinstance(event, ToolCallStarted):
                status.update(f"调用工具 / calling [bold]{event.name}[/bold] {event.arguments}")
            elif isinstance(event, ToolCallFinished):
                mark = "[green]✓[/green]" if event.ok else f"[red]✗ {event.error_type}[/red]"
                err.print(
                    f"  [dim]tool[/dim] {event.name} {mark} [dim]{event.cost_ms:.1f} ms[/dim]"
                )
            elif isinstance(event, TextDelta):
                continue
            elif isinstance(event, TurnFinished):
                result = event.result
    assert result is not None
    return result


@app.command()
def chat(
    session: Annotated[str | None, typer.Option("--session", "-s", help="Session id.")] = None,
    user: Annotated[str | None, typer.Option("--user", "-u", help="User id.")] = None,
) -> None:
    """Chat in the terminal (/exit to leave). / 在终端里对话（输入 /exit 退出）。"""
    try:
        agent = build_agent(loaded_config())
    except HermesError as exc:
        fail(exc)
    session_id = session or new_session_id()
    out.print(
        f"[bold]Hermes[/bold] · model [cyan]{agent.model.name}[/cyan] · "
        f"session [cyan]{session_id}[/cyan]"
    )
    out.print("[dim]输入 /exit 退出 · type /exit to leave[/dim]")
    run_async(lambda: _repl(agent, session_id, user))


async def _repl(agent: Agent, session_id: str, user_id: str | None) -> None:
    try:
        while True:
            text = _read_line()
            if text is None or text.strip() in EXIT_WORDS:
                break
            if not text.strip():
                continue
            try:
                result = await _turn(agent, text, session_id, user_id)
            except HermesError as exc:
                err.print(f"[red]error:[/red] {exc.message}")
                continue
            out.print(f"[bold green]hermes[/bold green] {result.reply}")
    finally:
        await agent.aclose()


def _read_line() -> str | None:
    """One line from the terminal; None at end of input. Bad UTF-8 is reported and skipped."""
    out.print("[bold cyan]you[/bold cyan] ", end="")
    raw = sys.stdin.buffer.readline()
    if not raw:
        return None
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        err.print("[red]error:[/red] that line is not valid UTF-8 / 这一行不是有效的 UTF-8 文本")
        return ""


@app.command()
def demo(
    keep: Annotated[
        bool, typer.Option(help="Keep the demo database (printed at the end).")
    ] = False,
) -> None:
    """A guided offline conversation through Hermes's features. / 离线功能导览。"""
    workdir = Path(tempfile.mkdtemp(prefix="hermes-demo-"))
    try:
        agent = build_agent(
            loaded_config(), offline=True, store=workdir / "demo.db", log_to_file=False
        )
    except HermesError as exc:
        fail(exc)
    out.print(
        "[bold]Hermes demo[/bold] — offline rule brain, built-in tools, SQLite session\n"
        "[dim]离线规则大脑 · 内置工具 · SQLite 会话[/dim]\n"
    )
    run_async(lambda: _demo(agent))
    if keep:
        out.print(f"\n[dim]demo database: {workdir / 'demo.db'}[/dim]")
    else:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)


async def _demo(agent: Agent) -> None:
    session_id = "demo-" + new_session_id()[2:14]
    try:
        for text, note in DEMO_SCRIPT:
            out.print(f"[dim]# {note}[/dim]")
            out.print(f"[bold cyan]you[/bold cyan]    {text}")
            result = await _turn(agent, text, session_id, "demo-user")
            out.print(f"[bold green]hermes[/bold green] {result.reply}")
            out.print(f"[dim]       state={result.state} trace={result.trace_id[:8]}[/dim]\n")
        record = await agent.store.load_session(session_id)
        if record is not None:
            out.print(
                f"[dim]session {session_id}: {record.item_count} items stored, "
                f"state {record.state.fsm_state}[/dim]"
            )
        out.print(
            "Next: [bold]hermes chat[/bold] to talk, or point Hermes at a model "
            "(see README). / 下一步：hermes chat，或在 README 中配置真实模型。"
        )
    finally:
        await agent.aclose()
