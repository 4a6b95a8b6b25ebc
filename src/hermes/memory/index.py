"""L2: the index of tool calls (seed 000 §2.4 and §3.5) — the concept and its protocol.

Every tool call becomes one record ``{session_id, user_id, tool_name, input_hash, output_hash,
timestamp, metadata}``, so "what did this session call", "every ``send_email`` this week" and
"the latest good result of this exact call" are index seeks, never scans (seed 000 §2.4:
precise recall by session and tool instead of fuzzy vector search).

:class:`ToolCallIndex` is the protocol (its docstring is the contract a backend keeps); the
SQLite backend is ``hermes.storage.sqlite.tool_calls.SQLiteToolCallIndex`` (a ``memory.db``
beside the session database), chosen by ``hermes.storage.open`` through the composition root
(``hermes.agent.compose.open_tool_memory_backends``). This module holds what every backend
shares: the records, the query answer, and the checks of what goes in (:func:`record_values`,
:func:`epoch_seconds` …), so that every backend refuses the same input with the same message.

Choices, documented once:

- **Timestamps** are epoch seconds (UTC by definition). Records expose them as ``timestamp``
  (float) and ``at`` (an aware UTC ``datetime``); queries accept either a float or an aware
  ``datetime`` (a naive one is refused: its zone is a guess).
- **Hashes** are sha256 over canonical JSON (``hermes.memory.hashing``); ``input_hash`` is
  the hash of the call's arguments alone — the same arguments in any key order have the same
  hash, whichever tool or version took them — ``None`` when the arguments have no JSON form
  (such a call is recorded, never reused); ``output_hash`` is ``None`` when there is no
  output (a failed call).
- ``tool_version`` identifies the tool that ran: the caller's fingerprint of its name,
  schemas and function (``hermes.memory.tiers.tool_fingerprint``), or ``''`` when the caller
  gave none. The reuse lookup matches it exactly, so a changed tool, or another tool of the
  same name, never answers from the old one's results — without folding the version into
  ``input_hash``, which would change what that field means. Records from before the SQLite
  schema had the column (v1) have ``None``: they stay readable in every query but are never
  reused (``None`` equals nothing).
- ``status`` is ``ok`` | ``error`` | ``unconfirmed``; ``reusable`` marks the records the
  tiers may answer a later identical call from: a fresh (not itself reused), confirmed, ok
  result of a ``cache_ttl`` tool whose output is archived in L3.
- **Debug mode** (``debug=True`` when opening, or per query): every :class:`QueryResult`
  carries the query text the backend ran, its parameters and the engine's plan — paste them
  into the engine's shell to see why a query returned what it did (seed 000 §4.4).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from hermes.errors import ErrorCode, HermesError
from hermes.memory.hashing import canonical_json, is_content_hash

__all__ = [
    "MAX_METADATA_CHARS",
    "MAX_NAME_LENGTH",
    "MAX_QUERY_LIMIT",
    "InvalidRecordError",
    "NewToolCall",
    "Order",
    "QueryResult",
    "ToolCallIndex",
    "ToolCallRecord",
    "ToolCallStatus",
    "check_limit",
    "check_name",
    "check_order",
    "check_reuse_lookup",
    "check_status",
    "epoch_seconds",
    "record_values",
]

ToolCallStatus = Literal["ok", "error", "unconfirmed"]
_STATUSES: frozenset[str] = frozenset(get_args(ToolCallStatus))
Order = Literal["newest", "oldest"]

#: Bounds of one query's answer and of one record's fields.
MAX_QUERY_LIMIT = 10_000
MAX_NAME_LENGTH = 256
MAX_METADATA_CHARS = 64 * 1024


class InvalidRecordError(HermesError):
    """A tool-call record or a query argument is malformed; the message names the field."""

    code: ErrorCode = "invalid_record"
    status = 400


@dataclass(frozen=True, slots=True)
class NewToolCall:
    """One tool call to record. ``user_id`` ``None`` (or ``""``) is an anonymous caller;
    ``tool_version`` ``""`` is a tool whose caller gave no version (see the module docstring).
    """

    session_id: str
    user_id: str | None
    tool_name: str
    input_hash: str | None
    output_hash: str | None
    status: ToolCallStatus
    timestamp: float
    metadata: Mapping[str, Any] = field(default_factory=dict)
    reusable: bool = False
    tool_version: str = ""


@dataclass(frozen=True)
class ToolCallRecord:
    """One recorded tool call (see the module docstring for the fields).

    ``metadata`` is parsed from ``metadata_json`` on first access: a query of 100 rows that
    only needs ids and hashes does not pay for 100 JSON parses. ``tool_version`` is ``None``
    for a row recorded before schema v2 (never reused).
    """

    id: int
    session_id: str
    user_id: str | None
    tool_name: str
    input_hash: str | None
    output_hash: str | None
    status: ToolCallStatus
    reusable: bool
    timestamp: float
    metadata_json: str = field(default="{}", repr=False)
    tool_version: str | None = None

    @property
    def at(self) -> datetime:
        """When the call was recorded, as an aware UTC datetime."""
        return datetime.fromtimestamp(self.timestamp, UTC)

    @cached_property
    def metadata(self) -> dict[str, Any]:
        """The call's metadata (``{"corrupt_metadata": true}`` if the stored text is not a
        JSON object — never an exception for a damaged row)."""
        try:
            value = json.loads(self.metadata_json)
        except ValueError:
            return {"corrupt_metadata": True}
        return value if isinstance(value, dict) else {"corrupt_metadata": True}


@dataclass(frozen=True, slots=True)
class QueryResult:
    """The records a query found; in debug mode also the SQL, its parameters and the plan."""

    records: list[ToolCallRecord]
    sql: str | None = None
    params: tuple[Any, ...] | None = None
    plan: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.records)

    @property
    def first(self) -> ToolCallRecord | None:
        return self.records[0] if self.records else None


@runtime_checkable
class ToolCallIndex(Protocol):
    """The L2 index: where every tool call is recorded and found again.

    The contract every backend keeps (``tests/storage/conformance/test_tool_call_index.py``
    checks it on each one of ``tests/storage/backends.py``):

    - **Writing.** ``record(call)`` stores one call durably (committed when it returns) and
      returns its id: an integer, unique among the records held, rising in the order of the
      commits (queries break timestamp ties by id). ``record_many(calls)`` stores several in one
      transaction — all or none — and returns their ids in order (``[]`` for none). Both check
      the call with :func:`record_values` first and raise :class:`InvalidRecordError` (or
      ``NotJSONSafeError`` for metadata without a JSON form) naming the field, storing
      nothing. ``set_status(id, status, reusable=…)`` changes one record's status and reuse
      flag (an unconfirmed result confirmed) and says whether the record exists.
    - **Reading.** ``get(id)`` is the record or ``None``. ``query(…)`` returns the records
      matching every given filter — equality on ``session_id``/``user_id``/``tool_name``/
      ``status``, ``since`` inclusive, ``until`` exclusive —, newest first (``order=
      "oldest"``: oldest first), ties by id in the same direction, at most ``limit``
      (:func:`check_limit`). A value is always a bound parameter, never query text: a session
      id of ``x' OR 1=1`` matches only itself. ``by_session``/``by_tool``/``in_range`` are
      ``query`` with one filter. Each query shape is an index walk, never a scan and a sort.
    - **Reuse.** ``latest_reusable(tool, input_hash, user_id=, session_id=, tool_version=,
      max_age=, now=)`` is the newest record with ``reusable`` set, of exactly that tool,
      input hash, user (``None``: anonymous callers only) and ``tool_version`` (a record with
      ``tool_version`` ``None`` never matches), within ``session_id`` when given, recorded at
      ``now - max_age`` or later (the edge included): at most one record. Arguments are
      checked with :func:`check_reuse_lookup`. One index seek.
    - **Forgetting.** ``forget_user(user)`` deletes every record of that user and
      ``prune(before)`` every record older than ``before``; both return the output hashes no
      remaining record names (their L3 blobs can go), found and deleted in one transaction so a
      concurrent writer cannot slip between. ``referenced(digests)`` says which of the
      digests some record names as its output (upkeep of blobs nobody names).
    - **Errors.** A failure of the engine is a ``hermes.errors.StoreError`` with one clear
      sentence (never a driver's exception); after ``close()`` every call raises
      ``StoreError`` ("… is closed"). Damaged metadata of one record reads as
      ``{"corrupt_metadata": true}`` (:attr:`ToolCallRecord.metadata`), never an exception.
    - **Sharing.** Several index objects (processes, workers) on the same storage see each
      other's committed records at once and may write at the same time.
    - **Debug.** With ``debug`` (on the index, or per query) a :class:`QueryResult` carries
      the query text, its parameters and the engine's plan; without it, ``None`` for each.

    A PostgreSQL backend (a later ``hermes.storage.postgres``): one ``tool_calls`` table
    with the SQLite columns (``id bigint generated always as identity``, ``created_at double
    precision``, ``metadata jsonb`` or text holding :func:`record_values`' canonical JSON,
    ``reusable boolean``), the same indexes — each ending in ``created_at`` so "newest first"
    is a backwards index walk — and the partial reuse index ``(tool_name, user_id,
    input_hash, tool_version, created_at) WHERE reusable AND tool_version IS NOT NULL``;
    ``forget_user``/``prune`` as one ``DELETE … RETURNING output_hash`` followed by a check of
    which of those hashes are still named, in one transaction; ``debug`` plans from ``EXPLAIN``.
    It must pass the same conformance suite.
    """

    async def record(self, call: NewToolCall) -> int:
        """Store one call (one commit); returns its id."""
        ...

    async def record_many(self, calls: Sequence[NewToolCall]) -> list[int]:
        """Store several calls in one transaction (all or none); returns their ids in order."""
        ...

    async def set_status(self, record_id: int, status: ToolCallStatus, *, reusable: bool) -> bool:
        """Change a record's status and reuse flag; ``False`` if there is no such record."""
        ...

    async def forget_user(self, user_id: str) -> list[str]:
        """Delete every record of ``user_id``; the output hashes no remaining record uses."""
        ...

    async def prune(self, before: float | datetime) -> list[str]:
        """Delete the records older than ``before``; the output hashes no remaining record
        uses."""
        ...

    async def referenced(self, digests: Sequence[str]) -> set[str]:
        """Which of ``digests`` some record names as its output hash."""
        ...

    async def get(self, record_id: int) -> ToolCallRecord | None:
        """The record with this id, or ``None``."""
        ...

    async def query(
        self,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        tool_name: str | None = None,
        status: ToolCallStatus | None = None,
        since: float | datetime | None = None,
        until: float | datetime | None = None,
        limit: int = 100,
        order: Order = "newest",
        debug: bool | None = None,
    ) -> QueryResult:
        """Records matching every given filter, newest (or oldest) first, at most ``limit``."""
        ...

    async def by_session(
        self,
        session_id: str,
        *,
        limit: int = 100,
        order: Order = "newest",
        debug: bool | None = None,
    ) -> QueryResult:
        """The calls of one session."""
        ...

    async def by_tool(
        self,
        tool_name: str,
        *,
        since: float | datetime | None = None,
        until: float | datetime | None = None,
        limit: int = 100,
        debug: bool | None = None,
    ) -> QueryResult:
        """The calls of one tool (optionally within a time range), newest first."""
        ...

    async def in_range(
        self,
        since: float | datetime,
        until: float | datetime,
        *,
        limit: int = 100,
        order: Order = "newest",
        debug: bool | None = None,
    ) -> QueryResult:
        """The calls recorded in ``[since, until)``."""
        ...

    async def latest_reusable(
        self,
        tool_name: str,
        input_hash: str,
        *,
        user_id: str | None,
        session_id: str | None = None,
        tool_version: str = "",
        max_age: float,
        now: float,
        debug: bool | None = None,
    ) -> QueryResult:
        """The newest reusable record of this exact call, at most ``max_age`` seconds before
        ``now`` (see the class docstring). At most one record."""
        ...

    async def close(self) -> None:
        """Release the connection(s); later calls raise ``StoreError``."""
        ...

    def close_sync(self) -> None:
        """:meth:`close` from synchronous code (shutdown paths)."""
        ...


# -- checks every backend applies -------------------------------------------------------------


def record_values(call: NewToolCall) -> tuple[Any, ...]:
    """The stored values of a new record, checked (raises :class:`InvalidRecordError`, or
    ``NotJSONSafeError`` naming the metadata's field): ``(session_id, user_id or "",
    tool_name, input_hash, output_hash, status, reusable 0/1, timestamp, metadata as canonical
    JSON, tool_version)`` — the column order of the SQLite table."""
    check_name(call.tool_name, "tool_name", allow_empty=False)
    check_name(call.session_id, "session_id", allow_empty=True)
    check_name(call.tool_version, "tool_version", allow_empty=True)
    if call.user_id is not None:
        check_name(call.user_id, "user_id", allow_empty=True)
    for name, value in (("input_hash", call.input_hash), ("output_hash", call.output_hash)):
        if value is not None and not is_content_hash(value):
            raise InvalidRecordError(f"{name} must be 64 lowercase hex characters or None")
    check_status(call.status)
    if call.reusable and (call.status != "ok" or call.input_hash is None):
        raise InvalidRecordError("only an ok record with an input hash can be reusable")
    timestamp = epoch_seconds(call.timestamp, "timestamp")
    if not isinstance(call.metadata, Mapping):
        raise InvalidRecordError("metadata must be a JSON object (a mapping)")
    metadata = canonical_json(dict(call.metadata))  # NotJSONSafeError names the field
    if len(metadata) > MAX_METADATA_CHARS:
        raise InvalidRecordError(
            f"metadata is {len(metadata)} characters of JSON, more than {MAX_METADATA_CHARS}"
        )
    return (
        call.session_id,
        call.user_id or "",
        call.tool_name,
        call.input_hash,
        call.output_hash,
        call.status,
        1 if call.reusable else 0,
        timestamp,
        metadata,
        call.tool_version,
    )


def check_reuse_lookup(input_hash: object, tool_version: object, max_age: float) -> None:
    """The arguments of :meth:`ToolCallIndex.latest_reusable` (raises
    :class:`InvalidRecordError`)."""
    if not isinstance(input_hash, str) or not is_content_hash(input_hash):
        raise InvalidRecordError("input_hash must be 64 lowercase hex characters")
    check_name(tool_version, "tool_version", allow_empty=True)
    if not max_age > 0:  # also refuses NaN; infinity means "any age"
        raise InvalidRecordError(f"max_age must be a positive number, got {max_age!r}")


def check_name(value: object, what: str, *, allow_empty: bool) -> None:
    """A name field: a string of at most :data:`MAX_NAME_LENGTH` characters."""
    if not isinstance(value, str):
        raise InvalidRecordError(f"{what} must be a string, not {type(value).__name__}")
    if not value and not allow_empty:
        raise InvalidRecordError(f"{what} is empty")
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidRecordError(f"{what} is longer than {MAX_NAME_LENGTH} characters")


def check_status(status: object) -> None:
    """One of :data:`ToolCallStatus`."""
    if status not in _STATUSES:
        raise InvalidRecordError(f"status must be one of {sorted(_STATUSES)}, not {status!r}")


def check_order(order: object) -> None:
    """``"newest"`` or ``"oldest"``."""
    if order not in ("newest", "oldest"):
        raise InvalidRecordError(f"order must be 'newest' or 'oldest', not {order!r}")


def check_limit(limit: int) -> int:
    """A query's ``limit``: an integer from 1 to :data:`MAX_QUERY_LIMIT`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_QUERY_LIMIT:
        raise InvalidRecordError(f"limit must be an integer from 1 to {MAX_QUERY_LIMIT}")
    return limit


def epoch_seconds(value: object, what: str) -> float:
    """Epoch seconds from a number or an aware datetime (raises :class:`InvalidRecordError`)."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidRecordError(
                f"{what} is a naive datetime; give it a time zone (e.g. UTC) — "
                "its meaning would be a guess"
            )
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRecordError(f"{what} must be epoch seconds or an aware datetime")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidRecordError(f"{what} must be a finite number of epoch seconds")
    return number
