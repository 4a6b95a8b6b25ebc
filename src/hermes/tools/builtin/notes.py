"""Per-user notes and to-dos: ``note_add``, ``note_list``, ``todo_add``, ``todo_list``,
``todo_done``.

Every entry carries the ``user_id`` of the call (``ToolContext.user_id``) and every operation is
that user's only: one user never sees, counts or completes another's entries, and ids are
numbered per user (your notes are #1, #2, … whoever else writes), so an id reveals nothing
about other users. A call without a user is refused.

Where the entries live is a :class:`~hermes.tools.builtin.notes_store.NotesStores` handed in
when the tools are made (:func:`notes_tools`; the protocol and its contract are in
``notes_store.py``): per call, the store of the call's workspace. An ``Agent`` binds the tools
it offers to its composition root's stores — the SQLite file ``<workspace>/.hermes/notes.db``
(``hermes.storage.sqlite.notes``), for the CLI, the HTTP server and ``hermes mcp serve`` alike.
The module-level tools (``BUILTIN_TOOLS["note_add"]`` …, used without an agent) keep their
entries in this process only (:class:`~hermes.tools.builtin.notes_store.LocalNotes`): call
:func:`notes_tools` with durable stores to keep them.

The tools are sync on purpose: the stores block (SQLite does), and sync tools run on the daemon
worker threads (hermes.tools.threads).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hermes.errors import FieldProblem, StoreError, ToolArgumentError, ToolExecutionError
from hermes.tools.base import Tool, ToolContext
from hermes.tools.builtin.notes_store import Kind, LocalNotesStores, NotesStore, NotesStores
from hermes.tools.decorator import TOOL_ATTRIBUTE, tool

__all__ = [
    "DEFAULT_NOTES_TOOLS",
    "MAX_ENTRIES_PER_USER",
    "MAX_LISTED",
    "MAX_TEXT_CHARS",
    "NotesError",
    "note_add",
    "note_list",
    "notes_tools",
    "todo_add",
    "todo_done",
    "todo_list",
]

MAX_TEXT_CHARS = 2000
#: Stored notes per user, and stored to-dos (open or done) per user.
MAX_ENTRIES_PER_USER = 1000
#: Entries one list call returns (newest notes; oldest open to-dos first).
MAX_LISTED = 200


class NotesError(ToolExecutionError):
    """A notes operation that cannot be done; ``code`` names why (``user_required``,
    ``limit_reached``, ``not_found``, ``store_error``)."""

    def __init__(self, code: str, english: str, chinese: str) -> None:
        super().__init__(f"{english} ({chinese})")
        self.code = code


def _user(ctx: ToolContext) -> str:
    user = ctx.user_id
    if not isinstance(user, str) or not user.strip():
        raise NotesError(
            "user_required", "notes need a user id; this call has none", "笔记功能需要用户身份"
        )
    return user


def _clean_text(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ToolArgumentError([FieldProblem("text", "text is empty (内容为空)")])
    cleaned = text.strip()
    if len(cleaned) > MAX_TEXT_CHARS:
        raise ToolArgumentError(
            [FieldProblem("text", f"text is longer than {MAX_TEXT_CHARS} characters (内容过长)")]
        )
    if any(ord(ch) < 32 and ch not in "\n\t" for ch in cleaned):
        raise ToolArgumentError(
            [FieldProblem("text", "text contains control characters (内容包含控制字符)")]
        )
    return cleaned


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _store(stores: NotesStores, ctx: ToolContext) -> NotesStore:
    try:
        return stores(Path(ctx.workspace))
    except StoreError as exc:
        raise _store_error(exc) from None


def _store_error(exc: StoreError) -> NotesError:
    chinese = "无法打开笔记库" if exc.details.get("action") == "open" else "笔记库读写失败"
    return NotesError("store_error", exc.message, chinese)


def _add(stores: NotesStores, ctx: ToolContext, kind: Kind, text: str) -> dict[str, Any]:
    user, cleaned = _user(ctx), _clean_text(text)
    label = "note" if kind == "note" else "to-do"
    try:
        number = _store(stores, ctx).add(
            user, kind, cleaned, created_at=_now(), max_entries=MAX_ENTRIES_PER_USER
        )
    except StoreError as exc:
        raise _store_error(exc) from None
    if number is None:
        raise NotesError(
            "limit_reached",
            f"you already have {MAX_ENTRIES_PER_USER} {label}s, the limit",
            f"已达到 {MAX_ENTRIES_PER_USER} 条上限",
        )
    return {"id": number, "text": cleaned, "summary": f"{label} #{number} saved (已保存)"}


def _note_list(stores: NotesStores, ctx: ToolContext) -> dict[str, Any]:
    user = _user(ctx)
    try:
        total, rows = _store(stores, ctx).entries(user, "note", include_done=True, limit=MAX_LISTED)
    except StoreError as exc:
        raise _store_error(exc) from None
    notes = [{"id": e.number, "text": e.text, "created_at": e.created_at} for e in rows]
    summary = (
        f"{total} notes" if total <= MAX_LISTED else f"{total} notes; newest {MAX_LISTED} shown"
    )
    return {"notes": notes, "total": total, "truncated": total > len(notes), "summary": summary}


def _todo_list(stores: NotesStores, ctx: ToolContext, include_done: bool) -> dict[str, Any]:
    user = _user(ctx)
    try:
        total, rows = _store(stores, ctx).entries(
            user, "todo", include_done=include_done, limit=MAX_LISTED
        )
    except StoreError as exc:
        raise _store_error(exc) from None
    todos = [
        {
            "id": e.number,
            "text": e.text,
            "done": e.done,
            "created_at": e.created_at,
            "done_at": e.done_at,
        }
        for e in rows
    ]
    what = "to-dos" if include_done else "open to-dos"
    summary = f"{total} {what}" + (f"; first {MAX_LISTED} shown" if total > MAX_LISTED else "")
    return {"todos": todos, "total": total, "truncated": total > len(todos), "summary": summary}


def _todo_done(stores: NotesStores, ctx: ToolContext, todo_id: int) -> dict[str, Any]:
    user = _user(ctx)
    try:
        entry = _store(stores, ctx).mark_done(user, todo_id, done_at=_now())
    except StoreError as exc:
        raise _store_error(exc) from None
    if entry is None:  # the same answer whether or not another user has this number
        raise NotesError(
            "not_found", f"you have no to-do #{todo_id}", f"没有编号为 {todo_id} 的待办"
        )
    return {
        "id": todo_id,
        "text": entry.text,
        "done": True,
        "done_at": entry.done_at,
        "summary": f"to-do #{todo_id} done (已完成): {entry.text[:80]}",
    }


def _functions(stores: NotesStores) -> dict[str, Callable[..., dict[str, Any]]]:
    """The five tools working on ``stores``, by name. Defined once here, so each tool's
    function has one identity (module and qualified name) whatever stores it is bound to."""

    @tool(timeout=10.0, toolset="notes", parallel_safe=False)
    def note_add(text: str, *, ctx: ToolContext) -> dict[str, Any]:
        """Save a note for the current user (at most 2000 characters).

        Args:
            text: What to remember, e.g. "Wi-Fi password is on the fridge".
        """
        return _add(stores, ctx, "note", text)

    @tool(timeout=10.0, toolset="notes", side_effects=False)
    def note_list(*, ctx: ToolContext) -> dict[str, Any]:
        """List the current user's notes, newest first (at most 200)."""
        return _note_list(stores, ctx)

    @tool(timeout=10.0, toolset="notes", parallel_safe=False)
    def todo_add(text: str, *, ctx: ToolContext) -> dict[str, Any]:
        """Add a to-do item for the current user (at most 2000 characters).

        Args:
            text: The task, e.g. "renew the passport".
        """
        return _add(stores, ctx, "todo", text)

    @tool(timeout=10.0, toolset="notes", side_effects=False)
    def todo_list(include_done: bool = False, *, ctx: ToolContext) -> dict[str, Any]:
        """List the current user's to-do items, oldest first (at most 200).

        Args:
            include_done: Also list items already marked done.
        """
        return _todo_list(stores, ctx, include_done)

    @tool(timeout=10.0, toolset="notes", parallel_safe=False)
    def todo_done(todo_id: int, *, ctx: ToolContext) -> dict[str, Any]:
        """Mark one of the current user's to-do items as done (marking it twice is harmless).

        Args:
            todo_id: The id shown by todo_add or todo_list.
        """
        return _todo_done(stores, ctx, todo_id)

    return {
        "note_add": note_add,
        "note_list": note_list,
        "todo_add": todo_add,
        "todo_list": todo_list,
        "todo_done": todo_done,
    }


def notes_tools(stores: NotesStores) -> list[Tool]:
    """The five notes tools working on ``stores`` (the store of each call's workspace)."""
    return [getattr(fn, TOOL_ATTRIBUTE) for fn in _functions(stores).values()]


# The module-level tools (the built-ins by name): entries in this process only. An Agent binds
# the ones it offers to durable stores (see the module docstring).
_DEFAULT = _functions(LocalNotesStores())
note_add = _DEFAULT["note_add"]
note_list = _DEFAULT["note_list"]
todo_add = _DEFAULT["todo_add"]
todo_list = _DEFAULT["todo_list"]
todo_done = _DEFAULT["todo_done"]

#: The module-level tools by name: what an Agent replaces with tools bound to its stores.
DEFAULT_NOTES_TOOLS: Mapping[str, Tool] = MappingProxyType(
    {name: getattr(fn, TOOL_ATTRIBUTE) for name, fn in _DEFAULT.items()}
)
