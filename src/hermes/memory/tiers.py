"""The three memory tiers as one object: record tool calls, reuse ``cache_ttl`` results
(seed 000 §2.4 and §3.5).

::

    memory = ToolMemory.open(".hermes")              # .hermes/memory.db + .hermes/archive/
    key = memory.key("get_weather", {"city": "上海"}, user_id="u1", session_id="s-0001")
    hit = await memory.find_reusable(key, ttl=600)   # L1 → L2 + L3, or None
    if hit is None:
        result = ...run the tool...
        await memory.record_call(key, result, reuse_ttl=600, call_id=..., trace_id=...)

**Recording** (every call, ok or not): the output's canonical JSON is archived in L3 first
(content-addressed, so a row never points at a blob that was not written), then one L2 row
with the hashes and metadata (``ok``, ``error_type``, ``duration_ms``, ``attempts``,
``cached``, ``summary``, ``output_bytes``, ``archived``, ``notes`` …). A result the caller
gives a ``reuse_ttl`` (a fresh, ok, confirmed result of a ``cache_ttl`` tool) also goes to L1.
A result that is ok but not yet confirmed is recorded ``unconfirmed`` and held in L1's
``unconfirmed_results`` namespace until :meth:`ToolMemory.confirm`; it is never reused
before. Failed results are recorded, never reused. Recording never raises for a storage
failure: the call happened, so its result must still reach the model; what could not be
stored is logged and reported in :class:`RecordedCall`.

**Reuse** answers an identical call — same tool name and version, same canonical input hash,
same *scope* — made within the tool's TTL: from L1 when this process saw it, else from the L2
row plus its L3 blob, which survive a restart. L3 is read only when L1 cannot answer and L2
names a blob.

**Scope** (a result never crosses users): ``"user"`` (default) reuses a result for the same
user in any of their sessions; ``"session"`` only within the session. A call without a user
id falls back to session scope — two anonymous people must not share results — and a call
with neither a user nor a session id is never reused.

**Bad data**: arguments with no JSON form (NaN, sets …) are recorded without an input hash
and never reused; an output with no JSON form is recorded without an output hash (note
``output_not_json_safe``); an output over the archive's size limit is not archived (note
``too_large``) and so not reusable after L1; a blob that fails verification (a torn write, a
bad disk) is a miss, is deleted, and is rewritten by the next successful call.

**Tool versions**: ``input_hash`` is the hash of the arguments alone (what the L2 column
means: equal arguments, equal hash). Which tool produced a result is its ``tool_version``
(:func:`tool_fingerprint` — name, schemas, function — given to :meth:`ToolMemory.key` by the
executor), kept in its own L2 column and in the L1 slot; a lookup matches it exactly, so a
changed tool, or another tool of the same name, never reuses the old one's results. A key
made without a version has ``""``: such calls reuse each other's results only. Rows recorded
before the index had the column are never reused (see ``hermes.memory.index``).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from hermes.errors import HermesError, StoreError
from hermes.memory.archive import (
    Archive,
    ArchiveCorruptError,
    ArchiveError,
    ArchiveTooLargeError,
    ArchiveUpkeep,
)
from hermes.memory.cache import TOOL_RESULTS, UNCONFIRMED_RESULTS, MemoryCache
from hermes.memory.hashing import NotJSONSafeError, canonical_json, content_hash, hash_bytes
from hermes.memory.index import NewToolCall, ToolCallIndex, ToolCallRecord, ToolCallStatus
from hermes.observe import get_logger

__all__ = [
    "CallKey",
    "CallOutcome",
    "RecordedCall",
    "ReuseScope",
    "ReusedResult",
    "ToolMemory",
    "tool_fingerprint",
]

logger = get_logger("memory")

ReuseScope = Literal["user", "session"]
Tier = Literal["l1", "l3"]

#: Outputs larger than this (canonical JSON bytes) are not kept in L1 (it is bounded by
#: entries, not bytes); they are still archived in L3 up to the archive's own limit.
DEFAULT_MAX_L1_BYTES = 256 * 1024
#: A summary longer than this is not stored in L2 metadata (a reuse would then lose it, so
#: such a result is not reusable after L1).
MAX_SUMMARY_CHARS = 4000


class _ErrorLike(Protocol):
    @property
    def type(self) -> str: ...


class CallOutcome(Protocol):
    """What :meth:`ToolMemory.record_call` reads from a result — ``hermes.tools.ToolResult``
    fits as is (a protocol, so this module does not import the tools package)."""

    @property
    def ok(self) -> bool: ...
    @property
    def output(self) -> Any: ...
    @property
    def summary(self) -> str | None: ...
    @property
    def error(self) -> _ErrorLike | None: ...
    @property
    def duration_ms(self) -> float: ...
    @property
    def attempts(self) -> int: ...
    @property
    def cached(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class CallKey:
    """Who called which tool with what: built once per call by :meth:`ToolMemory.key`.

    ``input_hash`` (of the arguments alone) is ``None`` when the arguments have no JSON
    form (``input_problem`` says why); ``scope_key`` is ``None`` when the call has no scope to
    be reused in; ``tool_version`` is the tool's fingerprint (``""``: none given).
    """

    tool_name: str
    session_id: str
    user_id: str | None
    input_hash: str | None
    scope: ReuseScope
    scope_key: tuple[str, str] | None
    input_problem: str | None = None
    tool_version: str = ""

    def cache_slot(self) -> Hashable:
        """The L1 key of this call's reusable result (the user first after the tool, so
        forgetting a user finds their entries whatever the scope)."""
        return (
            self.tool_name, self.user_id or "", self.scope_key, self.tool_version, self.input_hash,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class ReusedResult:
    """A stored result that answers the call: its output (a fresh copy), its summary, the
    tier that answered, and when the original call was recorded (epoch seconds)."""

    output: Any
    summary: str | None
    tier: Tier
    recorded_at: float
    record_id: int | None


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """What :meth:`ToolMemory.record_call` stored: the L2 id (``None`` if the index failed),
    the output hash, whether the output is in L3, and notes on anything not stored."""

    record_id: int | None
    status: ToolCallStatus
    output_hash: str | None
    archived: bool
    reusable: bool
    notes: tuple[str, ...] = ()


class _L1Result(NamedTuple):
    recorded_at: float
    output_json: str
    summary: str | None
    record_id: int | None


class _Pending(NamedTuple):
    """An unconfirmed result held in L1."""

    user_id: str | None
    output_json: str


class _Output(NamedTuple):
    """An output prepared for storage."""

    digest: str | None
    size: int
    archived: bool
    text: str | None  # canonical JSON, for L1


class ToolMemory:
    """L1 cache + L2 index + L3 archive behind one small API (see the module docstring).

    ``clock`` gives wall-clock epoch seconds: L2 timestamps and TTL checks must mean the
    same after a restart (injectable for tests). ``archive_outputs``: ``"ok"`` archives the
    output of every ok call (L3 is the record of what tools returned), ``"reusable"`` only
    those that may be reused (less disk I/O per call).
    """

    def __init__(
        self,
        index: ToolCallIndex,
        archive: Archive,
        cache: MemoryCache | None = None,
        *,
        clock: Callable[[], float] = time.time,
        archive_outputs: Literal["ok", "reusable"] = "ok",
        max_l1_bytes: int = DEFAULT_MAX_L1_BYTES,
    ) -> None:
        self.index = index
        self.archive = archive
        self.cache = cache if cache is not None else MemoryCache()
        self.clock = clock
        self.archive_outputs = archive_outputs
        self.max_l1_bytes = max_l1_bytes

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        *,
        cache: MemoryCache | None = None,
        clock: Callable[[], float] = time.time,
        debug: bool = False,
    ) -> ToolMemory:
        """The tiers under ``directory``: ``memory.db`` (L2) and ``archive/`` (L3) — put it
        beside the session database (e.g. ``.hermes/``). Raises ``StoreError`` for a bad file.

        Which backends those are is the storage layer's choice, asked through the composition
        root (memory/ never imports storage/, DESIGN.md "Layers"); the import is here, not at
        the top, because the composition root is the upper layer.
        """
        from hermes.agent.compose import open_tool_memory_backends

        index, archive = open_tool_memory_backends(Path(directory), debug=debug)
        return cls(index, archive, cache, clock=clock)

    async def close(self) -> None:
        """Close the index (the L1 cache simply goes away with the object)."""
        await self.index.close()

    def close_sync(self) -> None:
        self.index.close_sync()

    # -- keys --------------------------------------------------------------------------------
    def key(
        self,
        tool_name: str,
        arguments: Mapping[str, Any],
        *,
        user_id: str | None,
        session_id: str = "",
        scope: ReuseScope = "user",
        tool_version: str = "",
    ) -> CallKey:
        """The identity of one call: hashes the arguments once for lookup and record.

        ``input_hash`` is the canonical hash of ``arguments`` alone. ``tool_version``
        identifies the tool itself (:func:`tool_fingerprint`: its name, schemas, function);
        it is recorded beside the hash and matched by every lookup, so a tool whose schema or
        function changed, or another tool of the same name, never reuses the old one's
        results."""
        try:
            input_hash: str | None = content_hash(dict(arguments))
            problem = None
        except NotJSONSafeError as exc:
            input_hash, problem = None, exc.message
        if scope == "user" and user_id:
            scope_key: tuple[str, str] | None = ("user", user_id)
        elif session_id:  # session scope, or an anonymous caller (see the module docstring)
            scope_key = ("session", session_id)
        else:
            scope_key = None
        return CallKey(
            tool_name, session_id, user_id or None, input_hash, scope, scope_key, problem,
            tool_version,
        )  # fmt: skip

    # -- reuse -------------------------------------------------------------------------------
    async def find_reusable(self, key: CallKey, *, ttl: float) -> ReusedResult | None:
        """A result of the same call recorded at most ``ttl`` seconds ago, or ``None``.

        Never raises for a storage problem: a broken tier is a miss (and is logged).
        """
        if key.input_hash is None or key.scope_key is None or not ttl > 0:
            return None
        now = self.clock()
        slot = key.cache_slot()
        held: _L1Result | None = self.cache.get(TOOL_RESULTS, slot)
        if held is not None and now - held.recorded_at <= ttl:
            return ReusedResult(
                json.loads(held.output_json), held.summary, "l1", held.recorded_at, held.record_id
            )
        record = await self._latest_reusable(key, ttl, now)
        if record is None or record.output_hash is None:
            return None
        data = await self._read_blob(record.output_hash)
        if data is None:
            return None
        try:
            text = data.decode("utf-8", "surrogatepass")
            output = json.loads(text)
        except ValueError as exc:  # a verified blob that is not JSON: not one the tiers wrote
            logger.warning("memory_blob_not_json", digest=record.output_hash, error=str(exc))
            return None
        summary = record.metadata.get("summary")
        summary = summary if isinstance(summary, str) else None
        remaining = ttl - (now - record.timestamp)
        if len(data) <= self.max_l1_bytes and remaining > 0:
            entry = _L1Result(record.timestamp, text, summary, record.id)
            self.cache.put(TOOL_RESULTS, slot, entry, remaining)
        return ReusedResult(output, summary, "l3", record.timestamp, record.id)

    async def _latest_reusable(self, key: CallKey, ttl: float, now: float) -> ToolCallRecord | None:
        assert key.input_hash is not None
        assert key.scope_key is not None
        session = key.session_id if key.scope_key[0] == "session" else None
        try:
            found = await self.index.latest_reusable(
                key.tool_name,
                key.input_hash,
                user_id=key.user_id,
                session_id=session,
                tool_version=key.tool_version,
                max_age=ttl,
                now=now,
            )
        except HermesError as exc:
            logger.warning("memory_lookup_failed", tool=key.tool_name, error=exc.message)
            return None
        return found.first

    async def _read_blob(self, digest: str) -> bytes | None:
        try:
            data = await self.archive.get(digest)
        except ArchiveCorruptError as exc:
            logger.warning("memory_blob_corrupt", digest=digest, reason=exc.reason)
            await self._drop_blob(digest)
            return None
        except ArchiveError as exc:
            logger.warning("memory_blob_unreadable", digest=digest, error=exc.message)
            return None
        if data is None:
            logger.warning("memory_blob_missing", digest=digest)
        return data

    async def _drop_blob(self, digest: str) -> bool:
        """Delete one blob; whether it was there. A failure is logged, never raised: a blob
        left behind is swept by a later upkeep."""
        try:
            return bool(await self.archive.delete(digest))
        except ArchiveError as exc:
            logger.error("memory_blob_delete_failed", digest=digest, error=exc.message)
            return False

    # -- recording ---------------------------------------------------------------------------
    async def record_call(
        self,
        key: CallKey,
        result: CallOutcome,
        *,
        reuse_ttl: float | None = None,
        confirmed: bool = True,
        call_id: str = "",
        trace_id: str = "",
        archive: bool = True,
    ) -> RecordedCall:
        """Record one call in L2 (its output in L3; in L1 when reusable or unconfirmed).

        ``reuse_ttl``: the tool's ``cache_ttl`` — set it when this result may answer later
        identical calls for that long. It only takes effect for an ok, confirmed result that
        was freshly run (not itself a reuse: ``result.cached`` is false), whose arguments and
        output have a JSON form and whose output is archived. ``confirmed=False`` records an ok
        result as ``unconfirmed`` (see :meth:`confirm`). ``archive=False`` records the call
        with the output's hash only — nothing of the output in L3 or L1, never reusable (the
        memory tools: what they return is the user's memories, which must be gone when the
        user forgets them).
        """
        now = self.clock()
        notes: list[str] = []
        if key.input_problem is not None:
            notes.append("input_not_json_safe")
        status: ToolCallStatus = "error" if not result.ok else "ok" if confirmed else "unconfirmed"
        wants_reuse = reuse_ttl is not None and reuse_ttl > 0 and status == "ok"
        wants_reuse = wants_reuse and not result.cached
        stored = _NOTHING_STORED
        if not archive:
            wants_reuse = False
            notes.append("not_archived")
        if result.ok:
            keep = self.archive_outputs == "ok" or wants_reuse or status == "unconfirmed"
            stored = await self._store_output(result.output, keep and archive, notes)
            if not archive:
                stored = stored._replace(text=None)  # not held in L1 either
        summary = result.summary
        if summary is not None and len(summary) > MAX_SUMMARY_CHARS:
            notes.append("summary_too_long")
            summary = None
        can_reuse = (
            wants_reuse
            and key.input_hash is not None
            and key.scope_key is not None
            and stored.archived
            and "summary_too_long" not in notes
        )
        metadata = _metadata(
            result, stored=stored, summary=summary, call_id=call_id, trace_id=trace_id, notes=notes
        )
        record_id = await self._insert(
            key,
            status=status,
            output_hash=stored.digest,
            timestamp=now,
            metadata=metadata,
            reusable=can_reuse,
        )
        reusable = can_reuse and record_id is not None
        if reusable and stored.text is not None:
            assert reuse_ttl is not None
            entry = _L1Result(now, stored.text, summary, record_id)
            self.cache.put(TOOL_RESULTS, key.cache_slot(), entry, reuse_ttl)
        if status == "unconfirmed" and record_id is not None and stored.text is not None:
            self.cache.put(UNCONFIRMED_RESULTS, record_id, _Pending(key.user_id, stored.text))
        return RecordedCall(
            record_id, status, stored.digest, stored.archived, reusable, tuple(notes)
        )

    async def _store_output(self, output: Any, archive: bool, notes: list[str]) -> _Output:
        try:
            canonical = canonical_json(output)
        except NotJSONSafeError as exc:
            notes.append("output_not_json_safe")
            logger.warning("memory_output_not_json_safe", path=exc.path, reason=exc.reason)
            return _NOTHING_STORED
        data = canonical.encode("utf-8", "surrogatepass")  # as hashing.canonical_bytes does
        text = canonical if len(data) <= self.max_l1_bytes else None
        if not archive:
            return _Output(hash_bytes(data), len(data), False, text)
        try:
            digest = await self.archive.put(data)
        except ArchiveTooLargeError:
            notes.append("too_large")
            return _Output(hash_bytes(data), len(data), False, text)
        except ArchiveError as exc:
            notes.append("archive_failed")
            logger.error("memory_archive_failed", error=exc.message)
            return _Output(hash_bytes(data), len(data), False, text)
        return _Output(digest, len(data), True, text)

    async def _insert(
        self,
        key: CallKey,
        *,
        status: ToolCallStatus,
        output_hash: str | None,
        timestamp: float,
        metadata: dict[str, Any],
        reusable: bool,
    ) -> int | None:
        call = NewToolCall(
            session_id=key.session_id,
            user_id=key.user_id,
            tool_name=key.tool_name,
            input_hash=key.input_hash,
            output_hash=output_hash,
            status=status,
            timestamp=timestamp,
            metadata=metadata,
            reusable=reusable,
            tool_version=key.tool_version,
        )
        try:
            return await self.index.record(call)
        except HermesError as exc:  # a StoreError, or a record the index refused
            logger.error("memory_record_failed", tool=key.tool_name, error=exc.message)
            return None

    # -- confirmation and forgetting -----------------------------------------------------------
    def pending(self, record_id: int) -> Any:
        """The output (a fresh copy) of an unconfirmed result held in L1, or ``None`` — L1 is
        lost on a restart; the L2 row and L3 blob are not."""
        held: _Pending | None = self.cache.get(UNCONFIRMED_RESULTS, record_id)
        return None if held is None else json.loads(held.output_json)

    async def confirm(self, record_id: int, *, reuse: bool = False) -> bool:
        """Mark an unconfirmed result ok (a person or a check accepted it). With ``reuse`` it
        may then answer later identical calls within their TTL, if its output is archived.
        ``False`` when there is no such unconfirmed record (or the index failed: logged)."""
        try:
            record = await self.index.get(record_id)
            if record is None or record.status != "unconfirmed":
                return False
            can_reuse = (
                reuse
                and record.input_hash is not None
                and record.tool_version is not None  # recorded before versions: never reused
                and record.output_hash is not None
                and record.metadata.get("archived") is True
            )
            changed = await self.index.set_status(record_id, "ok", reusable=can_reuse)
        except StoreError as exc:
            logger.error("memory_confirm_failed", record_id=record_id, error=exc.message)
            return False
        self.cache.pop(UNCONFIRMED_RESULTS, record_id)
        return changed

    async def forget_user(self, user_id: str) -> int:
        """Delete a user's tool-call records, their L1 entries and the L3 blobs no other
        record uses (a user erased everywhere, DESIGN.md, "Public contracts"). Returns how many
        blobs were deleted.

        A blob deleted while another user's identical output is being recorded is only a miss
        later (the next call rewrites it), never wrong data.
        """
        self.cache.discard_where(TOOL_RESULTS, lambda slot: _slot_user(slot) == user_id)
        for record_id, held in self.cache.items(UNCONFIRMED_RESULTS):
            if isinstance(held, _Pending) and held.user_id == user_id:
                self.cache.pop(UNCONFIRMED_RESULTS, record_id)
        orphaned = await self.index.forget_user(user_id)
        return sum([await self._drop_blob(digest) for digest in orphaned])

    async def prune(
        self,
        *,
        older_than: float,
        now: float | None = None,
        blob_grace: float = 3600.0,
    ) -> dict[str, int]:
        """Upkeep of the tiers: delete L2 records older than ``older_than`` seconds and the
        L3 blobs no remaining record uses, the archive's leftover temp files, and blobs no
        record names at all (a crash between the blob and its row, a forget that failed
        half-way). Blobs younger than ``blob_grace`` seconds are kept: their row may still
        be on its way (recording writes the blob first). Returns counts per kind."""
        stamp = self.clock() if now is None else now
        orphaned = await self.index.prune(stamp - older_than)
        blobs = sum([await self._drop_blob(digest) for digest in orphaned])
        temp = unnamed = 0
        if isinstance(self.archive, ArchiveUpkeep):
            temp, unnamed = await self._sweep(self.archive, stamp - blob_grace)
        logger.info("tool_memory_pruned", records_blobs=blobs, temp=temp, unreferenced=unnamed)
        return {"blobs": blobs, "temp_files": temp, "unreferenced_blobs": unnamed}

    async def _sweep(self, archive: ArchiveUpkeep, cutoff: float) -> tuple[int, int]:
        temp = await archive.sweep_leftovers()
        old = await archive.digests_before(cutoff)
        removed = 0
        for start in range(0, len(old), 500):
            chunk = old[start : start + 500]
            used = await self.index.referenced(chunk)
            removed += sum([await self._drop_blob(d) for d in chunk if d not in used])
        return temp, removed


def tool_fingerprint(name: str, parameters: Mapping[str, Any], extra: Any = None) -> str:
    """A short hash of a tool's identity: its name, its canonical parameters schema and
    ``extra`` (e.g. its output schema and where its function lives). The ``tool_version`` of
    a call (see :meth:`ToolMemory.key`), never part of its ``input_hash``."""
    try:
        material = canonical_json({"name": name, "parameters": parameters, "extra": extra})
    except NotJSONSafeError:  # a schema with no JSON form: fall back to its repr
        material = repr((name, parameters, extra))
    return hash_bytes(material.encode("utf-8", "surrogatepass"))[:32]


_NOTHING_STORED = _Output(None, 0, False, None)


def _metadata(
    result: CallOutcome,
    *,
    stored: _Output,
    summary: str | None,
    call_id: str,
    trace_id: str,
    notes: list[str],
) -> dict[str, Any]:
    error = result.error
    metadata: dict[str, Any] = {
        "ok": bool(result.ok),
        "error_type": None if error is None else str(error.type),
        "duration_ms": _finite_or_none(result.duration_ms),
        "attempts": int(result.attempts),
        "cached": bool(result.cached),
        "archived": stored.archived,
        "output_bytes": stored.size,
    }
    if summary is not None:
        metadata["summary"] = summary
    if call_id:
        metadata["call_id"] = call_id
    if trace_id:
        metadata["trace_id"] = trace_id
    if notes:
        metadata["notes"] = list(notes)
    return metadata


def _finite_or_none(value: float) -> float | None:
    number = float(value)
    return round(number, 3) if math.isfinite(number) else None


def _slot_user(slot: Hashable) -> str | None:
    """The user of an L1 ``TOOL_RESULTS`` slot (see :meth:`CallKey.cache_slot`)."""
    return slot[1] if isinstance(slot, tuple) and len(slot) == 5 else None
