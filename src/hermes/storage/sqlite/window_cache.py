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

from hermes.session.items import ContextSlice, Item

#: Live sessions whose window is kept; the least recently used one is dropped past this.
DEFAULT_SESSIONS = 512
#: An entry that grows past this many items without a read is dropped (the next read refills).
MAX_RUN = 4096
#: Items before the window an entry keeps (the backlog not yet folded into the summary, which
#: the turn reads too); a longer backlog is read from the file.
MAX_BACKLOG = 64


@dataclass(slots=True, frozen=True)
class Before:
    """What the file holds before an entry's first item (seq ``first``), as read when the
    entry was made and carried along since: the latest summary before it (``summary_known``
    False: not known — then the entry holds a summary itself) and sticky items before it
    (oldest first). When ``sticky_newest``, ``sticky`` is the newest sticky items before
    ``first`` (at most the store's limit), so any window the entry holds gets its sticky items
    from these and its own; else — the file's answer for the window at ``sticky_from`` was cut
    at the limit, so these may lack older ones — only windows starting at ``sticky_from`` or
    later (whose newest sticky items are among these and the entry's own)."""

    summary_known: bool
    summary: Item | None
    sticky: tuple[Item, ...]
    sticky_newest: bool
    sticky_from: int


@dataclass(slots=True, frozen=True)
class CachedRun:
    """Contiguous items ``first .. first + len(items) - 1`` of one incarnation of a session,
    and what came before them (None: not known)."""

    created_at: float
    first: int
    items: tuple[Item, ...]
    before: Before | None = None

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
        read: tuple[Item | None, Sequence[Item], int] | None = None,
    ) -> None:
        """Keep ``window`` (contiguous items, in seq order) as the session's entry, with the
        items from ``keep_from`` up to it that the entry already holds (the backlog; at most
        :data:`MAX_BACKLOG`). ``read``: what the file gave for this window — the latest
        summary, the sticky items before the window (oldest first) and the store's sticky
        limit — so that the next read can be served whole (:meth:`serve`)."""
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
            before = None if read is None else _before(first, window[0].seq, *read)
            self._runs[session_id] = CachedRun(created_at, first, items, before)
            self._runs.move_to_end(session_id)
            while len(self._runs) > self._size:
                self._runs.popitem(last=False)

    def serve(
        self, session_id: str, created_at: float, last_seq: int, limits: tuple[int, int, int]
    ) -> ContextSlice | None:
        """The slice of ``limits`` (rounds, window limit, sticky limit) served whole from the
        entry, when it holds every item up to ``last_seq`` (the latest seq just read from the
        file: nobody else wrote since) and knows what came before; None when the file must be
        read. The entry then keeps the new window and its backlog only."""
        rounds, window_limit, sticky_limit = limits
        with self._lock:
            run = self._runs.get(session_id)
            if run is None or run.created_at != created_at or run.last != last_seq:
                return None
            before = run.before
            if before is None:
                return None
            start = _round_start(run, rounds)
            if start is None:
                return None
            start = max(start, last_seq - window_limit + 1)
            sliced = _served(run, before, start, sticky_limit)
            if sliced is not None:
                self._runs[session_id] = _trimmed(run, before, sliced, sticky_limit)
                self._runs.move_to_end(session_id)
        return sliced

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
            self._runs[session_id] = CachedRun(
                run.created_at, run.first, run.items + tuple(items), run.before
            )

    def drop(self, session_id: str) -> None:
        with self._lock:
            self._runs.pop(session_id, None)


def covers_until(summary: Item) -> int:
    """The last seq a summary folds in; a summary without the mark covers all before it."""
    value = (summary.meta or {}).get("covers_until")
    return value if isinstance(value, int) else summary.seq - 1


def _before(
    first: int, window_start: int, summary: Item | None, sticky: Sequence[Item], limit: int
) -> Before:
    """What comes before an entry starting at ``first``, from what the file said for a window
    starting at ``window_start`` (``summary``: the latest; ``sticky``: the newest ``limit``
    sticky items before the window)."""
    known = summary is None or summary.seq < first
    newest = len(sticky) < limit  # the file gave every sticky item before the window
    kept = tuple(item for item in sticky if item.seq < first)
    return Before(known, summary if known else None, kept, newest, window_start)


def _round_start(run: CachedRun, rounds: int) -> int | None:
    """The seq of the ``rounds``-th last user text (a round's start) when the entry holds it;
    1 when the entry holds the whole log and fewer rounds; None when the file must say."""
    seen = 0
    for item in reversed(run.items):
        if item.role == "user" and item.kind == "text":
            seen += 1
            if seen == rounds:
                return item.seq
    return 1 if run.first == 1 else None


def _served(run: CachedRun, before: Before, start: int, limit: int) -> ContextSlice | None:
    """The slice of a window from ``start``, from the entry alone, or None."""
    if start < run.first or not (before.sticky_newest or start >= before.sticky_from):
        return None
    offset = start - run.first
    summary = next((i for i in reversed(run.items) if i.kind == "summary"), None)
    if summary is None:
        if not before.summary_known:
            return None
        summary = before.summary
    covered = 0 if summary is None else covers_until(summary)
    backlog = start - 1 - covered
    if backlog > 0:
        if covered + 1 < run.first:
            return None  # the backlog's summaries are not all here: the file counts them
        backlog -= sum(1 for i in run.items[:offset] if i.kind == "summary" and i.seq > covered)
    sticky = [*before.sticky, *(i for i in run.items[:offset] if i.sticky)]
    return ContextSlice(
        sticky=sticky[-limit:] if limit else [],
        summary=summary,
        window=list(run.items[offset:]),
        backlog=max(0, backlog),
        backlog_from=covered + 1,
        window_start=start,
    )


def _trimmed(run: CachedRun, before: Before, sliced: ContextSlice, limit: int) -> CachedRun:
    """The entry once ``sliced`` is served: its window and backlog (at most
    :data:`MAX_BACKLOG`), what it drops carried into ``before``."""
    start = sliced.window_start
    keep = max(run.first, min(sliced.backlog_from, start), start - MAX_BACKLOG)
    if keep == run.first:
        return run
    dropped = run.items[: keep - run.first]
    summary = next((i for i in reversed(dropped) if i.kind == "summary"), None)
    sticky = (*before.sticky, *(i for i in dropped if i.sticky))
    # The newest sticky items before the new first are the newest of those before the old one
    # and the dropped ones: what held for the old first holds for the new one.
    carried = Before(
        summary is not None or before.summary_known,
        summary if summary is not None else before.summary,
        sticky[-limit:] if limit else (),
        before.sticky_newest,
        before.sticky_from,
    )
    return CachedRun(run.created_at, keep, run.items[keep - run.first :], carried)
