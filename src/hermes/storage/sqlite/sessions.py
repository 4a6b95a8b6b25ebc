"""The default session store (the ``Store`` protocol of ``hermes.session.store``): one SQLite
file (WAL), one connection, one worker thread.

The connection is owned by :class:`hermes.storage.sqlite.support.SQLiteWorker`: calls that
cannot block run on the caller's thread, anything that could (another process's lock, WAL
checkpoints) on the worker — its docstring says why and how. Write transactions are
``BEGIN IMMEDIATE`` so seqs stay contiguous even when several processes share the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from hermes.errors import ClaimLostError, InvalidIdError, SessionAccessError, StoreError
from hermes.session.ids import validate_session_id, validate_user_id
from hermes.session.items import ContextSlice, Item, SessionRecord, SessionState
from hermes.session.store import Opening, SessionCursor, TurnStart
from hermes.storage.sqlite.migrations import apply_migrations
from hermes.storage.sqlite.session_migrations import MIGRATIONS
from hermes.storage.sqlite.support import SQLiteWorker, write_transaction
from hermes.storage.sqlite.window_cache import WindowCache, covers_until

DEFAULT_DB_PATH = Path(".hermes") / "hermes.db"

_SESSION_COLUMNS = (
    "session_id, user_id, title, created_at, last_active, item_count, last_seq, "
    "fsm_state, state_entered_at, scratch, token_estimate, approval"
)
_ITEM_COLUMNS = (
    "seq, role, kind, content, tool_call_id, tool_name, sticky, trace_id, meta, created_at"
)
_INSERT_ITEM = (
    "INSERT INTO items (session_id, seq, role, kind, content, tool_call_id, tool_name, sticky, "
    "trace_id, meta, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT_SESSION = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_id = ?"
_RESERVE_SEQS = (
    "UPDATE sessions SET last_seq = last_seq + ?, item_count = item_count + ?, last_active = ?"
)
_WITH_STATE = ", fsm_state = ?, state_entered_at = ?, scratch = ?, token_estimate = ?, approval = ?"
# The fence (hermes.session.locks): a write carrying a claim token lower than the session's is
# refused in the same statement that reserves the seqs, so the check cannot race the write.
_WITH_FENCE = ", claim_token = ?"
_WHERE_SESSION = " WHERE session_id = ?"
_WHERE_FENCE = " AND claim_token <= ?"
_RETURNING = " RETURNING last_seq"


def _reserve_sql(with_state: int, fenced: int) -> str:
    return (
        _RESERVE_SEQS
        + (_WITH_STATE if with_state else "")
        + (_WITH_FENCE if fenced else "")
        + _WHERE_SESSION
        + (_WHERE_FENCE if fenced else "")
        + _RETURNING
    )


_RESERVE = {(state, fenced): _reserve_sql(state, fenced) for state in (0, 1) for fenced in (0, 1)}

# The reads of a turn (seed 001 §2.2). The literal WHERE terms match the partial indexes of
# session_migrations.py, so each is an index seek; OFFSET walks at most ``rounds`` index entries.
SQL_ROUND_START = (
    "SELECT seq FROM items WHERE session_id = ? AND role = 'user' AND kind = 'text' "
    "ORDER BY seq DESC LIMIT 1 OFFSET ?"
)
SQL_LATEST_SUMMARY = (
    f"SELECT {_ITEM_COLUMNS} FROM items WHERE session_id = ? AND kind = 'summary' "
    "ORDER BY seq DESC LIMIT 1"
)
SQL_STICKY = (
    f"SELECT {_ITEM_COLUMNS} FROM items WHERE session_id = ? AND sticky = 1 AND seq < ? "
    "ORDER BY seq DESC LIMIT ?"
)
SQL_SUMMARIES_BETWEEN = (
    "SELECT COUNT(*) FROM items WHERE session_id = ? AND kind = 'summary' AND seq > ? AND seq < ?"
)
SQL_WINDOW = (
    f"SELECT {_ITEM_COLUMNS} FROM items WHERE session_id = ? AND seq >= ? ORDER BY seq LIMIT ?"
)
SQL_READ_ITEMS = (
    f"SELECT {_ITEM_COLUMNS} FROM items WHERE session_id = ? AND seq > ? AND seq < ? "
    "ORDER BY seq LIMIT ?"
)

_NO_UPPER_BOUND = 2**62


#: ensure_ascii=False: Chinese text stays readable in the file and round-trips as is. One
#: encoder for every write: ``json.dumps`` with options builds a new one per call (~2 µs, and
#: a turn writes six or more JSON values).
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _dump_json(value: Any, what: str) -> str:
    try:
        return _JSON.encode(value)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serializable: {exc}") from exc


def _load_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StoreError(f"corrupt {what} in the database: {exc}") from exc


def _item_values(item: Item) -> tuple[Any, ...]:
    """The column values of an item after ``session_id, seq`` and before ``created_at``."""
    if type(item.content) is not str:
        raise StoreError(f"item content must be a string, not {type(item.content).__name__}")
    meta = None if item.meta is None else _dump_json(item.meta, "item meta")
    return (
        item.role,
        item.kind,
        item.content,
        item.tool_call_id,
        item.tool_name,
        1 if item.sticky else 0,
        item.trace_id,
        meta,
    )


def _state_values(state: SessionState) -> tuple[Any, ...]:
    scratch = _dump_json(state.scratch, "session state scratch")
    approval = None if state.approval is None else _dump_json(state.approval, "pending approval")
    return (state.fsm_state, state.state_entered_at, scratch, state.token_estimate, approval)


def _item_from_row(row: Any) -> Item:
    seq, role, kind, content, call_id, tool_name, sticky, trace_id, meta, created_at = row
    return Item(
        role=role,
        kind=kind,
        content=content,
        tool_call_id=call_id,
        tool_name=tool_name,
        sticky=bool(sticky),
        trace_id=trace_id,
        meta=None if meta is None else _load_json(meta, "item meta"),
        seq=seq,
        created_at=created_at,
    )


def _record_from_row(row: Any) -> SessionRecord:
    sid, uid, title, created, active, count, last_seq, fsm, entered, scratch, tokens, pending = row
    loaded = _load_json(scratch, "session scratch")
    approval = None if pending is None else _load_json(pending, "pending approval")
    return SessionRecord(
        session_id=sid,
        user_id=uid,
        title=title,
        created_at=created,
        last_active=active,
        item_count=count,
        last_seq=last_seq,
        state=SessionState(
            fsm_state=fsm,
            state_entered_at=entered,
            scratch=loaded if isinstance(loaded, dict) else {},
            token_estimate=tokens,
            approval=approval if isinstance(approval, dict) else None,
        ),
    )


def _check_ids(session_id: str, user_id: str | None) -> None:
    validate_session_id(session_id)
    if user_id is not None:
        validate_user_id(user_id)
        if user_id == session_id:
            # seed 001 §2.1: a user id used as a session id mixes all of a user's windows.
            raise InvalidIdError(
                f"session id {session_id!r} equals the user id; give each conversation its "
                "own session id (hermes.session.ids.new_session_id())"
            )


class SQLiteStore(SQLiteWorker):
    """A :class:`~hermes.session.store.Store` on one SQLite file.

    ``path`` defaults to ``./.hermes/hermes.db`` (parent directories are created); ``":memory:"``
    gives a private in-memory database. Opening connects, applies pending migrations and raises
    :class:`StoreError` if the file cannot be opened, is not a database, or has a newer schema.
    ``busy_timeout`` (seconds) is how long a write waits for another process's lock.
    ``window_limit`` caps the items of a context window and ``sticky_limit`` the sticky items
    a slice returns, so a slice stays bounded even in pathological sessions.
    """

    kind = "database"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        busy_timeout: float = 5.0,
        window_limit: int = 2000,
        sticky_limit: int = 50,
    ) -> None:
        raw = DEFAULT_DB_PATH if path is None else path
        super().__init__(
            str(raw) if str(raw) == ":memory:" else str(Path(raw)),
            busy_timeout,
            thread_name="hermes-sqlite",
        )
        self.window_limit = max(1, window_limit)
        self.sticky_limit = max(0, sticky_limit)
        self._windows = WindowCache()
        self._open_now()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def _prepare(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA foreign_keys = ON")
        apply_migrations(conn, self.path, MIGRATIONS)

    # -- Store protocol ----------------------------------------------------------------------

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """The session, or None if it does not exist."""
        return await self._run("load_session", _load_session, session_id)

    async def ensure_session(
        self, session_id: str, user_id: str | None, title: str | None = None
    ) -> SessionRecord:
        """The session, created if missing.

        Raises ``InvalidIdError`` for a malformed id or a session id equal to the user id, and
        ``SessionAccessError`` when the session belongs to another user. A session created
        without a user is bound to the first user that asks for it; a session with an owner is
        refused to everyone else, anonymous callers (``user_id=None``) included.
        """
        _check_ids(session_id, user_id)
        return await self._run(
            "ensure_session", _ensure_session, session_id, user_id, title, time.time()
        )

    async def append(
        self,
        session_id: str,
        items: Sequence[Item],
        state: SessionState | None = None,
        *,
        fence: int | None = None,
    ) -> list[Item]:
        """Append items and (optionally) save the state in one transaction.

        Seqs continue the session's log without gaps; the returned copies carry ``seq`` and
        ``created_at`` (the input items are not changed). With ``fence`` (a claim's token) the
        write happens only if no write with a higher token came first, and records the token;
        otherwise ``ClaimLostError`` and nothing is written. Raises ``StoreError`` if the
        session does not exist or a value cannot be stored.
        """
        if not items and state is None and fence is None:
            return []
        rows = [_item_values(item) for item in items]
        state_row = None if state is None else _state_values(state)
        now = time.time()
        first = await self._run("append", _append, session_id, rows, state_row, now, fence=fence)
        stored = _stored_items(items, first, now)
        self._windows.extend(session_id, first, stored)
        return stored

    async def begin_turn(
        self,
        session_id: str,
        user_id: str | None,
        item: Item,
        *,
        rounds: int,
        fence: int | None,
        opening: Opening,
    ) -> TurnStart:
        """``hermes.session.store.begin_turn`` in one call: the session ensured, the slice read
        and the message written with its state on one connection, in one hop (a call that
        meets another process's lock runs again, whole, on the worker: each step is safe to
        repeat, and ``opening`` is pure)."""
        if rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {rounds}")
        _check_ids(session_id, user_id)
        now = time.time()
        start = await self._run(
            "begin_turn", _begin_turn, session_id, user_id, _item_values(item), now,
            limits=(rounds, self.window_limit, self.sticky_limit), fence=fence, opening=opening,
            windows=self._windows,
        )  # fmt: skip
        if isinstance(start, SessionRecord):
            return TurnStart(start)
        record, slice_, first = start
        (stored,) = _stored_items([item], first, now)
        self._windows.extend(session_id, first, [stored])
        return TurnStart(record, slice_, stored)

    async def save_state(self, session_id: str, state: SessionState) -> None:
        """Save the volatile state of a session (raises ``StoreError`` if it does not exist)."""
        await self._run("save_state", _append, session_id, [], _state_values(state), time.time())

    async def context_slice(self, session_id: str, rounds: int) -> ContextSlice:
        """The last ``rounds`` rounds, latest summary, older sticky items and backlog bounds.

        A round starts at a user text item. With fewer rounds, the window is the whole log
        (capped at ``window_limit`` items). An unknown session gives an empty slice.
        """
        if rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {rounds}")
        return await self._run(
            "context_slice", _context_slice, session_id, rounds, self.window_limit,
            self.sticky_limit, windows=self._windows,
        )  # fmt: skip

    async def read_items(
        self, session_id: str, after_seq: int = 0, before_seq: int | None = None, limit: int = 200
    ) -> list[Item]:
        """Items with ``after_seq < seq < before_seq`` in seq order, at most ``limit``."""
        if limit <= 0:
            return []
        upper = _NO_UPPER_BOUND if before_seq is None else before_seq
        return await self._run(
            "read_items", _read_items, session_id, after_seq, upper, limit, windows=self._windows
        )

    async def list_sessions(
        self,
        user_id: str | None = None,
        limit: int = 50,
        *,
        after: SessionCursor | None = None,
        awaiting_approval: bool = False,
    ) -> list[SessionRecord]:
        """Sessions (of ``user_id`` if given), most recently active first, ties by id; a page
        after the session ``after`` names, only those awaiting approval if asked."""
        if limit <= 0:
            return []
        return await self._run(
            "list_sessions", _list_sessions, user_id, limit, after, awaiting_approval
        )

    async def delete_session(self, session_id: str) -> bool:
        """Delete the session and (``ON DELETE CASCADE``) its items in one transaction; False
        when it does not exist. Raises ``InvalidIdError`` for a malformed id."""
        validate_session_id(session_id)
        self._windows.drop(session_id)
        return await self._run("delete_session", _delete_session, session_id)

    def bulk_import(self, session_id: str, user_id: str | None, items: Iterable[Item]) -> int:
        """Blocking: create the session if needed and append ``items`` in one transaction.

        Meant for importing an existing conversation (100,000 items take about a second).
        An item's own ``created_at`` is kept when set. Returns the number of items written.
        """
        _check_ids(session_id, user_id)
        future = self._submit("bulk_import", _bulk_import, session_id, user_id, items, time.time())
        return future.result()

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


# -- the blocking operations (run on the worker thread only) -------------------------------


def _load_session(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute(_SELECT_SESSION, (session_id,)).fetchone()
    return None if row is None else _record_from_row(row)


def _delete_session(conn: sqlite3.Connection, session_id: str) -> bool:
    with write_transaction(conn):
        # Items first, explicitly: the cascade needs ``foreign_keys``, which a connection
        # opened by other code may lack, and a deleted session must never leave its log behind.
        conn.execute("DELETE FROM items WHERE session_id = ?", (session_id,))
        deleted = conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
        return deleted.rowcount > 0


def _ensure_session(
    conn: sqlite3.Connection, session_id: str, user_id: str | None, title: str | None, now: float
) -> SessionRecord:
    # Fast path without the write lock: the session exists and needs no change.
    row = conn.execute(_SELECT_SESSION, (session_id,)).fetchone()
    if row is not None and not _needs_claim(row, session_id, user_id, title):
        return _record_from_row(row)
    with write_transaction(conn):
        created = _ensure_locked(conn, session_id, user_id, title, now)
        if created is not None:
            return created
        row = conn.execute(_SELECT_SESSION, (session_id,)).fetchone()
    return _record_from_row(row)


def _needs_claim(row: Any, session_id: str, user_id: str | None, title: str | None) -> bool:
    """Whether an existing session row must change; raises if it belongs to someone else."""
    owner, current_title = row[1], row[2]
    if owner is not None and owner != user_id:
        # One user's conversation is never opened by another, nor by an anonymous caller.
        raise SessionAccessError(
            f"session {session_id!r} belongs to "
            + ("another user" if user_id is not None else "a user; say which user you are"),
            session_id=session_id,
        )
    return (owner is None and user_id is not None) or (current_title is None and bool(title))


def _ensure_locked(
    conn: sqlite3.Connection, session_id: str, user_id: str | None, title: str | None, now: float
) -> SessionRecord | None:
    """Inside a write transaction: create the session (returning its record, known without a
    read) or bind its user/title (returning None)."""
    row = conn.execute(_SELECT_SESSION, (session_id,)).fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO sessions (session_id, user_id, title, created_at, last_active) "
            "VALUES (?, ?, ?, ?, ?)",
            (session_id, user_id, title, now, now),
        )
        return SessionRecord(session_id, user_id, title, now, now)
    if _needs_claim(row, session_id, user_id, title):
        conn.execute(
            "UPDATE sessions SET user_id = COALESCE(user_id, ?), title = COALESCE(title, ?) "
            "WHERE session_id = ?",
            (user_id, title or None, session_id),
        )
    return None


def _stored_items(items: Sequence[Item], first: int, now: float) -> list[Item]:
    """``items`` as stored from seq ``first`` on; field by field rather than
    ``dataclasses.replace``: this is on every turn's hot path."""
    return [
        Item(
            item.role,
            item.kind,
            item.content,
            item.tool_call_id,
            item.tool_name,
            item.sticky,
            item.trace_id,
            item.meta,
            first + i,
            now,
        )
        for i, item in enumerate(items)
    ]


def _begin_turn(
    conn: sqlite3.Connection,
    session_id: str,
    user_id: str | None,
    values: tuple[Any, ...],
    now: float,
    *,
    limits: tuple[int, int, int],
    fence: int | None,
    opening: Opening,
    windows: WindowCache,
) -> SessionRecord | tuple[SessionRecord, ContextSlice, int]:
    """The session; and, if ``opening`` gives a state for its stored one, its slice and the
    seq of the message appended after it with that state (the slice is read first, so it does
    not hold the message). One write transaction: a new session is created with its first
    message, and what the slice reads cannot change before the message is written."""
    with write_transaction(conn):
        row = conn.execute(_SELECT_SESSION, (session_id,)).fetchone()
        if row is not None and not _needs_claim(row, session_id, user_id, None):
            record = _record_from_row(row)
        else:  # created now, or bound to its first user
            created = _ensure_locked(conn, session_id, user_id, None, now)
            if created is None:
                created = _record_from_row(conn.execute(_SELECT_SESSION, (session_id,)).fetchone())
            record = created
        state = opening(record.state)
        if state is None:
            return record
        rounds, window_limit, sticky_limit = limits
        slice_ = _context_slice(
            conn, session_id, rounds, window_limit, sticky_limit, windows=windows,
            known=(record.last_seq, record.created_at),
        )  # fmt: skip
        rows = [values]
        return (
            record,
            slice_,
            _append_locked(conn, session_id, rows, _state_values(state), now, fence=fence),
        )


def _append(
    conn: sqlite3.Connection,
    session_id: str,
    rows: list[tuple[Any, ...]],
    state_row: tuple[Any, ...] | None,
    now: float,
    *,
    fence: int | None = None,
) -> int:
    """Write items and/or state in one transaction; return the seq of the first item."""
    with write_transaction(conn):
        return _append_locked(conn, session_id, rows, state_row, now, fence=fence)


def _append_locked(
    conn: sqlite3.Connection,
    session_id: str,
    rows: list[tuple[Any, ...]],
    state_row: tuple[Any, ...] | None,
    now: float,
    *,
    fence: int | None = None,
) -> int:
    """:func:`_append` inside the caller's write transaction."""
    count = len(rows)
    params: list[Any] = [count, count, now]
    if state_row is not None:
        params.extend(state_row)
    if fence is not None:
        params.append(fence)
    params.append(session_id)
    if fence is not None:
        params.append(fence)
    sql = _RESERVE[(int(state_row is not None), int(fence is not None))]
    # One statement checks the fence, reserves the seqs and saves the state (RETURNING:
    # SQLite >= 3.35); the write lock of BEGIN IMMEDIATE keeps the reserved range ours.
    found = conn.execute(sql, params).fetchone()
    if found is None:
        _refuse_append(conn, session_id, fence)
    first = int(found[0]) - count + 1
    if rows:
        conn.executemany(
            _INSERT_ITEM,
            [(session_id, first + i, *values, now) for i, values in enumerate(rows)],
        )
    return first


def _refuse_append(conn: sqlite3.Connection, session_id: str, fence: int | None) -> NoReturn:
    """Why an append matched no row: a missing session, or a newer claim's fence."""
    row = conn.execute(
        "SELECT claim_token FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise StoreError(
            f"session {session_id!r} does not exist (call ensure_session first)",
            session_id=session_id,
        )
    raise ClaimLostError(
        f"session '{session_id}' was taken over by a newer turn (claim {fence} < {row[0]}); "
        "this turn stopped here and wrote nothing more / "
        "会话已被新的一轮对话接管，本轮就此停止，不再写入",
        session_id=session_id,
    )


def _context_slice(
    conn: sqlite3.Connection,
    session_id: str,
    rounds: int,
    window_limit: int,
    sticky_limit: int,
    *,
    windows: WindowCache,
    known: tuple[int, float] | None = None,
) -> ContextSlice:
    """The slice (see ``SQLiteStore.context_slice``); ``known``: the session's ``last_seq`` and
    ``created_at``, read by the caller in the same transaction (one query less)."""
    found = (
        known
        if known is not None
        else conn.execute(
            "SELECT last_seq, created_at FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
    )
    last_seq = 0 if found is None else int(found[0])
    if last_seq == 0:
        return ContextSlice(sticky=[], summary=None, window=[], backlog_from=1, window_start=1)
    # A live session's next window, served from what this process holds when nobody else has
    # written since (the cache's docstring says why it cannot be stale).
    served = windows.serve(session_id, found[1], last_seq, (rounds, window_limit, sticky_limit))
    if served is not None:
        return served
    start = conn.execute(SQL_ROUND_START, (session_id, rounds - 1)).fetchone()
    window_start = 1 if start is None else int(start[0])
    window_start = max(window_start, last_seq - window_limit + 1)
    # The items up to the latest seq just read that this process already holds; only the rows
    # after them are read.
    window, after = windows.reusable(session_id, found[1], window_start, last_seq)
    if after <= last_seq:
        window.extend(
            _item_from_row(r)
            for r in conn.execute(SQL_WINDOW, (session_id, after, last_seq - after + 1))
        )
    row = conn.execute(SQL_LATEST_SUMMARY, (session_id,)).fetchone()
    summary = None if row is None else _item_from_row(row)
    covered = 0 if summary is None else covers_until(summary)
    sticky = [
        _item_from_row(r)
        for r in conn.execute(SQL_STICKY, (session_id, window_start, sticky_limit))
    ]
    sticky.reverse()
    windows.put(
        session_id, found[1], window, keep_from=covered + 1, read=(summary, sticky, sticky_limit)
    )
    # Seqs are contiguous, so the backlog is arithmetic; only the (few) summary items in the
    # gap are counted, through their partial index.
    backlog = window_start - 1 - covered
    if backlog > 0:
        (folded,) = conn.execute(
            SQL_SUMMARIES_BETWEEN, (session_id, covered, window_start)
        ).fetchone()
        backlog -= int(folded)
    return ContextSlice(
        sticky=sticky,
        summary=summary,
        window=window,
        backlog=max(0, backlog),
        backlog_from=covered + 1,
        window_start=window_start,
    )


def _read_items(
    conn: sqlite3.Connection,
    session_id: str,
    after_seq: int,
    before_seq: int,
    limit: int,
    *,
    windows: WindowCache,
) -> list[Item]:
    found = conn.execute(
        "SELECT last_seq, created_at FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    if found is None:
        return []
    # The backlog a turn reads sits just before its window, which the cache keeps with it.
    cached = windows.span(
        session_id, found[1], after=after_seq, before=before_seq, last_seq=int(found[0]),
        limit=limit,
    )  # fmt: skip
    if cached is not None:
        return cached
    cursor = conn.execute(SQL_READ_ITEMS, (session_id, after_seq, before_seq, limit))
    return [_item_from_row(r) for r in cursor]


def _list_sessions(
    conn: sqlite3.Connection,
    user_id: str | None,
    limit: int,
    after: SessionCursor | None,
    awaiting_approval: bool,
) -> list[SessionRecord]:
    # A user's sessions are found through the owner index and sorted (schema v2 says why there
    # is no index on last_active); the keyset term then skips the pages before without an
    # OFFSET walk over them.
    terms: list[str] = []
    params: list[Any] = []
    if user_id is not None:
        terms.append("user_id = ?")
        params.append(user_id)
    if awaiting_approval:
        terms.append("approval IS NOT NULL")
    if after is not None:
        terms.append("(last_active < ? OR (last_active = ? AND session_id > ?))")
        params.extend((after[0], after[0], after[1]))
    where = f" WHERE {' AND '.join(terms)}" if terms else ""
    cursor = conn.execute(
        f"SELECT {_SESSION_COLUMNS} FROM sessions{where} "
        "ORDER BY last_active DESC, session_id LIMIT ?",
        (*params, limit),
    )
    return [_record_from_row(r) for r in cursor]


def _bulk_import(
    conn: sqlite3.Connection,
    session_id: str,
    user_id: str | None,
    items: Iterable[Item],
    now: float,
) -> int:
    with write_transaction(conn):
        _ensure_locked(conn, session_id, user_id, None, now)
        (last_seq,) = conn.execute(
            "SELECT last_seq FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        count = 0

        def rows() -> Iterator[tuple[Any, ...]]:
            nonlocal count
            for item in items:
                count += 1
                yield (session_id, last_seq + count, *_item_values(item), item.created_at or now)

        conn.executemany(_INSERT_ITEM, rows())
        conn.execute(
            "UPDATE sessions SET last_seq = ?, item_count = item_count + ?, "
            "last_active = MAX(last_active, ?) WHERE session_id = ?",
            (last_seq + count, count, now, session_id),
        )
    return count
