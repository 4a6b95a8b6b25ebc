"""Keyword tokens for Chinese and English, and FTS5 queries that user text can never break."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.memory.keywords import (
    MAX_QUERY_TOKENS,
    Bm25,
    CorpusStats,
    Tokens,
    build_match,
    candidate_tokens,
    index_text,
    owner_token,
    query_tokens,
    quote,
    stem,
    tokenize,
)

FTS_TEXTS = ["我喜欢喝咖啡", "Prefers black coffee, no sugar", "用 Python 写后端", "绿茶"]


@pytest.fixture
def fts() -> Iterator[sqlite3.Connection]:
    """An FTS5 table like the store's, holding a few indexed rows."""
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(owner, terms, chars, content = '', "
        "tokenize = 'unicode61 remove_diacritics 0', detail = column)"
    )
    for rid, text in enumerate(FTS_TEXTS, start=1):
        conn.execute(
            "INSERT INTO t (rowid, owner, terms, chars) VALUES (?, ?, ?, ?)",
            (rid, owner_token("u1"), *index_text(tokenize(text))),
        )
    yield conn
    conn.close()


def _matches(conn: sqlite3.Connection, text: str, user: str = "u1") -> list[int]:
    match = build_match(owner_token(user), query_tokens(text))
    if match is None:
        return []
    return [
        r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid", (match,))
    ]


# -- tokenization ----------------------------------------------------------------------------


def test_chinese_runs_become_overlapping_bigrams():
    assert tokenize("我喜欢喝咖啡").terms == ("我喜", "喜欢", "欢喝", "喝咖", "咖啡")


def test_a_lone_cjk_character_is_its_own_term():
    assert tokenize("tea 茶 please").terms == ("tea", "茶", "please")


def test_single_characters_are_kept_apart_without_function_characters():
    assert tokenize("我的猫").chars == ("猫",)


def test_latin_words_are_case_folded_accent_free_and_lightly_stemmed():
    assert tokenize("Café LIVES Peanuts").terms == ("cafe", "live", "peanut")


def test_full_width_letters_and_digits_are_normalized():
    assert tokenize("ＩＤ是Ｍ－２３８９１").terms == ("id", "是", "m", "23891")


def test_mixed_scripts_split_at_script_changes():
    assert tokenize("主要用Python写后端").terms == ("主要", "要用", "python", "写后", "后端")


def test_punctuation_and_emoji_are_separators():
    assert tokenize("咖啡😀！coffee…").terms == ("咖啡", "coffee")


@pytest.mark.parametrize(
    ("word", "stemmed"),
    [("lives", "live"), ("cities", "city"), ("messages", "message"), ("glass", "glass"),
     ("bus", "bus"), ("is", "is"), ("peanuts", "peanut")],
)  # fmt: skip
def test_the_s_stemmer_only_removes_plural_endings(word: str, stemmed: str):
    assert stem(word) == stemmed


def test_queries_drop_stop_words_and_cross_word_bigrams():
    tokens = query_tokens("我喜欢喝什么咖啡？ What do I like?")
    assert "咖啡" in tokens.terms
    assert "喜欢" in tokens.terms
    assert "like" in tokens.terms
    for noise in ("我喜", "什么", "么咖", "what", "do", "i"):
        assert noise not in tokens.terms


def test_query_tokens_are_distinct_and_bounded():
    tokens = query_tokens(" ".join(f"word{i} word{i}" for i in range(200)))
    assert len(tokens.terms) == len(set(tokens.terms)) == MAX_QUERY_TOKENS


def test_a_query_of_stop_words_only_has_no_tokens():
    assert query_tokens("what is my … 上次那个？") == Tokens((), ())


# -- FTS5 queries ----------------------------------------------------------------------------


def test_quote_doubles_inner_double_quotes():
    assert quote('a"b') == '"a""b"'


def test_a_two_character_chinese_word_finds_the_memory(fts: sqlite3.Connection):
    assert _matches(fts, "咖啡") == [1]


def test_an_english_word_finds_the_memory(fts: sqlite3.Connection):
    assert _matches(fts, "COFFEE please") == [2]


def test_a_word_inside_mixed_text_is_found(fts: sqlite3.Connection):
    assert _matches(fts, "python") == [3]
    assert _matches(fts, "后端") == [3]


def test_a_single_character_finds_a_longer_word(fts: sqlite3.Connection):
    assert _matches(fts, "茶") == [4]


def test_another_owner_token_matches_nothing(fts: sqlite3.Connection):
    assert _matches(fts, "咖啡", user="u2") == []


def test_owner_tokens_are_single_fts_tokens_for_any_valid_user_id():
    token = owner_token("a.b:c@d-e")
    assert token.isalnum()
    assert token == owner_token("a.b:c@d-e") != owner_token("a.b:c@d-f")


def test_a_query_without_tokens_builds_no_match():
    assert build_match(owner_token("u1"), query_tokens("？！…")) is None


@pytest.mark.parametrize(
    "text",
    ['"', '""', "*", "coffee*", "NEAR(a b)", ")", "(", "a OR b", "a AND NOT b", "-coffee",
     "^coffee", "terms: x", "owner : u1", "{terms chars}: x", "😀😀", "咖啡\"OR\"1", "'; DROP"],
)  # fmt: skip
def test_fts_syntax_in_user_text_is_searched_for_never_run(fts: sqlite3.Connection, text: str):
    asked = query_tokens(text)
    wanted = set(asked.terms) | set(asked.chars)
    holding = [
        rid
        for rid, row in enumerate(FTS_TEXTS, start=1)
        if wanted & (set(tokenize(row).terms) | set(tokenize(row).chars))
    ]
    assert _matches(fts, text) == holding  # exactly the rows holding a token: a literal search


@pytest.mark.parametrize("text", ["゠", "・", "゛゜", "カ゚", "コーヒー・ラテ"])
def test_kana_punctuation_is_no_token_fts5_would_drop(text: str):
    # unicode61 splits on these; a token made of them would be indexed as nothing.
    assert all(ch not in "゠・゛゜\u309a" for t in tokenize(text).terms for ch in t)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_never_breaks_an_fts_query(text: str):
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(
            "CREATE VIRTUAL TABLE t USING fts5(owner, terms, chars, content = '', "
            "tokenize = 'unicode61 remove_diacritics 0', detail = column)"
        )
        conn.execute(
            "INSERT INTO t (rowid, owner, terms, chars) VALUES (1, ?, ?, ?)",
            (owner_token("u1"), *index_text(tokenize(text))),
        )
        match = build_match(owner_token("u1"), query_tokens(text))
        if match is not None:
            found = conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)).fetchall()
            assert found == [(1,)]  # a text always finds itself by any of its tokens
    finally:
        conn.close()


# -- scoring ---------------------------------------------------------------------------------


def test_a_memory_holding_every_query_token_scores_one():
    tokens = query_tokens("咖啡 coffee")
    bm25 = Bm25(CorpusStats(rows=100, terms=400, chars=300), tokens, {"咖啡": 3, "coffee": 5})
    assert bm25.score("咖啡 coffee", "咖 啡") == pytest.approx(1.0)


def test_a_memory_holding_part_of_the_query_scores_its_share():
    tokens = query_tokens("咖啡 coffee")
    bm25 = Bm25(CorpusStats(rows=100, terms=200, chars=0), tokens, {"咖啡": 5, "coffee": 5})
    assert bm25.score("咖啡 xx", "") == pytest.approx(0.5, abs=0.01)
    assert bm25.score("yy zz", "") == 0.0


def test_rare_tokens_weigh_more_than_common_ones():
    tokens = query_tokens("咖啡 coffee")
    bm25 = Bm25(CorpusStats(rows=100, terms=200, chars=0), tokens, {"咖啡": 2, "coffee": 40})
    assert bm25.score("咖啡 xx", "") > bm25.score("coffee xx", "")


def test_a_chinese_bigram_no_memory_holds_does_not_lower_scores():
    with_junk = Bm25(CorpusStats(10, 40, 0), query_tokens("咖啡欢喝"), {"咖啡": 1})
    assert with_junk.score("咖啡 xx", "") == pytest.approx(1.0, abs=0.05)


def test_an_english_word_no_memory_holds_does_lower_scores():
    bm25 = Bm25(CorpusStats(10, 40, 0), query_tokens("coffee sugar"), {"coffee": 1})
    assert bm25.score("coffee xx", "") < 0.6


def test_common_tokens_do_not_pick_candidates_when_rarer_ones_exist():
    tokens = query_tokens("喜欢 川菜 like")
    docs = {"喜欢": 900, "川菜": 3, "like": 700, "喜": 950, "欢": 950, "川": 10, "菜": 60}
    picked = candidate_tokens(tokens, docs, rows=2000)
    assert picked.terms == ("川菜",)
    assert picked.chars == ("川", "菜")


def test_when_every_token_is_common_the_rarest_three_pick_candidates():
    tokens = Tokens(("a", "b", "c", "d"), ())
    picked = candidate_tokens(tokens, {"a": 900, "b": 500, "c": 800, "d": 600}, rows=1000)
    assert set(picked.terms) == {"b", "d", "c"}


def test_in_a_small_index_every_token_picks_candidates():
    tokens = query_tokens("喜欢 川菜")
    assert candidate_tokens(tokens, {"喜欢": 40, "川菜": 1}, rows=60) == tokens
