"""``hermes sessions export ID`` and ``hermes sessions delete ID``.

Export writes the session's items as JSON (``{"session", "items"}``, the shape of ``sessions
show --json``) or JSONL (one item per line), personal data masked as ``sessions show`` masks it
(``--reveal-personal``: as stored). Delete removes the session and its whole item log from the
session store; the user's long-term memories and the tool-call records of ``memory.db`` are the
user's, not the session's, and stay (``hermes memory forget`` erases those).
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal

import typer

from hermes.agent.compose import open_locks
from hermes.channels.cli.app import JsonFlag, run_async, sessions_app
from hermes.channels.cli.browse import (
    closing,
    item_json,
    load_items,
    not_found,
    open_existing_store,
    session_json,
)
from hermes.channels.cli.output import EXIT_USAGE, fail, note, report_error, write_json
from hermes.errors import HermesError
from hermes.session.ids import validate_session_id
from hermes.session.store import Store

SessionArgument = Annotated[str, typer.Argument(help="Session id.")]


@sessions_app.command("export")
def sessions_export(
    session_id: SessionArgument,
    export_format: Annotated[
        Literal["json", "jsonl"],
        typer.Option("--format", help="json: one object; jsonl: one item per line."),
    ] = "json",
    reveal_personal: Annotated[
        bool,
        typer.Option("--reveal-personal", help="Do not mask phone numbers, addresses and ids."),
    ] = False,
) -> None:
    """Print a session's items as JSON or JSONL. / 以 JSON 或 JSONL 导出会话的全部消息。"""
    try:
        sid = validate_session_id(session_id)
        store = open_existing_store()
        if store is None:
            raise not_found(sid)
        record, items = run_async(lambda: closing(store, lambda s: load_items(s, sid, None)))
    except HermesError as exc:
        fail(exc, export_format == "json")
    rows = [item_json(i, reveal_personal=reveal_personal) for i in items]
    if export_format == "json":
        write_json({"session": session_json(record), "items": rows})
        return
    for row in rows:
        write_json(row)


@sessions_app.command("delete")
def sessions_delete(
    session_id: SessionArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete a session and all its items. / 删除会话及其全部消息。

    The user's long-term memories and tool-call records stay (`hermes memory forget --all`).
    """
    try:
        sid = validate_session_id(session_id)
        reader = open_existing_store()
        if reader is None:
            raise not_found(sid)
        record = run_async(lambda: closing(reader, lambda s: s.load_session(sid)))
        if record is None:
            raise not_found(sid)
    except HermesError as exc:
        fail(exc, as_json)
    if not yes and not _confirmed(sid, record.item_count):
        raise typer.Exit(code=EXIT_USAGE)
    try:
        writer = open_existing_store()
        if writer is None:
            raise not_found(sid)
        if not run_async(lambda: closing(writer, lambda s: _delete_claimed(s, sid))):
            raise not_found(sid)  # deleted by someone else in between
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json({"deleted": True, "session_id": sid, "items": record.item_count})
        return
    note(
        f"deleted session {sid} ({record.item_count} items); the user's memories stay"
        f" / 已删除会话 {sid}（{record.item_count} 条消息）；用户的记忆保留"
    )


async def _delete_claimed(store: Store, session_id: str) -> bool:
    """Delete under the session's claim: a turn running in another process refuses the delete
    (``session_busy``) rather than losing its items mid-way."""
    locks = open_locks(store)
    try:
        async with locks.claim(session_id, wait=0.0):
            return await store.delete_session(session_id)
    finally:
        locks.close()


def _confirmed(session_id: str, items: int) -> bool:
    """Ask on a terminal; without one, refuse (a script says ``--yes``)."""
    if not sys.stdin.isatty():
        report_error(
            f"deleting session {session_id} needs --yes when not run at a terminal"
            f" / 非交互运行时删除会话 {session_id} 需要加 --yes"
        )
        return False
    return typer.confirm(
        f"Delete session {session_id} and its {items} items? / 删除会话及其 {items} 条消息？"
    )
