"""The upkeep job of long-term memories (seed 001 §5.4 "清洁工很重要").

:func:`run_upkeep` does three things, per user (no step ever compares, moves or counts one
user's memories with another's: every statement it runs is scoped by ``user_id``):

1. **Merge near-duplicates.** Two active memories of the same kind are duplicates when their
   texts are equal once normalized (case, width, punctuation, "The user …" / "用户…" read as
   "I …" / "我…"), when their keyword sets overlap by ``merge_overlap`` (Jaccard; texts of
   fewer than 48 distinct keywords, the most a query keeps), or — with an
   embedder — when the overlap is at least ``merge_min_overlap`` and their passage vectors
   have a cosine of ``merge_similarity`` (raw cosine, not recall's calibrated score: related
   statements saturate the calibrated score, only restatements reach a raw 0.98). Never
   duplicates: texts whose negation or numbers differ, and two values of one subject ("lives
   in Beijing" / "lives in Shanghai" — that is a conflict). One memory is kept — the
   sensitive one if only one is (the stricter visibility wins and keeps its topic), then the
   explicit one, then higher confidence, more recalls, newest — and receives the other's
   recall count, latest recall and latest update (a restatement is fresh use); the other is
   kept as history, ``superseded_by`` the keeper with ``superseded_reason = "duplicate"``. Why
   not delete it: the user can still see what was said and when (``hermes memory export``).
2. **Resolve conflicts** (seed 001 §5.4 "以新记忆为准，并给旧记忆打上已过期标签"). Each memory
   gets a rule-based *subject* (:func:`read_statement`), stored in ``memories.subject``:
   ``is:<key>`` for one-valued facts ("my city is …", "用户的生日是…", lives in / 住在, works
   at / 在…工作, name, hometown, age), ``likes:<head>`` for preferences (the object's leading
   verb — ``likes:喝``, ``likes:drink`` — or the whole object), ``topic:<topic>`` from a
   non-sensitive topic otherwise. A newer memory replaces an older one of the same kind and
   subject when: an ``is:`` value differs; a preference says it changed ("now", "no longer",
   "现在", "改喝", "不再", "…了") and is not additive ("also", "也"), or flips the polarity of
   the same object; a ``topic:`` statement says it changed. Two more ways for a changed
   preference: it names the old value ("coffee over tea", "而不是茶") found in an older
   preference; or, with an embedder, both are choices ("prefer", "偏好", "更喜欢") and close
   in meaning (calibrated similarity ``conflict_similarity``: "prefers tea" / "now prefers
   coffee" 0.89, "window seats" / "aisle seats" 1.0, "Java" / "Python" 0.79, but "window
   seats" / "Python" 0.46). Only choices: the calibrated score of two mere likes says little
   about a category ("likes espresso" 1.0 but "likes americano" 0.29 against "now prefers
   coffee"), and a new like rarely ends an old one. The older memory is superseded
   (``superseded_reason = "conflict"``, ``expires_at`` set): kept as history, never recalled
   again. Without an embedder, "I prefer tea" → "I now prefer coffee" is left alone (nothing
   in the words says both are about drinks).
3. **Demote, then delete, what goes unused** ("semantic → episodic → deleted"). A semantic
   memory (fact, preference, habit) whose last use — its latest update or recall — is older
   than ``demote_after_days`` moves to the episodic tier (``demoted_at`` set); recall then
   applies its recency window to it as to events, so it is no longer recalled. An episodic
   memory (a demoted one, or an event) unused for ``delete_after_days`` is deleted — a demoted
   one only after it spent ``delete_after_days - demote_after_days`` in the episodic tier,
   so a memory is never demoted and deleted by the same run, and an upkeep that did not run
   for months does not skip the episodic stage. A recall promotes a demoted memory back
   (``MemoryStore.mark_recalled``). Memories the user asked to keep (``explicit``: "记住…",
   the remember tool, ``hermes memory add``) are never demoted or deleted for disuse; only
   ``forget`` removes them (they can still be merged or replaced by a newer statement).
   Sensitive memories follow the same schedule — they are recalled less often, so more of
   them go, which is what privacy asks for.

Bounded and idempotent: a run examines at most ``batch_size`` memories that are new or
changed since they were last examined (``memories.checked_at``); each is compared, through
the store's indexes, with the user's ``neighbours`` closest memories by keywords and with
those of the same subject — every pair is met when the later of the two is examined. A run
demotes or deletes at most ``max_removals``; ``UpkeepReport.remaining`` says whether work is
left for the next run. A second run at the same ``now`` changes nothing. ``dry_run`` writes
nothing and reports what a run would do.

**Tool-call tiers** (:func:`run_tool_upkeep`, run beside it by ``hermes memory upkeep`` and
the scheduled upkeep): L2 records older than ``tool_calls_retention_days`` are deleted with
the L3 blobs no remaining record uses; the archive's leftover temp files and blobs no record
names at all (older than an hour) are swept.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from hermes.errors import InvalidInputError
from hermes.memory.keywords import MAX_QUERY_TOKENS
from hermes.memory.records import MemoryNotFoundError, MemoryRecord
from hermes.memory.statements import Statement, read_statement, relation
from hermes.memory.store import MemoryStore
from hermes.memory.upkeep_duplicates import (
    MemoryText,
    jaccard,
    keeper_of,
    keyword_set,
    merged_record,
)
from hermes.observe import get_logger
from hermes.session.ids import validate_user_id

if TYPE_CHECKING:
    from hermes.config import MemoryConfig
    from hermes.memory.tiers import ToolMemory

__all__ = [
    "Statement",
    "UpkeepAction",
    "UpkeepPolicy",
    "UpkeepReport",
    "read_statement",
    "run_tool_upkeep",
    "run_upkeep",
]

log = get_logger("memory")

_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class UpkeepPolicy:
    """The knobs of :func:`run_upkeep` (see the module docstring for what each one does)."""

    demote_after_days: float = 90.0
    delete_after_days: float = 180.0
    #: Keyword overlap (Jaccard) at which two texts are duplicates.
    merge_overlap: float = 0.8
    #: With an embedder: passage cosine for duplicates whose overlap is at least
    #: ``merge_min_overlap``.
    merge_similarity: float = 0.98
    merge_min_overlap: float = 0.5
    #: With an embedder: calibrated similarity of a changed choice ("now prefers") to an older
    #: choice it replaces.
    conflict_similarity: float = 0.7
    #: Most memories examined for duplicates and conflicts in one run.
    batch_size: int = 500
    #: Most demotions plus deletions in one run.
    max_removals: int = 1000
    #: Search hits compared with each examined memory.
    neighbours: int = 10
    #: Tool-call records (L2) older than this are deleted, with the L3 blobs only they used.
    tool_calls_retention_days: float = 90.0

    @classmethod
    def from_config(cls, config: MemoryConfig) -> UpkeepPolicy:
        """The policy of a ``memory:`` configuration section."""
        return cls(
            demote_after_days=config.demote_after_days,
            delete_after_days=config.delete_after_days,
            tool_calls_retention_days=config.tool_calls_retention_days,
        )


UpkeepActionKind = Literal["merge", "supersede", "demote", "delete"]


@dataclass(frozen=True, slots=True)
class UpkeepAction:
    """One change: ``memory_id`` was merged into / superseded by ``into``, demoted or deleted."""

    action: UpkeepActionKind
    user_id: str
    memory_id: str
    kind: str
    reason: str
    into: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "user_id": self.user_id,
            "memory_id": self.memory_id,
            "kind": self.kind,
            "into": self.into,
            "reason": self.reason,
        }


@dataclass(slots=True)
class UpkeepReport:
    """What one run did (or, with ``dry_run``, would do)."""

    now: float
    dry_run: bool
    examined: int = 0
    remaining: bool = False
    actions: list[UpkeepAction] = field(default_factory=list)
    #: What :func:`run_tool_upkeep` removed (empty when it did not run).
    tool_calls: dict[str, int] = field(default_factory=dict)

    def count(self, action: UpkeepActionKind) -> int:
        return sum(1 for a in self.actions if a.action == action)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: counts per action, the actions with ids, and whether work is left."""
        return {
            "dry_run": self.dry_run,
            "now": self.now,
            "examined": self.examined,
            "merged": self.count("merge"),
            "superseded": self.count("supersede"),
            "demoted": self.count("demote"),
            "deleted": self.count("delete"),
            "remaining": self.remaining,
            "actions": [a.to_dict() for a in self.actions],
            "tool_calls": dict(self.tool_calls),
        }


# -- the run -------------------------------------------------------------------------------


class _Run:
    """One upkeep run: its inputs, report, and what it changed so far (``retired`` ids and
    ``fresh`` records, which also make a dry run read as if its changes had been made)."""

    def __init__(self, store: MemoryStore, policy: UpkeepPolicy, now: float, dry_run: bool) -> None:
        self.store = store
        self.policy = policy
        self.now = now
        self.dry_run = dry_run
        self.report = UpkeepReport(now=now, dry_run=dry_run)
        self.retired: set[str] = set()
        self.fresh: dict[str, MemoryRecord] = {}
        #: Subjects of the memories being examined (stored once they are done).
        self.subjects: dict[str, str | None] = {}
        self.batch: list[MemoryRecord] = []
        self._vectors: dict[str, Any] = {}
        # A record's text is read once per run, however many pairs it is part of.
        self._texts: dict[str, MemoryText] = {}
        self._statements: dict[tuple[str, str | None, bool], Statement] = {}

    def text(self, content: str) -> MemoryText:
        """``MemoryText.of(content)``, read once per run."""
        found = self._texts.get(content)
        if found is None:
            found = self._texts[content] = MemoryText.of(content)
        return found

    def statement(self, record: MemoryRecord) -> Statement:
        """What ``record`` states (:func:`read_statement`), read once per run."""
        key = (record.content, record.topic, record.sensitive)
        found = self._statements.get(key)
        if found is None:
            found = self._statements[key] = _statement(record)
        return found

    def current(self, record: MemoryRecord) -> MemoryRecord | None:
        """The record as this run left it, None if it merged or was replaced."""
        if record.id in self.retired:
            return None
        return self.fresh.get(record.id, record)

    # -- duplicates and conflicts ----------------------------------------------------------
    async def examine(self, user_id: str | None) -> None:
        pending = await self.store.upkeep_pending(user_id, self.now, self.policy.batch_size)
        self.report.examined = len(pending)
        self.report.remaining = len(pending) >= self.policy.batch_size
        users: dict[str, list[MemoryRecord]] = {}
        for record in pending:
            users.setdefault(record.user_id, []).append(record)
        for owner, records in users.items():
            self.batch = records
            statements = {r.id: self.statement(r) for r in records}
            self.subjects = {i: s.subject for i, s in statements.items()}
            for record in records:
                current = self.current(record)
                if current is None:
                    continue
                kept = await self._dedupe(current)
                if kept is not None:
                    await self._resolve(kept, statements[record.id])
            if not self.dry_run:
                checks = [(r.id, self.subjects[r.id]) for r in records if r.id not in self.retired]
                if checks:
                    await self.store.upkeep_checked(owner, checks, self.now)

    async def _dedupe(self, record: MemoryRecord) -> MemoryRecord | None:
        """Merge ``record``'s duplicates; the record as it stands after, None if merged away."""
        hits = await self.store.search(
            record.user_id,
            record.content,
            limit=self.policy.neighbours,
            mode="keyword",
            now=self.now,
        )
        current: MemoryRecord | None = record
        for hit in hits:
            other = self.current(hit.record)
            if current is None or other is None or other.id == current.id:
                continue
            if other.kind == current.kind and await self._duplicates(current, other):
                current = await self._merge(current, other, "duplicate")
        return current

    async def _duplicates(self, a: MemoryRecord, b: MemoryRecord) -> bool:
        ta, tb = self.text(a.content), self.text(b.content)
        if ta.squashed and ta.squashed == tb.squashed:
            return True
        if ta.negative != tb.negative or ta.digits != tb.digits:
            return False
        sa, sb = self.statement(a), self.statement(b)
        one_valued = sa.subject is not None and sa.subject.startswith("is:")
        if one_valued and sa.subject == sb.subject and sa.value != sb.value:
            return False  # two values of one subject: a conflict, not a duplicate
        overlap = jaccard(ta.tokens, tb.tokens)
        longest = max(len(ta.tokens), len(tb.tokens))
        if overlap >= self.policy.merge_overlap and longest < MAX_QUERY_TOKENS:
            return True
        if self.store.embedder is None or overlap < self.policy.merge_min_overlap:
            return False
        cosine = await self._cosine(a.content, b.content)
        return cosine is not None and cosine >= self.policy.merge_similarity

    async def _cosine(self, a: str, b: str) -> float | None:
        embedder = self.store.embedder
        missing = [t for t in dict.fromkeys((a, b)) if t not in self._vectors]
        if embedder is not None and missing:
            try:
                matrix, _ = await asyncio.to_thread(embedder.embed_passages, missing)
            except Exception as exc:  # noqa: BLE001 - no vector, no vector-based merge
                log.warning("memory_upkeep_embed_failed", error=f"{type(exc).__name__}: {exc}")
                return None
            self._vectors.update(zip(missing, matrix, strict=True))
        if a not in self._vectors or b not in self._vectors:
            return None
        return float(self._vectors[a] @ self._vectors[b])

    async def _merge(self, a: MemoryRecord, b: MemoryRecord, reason: str) -> MemoryRecord | None:
        """Merge two duplicates; returns ``a`` as it stands after (None if merged away)."""
        keep, other = keeper_of(a, b)
        if self.dry_run:
            merged: MemoryRecord | None = merged_record(keep, other)
        else:
            merged = await self.store.upkeep_merge(keep.user_id, keep.id, other.id, self.now)
        if merged is None:  # changed meanwhile (another process): left for the next run
            return a
        self.retired.add(other.id)
        self.fresh[keep.id] = merged
        self.report.actions.append(
            UpkeepAction("merge", keep.user_id, other.id, other.kind, reason, into=keep.id)
        )
        return merged if keep.id == a.id else None

    async def _resolve(self, record: MemoryRecord, statement: Statement) -> None:
        """Apply the conflict rules between ``record`` and the user's memories."""
        current: MemoryRecord | None = record
        for other, forced in await self._related(record, statement):
            other_now = self.current(other)
            if current is None or other_now is None or other_now.id == current.id:
                continue
            if other_now.kind != current.kind:
                continue
            older, newer = sorted((current, other_now), key=_age)
            if forced is not None and newer.id != current.id:
                continue
            said = self.statement(newer)
            rel = relation(self.statement(older), said) if forced is None else "replaces"
            if rel == "same":
                current = await self._merge(current, other_now, "same statement")
            elif rel == "replaces":
                await self._supersede(older, newer, forced or f"newer statement ({said.subject})")
                current = None if older.id == current.id else current

    async def _related(
        self, record: MemoryRecord, statement: Statement
    ) -> list[tuple[MemoryRecord, str | None]]:
        """Memories to weigh against ``record``: same subject (rules decide), and for a
        changed preference the ones it replaces by name or by meaning (reason given)."""
        found: dict[str, tuple[MemoryRecord, str | None]] = {}
        subject = statement.subject
        if subject is not None:
            stored = await self.store.upkeep_by_subject(
                record.user_id, record.kind, subject, self.now
            )
            in_batch = [r for r in self.batch if self.subjects.get(r.id) == subject]
            for other in (*stored, *in_batch):
                found.setdefault(other.id, (other, None))
        if subject is None or not subject.startswith("likes:"):
            return list(found.values())
        if not statement.changed or statement.additive:
            return list(found.values())
        for other, why in await self._replaced_preferences(record, statement):
            if other.id not in found:
                found[other.id] = (other, why)
        return list(found.values())

    async def _replaced_preferences(
        self, record: MemoryRecord, statement: Statement
    ) -> list[tuple[MemoryRecord, str]]:
        out: list[tuple[MemoryRecord, str]] = []
        if statement.old_value:
            named = keyword_set(statement.old_value)
            hits = await self.store.search(
                record.user_id, statement.old_value, limit=self.policy.neighbours,
                mode="keyword", now=self.now,
            )  # fmt: skip
            for hit in hits:
                other = self.statement(hit.record)
                if (
                    _is_same_polarity_preference(other, statement)
                    and named
                    and named <= self.text(hit.record.content).tokens
                ):
                    out.append((hit.record, f"names the old value {statement.old_value!r}"))
        if self.store.embedder is not None and statement.choice:
            hits = await self.store.search(
                record.user_id, record.content, limit=self.policy.neighbours, now=self.now
            )
            for hit in hits:
                score = hit.vector_score
                if score is None or score < self.policy.conflict_similarity:
                    continue
                other = self.statement(hit.record)
                if other.choice and _is_same_polarity_preference(other, statement):
                    out.append((hit.record, f"changed choice, similarity {score:.2f}"))
        return out

    async def _supersede(self, older: MemoryRecord, newer: MemoryRecord, why: str) -> None:
        if not self.dry_run:
            try:
                await self.store.supersede(
                    older.user_id, older.id, newer.id, reason="conflict", now=self.now
                )
            except MemoryNotFoundError:  # changed meanwhile (another process)
                return
        self.retired.add(older.id)
        self.report.actions.append(
            UpkeepAction("supersede", older.user_id, older.id, older.kind, why, into=newer.id)
        )

    # -- demotion and deletion -------------------------------------------------------------
    async def retire_unused(self, user_id: str | None) -> None:
        policy, now = self.policy, self.now
        budget = policy.max_removals
        grace = max(policy.delete_after_days - policy.demote_after_days, 0.0) * _DAY
        delete_cutoff = now - policy.delete_after_days * _DAY
        doomed = await self.store.upkeep_stale(
            user_id,
            "episodic",
            (delete_cutoff, now - grace),
            now=now,
            limit=budget,
        )
        doomed = self._still_stale(doomed, delete_cutoff)
        for record in doomed:
            if not self.dry_run and not await self.store.forget(record.user_id, record.id):
                continue
            why = f"unused for {policy.delete_after_days:g} days in the episodic tier"
            self.report.actions.append(
                UpkeepAction("delete", record.user_id, record.id, record.kind, why)
            )
        budget -= len(doomed)
        demote_cutoff = now - policy.demote_after_days * _DAY
        demoted = await self.store.upkeep_stale(
            user_id,
            "semantic",
            (demote_cutoff, None),
            now=now,
            limit=max(budget, 0),
        )
        demoted = self._still_stale(demoted, demote_cutoff)
        if demoted and not self.dry_run:
            await self.store.upkeep_demote(demoted, now)
        why = f"not recalled for {policy.demote_after_days:g} days"
        self.report.actions.extend(
            UpkeepAction("demote", r.user_id, r.id, r.kind, why) for r in demoted
        )
        if len(doomed) + len(demoted) >= policy.max_removals:
            self.report.remaining = True

    def _still_stale(self, records: Iterable[MemoryRecord], cutoff: float) -> list[MemoryRecord]:
        """Drop what this run merged away or freshened (it matters in a dry run)."""
        kept = []
        for record in records:
            now = self.current(record)
            if now is not None and max(now.updated_at, now.last_recalled_at or 0.0) < cutoff:
                kept.append(now)
        return kept


def _statement(record: MemoryRecord) -> Statement:
    return read_statement(record.content, topic=record.topic, sensitive=record.sensitive)


def _age(record: MemoryRecord) -> tuple[float, float, str]:
    """Order of statements: the latest update (a restatement merged in counts), then creation."""
    return (record.updated_at, record.created_at, record.id)


def _is_same_polarity_preference(other: Statement, newer: Statement) -> bool:
    return (
        other.subject is not None
        and other.subject.startswith("likes:")
        and other.negative == newer.negative
        and other.value != newer.value
    )


async def run_upkeep(
    store: MemoryStore,
    *,
    user_id: str | None = None,
    policy: UpkeepPolicy | None = None,
    now: float | None = None,
    dry_run: bool = False,
) -> UpkeepReport:
    """Merge duplicates, resolve conflicts, demote and delete unused memories (module
    docstring) — of ``user_id`` only, or of every user when None — and report what changed.

    ``now`` (epoch seconds) is the time the rules measure against (tests inject it). Raises
    ``InvalidIdError`` for a malformed user id, ``InvalidInputError`` for a bad policy and
    ``StoreError`` when the store fails (changes made until then stay made; a rerun goes on).
    """
    if user_id is not None:
        validate_user_id(user_id)
    chosen = policy or UpkeepPolicy()
    if chosen.batch_size < 1 or chosen.max_removals < 0 or chosen.neighbours < 1:
        raise InvalidInputError("upkeep batch_size and neighbours must be at least 1")
    run = _Run(store, chosen, time.time() if now is None else float(now), dry_run)
    started = time.perf_counter()
    await run.examine(user_id)
    await run.retire_unused(user_id)
    report = run.report
    log.info(
        "memory_upkeep",
        dry_run=dry_run,
        examined=report.examined,
        merged=report.count("merge"),
        superseded=report.count("supersede"),
        demoted=report.count("demote"),
        deleted=report.count("delete"),
        remaining=report.remaining,
        cost_ms=round((time.perf_counter() - started) * 1000, 2),
    )
    return report


async def run_tool_upkeep(
    tools: ToolMemory,
    *,
    policy: UpkeepPolicy | None = None,
    now: float | None = None,
    dry_run: bool = False,
) -> dict[str, int]:
    """Prune the tool-call tiers (module docstring): L2 records past the policy's
    ``tool_calls_retention_days``, the blobs only they used, leftover temp files and blobs no
    record names. Returns counts per kind (nothing is done with ``dry_run``)."""
    chosen = policy or UpkeepPolicy()
    if not chosen.tool_calls_retention_days > 0:
        raise InvalidInputError("tool_calls_retention_days must be > 0")
    if dry_run:
        return {}
    return await tools.prune(older_than=chosen.tool_calls_retention_days * _DAY, now=now)
