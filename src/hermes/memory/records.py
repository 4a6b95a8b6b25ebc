"""Long-term memory records (seed 001 §5.1–5.2): what a memory is, what a caller
may write, and the validation that refuses bad input with one clear sentence."""

from __future__ import annotations

import math
import re
import secrets
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from hermes.errors import ErrorCode, InvalidIdError, InvalidInputError
from hermes.session.ids import validate_session_id
from hermes.session.privacy import contains_secret, mask_personal

MemoryKind = Literal["preference", "fact", "habit", "event"]
MEMORY_KINDS: Final[tuple[MemoryKind, ...]] = get_args(MemoryKind)
#: Seed 001 §5.1: semantic memory lasts "weeks to permanent", episodic "hours to days". Events
#: are episodic from the start; the upkeep job (``hermes.memory.upkeep``) demotes other memories
#: that go unrecalled, and recall then treats them like events (the recency window applies).
MemoryTier = Literal["semantic", "episodic"]
#: Why a memory is history: ``duplicate`` (merged into ``superseded_by``) or ``conflict`` (a
#: newer statement replaced it).
SupersededReason = Literal["duplicate", "conflict"]

#: Longest memory accepted, in characters. A memory is one statement about the user; a longer
#: text is a document (the L3 archive's business), not something to inject into every prompt.
MAX_CONTENT_CHARS: Final = 2000
MAX_TOPIC_CHARS: Final = 200
MAX_TAGS: Final = 16
MAX_TAG_CHARS: Final = 64

_MEMORY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")


class MemoryNotFoundError(InvalidInputError):
    """No memory with this id belongs to this user (another user's memory is "not found" too,
    so ids cannot be probed across users)."""

    code: ErrorCode = "memory_not_found"
    status = 404


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """What a caller writes: a memory before the store gives it an id and timestamps.

    ``topic`` and ``tags`` say what the memory is about (e.g. ``topic="salary 薪资"``): recall
    shows a ``sensitive`` memory only when the message mentions one of them. ``expires_at``
    (epoch seconds) makes a memory stop being recalled at that time. ``explicit`` marks what the
    user asked to be remembered ("记住…", the ``remember`` tool, ``hermes memory add``): the
    upkeep job never demotes or deletes it for going unrecalled.
    """

    content: str
    kind: MemoryKind = "fact"
    confidence: float = 1.0
    source_session: str | None = None
    sensitive: bool = False
    topic: str | None = None
    tags: tuple[str, ...] = ()
    expires_at: float | None = None
    explicit: bool = False


def default_tier(kind: MemoryKind) -> MemoryTier:
    """The tier a new memory starts in: events are episodic, everything else semantic."""
    return "episodic" if kind == "event" else "semantic"


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One stored long-term memory. Times are epoch seconds (UTC).

    The last fields are kept by the upkeep job: ``tier`` and ``demoted_at`` (when it was
    demoted to episodic), ``superseded_reason`` (why it is history) and ``subject`` (what a
    statement is about, ``"is:city"``, ``"likes:喝"`` — how conflicts are found).
    """

    id: str
    user_id: str
    kind: MemoryKind
    content: str
    confidence: float
    source_session: str | None
    created_at: float
    updated_at: float
    last_recalled_at: float | None
    recall_count: int
    expires_at: float | None
    superseded_by: str | None
    sensitive: bool
    topic: str | None
    tags: tuple[str, ...]
    tier: MemoryTier = "semantic"
    demoted_at: float | None = None
    explicit: bool = False
    superseded_reason: SupersededReason | None = None
    subject: str | None = None

    def is_active(self, now: float) -> bool:
        """Neither superseded nor expired at ``now``."""
        return self.superseded_by is None and (self.expires_at is None or self.expires_at > now)

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-safe data (export, CLI ``--json``)."""
        return {
            "id": self.id,
            "user_id": self.user_id,
            "kind": self.kind,
            "content": self.content,
            "confidence": self.confidence,
            "source_session": self.source_session,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "last_recalled_at": self.last_recalled_at,
            "recall_count": self.recall_count,
            "expires_at": self.expires_at,
            "superseded_by": self.superseded_by,
            "sensitive": self.sensitive,
            "topic": self.topic,
            "tags": list(self.tags),
            "tier": self.tier,
            "demoted_at": self.demoted_at,
            "explicit": self.explicit,
            "superseded_reason": self.superseded_reason,
            "subject": self.subject,
        }


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A memory found by a search, with its scores (each 0..1).

    ``keyword_score`` is the BM25 score divided by the best score the query could reach;
    ``vector_score`` the calibrated embedding similarity, None when no embedder ran; ``score``
    blends both (``hermes.memory.store.combine_scores``).
    """

    record: MemoryRecord
    score: float
    keyword_score: float
    vector_score: float | None

    def to_dict(self) -> dict[str, Any]:
        """``{id, content, kind, score}`` — the shape of ``hermes memory search --json``."""
        return {
            "id": self.record.id,
            "content": self.record.content,
            "kind": self.record.kind,
            "score": round(self.score, 4),
        }


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Which of the user's memories a search may return (the user scope is always enforced).

    ``include_inactive`` adds superseded and expired memories. ``updated_since`` (epoch
    seconds) drops memories not updated since then, except semantic-tier memories of the kinds
    in ``recency_exempt`` (a demoted fact ages like an event).
    """

    include_inactive: bool = False
    updated_since: float | None = None
    recency_exempt: tuple[MemoryKind, ...] = ()


# -- validation ----------------------------------------------------------------------------


def validate_content(value: object) -> str:
    """The memory text, stripped; refuses non-strings, blank text, text over the limit, NUL
    and lone surrogates (which SQLite, JSON export and the embedder cannot carry)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"memory content must be a string, not {type(value).__name__}")
    text = value.strip()
    if not text:
        raise InvalidInputError("memory content is empty / 记忆内容为空")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"memory content is too long ({len(text)} characters, at most {MAX_CONTENT_CHARS}) "
            f"/ 记忆内容过长（{len(text)} 字，最多 {MAX_CONTENT_CHARS} 字）"
        )
    if "\x00" in text:
        raise InvalidInputError("memory content contains a NUL character")
    if contains_secret(text):  # seed 003 §2.1: secrets are not memories
        raise InvalidInputError(
            "memory content holds a secret (a password, PIN, card or ID number, key or token); "
            "Hermes does not keep secrets / 记忆内容含有密码、卡号、证件号或密钥等机密信息，"
            "Hermes 不保存机密信息"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: bytes that were not UTF-8 (argv, a file)
        raise InvalidInputError(
            "memory content is not valid Unicode text (lone surrogates / bytes that are not "
            "UTF-8) / 记忆内容不是有效的 Unicode 文本"
        ) from None
    return text


def validate_kind(value: object) -> MemoryKind:
    for kind in MEMORY_KINDS:
        if value == kind:
            return kind
    raise InvalidInputError(
        f"memory kind must be one of {', '.join(MEMORY_KINDS)}, not {value!r}"[:200]
    )


def validate_confidence(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"confidence must be a number, not {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, not {value!r}")
    return number


def validate_topic(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"memory topic must be a string, not {type(value).__name__}")
    text = value.strip()
    if len(text) > MAX_TOPIC_CHARS:
        raise InvalidInputError(f"memory topic is too long (at most {MAX_TOPIC_CHARS} characters)")
    return text or None


def validate_tags(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise InvalidInputError("memory tags must be a list of strings")
    if len(value) > MAX_TAGS:
        raise InvalidInputError(f"too many memory tags ({len(value)}, at most {MAX_TAGS})")
    tags: dict[str, None] = {}
    for tag in value:
        if not isinstance(tag, str) or not tag.strip():
            raise InvalidInputError("each memory tag must be a non-empty string")
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInputError(
                f"a memory tag is too long (at most {MAX_TAG_CHARS} characters)"
            )
        tags[tag.strip()] = None
    return tuple(tags)


def validate_timestamp(value: object, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"{what} must be a finite number of epoch seconds or None")
    return float(value)


def validate_memory_id(value: object) -> str:
    """A memory id: 1–128 characters of ``[A-Za-z0-9._:@-]`` starting with a letter or digit."""
    if not isinstance(value, str) or not _MEMORY_ID.fullmatch(value):
        shown = repr(value)[:60]
        raise InvalidIdError(f"memory id {shown} is not valid (letters, digits and . _ : @ -)")
    return value


# -- what every backend of the store does the same way ------------------------------------------


def finite_time(value: float, what: str) -> float:
    """``value`` checked as a finite epoch time (``InvalidInputError`` naming ``what``)."""
    checked = validate_timestamp(value, what)
    assert checked is not None
    return checked


def new_record(user_id: str, draft: MemoryDraft, now: float) -> MemoryRecord:
    """The record a store writes for ``draft`` of ``user_id`` at ``now``: every field validated,
    a fresh id (``m-`` + 16 hex digits), the kind's default tier, never recalled."""
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


def exported(record: MemoryRecord, reveal: bool) -> dict[str, Any]:
    """``record`` as one entry of a user's export: a sensitive memory's personal data masked
    (``138*****678``, ``"masked": true``; seed 003 §2.1) unless ``reveal``."""
    data = record.to_dict()
    if record.sensitive and not reveal:
        masked = mask_personal(record.content)
        if masked != record.content:
            data["content"] = masked
            data["masked"] = True
    return data
