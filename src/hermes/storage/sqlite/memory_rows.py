"""How a long-term memory is a SQLite row: the columns it is read with, the SQL form of "active"
and of a :class:`~hermes.memory.records.SearchFilter` (table alias ``m`` throughout).

Shared by the store's statements (``memory_sql``), superseding on write (``memory_supersede``)
and the upkeep job's statements (``memory_upkeep``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from hermes.memory.records import MemoryRecord, SearchFilter

__all__ = ["ACTIVE_SQL", "RECORD_COLUMNS", "filter_sql", "record_from_row"]

#: SQL term (on table alias ``m``, one ``?`` parameter: now) for an active memory: neither
#: superseded nor expired (the SQL form of :meth:`MemoryRecord.is_active`).
ACTIVE_SQL: Final = "m.superseded_by IS NULL AND (m.expires_at IS NULL OR m.expires_at > ?)"

#: The columns a memory row is read with (table alias ``m``), for :func:`record_from_row`.
RECORD_COLUMNS = (
    "m.rid, m.id, m.user_id, m.kind, m.content, m.confidence, m.source_session, m.created_at, "
    "m.updated_at, m.last_recalled_at, m.recall_count, m.expires_at, m.superseded_by, "
    "m.sensitive, m.topic, m.tags, m.tier, m.demoted_at, m.explicit, m.superseded_reason, "
    "m.subject"
)


def filter_sql(where: SearchFilter, now: float) -> tuple[str, tuple[Any, ...]]:
    """The SQL terms of ``where`` (each starting with `` AND``, on table alias ``m``) and
    their parameters."""
    clauses: list[str] = []
    params: list[Any] = []
    if not where.include_inactive:
        clauses.append(ACTIVE_SQL)
        params.append(now)
    if where.updated_since is not None:
        exempt = ", ".join("?" for _ in where.recency_exempt)
        clauses.append(
            f"(m.updated_at >= ? OR (m.kind IN ({exempt}) AND m.tier = 'semantic'))"
            if exempt
            else "m.updated_at >= ?"
        )
        params.extend((where.updated_since, *where.recency_exempt))
    return "".join(f" AND {c}" for c in clauses), tuple(params)


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    """A record from a row selected as ``RECORD_COLUMNS``."""
    (_, mid, uid, kind, content, conf, src, created, updated, recalled, count, expires, sup,
     sensitive, topic, tags, tier, demoted, explicit, reason, subject) = row[:21]  # fmt: skip
    try:
        loaded = json.loads(tags)
    except ValueError:
        loaded = []
    return MemoryRecord(
        id=mid,
        user_id=uid,
        kind=kind,
        content=content,
        confidence=conf,
        source_session=src,
        created_at=created,
        updated_at=updated,
        last_recalled_at=recalled,
        recall_count=count,
        expires_at=expires,
        superseded_by=sup,
        sensitive=bool(sensitive),
        topic=topic,
        tags=tuple(str(t) for t in loaded) if isinstance(loaded, list) else (),
        tier=tier,
        demoted_at=demoted,
        explicit=bool(explicit),
        superseded_reason=reason,
        subject=subject,
    )
