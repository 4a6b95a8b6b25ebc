"""The Chinese↔English lexicon as a concept (hermes.memory.lexicon): CC-CEDICT parsing, the
lookups of the ``Lexicon`` protocol on tables in memory, query segmentation. Its cache file is
``tests/storage/sqlite/test_lexicon.py``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.memory.keywords import is_cjk_word, tokenize
from hermes.memory.lexicon import (
    MAX_TRANSLATIONS,
    Lexicon,
    TableLexicon,
    gloss_words,
    parse_cedict,
    segment_words,
)

ENTRIES = """\
# CC-CEDICT
# a comment line, then entries in the file's own format
貓 猫 [mao1] /cat/CL:隻|只[zhi1]/(dialect) to hide oneself/(coll.) modem/
城市 城市 [cheng2 shi4] /city; town/CL:座[zuo4]/
住 住 [zhu4] /to live/to dwell/to stay/to reside/
居住 居住 [ju1 zhu4] /to reside/to live in a place/
喜歡 喜欢 [xi3 huan5] /to like/to be fond of/
咖啡 咖啡 [ka1 fei1] /coffee (loanword)/CL:杯[bei1]/
乒乓 乒乓 [ping1 pang1] /(onom.) ping-pong/
什麼 什么 [shen2 me5] /what?/something/anything/
叫 叫 [jiao4] /variant of 叫[jiao4]/
車 车 [Che1] /surname Che/
車 车 [che1] /car/vehicle/CL:輛|辆[liang4]/machine/
汽車 汽车 [qi4 che1] /car/automobile/bus/
電腦 电脑 [dian4 nao3] /computer/CL:臺|台[tai2]/
not an entry at all
"""


@pytest.fixture(scope="module")
def small() -> Lexicon:
    return TableLexicon(parse_cedict(ENTRIES.splitlines()))


def test_the_table_lexicon_is_a_lexicon(small: Lexicon) -> None:
    assert isinstance(small, Lexicon)


def test_glosses_become_index_tokens_without_notes_or_function_words():
    assert gloss_words("to live in a place") == ["live", "place"]
    assert gloss_words("(dialect) to hide oneself") == ["hide"]
    assert gloss_words("coffee (loanword)") == ["coffee"]
    assert gloss_words("(onom.) ping-pong") == ["ping", "pong"]  # split where the index splits
    assert gloss_words("Cafés in the 1990s") == ["cafe"]  # numbers are no translation


def test_chinese_words_translate_to_the_words_of_their_first_glosses(small: Lexicon):
    assert small.english("猫") == ("cat", "hide", "modem")
    assert small.english("城市") == ("city", "town")
    assert small.english("咖啡") == ("coffee",)
    assert small.english("车") == ("car", "vehicle", "machine")  # not the surname, not CL:
    assert small.english("叫") == ()  # only a cross-reference
    assert small.english("什么") == ()  # glosses of function words only
    assert small.english("不存在") == ()


def test_english_words_translate_to_headwords_that_mean_exactly_them(small: Lexicon):
    assert small.chinese("live") == ("住",)  # "to live in a place" is not exactly "live"
    assert small.chinese("city") == ("城市",)
    assert small.chinese("car") == ("汽车", "车")  # two-character words first
    assert small.chinese("computer") == ("电脑",)
    assert small.chinese("ping") == ()  # "ping-pong" is two words
    assert small.chinese("nothing-like-this") == ()


def test_translations_per_word_are_bounded():
    lines = [f"字{chr(0x4E00 + i)} 字{chr(0x4E00 + i)} [zi4] /cat/" for i in range(20)]
    reverse = parse_cedict(lines)[1]
    assert len(reverse["cat"]) == MAX_TRANSLATIONS
    many = parse_cedict(["多 多 [duo1] /a b c/d e f/g h i j k/"])[0]
    assert len(many["多"]) == MAX_TRANSLATIONS


def test_segmentation_takes_the_longest_headword_at_each_position(small: Lexicon):
    assert small.segment("我喜欢咖啡") == ["我", "喜欢", "咖啡"]
    assert small.segment("我住在什么城市") == ["我", "住", "在", "什么", "城市"]
    assert small.segment("开汽车") == ["开", "汽车"]
    assert small.segment("") == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=8))
def test_any_text_parses_and_every_translation_is_one_index_token(lines: list[str]):
    entries = [f"{line} {line} [x] /{line}/" for line in lines] + lines
    forward, reverse = parse_cedict(entries)
    for values in (*forward.values(), *reverse.values()):
        assert len(values) <= MAX_TRANSLATIONS
    for word in (w for values in forward.values() for w in values):
        assert tokenize(word).terms == (word,)  # never a phrase (FTS5 could not run it)
    assert all(tokenize(english).terms == (english,) for english in reverse)


def test_headwords_with_latin_letters_are_left_out():
    forward, reverse = parse_cedict(
        [
            "卡拉OK 卡拉OK [ka3 la1 O K] /karaoke/",
            "UP主 UP主 [U P zhu3] /uploader (on a video website)/",
            "Ｔ恤 Ｔ恤 [T xu4] /T-shirt/",
            "唱歌 唱歌 [chang4 ge1] /to sing/",
        ]
    )
    assert set(forward) == {"唱歌"}
    assert "karaoke" not in reverse
    assert "uploader" not in reverse
    assert reverse["sing"] == ("唱歌",)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=6), st.text(max_size=40)), max_size=8))
def test_every_headword_kept_is_a_chinese_word(entries: list[tuple[str, str]]):
    lines = [f"{w} {w} [x] /{gloss}/" for w, gloss in entries if " " not in w]
    forward, reverse = parse_cedict(lines)
    assert all(is_cjk_word(word) for word in forward)
    assert all(is_cjk_word(word) for words in reverse.values() for word in words)


def test_segmentation_asks_which_spans_are_words_once_per_run():
    asked: list[set[str]] = []

    def known(spans: set[str]) -> set[str]:
        asked.append(spans)
        return {"喜欢"} & spans

    assert segment_words("我喜欢", known) == ("我", "喜欢")
    assert asked == [{"我喜", "喜欢", "我喜欢"}]
    assert segment_words("猫", known) == ("猫",)  # one character: nothing to ask
    assert len(asked) == 1
