"""The notes protocol: where ``note_add``/``note_list``/``todo_add``/``todo_list``/``todo_done``
keep their entries (STYLE.md §11: the protocol beside its tools; the backends in ``storage/``).

An entry is a note or a to-do of one user: ``(user_id, kind, number)`` names it, ``number``
counting 1, 2, 3 … per user and kind (your notes are #1, #2, … whoever else writes: a number
reveals nothing about other users). A to-do is open until marked done.

What every backend must do (the conformance suite is ``tests/storage/conformance/test_notes.py``;
a PostgreSQL backend passes it too):

1. **Per-user isolation.** Every operation names a user and reads, counts and changes that
   user's entries only.
2. **Per-user numbers, never reused while the entry exists.** A new entry's number is the
   user's highest number of that kind + 1.
3. **The limit is atomic.** :meth:`NotesStore.add` refuses (returns ``None``, writes nothing)
   when the user already holds ``max_entries`` entries of that kind; count and insert happen in
   one transaction, so concurrent adds — threads, processes — never pass the limit nor share a
   number (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-level advisory lock on
   ``(user, kind)``, or a per-user counter row taken ``FOR UPDATE``).
4. **Durable** once ``add``/``mark_done`` returned (an in-process backend says it is not).
5. **Sync and thread-safe.** The tools are sync on purpose and run on the tools' worker
   threads (``hermes.tools.threads``): a backend blocks, and may be called from any thread.
6. **Failures are** :class:`~hermes.errors.StoreError` with one clear sentence; the tools turn
   them into ``store_error`` results.

Which store a call uses comes from :class:`NotesStores` and the call's workspace: the SQLite
backend keeps one file per workspace (``<workspace>/.hermes/notes.db``); a server backend may
ignore the workspace.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

from hermes.observe import get_logger

log = get_logger("tools")

__all__ = ["Entry", "Kind", "LocalNotes", "LocalNotesStores", "NotesStore", "NotesStores"]

Kind = Literal["note", "todo"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One note or to-do as stored. Times are ISO 8601 text in UTC, to the second."""

    number: int
    text: str
    created_at: str
    done: bool = False
    done_at: str | None = None


class NotesStore(Protocol):
    """The notes and to-dos of every user of one workspace (the contract: module docstring)."""

    def add(
        self, user_id: str, kind: Kind, text: str, *, created_at: str, max_entries: int
    ) -> int | None:
        """Store a new entry and return its number (the user's highest of ``kind`` + 1), or
        ``None`` — nothing written — when the user already has ``max_entries`` of ``kind``."""
        ...

    def entries(
        self, user_id: str, kind: Kind, *, include_done: bool, limit: int
    ) -> tuple[int, list[Entry]]:
        """``(total, entries)``: how many entries of ``kind`` the user has (open ones only
        unless ``include_done``) and at most ``limit`` of them — notes newest first, to-dos
        oldest first."""
        ...

    def mark_done(self, user_id: str, number: int, *, done_at: str) -> Entry | None:
        """Mark the user's to-do ``number`` done (one already done keeps its first
        ``done_at``) and return it; ``None`` when the user has no to-do of that number."""
        ...


class NotesStores(Protocol):
    """The notes store of a workspace (the same object for the same workspace)."""

    def __call__(self, workspace: Path) -> NotesStore: ...


class LocalNotes:
    """Notes kept in this process only (the contract, without durability): what the notes
    tools use when no store was handed to them (:func:`hermes.tools.builtin.notes.notes_tools`
    with none — an ``Agent`` always hands them its SQLite files). Gone when the process ends."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, Kind], dict[int, Entry]] = {}
        self._lock = threading.Lock()

    def add(
        self, user_id: str, kind: Kind, text: str, *, created_at: str, max_entries: int
    ) -> int | None:
        with self._lock:
            held = self._entries.setdefault((user_id, kind), {})
            if len(held) >= max_entries:
                return None
            number = max(held, default=0) + 1
            held[number] = Entry(number, text, created_at)
            return number

    def entries(
        self, user_id: str, kind: Kind, *, include_done: bool, limit: int
    ) -> tuple[int, list[Entry]]:
        with self._lock:
            held = self._entries.get((user_id, kind), {})
            chosen = [e for e in held.values() if include_done or not e.done]
        chosen.sort(key=lambda e: e.number, reverse=kind == "note")
        return len(chosen), chosen[:limit]

    def mark_done(self, user_id: str, number: int, *, done_at: str) -> Entry | None:
        with self._lock:
            held = self._entries.get((user_id, "todo"), {})
            entry = held.get(number)
            if entry is not None and not entry.done:
                entry = held[number] = replace(entry, done=True, done_at=done_at)
            return entry


class LocalNotesStores:
    """One :class:`LocalNotes` per workspace (resolved path), made on first use. The first
    one made logs a warning (``notes_in_process``): notes kept here are gone with the process,
    which nobody should learn from a restart (an ``Agent`` binds its notes tools to SQLite)."""

    def __init__(self) -> None:
        self._stores: dict[Path, LocalNotes] = {}
        self._lock = threading.Lock()

    def __call__(self, workspace: Path) -> NotesStore:
        key = Path(workspace).resolve()
        with self._lock:
            store = self._stores.get(key)
            if store is None:
                if not self._stores:
                    log.warning(
                        "notes_in_process",
                        reason="notes tools used outside an Agent keep their entries in this "
                        "process only; offer them through Agent(tools=[...]) to keep them in "
                        "<workspace>/.hermes/notes.db",
                    )
                store = self._stores[key] = LocalNotes()
            return store
