"""The long-term memory store (seed 001 §5, seed 003 §2.4, §4.4): the protocol every backend
implements, beside its concept (STYLE.md §11; DESIGN.md, "Scale-out").

:class:`MemoryStore` is what the memory package (``facade``, ``recall``, ``upkeep``,
``tools``), the agent and the ``hermes memory`` commands use. The SQLite backend is
``hermes.storage.sqlite.memories.SQLiteMemoryStore``; ``hermes.agent.compose.open_memory_store``
is where a path becomes one (only the composition root chooses a backend). Every backend passes
``tests/storage/conformance/test_memory_store.py``.

**The contract a backend keeps** (a PostgreSQL one too):

- *Per-user isolation.* Every read takes ``user_id`` and is scoped by it in the backend's own
  query (not filtered afterwards): one user's memories are never returned for, counted for, or
  change the scores of another. An id of another user's memory is "not found"
  (``MemoryNotFoundError`` / ``None`` / ``False``), so ids cannot be probed across users.
  Keyword statistics (bm25's document counts and lengths) are the user's own.
- *Validation.* Inputs are checked with ``hermes.memory.records``'s validators before anything is
  written: ``InvalidIdError`` for a malformed user, session or memory id, ``InvalidInputError``
  for blank or over-long content, an unknown kind, a confidence outside 0..1, bad tags or times.
  New records come from :func:`hermes.memory.records.new_record` (ids ``m-`` + 16 hex digits).
- *No duplicates on write.* :meth:`MemoryStore.add_unique` checks for an active memory of the
  user with the same stripped content *inside its write transaction*, so two processes writing
  the same text at once store it once (the facade's per-user lock covers one process only).
- *Supersede.* A superseded memory is kept as history (``superseded_by``, ``superseded_reason``,
  ``expires_at`` at most the time it was superseded) and is never active again: searches and
  lists of active memories leave it out, ``list(include_inactive=True)`` and ``export`` keep it.
  ``add_unique(..., settle=True)`` applies :mod:`hermes.memory.supersede`'s rules in the same
  transaction as the insert (or one right after it), so the next search finds only the new
  statement.
- *Active* means neither superseded nor expired at ``now`` (``MemoryRecord.is_active``).
- *Search.* Keyword scores are 0..1 (bm25 over the user's statistics, normalized by the best
  the query could reach, see ``hermes.storage.sqlite.memories``); with an embedder, the
  calibrated vector similarity of ``hermes.memory.embed`` is blended by :func:`combine_scores`.
  Any text is a valid query (query syntax in it is searched for, never run); a query with
  nothing searchable returns []. Chinese is searched by words and character bigrams
  (``hermes.memory.keywords``).
- *Versions.* Every write that changes a user's active memories invalidates whatever the
  backend caches for that user (vectors).
- *Habits.* It is the :class:`~hermes.memory.habits.HabitStore` of the same users.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, runtime_checkable

from hermes.memory.habits import HabitStore
from hermes.memory.records import (
    MemoryDraft,
    MemoryHit,
    MemoryKind,
    MemoryRecord,
    SearchFilter,
    SupersededReason,
)

if TYPE_CHECKING:
    from hermes.memory.embed import Embedder
    from hermes.memory.lexicon import Lexicon

__all__ = ["UNSET", "MemoryStore", "SearchMode", "Unset", "combine_scores"]

#: ``"auto"``: keyword and vector scores blended when the store has an embedder; ``"keyword"``:
#: never embeds (the supersede check of the facade, upkeep's neighbours).
SearchMode = Literal["auto", "keyword"]


def combine_scores(keyword: float, vector: float | None) -> float:
    """Blend a keyword and a vector score (both 0..1): ``1 - (1-k)(1-v)``; ``k`` alone without
    vectors. Either signal alone can carry a memory (a Chinese query for an English memory has
    no keyword overlap) and both together raise it."""
    if vector is None:
        return keyword
    return 1.0 - (1.0 - keyword) * (1.0 - vector)


class Unset:
    """Marks a :meth:`MemoryStore.update` argument that was not given (None is a value)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset()


@runtime_checkable
class MemoryStore(HabitStore, Protocol):
    """Long-term memories of all users (see the module docstring for the contract).

    ``embedder``: the embedder vectors come from (None: keyword search only); recall and upkeep
    read it. ``lexicon``: the Chinese↔English keyword tables (``"auto"``: CC-CEDICT, loaded on
    first use; None: each language apart). ``path``: the file the memories are in, or
    ``":memory:"`` when there is none on this machine (a private in-memory database, a server
    backend) — the facade puts the other memory files beside it.
    """

    embedder: Embedder | None
    lexicon: Lexicon | Literal["auto"] | None

    @property
    def path(self) -> str: ...

    # -- writing ---------------------------------------------------------------------------
    async def add(
        self,
        user_id: str,
        content: str,
        *,
        kind: MemoryKind = "fact",
        confidence: float = 1.0,
        source_session: str | None = None,
        sensitive: bool = False,
        topic: str | None = None,
        tags: Sequence[str] = (),
        expires_at: float | None = None,
        explicit: bool = False,
        now: float | None = None,
    ) -> MemoryRecord:
        """Store one memory of ``user_id`` and return it (no duplicate check: that is
        :meth:`add_unique`). ``now`` (epoch seconds) sets the creation time (imports, tests);
        ``explicit``: the user asked for it to be remembered (see ``MemoryDraft``)."""
        ...

    async def add_many(
        self, user_id: str, drafts: Iterable[MemoryDraft], *, now: float | None = None
    ) -> builtins.list[MemoryRecord]:
        """Store several memories of one user in one transaction: all are valid and written,
        or none is."""
        ...

    async def add_unique(
        self,
        user_id: str,
        drafts: Iterable[MemoryDraft],
        *,
        now: float | None = None,
        settle: bool = True,
    ) -> builtins.list[tuple[MemoryRecord, bool]]:
        """Like :meth:`add_many`, but a draft whose exact (stripped) content ``user_id``
        already has as an active memory — or an earlier draft of the batch has — is not
        stored again: ``(existing record, False)`` for it, ``(new record, True)`` else, in the
        drafts' order. The check runs inside the write transaction (two processes, one row).

        With ``settle`` a new memory that changes an older statement supersedes it at once
        (:mod:`hermes.memory.supersede`): how what a user says is written."""
        ...

    async def find_exact(
        self, user_id: str, content: str, *, now: float | None = None
    ) -> MemoryRecord | None:
        """The user's active memory whose content is exactly ``content`` (stripped), if any:
        an exact comparison, not a search (text without search terms, emoji, matches too)."""
        ...

    async def update(
        self,
        user_id: str,
        memory_id: str,
        *,
        content: str | Unset = UNSET,
        kind: MemoryKind | Unset = UNSET,
        confidence: float | Unset = UNSET,
        sensitive: bool | Unset = UNSET,
        topic: str | Unset | None = UNSET,
        tags: Sequence[str] | Unset = UNSET,
        expires_at: float | Unset | None = UNSET,
        now: float | None = None,
    ) -> MemoryRecord:
        """Change the given fields of one of the user's memories; returns the new record (the
        record as it was when nothing is given). A new kind resets the tier (events episodic,
        others semantic); new content is searched by its new words and clears the subject.
        ``MemoryNotFoundError`` when ``user_id`` has no memory ``memory_id``."""
        ...

    async def supersede(
        self,
        user_id: str,
        old_id: str,
        new_id: str,
        *,
        reason: SupersededReason = "conflict",
        now: float | None = None,
    ) -> MemoryRecord:
        """Mark ``old_id`` as replaced by ``new_id`` (seed 001 §5.4); returns the old memory as
        updated (kept as history, never recalled again). Both must be active memories of
        ``user_id`` (``MemoryNotFoundError`` otherwise); a memory cannot supersede itself
        (``InvalidInputError``)."""
        ...

    async def mark_recalled(
        self, user_id: str, memory_ids: Iterable[str], *, now: float | None = None
    ) -> int:
        """Record that these memories of ``user_id`` were recalled at ``now`` (count + 1, last
        recalled; a demoted memory is promoted back to semantic); returns how many."""
        ...

    async def forget(self, user_id: str, memory_id: str) -> bool:
        """Delete one memory (gone, not history); only its owner can. False when ``user_id``
        has no such memory."""
        ...

    async def delete_all(self, user_id: str) -> int:
        """Delete every memory of ``user_id`` (a user erased); returns how many there were.
        Habit counts are deleted by :meth:`delete_habits`."""
        ...

    # -- reading ---------------------------------------------------------------------------
    async def get(self, user_id: str, memory_id: str) -> MemoryRecord | None:
        """The memory if it belongs to ``user_id``, else None (active or not)."""
        ...

    async def list(
        self,
        user_id: str,
        *,
        kind: MemoryKind | None = None,
        include_inactive: bool = True,
        limit: int = 100,
        offset: int = 0,
        now: float | None = None,
    ) -> builtins.list[MemoryRecord]:
        """The user's memories, newest first (by creation time, then the latest written;
        superseded and expired ones too unless ``include_inactive`` is False), ``kind`` only
        when given, at most ``limit`` after skipping ``offset``."""
        ...

    async def count(self, user_id: str) -> int:
        """How many memories ``user_id`` has (active or not)."""
        ...

    async def export(
        self, user_id: str, *, reveal_personal: bool = False
    ) -> builtins.list[dict[str, Any]]:
        """Every memory of ``user_id`` with its history as JSON-safe dicts, oldest first;
        a sensitive memory's personal data masked (``"masked": true``) unless
        ``reveal_personal`` (:func:`hermes.memory.records.exported`)."""
        ...

    async def search(
        self,
        user_id: str,
        query: str,
        *,
        limit: int = 10,
        mode: SearchMode = "auto",
        where: SearchFilter | None = None,
        now: float | None = None,
    ) -> builtins.list[MemoryHit]:
        """The user's memories that best match ``query``, best first (ties: newest first), at
        most ``limit`` (1..100). Active memories only unless ``where`` says otherwise. Hits
        carry scores only, no threshold is applied (recall's policy does that)."""
        ...

    # -- the upkeep job's reads and writes (its rules are hermes.memory.upkeep's) ---------------
    async def upkeep_pending(
        self, user_id: str | None, now: float, limit: int
    ) -> builtins.list[MemoryRecord]:
        """Active memories new or changed since :meth:`upkeep_checked` last marked them (every
        user's when ``user_id`` is None), by user, oldest first, at most ``limit``."""
        ...

    async def upkeep_by_subject(
        self, user_id: str, kind: str, subject: str, now: float
    ) -> builtins.list[MemoryRecord]:
        """The user's active memories of ``kind`` about ``subject``, oldest first (at most
        100)."""
        ...

    async def upkeep_checked(
        self, user_id: str, checks: Sequence[tuple[str, str | None]], now: float
    ) -> None:
        """Mark the user's memories examined at ``now`` (not before their last update), each
        ``(id, subject)`` with the subject upkeep read in it."""
        ...

    async def upkeep_merge(
        self, user_id: str, keeper_id: str, other_id: str, now: float
    ) -> MemoryRecord | None:
        """Fold duplicate ``other_id`` into ``keeper_id`` (``hermes.memory.upkeep_duplicates.
        merged_record``; the other superseded with reason ``duplicate``); the keeper as merged,
        or None when either is no longer an active memory of the user — both read inside the
        write transaction, so no concurrent write is lost."""
        ...

    async def upkeep_stale(
        self,
        user_id: str | None,
        tier: str,
        cutoffs: tuple[float, float | None],
        *,
        now: float,
        limit: int,
    ) -> builtins.list[MemoryRecord]:
        """Active, not explicit memories of ``tier`` last used (updated or recalled) before
        ``cutoffs[0]`` (and, when ``cutoffs[1]`` is set, demoted before it or never), by user,
        oldest first, at most ``limit``."""
        ...

    async def upkeep_demote(self, records: Sequence[MemoryRecord], now: float) -> None:
        """Move ``records`` (semantic ones) to the episodic tier, ``demoted_at`` = ``now``."""
        ...

    # -- lifetime --------------------------------------------------------------------------
    async def close(self) -> None:
        """Release the store (idempotent); later calls raise ``StoreError``."""
        ...

    def close_sync(self) -> None:
        """:meth:`close` without an event loop (a constructor that failed half-way)."""
        ...
