"""Interactive commands: ``hermes chat`` (a REPL) and ``hermes demo`` (a guided tour).

While a turn runs, a spinner on stderr shows what the agent is doing (thinking, calling a
tool), driven by the turn's event stream. Replies go to stdout as written: text from the model
is never interpreted as rich markup.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.status import Status
from rich.text import Text

from hermes.agent.agent import Agent
from hermes.agent.events import ModelCallStarted, ToolCallFinished, ToolCallStarted, TurnFinished
from hermes.agent.result import RunResult
from hermes.channels.cli.app import (
    SessionOption,
    UserOption,
    app,
    loaded_config,
    open_agent,
    run_async,
)
from hermes.channels.cli.output import err, fail, note, out, report_error
from hermes.errors import HermesError
from hermes.session.ids import new_session_id, validate_session_id, validate_user_id

EXIT_WORDS = frozenset({"/exit", "/quit", "exit", "quit", "退出"})
#: The REPL's own commands: a line that is one of these is never sent to the brain.
SLASH_COMMANDS: dict[str, str] = {
    "/help": "list these commands / 列出这些命令",
    "/exit": "leave (also /quit, exit, 退出, Ctrl-D) / 退出",
    "/quit": "leave / 退出",
}
_SLASH_WORD = re.compile(r"/[A-Za-z][A-Za-z-]*")
THINKING = "思考中… / thinking…"
_SHOWN_ARGUMENTS_CHARS = 80

DEMO_SCRIPT: list[tuple[str, str]] = [
    ("你好", "A greeting: the offline brain answers in the user's language."),
    ("你能做什么？", "It lists the tools its intents really reach (no made-up abilities)."),
    ("15乘以27等于多少？", "Intent + slots → a validated call to the calculator tool."),
    ("再加100呢？", "A follow-up resolved against the session's last result (405 + 100)."),
    (
        "三点五乘以二，再除以三",
        "Numbers in words, read exactly; 再 applies in order; 7/3 is rounded, and says so.",
    ),
    ("帮我算一下", "A missing slot: the session moves to collecting_parameters and asks."),
    ("(3+4)*5", "The next message fills the slot and the call runs."),
    (
        "现在几点？纽约呢？",
        "Two requests in one message; the default zone is named (agent.timezone).",
    ),
    ("东京和伦敦呢？", "A follow-up that swaps the place, for two places at once."),
    (
        "上海今天多少度？另外帮我算一下 (25+17)*3",
        "No weather service: an honest answer for that part, the other part answered.",
    ),
    ("帮我订明天晚上7点两个人的位置", "No booking tool: it says so, and what it can do instead."),
    ("what is a quarter of 80 plus three and a half?", "English number words work too."),
    ("请记住我住在上海", "Memory: an explicit request, saved for this user — and it says so."),
    ("我住在哪里？", "Recall: only this user's memories, through the recall tool."),
    (
        "我喜欢喝咖啡",
        "A statement it does not understand is said to be so, and never kept silently.",
    ),
]


async def _turn(agent: Agent, text: str, session_id: str, user_id: str | None) -> RunResult:
    """One turn with a live status line on stderr: thinking… / calling <tool>…"""
    result: RunResult | None = None
    with Status(THINKING, console=err, spinner="dots") as status:
        async for event in agent.stream(
            text, session_id=session_id, user_id=user_id, channel="cli"
        ):
            if isinstance(event, ModelCallStarted):
                status.update(THINKING)
            elif isinstance(event, ToolCallStarted):
                status.update(
                    Text.assemble(
                        "调用工具 / calling ", (event.name, "bold"), " ", _short(event.arguments)
                    )
                )
            elif isinstance(event, ToolCallFinished):
                mark = ("✓", "green") if event.ok else (f"✗ {event.error_type}", "red")
                err.print(
                    Text.assemble(
                        ("  tool ", "dim"),
                        event.name,
                        " ",
                        mark,
                        (f" {event.cost_ms:.1f} ms", "dim"),
                    )
                )
            elif isinstance(event, TurnFinished):
                result = event.result
    if result is None:  # the stream's contract: it always ends with TurnFinished
        raise RuntimeError("the turn's event stream ended without TurnFinished")
    return result


def _short(arguments: dict[str, object]) -> str:
    text = json.dumps(arguments, ensure_ascii=False, default=str)
    if len(text) <= _SHOWN_ARGUMENTS_CHARS:
        return text
    return text[: _SHOWN_ARGUMENTS_CHARS - 1] + "…"


def _print_reply(result: RunResult) -> None:
    out.print(Text.assemble(("hermes", "bold green"), " ", result.reply))


@app.command()
def chat(session: SessionOption = None, user: UserOption = None) -> None:
    """Chat in the terminal (/exit or Ctrl-D to leave). / 在终端里对话（输入 /exit 退出）。

    Lines are read from standard input, so `printf '15*27\\n' | hermes chat` works too.
    Ctrl-C during a turn cancels that turn; at the prompt it leaves.
    """
    try:
        session_id = new_session_id() if session is None else validate_session_id(session)
        user_id = None if user is None else validate_user_id(user)
        loaded = loaded_config()
        # No --user: the local default user (agent.default_user), so memory works out of the box.
        user_id = user_id or loaded.config.agent.default_user_id
        agent = open_agent(loaded)
    except HermesError as exc:
        fail(exc)
    out.print(
        Text.assemble(
            ("Hermes", "bold"),
            " · model ",
            (agent.model.name, "cyan"),
            " · session ",
            (session_id, "cyan"),
            " · user ",
            (user_id, "cyan"),
        )
    )
    note("输入 /help 查看命令，/exit 退出 · /help lists the commands, /exit leaves")
    # One event loop for the whole conversation; reading a line happens outside it, so Ctrl-C
    # at the prompt is a plain KeyboardInterrupt, while inside a turn it cancels the turn.
    with asyncio.Runner() as runner:
        try:
            _repl(runner, agent, session_id, user_id)
        finally:
            runner.run(agent.aclose())


def _repl(runner: asyncio.Runner, agent: Agent, session_id: str, user_id: str | None) -> None:
    while True:
        try:
            text = _read_line()
        except KeyboardInterrupt:
            out.print()
            return
        if text is None or text.strip() in EXIT_WORDS:
            return
        if not text.strip():
            continue
        if _slash_command(text.strip()):
            continue
        try:
            result = runner.run(_turn(agent, text, session_id, user_id))
        except HermesError as exc:
            report_error(exc.message)
            continue
        except KeyboardInterrupt:
            note("turn cancelled / 本轮已取消", style="yellow")
            continue
        _print_reply(result)


def _slash_command(line: str) -> bool:
    """Handle a REPL command (``/help``, an unknown ``/word``); False: a message for the brain.

    Only a line that is a single ``/word`` is a command, so "/3 of 9" or a path is a message.
    """
    if not _SLASH_WORD.fullmatch(line):
        return False
    if line.lower() == "/help":
        for name, what in SLASH_COMMANDS.items():
            out.print(Text.assemble((f"  {name:<7}", "bold"), " ", what))
        note("anything else is a message to Hermes / 其他输入都会作为消息发送")
    else:
        report_error(f"unknown command {line}; /help lists them / 未知命令 {line}，输入 /help 查看")
    return True


def _read_line() -> str | None:
    """One line of standard input; None at its end. Bad UTF-8 is reported and skipped."""
    if sys.stdin.isatty():
        out.print(Text("you", style="bold cyan"), end=" ")
    raw = sys.stdin.buffer.readline()
    if not raw:
        return None
    try:
        return raw.decode("utf-8").removeprefix("\ufeff").rstrip("\r\n")
    except UnicodeDecodeError:
        report_error("that line is not valid UTF-8 / 这一行不是有效的 UTF-8 文本")
        return ""


@app.command()
def demo(
    keep: Annotated[
        bool, typer.Option(help="Keep the demo database (printed at the end).")
    ] = False,
) -> None:
    """A guided offline conversation through Hermes's features. / 离线功能导览。

    It uses the offline rule brain and a temporary database: nothing is written to the
    current directory.
    """
    workdir = Path(tempfile.mkdtemp(prefix="hermes-demo-"))
    database = workdir / "demo.db"
    try:
        try:
            agent = open_agent(offline=True, store=database, log_to_file=False)
        except HermesError as exc:
            fail(exc)
        out.print(Text("Hermes demo — offline rule brain, built-in tools, SQLite session", "bold"))
        out.print(Text("离线规则大脑 · 内置工具 · SQLite 会话\n", "dim"))
        try:
            run_async(lambda: _demo(agent))
        except HermesError as exc:
            fail(exc)
        if keep:
            note(f"\ndemo database: {database}")
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


async def _demo(agent: Agent) -> None:
    session_id = "demo-" + new_session_id()[2:14]
    try:
        for text, comment in DEMO_SCRIPT:
            out.print(Text(f"# {comment}", style="dim"))
            out.print(Text.assemble(("you   ", "bold cyan"), " ", text))
            result = await _turn(agent, text, session_id, "demo-user")
            if agent.memory is not None:
                await agent.memory.drain()  # memories are written after the reply
            _print_reply(result)
            out.print(Text(f"       state={result.state} trace={result.trace_id[:8]}\n", "dim"))
        record = await agent.store.load_session(session_id)
        if record is not None:
            out.print(
                Text(
                    f"session {session_id}: {record.item_count} items stored, "
                    f"state {record.state.fsm_state}",
                    "dim",
                )
            )
        out.print(
            "Next: hermes chat to talk, or point Hermes at a model (see README). / "
            "下一步：hermes chat，或在 README 中配置真实模型。",
            markup=False,
        )
    finally:
        await agent.aclose()
