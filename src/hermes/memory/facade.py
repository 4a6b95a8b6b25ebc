"""The memory of one agent as one object (seed 001 §5): what the turn loop and the memory tools use.

::

    memory = Memory.open(".hermes", semantic=False)     # .hermes/memory.db + .hermes/archive/
    agent = Agent(model=..., store=".hermes/hermes.db", memory=memory)
    ...
    await agent.aclose()
    await memory.aclose()                               # the caller's object: the caller closes

:class:`Memory` bundles the long-term store (:class:`~hermes.memory.store.MemoryStore`), the
tool-call tiers (:class:`~hermes.memory.tiers.ToolMemory`: L1/L2/L3 and ``cache_ttl`` reuse),
the extractor that turns what the user said into memories, the recall policy and the switches
(argument filling, implicit habits). Either store may be ``None``: that part is then off.

**Background work** (:meth:`Memory.spawn`): learning from a turn (extraction, habits) and
recording tool calls run as tasks the facade tracks, so a reply never waits for them. Their
errors are logged, never raised. :meth:`Memory.drain` waits for them (tests, shutdown);
:meth:`Memory.aclose` drains with a bound, cancels what is left, then closes the stores. Work
still pending when the process dies is lost (see ``hermes.memory.step`` for the window).

**Habits** (``habits=True``; seed 001 §5.2 "隐式积累", off by default): one
:class:`~hermes.memory.habits.HabitCounter` per user, kept as one JSON document by the
long-term store (its :class:`~hermes.memory.habits.HabitStore` side; in SQLite a
``memory_habits`` table of the same ``memory.db``, created on first use): a user's habits span
sessions, so not the session scratch. The facade runs no SQL.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hermes.errors import HermesError, StoreError
from hermes.memory.embed import Embedder
from hermes.memory.extract import (
    DEFAULT_THRESHOLD,
    Extractor,
    MemoryCandidate,
    RuleExtractor,
)
from hermes.memory.habits import HabitCounter, HabitStore
from hermes.memory.recall import DEFAULT_POLICY, RecallPolicy, select_hits
from hermes.memory.records import MemoryDraft, MemoryHit, MemoryKind, MemoryRecord
from hermes.memory.step import MemoryStep
from hermes.memory.store import MemoryStore
from hermes.memory.tiers import ToolMemory
from hermes.observe import get_logger
from hermes.session.ids import validate_user_id
from hermes.session.privacy import contains_secret, without_secret_clauses
from hermes.text.lang import Lang

if TYPE_CHECKING:
    from hermes.memory.upkeep import UpkeepPolicy, UpkeepReport

__all__ = ["Memory", "TurnCall"]

log = get_logger("memory")


#: ``(tool name, arguments, ok)`` of one call a turn made.
TurnCall = tuple[str, Mapping[str, Any], bool]


def _local_now() -> datetime:
    return datetime.now().astimezone()


class Memory:
    """Long-term memories + tool-call tiers + the knobs of recall, extraction and filling.

    ``threshold``: candidates from the extractor (and habits) below this confidence are not
    kept. ``recall_timeout``: seconds a turn waits for recall before going on without it.
    ``offer_tools``: an agent given this memory offers ``remember``, ``recall_memories`` and
    ``forget_memory`` (when there is a long-term store). ``upkeep_interval``: seconds between
    scheduled upkeep runs (``hermes.memory.upkeep``, with ``upkeep_policy``) from the first
    turn of an agent using this memory until :meth:`aclose` (``None``: never). ``clock`` gives
    the user's local time (working memory pins "明天" with it; injectable for tests).
    """

    def __init__(
        self,
        store: MemoryStore | None = None,
        tools: ToolMemory | None = None,
        *,
        extractor: Extractor | None = None,
        policy: RecallPolicy = DEFAULT_POLICY,
        fill_arguments: bool = True,
        habits: bool = False,
        threshold: float = DEFAULT_THRESHOLD,
        recall_timeout: float = 2.0,
        offer_tools: bool = True,
        upkeep_interval: float | None = None,
        upkeep_policy: UpkeepPolicy | None = None,
        clock: Callable[[], datetime] = _local_now,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be between 0 and 1, got {threshold}")
        if recall_timeout <= 0:
            raise ValueError(f"recall_timeout must be > 0, got {recall_timeout}")
        if upkeep_interval is not None and upkeep_interval <= 0:
            raise ValueError(f"upkeep_interval must be > 0, got {upkeep_interval}")
        self.store = store
        self.tools = tools
        self.extractor = extractor
        self.policy = policy
        self.fill_arguments = fill_arguments
        self.habits = habits
        self.threshold = threshold
        self.recall_timeout = recall_timeout
        self.offer_tools = offer_tools
        self.upkeep_interval = upkeep_interval
        self.upkeep_policy = upkeep_policy
        self.clock = clock
        #: Called with the number of memories each recall brought into a turn (metrics,
        #: seed 002 §4.3); a listener must not raise or block.
        self.recall_listeners: list[Callable[[int], None]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._habit_lock = asyncio.Lock()
        self._upkeep: asyncio.Task[None] | None = None
        # One lock per user (dropped when no writer holds it): a check for an existing memory
        # and the insert that follows are one step per user within this process; the store
        # repeats the check in its write transaction for other processes.
        self._write_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    def __repr__(self) -> str:
        return f"Memory(store={self.store!r}, tools={self.tools is not None})"

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        *,
        semantic: bool | Embedder = True,
        cross_language: bool = True,
        extractor: Literal["rules", "off"] | Extractor | None = "rules",
        tool_index: bool = True,
        long_term: bool = True,
        **options: Any,
    ) -> Memory:
        """Both stores under ``directory``: ``memory.db`` (long-term memories and the L2
        index) and ``archive/`` (L3). ``semantic``: ``True`` blends vector similarity into
        recall when ``hermes[semantic]`` is installed, ``False`` keywords only, or an
        :class:`~hermes.memory.embed.Embedder`. ``cross_language``: keyword recall also finds
        memories written in the other language (Chinese↔English). ``extractor``: ``"rules"``
        (offline), an extractor (e.g. ``ModelExtractor(model)``), or ``"off"``/``None``. Other
        keywords go to :class:`Memory`. Raises ``StoreError`` for an unusable file.
        """
        root = Path(directory)
        embedder: Embedder | Literal["auto"] | None
        embedder = "auto" if semantic is True else None if semantic is False else semantic
        chosen: Extractor | None
        if extractor == "rules":
            chosen = RuleExtractor(threshold=options.get("threshold", DEFAULT_THRESHOLD))
        elif extractor == "off" or extractor is None:
            chosen = None
        else:
            chosen = extractor
        lexicon: Literal["auto"] | None = "auto" if cross_language else None
        store: MemoryStore | None = None
        if long_term:  # the composition root turns the path into a backend
            from hermes.agent.compose import open_memory_store

            store = open_memory_store(root / "memory.db", embedder=embedder, lexicon=lexicon)
        try:
            tiers = ToolMemory.open(root) if tool_index else None
        except BaseException:  # clean up, then re-raise unchanged
            if store is not None:
                store.close_sync()
            raise
        return cls(store, tiers, extractor=chosen, **options)

    @property
    def directory(self) -> Path | None:
        """The directory of ``memory.db`` (``None`` without any file-backed store)."""
        for worker in (self.store, None if self.tools is None else self.tools.index):
            path = getattr(worker, "path", None)
            if isinstance(path, str) and path != ":memory:":
                return Path(path).parent
        return None

    def now(self) -> datetime:
        return self.clock()

    def pipeline_step(self) -> MemoryStep | None:
        """Memory's step for an agent's tool pipeline (it replaces the ``cache`` step): calls
        recorded in the tiers and ``cache_ttl`` served from them, recorded in the background
        (:mod:`hermes.memory.step`); None when this memory keeps no tool calls."""
        if self.tools is None:
            return None
        return MemoryStep(self.tools, background=self)

    # -- background work ------------------------------------------------------------------------
    def spawn(self, work: Coroutine[Any, Any, Any], *, what: str) -> None:
        """Run ``work`` in the background (errors logged, never raised); :meth:`drain` and
        :meth:`aclose` wait for it. After :meth:`aclose` it is dropped (and logged)."""
        if self._closed:
            work.close()
            log.warning("memory_work_dropped", what=what, reason="closed")
            return
        task = asyncio.ensure_future(_logged(work, what))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def pending(self) -> int:
        """How many background tasks are still running."""
        return len(self._tasks)

    async def drain(self, timeout: float | None = 10.0) -> bool:  # noqa: ASYNC109 - a bounded wait is the API
        """Wait until the background work (including work it spawns) is done; ``False`` if
        ``timeout`` seconds passed first (the work goes on)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._tasks:  # work may spawn more work: wait until none is left
            left = None if deadline is None else max(0.0, deadline - loop.time())
            _, not_done = await asyncio.wait(set(self._tasks), timeout=left)
            if not_done:
                return False
        return True

    def start(self) -> None:
        """Start scheduled upkeep (once; needs a running loop). The agent calls it with its
        first turn."""
        if self._upkeep is None and self.upkeep_interval is not None and not self._closed:
            self._upkeep = asyncio.ensure_future(self._upkeep_loop(self.upkeep_interval))

    async def _upkeep_loop(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            if not await run_scheduled_upkeep(self):
                return

    async def aclose(self, timeout: float = 5.0) -> None:  # noqa: ASYNC109 - a bounded wait is the API
        """Wait up to ``timeout`` seconds for background work, cancel the rest, stop the
        upkeep schedule and close both stores. Idempotent."""
        if self._closed:
            return
        if self._upkeep is not None:
            self._upkeep.cancel()
            await asyncio.gather(self._upkeep, return_exceptions=True)
        if not await self.drain(timeout):
            log.warning("memory_work_cancelled", pending=len(self._tasks))
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._closed = True
        for closer in (self.store, self.tools):
            if closer is not None:
                try:
                    await closer.close()
                except StoreError as exc:
                    log.error("memory_close_failed", error=exc.message)

    def close_sync(self) -> None:
        """Close the stores without an event loop (when building an agent failed)."""
        self._closed = True
        for closer in (self.store, self.tools):
            if closer is not None:
                closer.close_sync()

    # -- learning from a turn ---------------------------------------------------------------------
    async def learn(
        self,
        user_id: str,
        text: str,
        *,
        session_id: str | None = None,
        calls: Sequence[TurnCall] = (),
        lang: Lang = "zh",
        trace_id: str = "",
    ) -> list[MemoryRecord]:
        """Write what one turn taught about ``user_id``: memories extracted from ``text`` (the
        user's own message — never tool results) and, with ``habits``, behaviours of ``calls``
        that became habits. Returns the memories written. Raises for a store failure (callers
        in the background log it)."""
        store = self.store
        if store is None:
            return []
        now = self.now()
        text = without_secret_clauses(text)  # what the rest of a message says may still count
        candidates: list[MemoryCandidate] = []
        if self.extractor is not None:
            candidates.extend(
                await self.extractor.extract(
                    text, now=now, user_id=user_id, session_id=session_id or "", trace_id=trace_id
                )
            )
        if self.habits and calls:
            candidates.extend(await self._habits(user_id, calls, now, lang))
        # A secret is never a memory (seed 003 §2.1): the turn replaced it by a marker already,
        # and what holds one (or only the marker) is dropped here, never written.
        kept = [
            c
            for c in candidates
            if c.confidence >= self.threshold and not contains_secret(c.content)
        ]
        if not kept:
            return []
        async with self._write_lock(user_id):
            written = await store.add_unique(
                user_id, [c.to_draft(source_session=session_id) for c in kept]
            )
            records = [record for record, created in written if created]
            new_ids = {record.id for record in records}
            for candidate, (record, created) in zip(kept, written, strict=True):
                if created and candidate.supersedes_hint:
                    await self._supersede(store, record, candidate.supersedes_hint, new_ids)
        if records:
            log.info("memories_written", count=len(records), kinds=[r.kind for r in records])
        return records

    async def remember(
        self,
        user_id: str,
        content: str,
        *,
        kind: MemoryKind = "fact",
        sensitive: bool = False,
        topic: str | None = None,
        explicit: bool = True,
        source_session: str | None = None,
    ) -> tuple[MemoryRecord, bool]:
        """Store one memory the user asked for (the ``remember`` tool, the CLI): returns the
        record and whether it is new — the same content said twice (or by two concurrent
        calls, or two processes) is one memory, and the existing one is returned.

        Raises ``StoreError`` without a long-term store, ``InvalidInputError`` for bad content
        (blank, too long, NUL, lone surrogates) and ``InvalidIdError`` for a bad user id."""
        store = self.store
        if store is None:
            raise StoreError("long-term memory is off / 长期记忆未开启")
        draft = MemoryDraft(
            content, kind, 1.0, source_session, sensitive, topic, (), None, explicit
        )  # fmt: skip
        async with self._write_lock(user_id):
            ((record, created),) = await store.add_unique(user_id, [draft])
        if created:
            log.info("memories_written", count=1, kinds=[record.kind])
        return record, created

    async def existing(self, user_id: str, content: str) -> MemoryRecord | None:
        """The user's active memory with exactly this content (stripped), if any (no
        duplicates are written: the same preference said twice is one memory). An exact
        comparison, not a keyword search: text without search terms (emoji) matches too."""
        if self.store is None:
            return None
        return await self.store.find_exact(user_id, content)

    async def forget_user(self, user_id: str) -> dict[str, int]:
        """Forget everything about ``user_id`` (a user erased everywhere, DESIGN.md, "Public
        contracts"): every long-term memory, every tool-call record with the L3 blobs no other
        record uses, their L1 entries and their habit counts. Returns how many of each were
        deleted."""
        validate_user_id(user_id)
        memories = blobs = habits = 0
        async with self._write_lock(user_id):
            if self.store is not None:
                memories = await self.store.delete_all(user_id)
            if self.tools is not None:
                blobs = await self.tools.forget_user(user_id)
            if self.store is not None:
                async with self._habit_lock:
                    habits = await self.store.delete_habits(user_id)
        log.info("memory_user_forgotten", memories=memories, blobs=blobs, habits=habits)
        return {"memories": memories, "blobs": blobs, "habits": habits}

    # -- a person's look-ups and edits (``hermes memory``) ---------------------------------------
    async def search(
        self, user_id: str, text: str, *, limit: int = 5, min_score: float = 0.2
    ) -> list[MemoryHit]:
        """A person's look-up: the store's hybrid search, then recall's privacy rules (the
        user's memories only; a sensitive one only when ``text`` is about its topic) with
        ``min_score`` as the floor — no gate, no recency window, nothing marked recalled.
        Best first, at most ``limit``; empty without a long-term store."""
        if self.store is None:
            return []
        hits = await self.store.search(user_id, text, limit=max(limit, 20))
        policy = RecallPolicy(min_score=min_score, keyword_min_score=min_score, max_items=limit)
        return select_hits(hits, user_id, text, policy)

    async def memories(
        self, user_id: str, *, include_inactive: bool = False, limit: int = 1000
    ) -> list[MemoryRecord]:
        """The user's active memories, newest first (``include_inactive``: with superseded
        and expired history); empty without a long-term store."""
        if self.store is None:
            return []
        return await self.store.list(user_id, include_inactive=include_inactive, limit=limit)

    async def forget(self, user_id: str, memory_id: str) -> bool:
        """Forget one of the user's memories; ``False`` when the user has no such memory."""
        if self.store is None:
            return False
        async with self._write_lock(user_id):
            return await self.store.forget(user_id, memory_id)

    async def export(self, user_id: str, *, reveal_personal: bool = False) -> list[dict[str, Any]]:
        """Every memory of the user with its history, as JSON-ready data (personal details in
        sensitive memories masked unless ``reveal_personal``)."""
        if self.store is None:
            return []
        return await self.store.export(user_id, reveal_personal=reveal_personal)

    async def upkeep(self, *, user_id: str | None = None, dry_run: bool = False) -> UpkeepReport:
        """One upkeep run with :attr:`upkeep_policy`: the long-term memories of ``user_id``
        (``None``: every user's), and for every user also the tool-call tiers (pruned by age
        for all users at once, so only when ``user_id`` is ``None``)."""
        from hermes.memory.upkeep import UpkeepReport, run_tool_upkeep, run_upkeep

        policy = self.upkeep_policy
        if self.store is None:
            report = UpkeepReport(now=time.time(), dry_run=dry_run)
        else:
            report = await run_upkeep(self.store, user_id=user_id, policy=policy, dry_run=dry_run)
        if user_id is None and self.tools is not None:
            report.tool_calls = await run_tool_upkeep(self.tools, policy=policy, dry_run=dry_run)
        return report

    def _write_lock(self, user_id: str) -> asyncio.Lock:
        lock = self._write_locks.get(user_id)
        if lock is None:
            lock = asyncio.Lock()
            self._write_locks[user_id] = lock
        return lock

    @staticmethod
    async def _supersede(
        store: MemoryStore, record: MemoryRecord, hint: str, new_ids: set[str]
    ) -> None:
        """ "My city is now B" over "my city is A" (seed 001 §5.4). Only the unambiguous case is
        settled here: exactly one older active memory of the same kind that has the same topic,
        or whose text contains the old value the user named ("I no longer like coffee" →
        "The user likes coffee."), is marked superseded by ``record`` (kept as history). A
        keyword match alone is not enough ("喜欢喝茶" also matches "喜欢看电影"): anything less
        certain is left to the upkeep job, which compares memories by subject."""
        query = " ".join(part for part in (hint, record.topic or "") if part)
        hits = await store.search(record.user_id, query, limit=5, mode="keyword")
        named = hint.casefold()
        older = [
            hit.record
            for hit in hits
            if hit.record.id not in new_ids
            and hit.record.kind == record.kind
            and (
                (bool(hit.record.topic) and hit.record.topic == record.topic)
                or named in hit.record.content.casefold()
            )
        ]
        if len(older) != 1:
            if older:
                log.info("memory_supersede_ambiguous", candidates=len(older), new=record.id)
            return
        await store.supersede(record.user_id, older[0].id, record.id)
        log.info("memory_superseded", old=older[0].id, new=record.id)

    async def _habits(
        self, user_id: str, calls: Sequence[TurnCall], now: datetime, lang: Lang
    ) -> list[MemoryCandidate]:
        habits: HabitStore | None = self.store
        if habits is None:
            return []
        async with self._habit_lock:  # one read-modify-write of a user's counters at a time
            counter = HabitCounter.from_dict(await habits.load_habits(user_id), user_id=user_id)
            found: list[MemoryCandidate] = []
            for name, arguments, ok in calls:
                if ok:
                    found.extend(counter.observe_tool_call(name, arguments, now=now, lang=lang))
            await habits.save_habits(user_id, counter.to_dict())
        return found


async def _logged(work: Coroutine[Any, Any, Any], what: str) -> None:
    started = time.perf_counter()
    try:
        await work
    except HermesError as exc:
        log.error("memory_work_failed", what=what, error_type=exc.code, error=exc.message[:300])
    except Exception as exc:  # noqa: BLE001 - background memory work must never reach a turn
        log.error(
            "memory_work_failed", what=what, error_type=type(exc).__name__, error=str(exc)[:300]
        )
    else:
        log.debug(
            "memory_work_done", what=what, cost_ms=round((time.perf_counter() - started) * 1000, 3)
        )


async def run_scheduled_upkeep(memory: Memory) -> bool:
    """One scheduled upkeep run (``hermes.memory.upkeep.run_upkeep`` over every user and
    ``run_tool_upkeep`` on the tool-call tiers, with ``memory.upkeep_policy``); ``False`` when
    there is neither store (the schedule stops).
    A failed run is logged and retried at the next interval."""
    if memory.store is None and memory.tools is None:
        return False
    from hermes.memory.upkeep import run_tool_upkeep, run_upkeep  # loaded where upkeep runs

    try:
        if memory.store is not None:
            await run_upkeep(memory.store, policy=memory.upkeep_policy)
        if memory.tools is not None:
            await run_tool_upkeep(memory.tools, policy=memory.upkeep_policy)
    except HermesError as exc:
        log.error("memory_upkeep_failed", error_type=exc.code, error=exc.message[:300])
    except Exception as exc:  # noqa: BLE001 - a failed run is retried at the next interval
        log.error("memory_upkeep_failed", error_type=type(exc).__name__, error=str(exc)[:300])
    return True
