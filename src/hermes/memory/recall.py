"""Recall of long-term memories for one message (seed 001 §5.3, seed 003 §2.4).

Three steps, each cheap to reason about:

1. **Gate** — :func:`needs_memory`: most messages ("15乘以27等于多少", "weather in Paris") need
   no long-term memory, and skipping them avoids most searches (seed 003: ~90%). A message
   passes when it speaks in the first person (我/我的/我们/咱, I/my/me/mine/we/our) or has a
   memory cue (上次, 之前, 以前, 记得, 平时, 老样子, usually, last time, remember, as always…).
   First person alone does not pass when the message names one of the caller's tools (seed 003:
   "run python script" is an instruction, not a question about the user); a memory cue always
   passes.
2. **Search** — the user's memories only (``MemoryStore.search``: keyword + vector blend), with
   the recency window applied by the store (a ``SearchFilter``): habits and events must have
   been updated in the last 30 days; facts and preferences are exempt (seed 001 §5.1 keeps
   long-term preferences as semantic memory, "weeks to permanent"; a changed preference is
   handled by ``supersede``, not by age).
   Superseded and expired memories are never candidates.
3. **Select** — keep hits scoring at least ``min_score`` (0.45, seed 001 §5.3; with keyword-only
   search ``keyword_min_score``, since a BM25 share is a stricter measure than the blend), drop
   sensitive memories unless the message is about their topic, keep at most 5, and write them as
   one block that tells the model they may not apply (seed 001 §5.3: the model decides). The
   returned memories get ``last_recalled_at``/``recall_count`` updated (the upkeep job demotes
   memories that are never recalled).

Sensitive memories (seed 003 §4.4): shown only to their owner — the search is scoped to the asking
user, and each hit's owner is checked again here — and only when the message mentions the
memory's ``topic`` or one of its ``tags`` (a shared search term). A sensitive memory without a
topic needs a strong keyword match (``sensitive_keyword_score``); vector similarity alone never
reveals one, since "close in meaning" is not "asked about it".
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from hermes.memory.concepts import concepts_of
from hermes.memory.keywords import query_tokens
from hermes.memory.records import MemoryHit, MemoryKind, SearchFilter
from hermes.memory.store import MemoryStore
from hermes.models.memory_notes import BLOCK_HEADER
from hermes.observe import get_logger
from hermes.session.ids import validate_user_id
from hermes.session.privacy import contains_secret
from hermes.session.summary import clip

log = get_logger("memory")

RecallMode = Literal["skipped", "keyword", "hybrid"]

_ITEM_CHARS = 400
_DAY = 86_400.0

# -- the gate ------------------------------------------------------------------------------

_ZH_FIRST_PERSON = re.compile(r"[我咱俺]|本人")
_EN_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|we|our|ours|ourselves)\b", re.I)
_ZH_CUES = re.compile(
    r"上次|上回|之前|以前|先前|记得|记不记得|忘了|平时|平常|通常|一般都|常用|习惯|老样子|照旧|"
    r"跟往常|和往常|像往常|老地方|还是那"
)
_EN_CUES = re.compile(
    r"\b(?:last\s+time|previous(?:ly)?|earlier|remember|recall|remind|usual(?:ly)?|"
    r"as\s+always|the\s+same\s+as|like\s+before|as\s+before|prefer(?:red|s|ence)?|"
    r"favou?rite)\b",
    re.I,
)


def needs_memory(text: str, *, tool_names: Iterable[str] = ()) -> bool:
    """Whether ``text`` may need the user's long-term memories (see the module docstring)."""
    if not isinstance(text, str) or not text.strip():
        return False
    if _ZH_CUES.search(text) or _EN_CUES.search(text):
        return True
    if not (_ZH_FIRST_PERSON.search(text) or _EN_FIRST_PERSON.search(text)):
        return False
    lowered = text.casefold()
    return not any(name and name.casefold() in lowered for name in tool_names)


# -- recall --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecallPolicy:
    """The knobs of recall (defaults from seed 001 §5.3)."""

    #: Lowest blended score (keyword + vector) a memory needs.
    min_score: float = 0.45
    #: Lowest keyword score when no vector score is available (no embedder installed).
    keyword_min_score: float = 0.4
    #: Most memories injected into one prompt.
    max_items: int = 5
    #: Habits and events older than this (by ``updated_at``) are not recalled.
    recency_days: float = 30.0
    #: Kinds the recency window does not apply to.
    recency_exempt: tuple[MemoryKind, ...] = ("fact", "preference")
    #: A sensitive memory without topic/tags needs at least this keyword score.
    sensitive_keyword_score: float = 0.5
    #: Candidates fetched before thresholds and sensitivity filter them.
    candidates: int = 20
    #: What the user asked to keep ("记住…") stays eligible below the thresholds, down to this
    #: score (some of the words, or the kind, of what is asked about match) …
    explicit_min_score: float = 0.25
    #: … for at most this many memories per recall (the small cap).
    explicit_extra: int = 2


DEFAULT_POLICY = RecallPolicy()


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What recall found for one message.

    ``hits`` are the recalled memories, best first; ``block`` is the text to put before the
    conversation (None when nothing was recalled); ``mode`` says how the search ran
    (``skipped`` when the gate said no memory is needed).
    """

    hits: tuple[MemoryHit, ...]
    block: str | None
    mode: RecallMode


async def recall(
    store: MemoryStore,
    user_id: str,
    text: str,
    *,
    policy: RecallPolicy = DEFAULT_POLICY,
    tool_names: Iterable[str] = (),
    force: bool = False,
    now: float | None = None,
) -> RecallResult:
    """Recall ``user_id``'s memories that may help answer ``text``.

    ``force`` skips the gate (an explicit "what do you remember about me" command, tests).
    Raises ``InvalidIdError`` for a malformed user id and ``StoreError`` when the store fails.
    """
    validate_user_id(user_id)
    if not force and not needs_memory(text, tool_names=tool_names):
        return RecallResult((), None, "skipped")
    stamp = time.time() if now is None else now
    where = SearchFilter(
        updated_since=stamp - policy.recency_days * _DAY, recency_exempt=policy.recency_exempt
    )
    hits = await store.search(user_id, text, limit=policy.candidates, where=where, now=stamp)
    chosen = select_hits(hits, user_id, text, policy)
    if chosen:
        await store.mark_recalled(user_id, [hit.record.id for hit in chosen], now=stamp)
    vectors = store.embedder is not None and all(h.vector_score is not None for h in hits)
    mode: RecallMode = "hybrid" if vectors else "keyword"  # keyword: none or a failed embedder
    log.debug("memory_recall", mode=mode, candidates=len(hits), recalled=len(chosen))
    return RecallResult(tuple(chosen), format_block(chosen) if chosen else None, mode)


def select_hits(
    hits: Sequence[MemoryHit], user_id: str, text: str, policy: RecallPolicy = DEFAULT_POLICY
) -> list[MemoryHit]:
    """The hits recall keeps (thresholds, owner, sensitivity, count), in their order."""
    asked = set(query_tokens(text).terms)
    kinds = concepts_of(text)
    chosen: list[MemoryHit] = []
    extra = 0
    for hit in hits:
        record = hit.record
        if record.user_id != user_id:  # the store never returns one; checked all the same
            log.error("memory_recall_foreign_hit", memory_id=record.id)
            continue
        if contains_secret(record.content):  # written before secrets were kept out: never told
            continue
        threshold = policy.min_score if hit.vector_score is not None else policy.keyword_min_score
        if hit.score < threshold:
            # The user's own "记住…" answers the follow-ups that only name its kind (seed
            # 001 §5.3): eligible on a weaker match, a few per recall.
            weak = (
                record.explicit and hit.score >= policy.explicit_min_score and hit.keyword_score > 0
            )
            if not weak or extra >= policy.explicit_extra:
                continue
            extra += 1
        if record.sensitive and not _asked_about(hit, asked, kinds, policy):
            continue
        chosen.append(hit)
        if len(chosen) >= policy.max_items:
            break
    return chosen


def _asked_about(hit: MemoryHit, asked: set[str], kinds: set[str], policy: RecallPolicy) -> bool:
    """Whether the message is about a sensitive memory's topic (see the module docstring):
    it shares a word with the memory's topic or tags, or asks about a kind of thing the memory
    is about ("我的快递" for an order id, "我住哪" for an address)."""
    record = hit.record
    about = " ".join((record.content, record.topic or "", *record.tags))
    if kinds and hit.keyword_score > 0 and kinds & concepts_of(about):
        return True  # the kind matched in the index, not merely close in meaning
    labels = " ".join((record.topic or "", *record.tags)).strip()
    if labels:
        return bool(asked & set(query_tokens(labels).terms))
    return hit.keyword_score >= policy.sensitive_keyword_score


def format_block(hits: Sequence[MemoryHit]) -> str:
    """The recalled memories as one block for the prompt: the header, then one line each,
    ``- (kind, YYYY-MM-DD) content`` (content on one line, cut at 400 characters)."""
    lines = [BLOCK_HEADER]
    for hit in hits:
        record = hit.record
        content = clip(record.content, _ITEM_CHARS)
        day = datetime.fromtimestamp(record.updated_at, UTC).date().isoformat()
        lines.append(f"- ({record.kind}, {day}) {content}")
    return "\n".join(lines)
