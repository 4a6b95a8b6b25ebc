"""The Store protocol: every backend (``hermes.storage``: SQLite now, PostgreSQL later)
implements it and passes the same conformance tests (``tests/storage/conformance/test_store.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from hermes.session.items import ContextSlice, Item, SessionRecord, SessionState

#: Where a page of :meth:`Store.list_sessions` starts: the ``(last_active, session_id)`` of the
#: last session of the page before.
SessionCursor = tuple[float, str]


@runtime_checkable
class Store(Protocol):
    """Persistence of sessions and their append-only item logs."""

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """The session, or None if it does not exist."""
        ...

    async def ensure_session(
        self, session_id: str, user_id: str | None, title: str | None = None
    ) -> SessionRecord:
        """The session, created if missing. Raises ``SessionAccessError`` when it exists and
        belongs to another user, ``InvalidIdError`` when an id is malformed."""
        ...

    async def append(
        self,
        session_id: str,
        items: Sequence[Item],
        state: SessionState | None = None,
        *,
        fence: int | None = None,
    ) -> list[Item]:
        """Append items (assigning ``seq`` and ``created_at``) and optionally save the state,
        all in one transaction. Returns the stored items.

        ``fence`` is the token of the caller's claim on the session (``hermes.session.locks``):
        the write happens only when no write with a higher token came before it, and then
        records the token, checked in the same transaction; else ``ClaimLostError`` and
        nothing is written."""
        ...

    async def save_state(self, session_id: str, state: SessionState) -> None:
        """Save the volatile state of a session."""
        ...

    async def context_slice(self, session_id: str, rounds: int) -> ContextSlice:
        """The sticky items, latest summary and last ``rounds`` rounds of a session, read with
        indexed queries whose cost does not grow with the session's length.

        Items are append-only: the ones a store returns (here and from :meth:`read_items`) may
        be the very objects it keeps for its next reads (the SQLite store's window cache), so
        they must not be changed — copy one to change it."""
        ...

    async def read_items(
        self, session_id: str, after_seq: int = 0, before_seq: int | None = None, limit: int = 200
    ) -> list[Item]:
        """Items with ``after_seq < seq < before_seq`` in order, at most ``limit`` (not to be
        changed: see :meth:`context_slice`)."""
        ...

    async def list_sessions(
        self,
        user_id: str | None = None,
        limit: int = 50,
        *,
        after: SessionCursor | None = None,
        awaiting_approval: bool = False,
    ) -> list[SessionRecord]:
        """Sessions (of ``user_id`` if given), most recently active first, ties by
        ``session_id`` — at most ``limit``. ``after`` is the ``(last_active, session_id)`` of
        the last session of the previous page: the page goes on strictly after it in that order
        (keyset paging: the cost of a page does not grow with the pages before it).
        ``awaiting_approval``: only sessions whose state holds a pending approval."""
        ...

    async def delete_session(self, session_id: str) -> bool:
        """Delete the session and its whole item log in one transaction; False when there was
        no such session. What other stores keep about it (a user's memories, the tool-call
        records of ``memory.db``) belongs to the user and is not touched here."""
        ...

    def bulk_import(self, session_id: str, user_id: str | None, items: Iterable[Item]) -> int:
        """Blocking bulk append for importing an existing conversation; returns the count."""
        ...

    async def close(self) -> None:
        """Release connections and threads."""
        ...


@dataclass(slots=True)
class TurnStart:
    """What :func:`begin_turn` found and wrote: the session as it was before the turn
    (``record``) and, when the turn went ahead, its context (``slice``, read before the
    message) and the message as stored (``stored``); both None when it did not."""

    record: SessionRecord
    slice: ContextSlice | None = None
    stored: Item | None = None


#: Given the session's stored state, the state to store with the turn's first message — or
#: None: the turn does not go straight on (see :func:`begin_turn`). A pure function: a backend
#: may call it again when it retries its transaction.
Opening = Callable[[SessionState], SessionState | None]


@runtime_checkable
class TurnStarts(Protocol):
    """A store that begins a turn in one call (optional; :func:`begin_turn` falls back on the
    :class:`Store` methods for a store without it)."""

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
        """:func:`begin_turn`, as one call to the backend."""
        ...


async def begin_turn(
    store: Store,
    session_id: str,
    user_id: str | None,
    item: Item,
    *,
    rounds: int,
    fence: int | None,
    opening: Opening,
) -> TurnStart:
    """Begin a turn: the session (created if missing, as ``ensure_session``); then, when
    ``opening(state)`` gives a state for its stored one, the last ``rounds`` rounds
    (``context_slice``, read before the message) and ``item`` appended with that state under
    the claim ``fence`` — one ``append``: the message is never stored without the turn's
    working state, which is what tells another process (and the next turn, after a crash) that
    a turn was running. When ``opening`` gives None (a session a turn must repair first, or one
    waiting for an approval), nothing is written and the caller goes on step by step.

    One call to the backend where the store offers it (:class:`TurnStarts`; the SQLite store
    does it in one hop on one connection); otherwise the three ``Store`` calls. A backend may
    run the steps as separate transactions, in this order; the append is atomic and fenced as
    ``Store.append`` is. Raises what ``ensure_session`` and ``append`` raise
    (``SessionAccessError``, ``ClaimLostError`` …); then nothing of the message is stored.
    """
    native = getattr(store, "begin_turn", None)  # TurnStarts (an isinstance check costs ~10 µs)
    if native is not None:
        started: TurnStart = await native(
            session_id, user_id, item, rounds=rounds, fence=fence, opening=opening
        )
        return started
    record = await store.ensure_session(session_id, user_id)
    state = opening(record.state)
    if state is None:
        return TurnStart(record)
    slice_ = await store.context_slice(session_id, rounds)
    (stored,) = await store.append(session_id, [item], state, fence=fence)
    return TurnStart(record, slice_, stored)
