"""Near-duplicate memories, as the upkeep job reads them (see :mod:`hermes.memory.upkeep`, step 1):
normalized texts and keyword sets to compare, which of two duplicates is kept, and what the kept
one absorbs from the other."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hermes.memory.keywords import query_tokens
from hermes.memory.records import MemoryRecord
from hermes.memory.statements import DIGITS, NEGATION, canonical, squash


def keyword_set(text: str) -> frozenset[str]:
    return frozenset(query_tokens(text).terms)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


@dataclass(frozen=True, slots=True)
class MemoryText:
    """A memory's text as the duplicate test reads it."""

    squashed: str
    tokens: frozenset[str]
    negative: bool
    digits: tuple[str, ...]

    @classmethod
    def of(cls, content: str) -> MemoryText:
        text = canonical(content)
        return cls(
            squash(text),
            keyword_set(text),
            bool(NEGATION.search(text)),
            tuple(sorted(DIGITS.findall(text))),
        )


def keeper_of(a: MemoryRecord, b: MemoryRecord) -> tuple[MemoryRecord, MemoryRecord]:
    """(kept, merged away) of two duplicates: sensitive, explicit, confidence, recalls, newest."""

    def rank(r: MemoryRecord) -> tuple[Any, ...]:
        return (r.sensitive, r.explicit, r.confidence, r.recall_count, r.created_at, r.id)

    return (a, b) if rank(a) >= rank(b) else (b, a)


def merged_record(keep: MemoryRecord, other: MemoryRecord) -> MemoryRecord:
    """The kept memory after absorbing ``other``."""
    recalls = [t for t in (keep.last_recalled_at, other.last_recalled_at) if t is not None]
    expires = (
        None
        if keep.expires_at is None or other.expires_at is None
        else max(keep.expires_at, other.expires_at)
    )
    semantic = "semantic" in (keep.tier, other.tier)
    return replace(
        keep,
        recall_count=keep.recall_count + other.recall_count,
        last_recalled_at=max(recalls) if recalls else None,
        updated_at=max(keep.updated_at, other.updated_at),
        confidence=max(keep.confidence, other.confidence),
        explicit=keep.explicit or other.explicit,
        expires_at=expires,
        tier="semantic" if semantic else keep.tier,
        demoted_at=None if semantic else keep.demoted_at,
    )
