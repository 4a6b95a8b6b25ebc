"""Keyword recall across Chinese and English (hermes.memory.crosslang and the grouped bm25 of
hermes.memory.keywords), on a small hand-written lexicon and on real stores."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.config import load_config
from hermes.memory.crosslang import MAX_EXAMINED_CHARS, MAX_TRANSLATED_WORDS, expand
from hermes.memory.keywords import (
    TRANSLATION_WEIGHT,
    Bm25,
    CorpusStats,
    Group,
    Tokens,
    candidate_tokens,
    query_tokens,
)
from hermes.memory.lexicon import Lexicon, TableLexicon, parse_cedict
from hermes.memory.longterm import MemoryStore
from hermes.memory.open import open_memory_store

ENTRIES = """\
貓 猫 [mao1] /cat/
狗 狗 [gou3] /dog/
咖啡 咖啡 [ka1 fei1] /coffee (loanword)/
喝 喝 [he1] /to drink/
住 住 [zhu4] /to live/to reside/
城市 城市 [cheng2 shi4] /city; town/
過敏 过敏 [guo4 min3] /oversensitive/allergic/allergy/
花生 花生 [hua1 sheng1] /peanut/
數據庫 数据库 [shu4 ju4 ku4] /database/
名字 名字 [ming2 zi5] /name/
叫 叫 [jiao4] /to call/to be called/
"""


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return TableLexicon(parse_cedict(ENTRIES.splitlines()))


def _expanded(text: str, lexicon: Lexicon) -> Tokens:
    return expand(text, query_tokens(text), lexicon)


# -- expansion -----------------------------------------------------------------------------


def test_an_english_word_is_grouped_with_its_chinese_words(lexicon: Lexicon):
    tokens = _expanded("What's my cat called?", lexicon)
    assert Group(((0, "cat"),), (((1, "猫"),),)) in tokens.groups
    assert tokens.terms == query_tokens("What's my cat called?").terms  # originals unchanged


def test_a_chinese_word_is_grouped_with_its_english_words(lexicon: Lexicon):
    tokens = _expanded("我喝咖啡", lexicon)
    assert Group(((0, "咖啡"),), (((0, "coffee"),),)) in tokens.groups
    assert Group(((1, "喝"),), (((0, "drink"),),)) in tokens.groups


def test_a_longer_chinese_translation_is_all_its_bigrams(lexicon: Lexicon):
    tokens = _expanded("Which database do I use?", lexicon)
    assert Group(((0, "database"),), (((0, "数据"), (0, "据库")),)) in tokens.groups


def test_nothing_to_translate_leaves_the_query_as_it_was(lexicon: Lexicon):
    plain = query_tokens("Berlin Kreuzberg 2026")
    assert expand("Berlin Kreuzberg 2026", plain, lexicon) is plain
    assert expand("我喝咖啡", query_tokens("我喝咖啡"), None) == query_tokens("我喝咖啡")


def test_a_translation_the_query_already_holds_is_not_added(lexicon: Lexicon):
    assert _expanded("咖啡 coffee", lexicon).groups == ()


def test_a_translation_sharing_a_token_with_the_query_is_left_out(lexicon: Lexicon):
    # 数据库 → bigrams 数据 据库; with 数据 already asked, "database" adds no group that would
    # count 数据 a second time.
    tokens = _expanded("数据 database", lexicon)
    assert all((0, "数据") not in tr for g in tokens.groups for tr in g.translations)


def test_translated_words_are_bounded(lexicon: Lexicon):
    text = " ".join(f"cat{i} cat dog coffee" for i in range(40)) + " 猫狗喝咖啡" * 40
    assert len(_expanded(text, lexicon).groups) <= MAX_TRANSLATED_WORDS


PIECES = ["猫", "咖啡", "城市", "数据库", "cat", "coffee", "city", "database", "live", '"', "*",
          "NEAR", ")", "OR", "😀", " ", "我的", "？"]  # fmt: skip
QUERIES = st.one_of(
    st.text(max_size=80), st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=QUERIES)
def test_any_query_runs_in_fts5_and_finds_only_the_owners_positive_hits(
    tmp_path: Path, lexicon: Lexicon, query: str
):
    async def check() -> None:
        store = MemoryStore(tmp_path / "any.db", embedder=None, lexicon=lexicon)
        try:
            if await store.count("alice") == 0:
                await store.add("alice", '我住在城市里，养了一只猫 "*NEAR 😀')
                await store.add("alice", "Drinks coffee; the database lives in the city")
                await store.add("bob", "Bob's cat drinks coffee in the city 我的猫")
            tokens = _expanded(query, lexicon)
            assert len(tokens.groups) <= MAX_TRANSLATED_WORDS
            hits = await store.search("alice", query, mode="keyword")
            assert all(h.record.user_id == "alice" for h in hits)
            assert all(0 < h.score <= 1 for h in hits)
        finally:
            await store.close()

    asyncio.run(check())


def test_a_long_query_is_read_only_as_far_as_its_own_tokens_go(lexicon: Lexicon):
    class Counting(TableLexicon):
        segmented = 0

        def segment(self, run: str) -> list[str]:
            Counting.segmented += len(run)
            return super().segment(run)

    counting = Counting(parse_cedict(ENTRIES.splitlines()))
    text = "，".join("猫狗咖啡城市" for _ in range(700))  # ~5,000 characters
    expand(text, query_tokens(text), counting)
    assert Counting.segmented <= MAX_EXAMINED_CHARS


# -- scoring -------------------------------------------------------------------------------


def _score(query: Tokens, rows: dict[str, tuple[str, str]]) -> dict[str, float]:
    docs: dict[str, int] = {}
    for terms, chars in rows.values():
        for token in set(terms.split()) | set(chars.split()):
            docs[token] = docs.get(token, 0) + 1
    stats = CorpusStats(
        len(rows),
        sum(len(t.split()) for t, _ in rows.values()),
        sum(len(c.split()) for _, c in rows.values()),
    )
    bm25 = Bm25(stats, query, docs)
    return {name: bm25.score(terms, chars) for name, (terms, chars) in rows.items()}


def test_a_memory_in_the_other_language_scores_as_a_full_match():
    cat = Tokens(("cat",), (), (Group(((0, "cat"),), (((1, "猫"),),)),))
    # Rows of average length: bm25's length factor is 1, so a full match scores exactly 1.
    scores = _score(cat, {"zh": ("橘猫", "橘 猫"), "other": ("狗狗", "狗 狗")})
    assert scores["zh"] == pytest.approx(1.0)
    assert scores["other"] == 0.0


def test_the_word_itself_outranks_its_translation_when_both_are_held():
    coffee = Tokens(("coffee",), (), (Group(((0, "coffee"),), (((0, "咖啡"),),)),))
    scores = _score(
        coffee, {"en": ("like coffee", ""), "zh": ("喜欢 欢喝 喝咖 咖啡", "喜 欢 喝 咖 啡")}
    )
    assert scores["en"] > scores["zh"] > 0
    assert scores["zh"] <= TRANSLATION_WEIGHT * scores["en"] + 1e-9


def test_several_translations_of_one_word_count_once():
    one = Tokens(("car",), (), (Group(((0, "car"),), (((0, "汽车"),), ((1, "车"),))),))
    two = Tokens(("car",), (), (Group(((0, "car"),), (((0, "汽车"),),)),))
    rows = {"zh": ("开 汽车", "开 汽 车"), "pad": ("别的 东西", "别 东 西")}
    assert _score(one, rows)["zh"] <= 1.0
    assert _score(one, rows)["zh"] == pytest.approx(_score(two, rows)["zh"])


def test_without_groups_scores_are_unchanged():
    plain = query_tokens("coffee beans")
    rows = {"a": ("coffee bean", ""), "b": ("tea", "")}
    grouped = Tokens(plain.terms, plain.chars, ())
    assert _score(plain, rows) == _score(grouped, rows)
    assert 0 < _score(plain, rows)["a"] < 1  # "beans" is asked but held by no memory


def test_candidates_include_the_translations():
    cat = Tokens(("cat",), (), (Group(((0, "cat"),), (((1, "猫"),),)),))
    picked = candidate_tokens(cat, {"猫": 1}, rows=10)
    assert picked.chars == ("猫",)
    assert "cat" in picked.terms


# -- stores --------------------------------------------------------------------------------


async def _store(path: Path, lexicon: Lexicon | None) -> MemoryStore:
    store = MemoryStore(path, embedder=None, lexicon=lexicon)
    await store.add("alice", "Is allergic to peanuts.")
    await store.add("alice", "Has a dog named Biscuit.")
    await store.add("wang", "养了一只橘猫，名字叫大橘")
    await store.add("wang", "住在杭州西湖区")
    await store.add("mallory", "我对花生过敏")
    return store


async def test_keyword_search_finds_memories_in_the_other_language(
    tmp_path: Path, lexicon: Lexicon
):
    store = await _store(tmp_path / "m.db", lexicon)
    try:
        hits = await store.search("alice", "我对什么过敏？", mode="keyword")
        assert [h.record.content for h in hits] == ["Is allergic to peanuts."]
        hits = await store.search("wang", "What's my cat called?", mode="keyword")
        assert hits[0].record.content == "养了一只橘猫，名字叫大橘"
        assert hits[0].keyword_score >= 0.4  # above recall's keyword threshold
        hits = await store.search("wang", "Which city do I live in?", mode="keyword")
        assert hits[0].record.content == "住在杭州西湖区"
    finally:
        await store.close()


async def test_a_rare_translation_never_outranks_a_common_word_itself(
    tmp_path: Path, lexicon: Lexicon
):
    store = MemoryStore(tmp_path / "m.db", embedder=None, lexicon=lexicon)
    try:
        for i in range(30):  # "coffee" is common for this user, 咖啡 rare
            await store.add("u", f"I drink coffee with note {i}")
        for i in range(60):
            await store.add("u", f"Filler memory number {i} about nothing")
        await store.add("u", "我每天喝咖啡")
        hits = await store.search("u", "coffee", mode="keyword", limit=50)
        ranked = [h.record.content for h in hits]
        assert ranked.index("我每天喝咖啡") >= 30, ranked[:5]
    finally:
        await store.close()


async def test_translations_never_cross_users(tmp_path: Path, lexicon: Lexicon):
    store = await _store(tmp_path / "m.db", lexicon)
    try:
        # mallory's "我对花生过敏" matches every word of the query, but is not alice's.
        hits = await store.search("alice", "am I allergic to peanuts", mode="keyword")
        assert {h.record.user_id for h in hits} == {"alice"}
        assert await store.search("bob", "allergic peanut 过敏 花生", mode="keyword") == []
    finally:
        await store.close()


async def test_without_a_lexicon_each_language_finds_only_itself(tmp_path: Path):
    store = await _store(tmp_path / "m.db", None)
    try:
        # "花生" (peanuts) names no kind of thing (hermes.memory.concepts: kinds are one token
        # in any language, so "我对什么过敏？" finds the allergy as it is); the word itself
        # crosses only with the lexicon.
        assert await store.search("alice", "花生", mode="keyword") == []
        hits = await store.search("alice", "allergic", mode="keyword")
        assert [h.record.content for h in hits] == ["Is allergic to peanuts."]
    finally:
        await store.close()


@pytest.mark.parametrize(("value", "expected"), [("auto", "auto"), ("off", None)])
async def test_the_config_switches_cross_language_recall(
    tmp_path: Path, value: str, expected: str | None
):
    (tmp_path / "hermes.yaml").write_text(
        f"store:\n  path: {tmp_path / 'hermes.db'}\nmemory:\n  cross_language: {value}\n",
        encoding="utf-8",
    )
    loaded = load_config(tmp_path / "hermes.yaml")
    store = open_memory_store(loaded, embedder=None)
    try:
        assert store.lexicon == expected
    finally:
        await store.close()
