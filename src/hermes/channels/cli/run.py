"""``hermes run``: one turn from the command line (DESIGN "Public contracts → CLI").

    hermes run "15乘以27等于多少？" --session my-session-1 --json
    echo "再加100呢？" | hermes run - --session my-session-1

Exit codes: 0 when the turn ran (even if it ended in an honest failure such as an unreachable
model: the reply says so and the JSON carries ``"error"``); 2 when the command was refused
(bad input, bad id, bad configuration, or a session another turn still held after waiting up to
``agent.turn_timeout``: ``session_busy``, nothing stored), with ``{"error": {"type", "message"}}``
under ``--json``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from hermes.agent.result import RunResult
from hermes.channels.cli.app import (
    JsonFlag,
    SessionOption,
    UserOption,
    app,
    loaded_config,
    open_agent,
    run_async,
    with_agent,
)
from hermes.channels.cli.output import fail, note, write_json, write_text
from hermes.errors import HermesError, InvalidInputError
from hermes.session.ids import validate_session_id, validate_user_id

if TYPE_CHECKING:
    from hermes.agent.agent import Agent

STDIN_MARKER = "-"
# UTF-8 needs at most four bytes per character: reading this many bytes past the character
# limit is enough to know a message is too long without holding an unbounded input in memory.
_MAX_BYTES_PER_CHAR = 4


@app.command()
def run(
    text: Annotated[str, typer.Argument(help="The message; '-' reads it from standard input.")],
    session: SessionOption = None,
    user: UserOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Run one turn and print the reply. / 运行一轮对话并输出回复。

    With --json, stdout holds exactly one JSON object: reply, session_id, state,
    tool_calls [{name, arguments, ok}], trace_id (and error {type, message} when the turn
    failed, tools_failed when every tool call failed, usage when the model reported it).
    """
    try:
        result = _run_turn(text, session, user)
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json(result.to_json_dict())
        return
    write_text(result.reply)
    status = f"session {result.session_id} · state {result.state}"
    if result.error is not None:
        status += f" · {result.error['type']}"
    if result.tools_failed:
        # The reply is the model's words; this line is the runtime's (seed 002 §2.3).
        status += " · no tool call succeeded / 工具调用全部失败"
    note(status)


def _run_turn(text: str, session: str | None, user: str | None) -> RunResult:
    # Ids are checked before anything is opened: a refused command leaves no files behind.
    session_id = None if session is None else validate_session_id(session)
    user_id = None if user is None else validate_user_id(user)
    loaded = loaded_config()
    if user_id is None:  # no --user: the local default user, so memory works out of the box
        user_id = loaded.config.agent.default_user_id
    limit = loaded.config.agent.max_message_chars
    message = read_stdin_text(limit) if text == STDIN_MARKER else argument_text(text)
    agent = open_agent(loaded)

    async def turn(a: Agent) -> RunResult:
        # One shot: the remote tools must be there for this turn (each server's wait is
        # bounded by its connect_timeout; one that fails is reported in the log and skipped).
        await a.connect_mcp()
        return await a.run(message, session_id=session_id, user_id=user_id, channel="cli")

    return run_async(lambda: with_agent(agent, turn))


def argument_text(text: str) -> str:
    """A message given on the command line; bytes that were not UTF-8 are refused."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # Python decodes argv with surrogateescape: invalid bytes survive as lone surrogates.
        raise InvalidInputError(
            f"the message is not valid UTF-8 (character {exc.start}) / 消息不是有效的 UTF-8 文本"
        ) from None
    return text


def read_stdin_text(max_chars: int) -> str:
    """Standard input as UTF-8 text, without its trailing newline (and a leading BOM).

    Reads at most what ``max_chars`` characters can take; longer input, or bytes that are not
    UTF-8, raise ``InvalidInputError`` (one clear sentence, not a traceback).
    """
    max_bytes = max_chars * _MAX_BYTES_PER_CHAR + len("\r\n")
    data = sys.stdin.buffer.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InvalidInputError(
            f"the message on standard input is too long (more than {max_chars:,} characters) / "
            f"标准输入的消息过长（超过 {max_chars:,} 个字符）"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"standard input is not valid UTF-8 (byte {exc.start}) / 标准输入不是有效的 UTF-8 文本"
        ) from None
    return text.removeprefix("\ufeff").rstrip("\r\n")
