"""A changed statement replaces the old one when it is written (seed 001 §5.4 "以新记忆为准，并给
旧记忆打上已过期标签"), not only after the next upkeep run: the rules, which every backend of
:class:`~hermes.memory.store.MemoryStore` applies in ``add_unique(..., settle=True)``.

"记住我现在改喝拿铁了" after "用户喜欢喝美式咖啡。": the next question must find 拿铁, and never
美式 again. A backend reads what each new memory states (:func:`statement_of`: its subject,
``likes:喝``, ``is:city`` …), stores the subject with it, and — inside one write transaction,
scoped by user — supersedes the user's older active memories of the same kind and subject that
the new one replaces (:func:`settle`): kept as history (``superseded_reason = "conflict"``,
``expires_at`` set to now or earlier), never recalled again. Only what the rules read with
certainty is settled here; what needs an embedder to see (two choices close in meaning) is left
to the upkeep job, which also re-examines every memory written here.

The candidates a backend hands :func:`settle` are the user's other active memories of the
record's kind with the same subject (at most :data:`SUBJECT_LIMIT`, newest first) and — for
memories written before subjects were stored — the newest ones of the kind whose subject is
not known yet (at most :data:`UNREAD_LIMIT`), whose subject is then stored too. The SQLite
statements are ``hermes.storage.sqlite.memory_supersede``.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass

from hermes.memory.records import MemoryRecord
from hermes.memory.statements import Statement, read_statement, relation

__all__ = ["SUBJECT_LIMIT", "UNREAD_LIMIT", "Settlement", "settle", "statement_of"]

#: Older memories without a subject read per new memory (the newest of its kind).
UNREAD_LIMIT = 50
#: Older memories of the same subject compared per new memory.
SUBJECT_LIMIT = 100


def statement_of(record: MemoryRecord) -> Statement:
    """What ``record`` states (its subject, polarity …), read by the upkeep rules."""
    return read_statement(record.content, topic=record.topic, sensitive=record.sensitive)


@dataclass(frozen=True, slots=True)
class Settlement:
    """What one new memory changes: the subjects to store (``(memory id, subject)``, the new
    memory's first) and the older memories it supersedes (their ids)."""

    subjects: tuple[tuple[str, str], ...]
    superseded: tuple[str, ...]


def settle(
    record: MemoryRecord,
    statement: Statement,
    candidates: Iterable[MemoryRecord],
    new_ids: Set[str],
) -> Settlement:
    """The subjects to store and the older memories ``record`` replaces, among ``candidates``
    (see the module docstring for which). ``statement`` is ``statement_of(record)`` with a
    subject; ``new_ids`` are the memories written with it (never superseded by it). Only an
    older statement is replaced by a newer one."""
    assert statement.subject is not None
    subjects = [(record.id, statement.subject)]
    superseded: list[str] = []
    for old in candidates:
        if old.id in new_ids or old.created_at > record.created_at:
            continue
        before = statement_of(old)
        if old.subject is None and before.subject is not None:
            subjects.append((old.id, before.subject))
        if relation(before, statement) == "replaces":
            superseded.append(old.id)
    return Settlement(tuple(subjects), tuple(superseded))
