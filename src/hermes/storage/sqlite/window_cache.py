"""The window cache of :class:`hermes.storage.sqlite.sessions.SQLiteStore`: the items of each
live session's last context window, kept in memory so a turn's read converts only the rows
written since (seed 001 §2.2: the context is read on every turn).

Why it can never serve a stale window, even with several processes on one file: items are
append-only and never change once written (``sessions.py`` has no ``UPDATE items``), so the
item at a seq of one session is the same forever — a session is told apart from one deleted
and created again under the same id by its ``created_at``. The read that uses an entry runs
in the caller's claim and first reads the session's ``last_seq`` and ``created_at`` from the
database; the entry only supplies the items it holds up to that seq, and every later row
(written by this process or by any other) is read from the file.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from hermes.session.items import Item

#: Live sessions whose window is kept; the least recently used one is dropped past this.
DEFAULT_SESSIONS = 512
#: An entry that grows past this many items without a read is dropped (the next read refills).
MAX_RUN = 4096
#: Items before the window an entry keeps (the backlog not yet folded into the summary, which
#: the turn reads too); a longer backlog is read from the file.
MAX_BACKLOG = 64


@dataclass(slots=True, frozen=True)
class CachedRun:
    """Contiguous items ``first .. first + len(items) - 1`` of one incarnation of a session."""

    created_at: float
    first: int
    items: tuple[Item, ...]

    @property
    def last(self) -> int:
        return self.first + len(self.items) - 1


class WindowCache:
    """Per session, the items of its latest window (at most ``sessions`` sessions). Safe to
    use from the event loop's thread and the store's worker at once."""

    def __init__(self, sessions: int = DEFAULT_SESSIONS) -> None:
        self._runs: OrderedDict[str, CachedRun] = OrderedDict()
        self._size = max(0, sessions)
        self._lock = threading.Lock()

    def reusable(
        self, session_id: str, created_at: float, start: int, last_seq: int
    ) -> tuple[list[Item], int]:
        """The cached items from ``start`` on, up to ``last_seq``, and the seq after them
        (``start`` when nothing can be reused)."""
        with self._lock:
            run = self._runs.get(session_id)
            if run is None or run.created_at != created_at or run.last > last_seq:
                return [], start
            if run.first > start or run.last < start:
                return [], start
            self._runs.move_to_end(session_id)
        return list(run.items[start - run.first :]), run.last + 1

    def span(
        self, session_id: str, created_at: float, *, after: int, before: int, last_seq: int,
        limit: int,
    ) -> list[Item] | None:  # fmt: skip
        """The items with ``after < seq < before`` (at most ``limit``, none past ``last_seq``,
        the session's latest seq just read from the database) when the entry holds all of
        them; None when the file must be read."""
        low, high = after + 1, min(before - 1, last_seq, after + limit)
        with self._lock:
            run = self._runs.get(session_id)
            if run is None or run.created_at != created_at or run.last > last_seq:
                return None
            if high >= low and (run.first > low or run.last < high):
                return None
        return [] if high < low else list(run.items[low - run.first : high - run.first + 1])

    def put(
        self,
        session_id: str,
        created_at: float,
        window: Sequence[Item],
        *,
        keep_from: int | None = None,
    ) -> None:
        """Keep ``window`` (contiguous items, in seq order) as the session's entry, with the
        items from ``keep_from`` up to it that the entry already holds (the backlog; at most
        :data:`MAX_BACKLOG`)."""
        if not window or self._size == 0:
            return
        first, items = window[0].seq, tuple(window)
        with self._lock:
            old = self._runs.get(session_id)
            if (
                keep_from is not None
                and old is not None
                and old.created_at == created_at
                and first - MAX_BACKLOG <= keep_from < first
                and old.first <= keep_from
                and old.last >= first - 1
            ):
                items = old.items[keep_from - old.first : first - old.first] + items
                first = keep_from
            self._runs[session_id] = CachedRun(created_at, first, items)
            self._runs.move_to_end(session_id)
            while len(self._runs) > self._size:
                self._runs.popitem(last=False)

    def extend(self, session_id: str, first: int, items: Sequence[Item]) -> None:
        """Add items this process just wrote at ``first ..``, if they continue the entry."""
        if not items:
            return
        with self._lock:
            run = self._runs.get(session_id)
            if run is None:
                return
            if run.last + 1 != first or len(run.items) + len(items) > MAX_RUN:
                del self._runs[session_id]
                return
            self._runs[session_id] = CachedRun(run.created_at, run.first, run.items + tuple(items))

    def drop(self, session_id: str) -> None:
        with self._lock:
            self._runs.pop(session_id, None)
