"""Read-only views: ``hermes sessions list|show`` and ``hermes tools list`` (and what
``sessions_cmd`` shares with them: opening the store, items as JSON, masking).

They never create anything: with no database yet there are simply no sessions, and the tool
list is read from an agent on a private in-memory store.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.table import Column, Table
from rich.text import Text

from hermes.agent.compose import open_store
from hermes.channels.cli.app import (
    JsonFlag,
    loaded_config,
    open_agent,
    run_async,
    sessions_app,
    tools_app,
)
from hermes.channels.cli.output import fail, note, out, write_json
from hermes.errors import HermesError, SessionNotFoundError
from hermes.session.ids import validate_session_id, validate_user_id
from hermes.session.items import Item, SessionRecord
from hermes.session.privacy import mask_personal
from hermes.session.store import Store

T = TypeVar("T")

LimitOption = Annotated[int, typer.Option(min=1, max=10_000, help="At most this many.")]


@tools_app.command("list")
def tools_list(as_json: JsonFlag = False) -> None:
    """List the tools the agent offers, with their schemas. / 列出可用工具。"""
    try:
        agent = open_agent(store=":memory:", log_to_file=False)
        specs = agent.tools.specs()
        run_async(agent.aclose)
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json(
            [
                {"name": s.name, "description": s.description, "parameters": s.parameters}
                for s in specs
            ]
        )
        return
    table = Table("tool", "description", "arguments")
    for s in specs:
        arguments = ", ".join(s.parameters.get("properties", {}))
        table.add_row(Text(s.name), Text(s.description), Text(arguments))
    out.print(table)


@sessions_app.command("list")
def sessions_list(
    user: Annotated[str | None, typer.Option("--user", "-u", help="Only this user's.")] = None,
    limit: LimitOption = 50,
    as_json: JsonFlag = False,
) -> None:
    """List sessions, most recent first. / 列出会话（最近的在前）。"""
    try:
        user_id = None if user is None else validate_user_id(user)
        store = open_existing_store()
        records = (
            []
            if store is None
            else run_async(lambda: closing(store, lambda s: s.list_sessions(user_id, limit)))
        )
    except HermesError as exc:
        fail(exc, as_json)
    rows = [session_json(r) for r in records]
    if as_json:
        write_json(rows)
        return
    # Ids are copied into other commands: never shorten or wrap them to fit the terminal.
    table = Table(
        Column("session", no_wrap=True, min_width=_widest(rows, "session_id")),
        Column("user", no_wrap=True),
        Column("state", no_wrap=True),
        Column("items", justify="right", no_wrap=True),
        Column("last active", no_wrap=True),
        box=None,
        padding=(0, 1),
        pad_edge=False,
        header_style="bold",
    )
    for row in rows:
        table.add_row(
            Text(row["session_id"]),
            Text(row["user_id"] or "-"),
            Text(row["state"]),
            str(row["items"]),
            _when(row["last_active"]),
        )
    out.print(table)


@sessions_app.command("show")
def sessions_show(
    session_id: Annotated[str, typer.Argument(help="Session id.")],
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="Show the last N items.")] = 50,
    show_all: Annotated[bool, typer.Option("--all", help="Show every item.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Show a session's state and latest items. / 显示会话状态与最近的消息。

    Personal data (phones, addresses, order ids) in items flagged as holding it is masked.
    """
    try:
        sid = validate_session_id(session_id)
        store = open_existing_store()
        if store is None:
            raise not_found(sid)
        wanted = None if show_all else limit
        record, items = run_async(lambda: closing(store, lambda s: load_items(s, sid, wanted)))
    except HermesError as exc:
        fail(exc, as_json)
    session = session_json(record)
    if as_json:
        write_json({"session": session, "items": [item_json(i) for i in items]})
        return
    out.print(
        Text.assemble(
            (session["session_id"], "bold"),
            f" user={session['user_id'] or '-'} state={session['state']} items={session['items']}",
        )
    )
    if len(items) < record.item_count:
        note(
            f"showing the last {len(items)} of {record.item_count} items; --all for all"
            f" / 显示最近 {len(items)} 条，共 {record.item_count} 条；--all 显示全部"
        )
    for item in items:
        label = item.kind if item.kind != "text" else item.role
        name = f" {item.tool_name}" if item.tool_name else ""
        out.print(Text.assemble((f"#{item.seq} ", "dim"), (label + name, "cyan"), " ", shown(item)))


def open_existing_store() -> Store | None:
    """The configured store, or None when its database does not exist yet.

    Only the store is opened (no model, no tools): these views just read sessions.
    """
    path = loaded_config().store_path
    return open_store(path) if path.exists() else None


async def load_items(
    store: Store, session_id: str, limit: int | None
) -> tuple[SessionRecord, list[Item]]:
    """The session and its last ``limit`` items (all of them when None), read in pages."""
    record = await store.load_session(session_id)
    if record is None:
        raise not_found(session_id)
    after = 0 if limit is None else max(0, record.last_seq - limit)
    items: list[Item] = []
    while True:
        page = await store.read_items(session_id, after_seq=after, limit=_PAGE)
        items.extend(page)
        if len(page) < _PAGE:
            return record, items
        after = page[-1].seq


_PAGE = 1000


async def closing(store: Store, fn: Callable[[Store], Awaitable[T]]) -> T:
    """``fn(store)``, then close the store whatever happened."""
    try:
        return await fn(store)
    finally:
        await store.close()


def not_found(session_id: str) -> SessionNotFoundError:
    return SessionNotFoundError(f"no session '{session_id}' / 没有会话 '{session_id}'")


def session_json(record: SessionRecord) -> dict[str, Any]:
    return {
        "session_id": record.session_id,
        "user_id": record.user_id,
        "title": record.title,
        "state": record.state.fsm_state,
        "items": record.item_count,
        "created_at": record.created_at,
        "last_active": record.last_active,
    }


def item_json(item: Item, *, reveal_personal: bool = False) -> dict[str, Any]:
    """An item as JSON, its content masked when it holds personal data (``reveal_personal``:
    as stored)."""
    return {
        "seq": item.seq,
        "role": item.role,
        "kind": item.kind,
        "content": item.content if reveal_personal else shown(item),
        "tool_name": item.tool_name,
        "tool_call_id": item.tool_call_id,
        "trace_id": item.trace_id,
        "created_at": item.created_at,
    }


def shown(item: Item) -> str:
    """What a view or an export shows of an item's content: masked (seed 003 §4.4) when its
    ``meta["personal"]`` names personal data it holds (phones, addresses, order ids …)."""
    if item.meta and item.meta.get("personal"):
        return mask_personal(item.content)
    return item.content


def _widest(rows: list[dict[str, Any]], key: str) -> int:
    return max((len(str(row[key])) for row in rows), default=len(key))


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
