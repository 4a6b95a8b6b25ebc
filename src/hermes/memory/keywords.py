"""Keyword search terms for long-term memories: one tokenizer for Chinese and English, and FTS5
queries built from its tokens (seed 003 §2.4; FTS5 with bigrams, DESIGN.md, "Dependencies").

Why tokens are made here and not by an FTS5 tokenizer: SQLite's ``unicode61`` keeps a whole run
of Chinese characters as one token (``我喜欢喝咖啡`` is one word, so a search for ``咖啡`` finds
nothing) and ``trigram`` needs at least three characters, so it misses two-character words — and
most Chinese words have two. jieba-style word segmentation would need a dictionary dependency and
still disagree with itself between a memory and a paraphrased query. Character bigrams need
neither: every two-character word of a text is one of its bigrams. So this module turns text into
space-separated tokens (CJK runs → overlapping character bigrams, a lone CJK character → itself,
other words → case-folded, accent-free words) and the FTS5 table indexes them with ``unicode61``,
which then only splits on the spaces.

Queries are never handed to FTS5 as the user typed them: :func:`build_match` quotes each token
as an FTS5 string literal (``"`` doubled), so ``"``, ``*``, ``NEAR``, ``OR``, ``-``, ``)`` and
the like are plain text to search for, never syntax.

A query may also carry the translations of its words into the other language
(:mod:`hermes.memory.crosslang`); :class:`Bm25` scores each word with its translations as one
:class:`Group` — the better of the two, never their sum.

Pure text work, no database: the SQLite backend keeps the index and each user's statistics
(``hermes.storage.sqlite.memory_fts``); a PostgreSQL backend indexes the same tokens.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

#: Scripts written without spaces between words: Japanese kana, CJK ideographs (with extension A,
#: compatibility ideographs and the supplementary planes), Hangul syllables. Kana punctuation
#: and sound marks (゠ ・ ゛ ゜, the combining ones) are left out: FTS5's unicode61 splits on
#: them, so a token of them would be indexed as nothing and never found.
CJK_CLASS = (
    "\u3041-\u3098\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
    "\U00020000-\U0002ebef\U00030000-\U0003134f"
)
_CJK_CHAR = re.compile(f"[{CJK_CLASS}]")
#: A CJK run, or a run of other letters/digits (``[^\W_]`` is a Unicode letter or digit).
WORD_RUNS = re.compile(f"([{CJK_CLASS}]+)|([^\\W_{CJK_CLASS}]+)")

#: bm25 column weights of the FTS5 table (owner, terms, chars): the owner token never counts,
#: a single CJK character counts 0.3 of a bigram or word (茶 is in 绿茶 and in 茶几 alike).
WEIGHT_TERMS, WEIGHT_CHARS = 1.0, 0.3

#: A token longer than this is cut (a 2,000-character "word" is noise, not a search term).
MAX_TOKEN_CHARS = 40
#: A query uses at most this many distinct tokens, so a pasted essay cannot build a huge query.
MAX_QUERY_TOKENS = 48

# Function words that say nothing about what a memory is about. Hand-written (no stop-word
# dependency for ~150 words); used on the query side only, so the index stays complete.
_EN_STOPWORD_TEXT = """
    a an the and or but if then so than too very of at by for with about into onto to from in
    on off over under up down out is am are was were be been being do does did doing done have
    has had having i me my mine myself we us our ours you your yours he him his she her hers it
    its they them their theirs this that these those what which who whom whose when where why
    how can could should would will shall may might must there here just not no any some all
    each other such only own same also please tell say said told know knew let get got s t d m
    ll re ve don didn doesn isn aren wasn weren won wouldn shouldn couldn
    remember recall remind mentioned mention last time before previously earlier again usually
    ever still now today anything something thing things one ones
"""
_EN_STOPWORDS = frozenset(_EN_STOPWORD_TEXT.split())
# Chinese function characters (pronouns, particles, question words, time/memory cues). A bigram
# made only of these (我的, 什么, 上次, 之前, 一下 …) is dropped from queries.
_ZH_STOP_CHARS = frozenset(
    "我你您他她它们的地得了着过是吗呢吧啊呀嘛哦么什怎哪谁几多少这那个些一下上次之前以后再又还"
    "也都就才很太最在有和与及或跟同把被给让对向从到为于请帮说讲告诉知道记得曾经已经吗呗哈嗯"
)
# Pronouns, particles and question words that (almost) never start or end a content word: a
# query bigram holding one of them straddles a word boundary (我喜, 的猫, 喝什, 么咖), and such
# junk bigrams would only dilute the score of the real ones.
_ZH_PARTICLES = frozenset("我你您他她它们的吗呢吧啊呀嘛哦么什怎哪谁这那些")


def normalize(text: str) -> str:
    """NFKC (full-width → half-width, compatibility forms) and case folding."""
    return unicodedata.normalize("NFKC", text).casefold()


def _strip_accents(word: str) -> str:
    """``café`` → ``cafe`` (combining marks removed) for non-CJK words only."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFD", word)
    return unicodedata.normalize(
        "NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    )


def stem(word: str) -> str:
    """English plural/third-person ``s`` removed (Harman's "S" stemmer, 1991, as in Lucene's
    EnglishMinimalStemmer): lives → live, peanuts → peanut, cities → city, messages → message.
    Deliberately minimal: heavier stemmers (Porter) merge words that differ in meaning, and a
    few lines do not justify a dependency."""
    if len(word) < 4 or word[-1] != "s" or word[-2] in "us":
        return word
    if word.endswith("ies") and word[-4] not in "ae":
        return word[:-3] + "y"
    if word.endswith("es") and word[-3] not in "aeo":
        return word[:-1]
    return word[:-1]


#: Stop words as the tokenizer leaves them ("does" → "doe", "things" → "thing").
_EN_STOPWORD_STEMS = frozenset(stem(word) for word in _EN_STOPWORDS)


def bigrams(run: str) -> list[str]:
    """The overlapping character pairs of a CJK run (a lone character stands for itself)."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


#: A query token and the column it is searched in: 0 = ``terms``, 1 = ``chars``.
Tok = tuple[int, str]
#: How much a match through a translation counts against a match of the word itself.
TRANSLATION_WEIGHT = 0.7


@dataclass(frozen=True, slots=True)
class Group:
    """One query word and its translations (:mod:`hermes.memory.crosslang`).

    ``originals`` are the word's own tokens (an English word; the bigrams of a Chinese word, or
    its character); each entry of ``translations`` is one translation's tokens. A memory scores
    the better of the two — the word's own tokens, or :data:`TRANSLATION_WEIGHT` times its best
    translation — so four translations of one word never count four times.
    """

    originals: tuple[Tok, ...]
    translations: tuple[tuple[Tok, ...], ...]


@dataclass(frozen=True, slots=True)
class Tokens:
    """The searchable tokens of one text.

    ``terms`` are CJK bigrams (a lone CJK character stands for itself) and other words;
    ``chars`` are the single CJK characters that are not function characters — a weaker signal
    (ranked lower) that still lets ``茶`` find ``绿茶``. A query may carry ``groups``: its words
    with their translations into the other language (their originals are among ``terms`` and
    ``chars``, the translations only there).
    """

    terms: tuple[str, ...]
    chars: tuple[str, ...]
    groups: tuple[Group, ...] = ()

    def searched(self) -> Tokens:
        """Every token a search looks for — the query's own and its translations — without
        the groups (what selects candidate rows and needs document counts)."""
        if not self.groups:
            return self
        columns: tuple[dict[str, None], dict[str, None]] = (
            dict.fromkeys(self.terms),
            dict.fromkeys(self.chars),
        )
        for group in self.groups:
            for translation in group.translations:
                for column, token in translation:
                    columns[column][token] = None
        return Tokens(tuple(columns[0]), tuple(columns[1]))


def tokenize(text: str) -> Tokens:
    """Tokens of ``text`` in order, with repeats (what the index stores)."""
    terms: list[str] = []
    chars: list[str] = []
    for match in WORD_RUNS.finditer(normalize(text)):
        cjk, word = match.group(1), match.group(2)
        if cjk:
            terms.extend(bigrams(cjk))
            chars.extend(ch for ch in cjk if ch not in _ZH_STOP_CHARS)
        else:
            stripped = stem(_strip_accents(word)[:MAX_TOKEN_CHARS])
            if stripped:
                terms.append(stripped)
    return Tokens(tuple(terms), tuple(chars))


def index_text(tokens: Tokens) -> tuple[str, str]:
    """The ``terms`` and ``chars`` column values stored in the FTS5 table."""
    return " ".join(tokens.terms), " ".join(tokens.chars)


def is_stop_char(ch: str) -> bool:
    """A Chinese function character (pronoun, particle, question word, time/memory cue)."""
    return ch in _ZH_STOP_CHARS


def is_stop_term(term: str) -> bool:
    """A query token that says nothing about what a memory is about (dropped from queries)."""
    if term in _EN_STOPWORDS or term in _EN_STOPWORD_STEMS:
        return True
    if not term or not _is_cjk(term[0]):
        return False
    return all(ch in _ZH_STOP_CHARS for ch in term) or any(ch in _ZH_PARTICLES for ch in term)


def _is_cjk(ch: str) -> bool:
    return _CJK_CHAR.match(ch) is not None


def is_cjk_word(text: str) -> bool:
    """``text`` is non-empty and written in CJK characters only (no latin, digits, spaces)."""
    return bool(text) and all(_CJK_CHAR.match(ch) is not None for ch in text)


def _unique(values: Iterable[str], limit: int) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for value in values:
        if value not in seen:
            seen[value] = None
            if len(seen) >= limit:
                break
    return tuple(seen)


def query_tokens(text: str) -> Tokens:
    """The distinct, informative tokens of a query (stop words and function bigrams dropped).

    Both kinds of token share :data:`MAX_QUERY_TOKENS`, terms first.
    """
    tokens = tokenize(text)
    terms = _unique((t for t in tokens.terms if not is_stop_term(t)), MAX_QUERY_TOKENS)
    chars = _unique(tokens.chars, MAX_QUERY_TOKENS - len(terms))
    return Tokens(terms, chars)


def quote(token: str) -> str:
    """``token`` as an FTS5 string literal: in double quotes, inner double quotes doubled."""
    return '"' + token.replace('"', '""') + '"'


def owner_token(user_id: str) -> str:
    """The one token that marks a user's rows in the FTS5 index.

    A hash rather than the id itself: ``unicode61`` would split ids at ``.``, ``:``, ``@``
    and ``-``. The index only narrows the search; every query also filters on the real
    ``user_id`` column, so a collision could never show one user another's memories.
    """
    return "u" + hashlib.blake2b(user_id.encode("utf-8"), digest_size=10).hexdigest()


def build_match(owner: str, tokens: Tokens) -> str | None:
    """An FTS5 MATCH expression: the owner's rows having any of ``tokens``; None if no token.

    Every token is a quoted string literal, so nothing in the user's text is FTS5 syntax.
    """
    groups = []
    if tokens.terms:
        groups.append("terms : (" + " OR ".join(quote(t) for t in tokens.terms) + ")")
    if tokens.chars:
        groups.append("chars : (" + " OR ".join(quote(c) for c in tokens.chars) + ")")
    if not groups:
        return None
    return f"owner : {quote(owner)} AND ({' OR '.join(groups)})"


def idf(total: int, docs: int) -> float:
    """bm25's IDF of a term in ``docs`` of ``total`` rows, in the BM25+ form
    ``log(1 + (N - n + 0.5) / (n + 0.5))``: always positive, so a term held by most of a small
    set of memories (a user with two memories) still counts, less than a rare one."""
    return math.log(1.0 + (max(total - docs, 0) + 0.5) / (max(docs, 0) + 0.5))


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """Row and token counts of one user's indexed memories (``memory_user_stats``)."""

    rows: int
    terms: int
    chars: int


class Bm25:
    """bm25 of one query's tokens against indexed rows, normalized to 0..1.

    The formula is FTS5's (k1 = 1.2, b = 0.75, per-column weights) with the always-positive
    BM25+ IDF (:func:`idf`), but the sums are done here, over the rows FTS5 matched, with the
    querying user's own statistics: FTS5's ``bm25()`` counts over the whole index (every
    user's memories would move every other user's scores) and recounts the matches of every
    phrase through a per-row callback on each query — 7–30 ms at 100,000 rows — while the
    per-user counts (``memory_user_terms``, ``memory_user_stats``) are one indexed lookup.

    The normalization divides by the score of a memory of average length that holds every
    query token once (``Σ weight·idf``: with term frequency 1 at average length, bm25's
    length factor is 1), so keyword scores mean "the share of the query's information found
    in the memory" whatever the number of memories.
    """

    K1 = 1.2
    B = 0.75

    def __init__(self, stats: CorpusStats, tokens: Tokens, docs: dict[str, int]) -> None:
        total = max(stats.rows, 1)
        self._avg = (max(stats.terms / total, 1.0), max(stats.chars / total, 1.0))
        flat = tokens.searched()
        self._weights = (
            {t: WEIGHT_TERMS * idf(total, docs.get(t, 0)) for t in flat.terms},
            {c: WEIGHT_CHARS * idf(total, docs.get(c, 0)) for c in flat.chars},
        )
        self._patterns = (_token_pattern(self._weights[0]), _token_pattern(self._weights[1]))
        self._groups = tokens.groups
        grouped = {tok for group in tokens.groups for tok in group.originals}
        self._single = {(0, t) for t in tokens.terms if (0, t) not in grouped} | {
            (1, c) for c in tokens.chars if (1, c) not in grouped
        }
        # A translation weighs what the word itself weighs (its idf, not the translation's): a
        # rare Chinese word for a common English one must not outrank the English word.
        self._own_weight = [
            sum(self._weights[col][t] for col, t in group.originals) for group in tokens.groups
        ]
        # Which groups a token belongs to: a row is scored only for the groups it touches.
        self._touches: dict[Tok, set[int]] = {}
        for index, group in enumerate(tokens.groups):
            for tok in (*group.originals, *(t for tr in group.translations for t in tr)):
                self._touches.setdefault(tok, set()).add(index)
        best = sum(self._best_of(tok, docs) for tok in self._single)
        best += sum(self._group_best(i, group, docs) for i, group in enumerate(tokens.groups))
        self._best = best if best > 0 else 1.0

    def _best_of(self, tok: Tok, docs: dict[str, int]) -> float:
        """What a query token adds to the best score. A CJK token that no memory holds adds
        nothing: bigrams are cut blindly, so a Chinese query always has a few that straddle two
        words (欢喝, 铁要), and counting them would lower every score alike. A word the user
        typed (latin script) counts even when no memory has it: the query asks about something
        the memories do not mention."""
        column, token = tok
        if token in docs or not _is_cjk(token[0]):
            return self._weights[column][token]
        return 0.0

    def _group_best(self, index: int, group: Group, docs: dict[str, int]) -> float:
        """A group's share of the best score: its best alternative some memory holds (the word
        itself, or a translation); when none is held, what the word alone would add."""
        own = sum(self._weights[col][t] for col, t in group.originals if t in docs)
        held = any(all(t in docs for _, t in tr) for tr in group.translations)
        if own or held:
            return max(own, TRANSLATION_WEIGHT * self._own_weight[index] if held else 0.0)
        return sum(self._best_of(tok, docs) for tok in group.originals)

    def _column(self, text: str, column: int, average: float) -> dict[str, float]:
        """Each query token's bm25 contribution in one column of a row (absent: not listed)."""
        pattern = self._patterns[column]
        if pattern is None or not text:
            return {}
        found = pattern.findall(f" {text} ")  # one C-speed scan per row, not a Python loop
        if not found:
            return {}
        norm = self.K1 * (1.0 - self.B + self.B * (text.count(" ") + 1) / average)
        weights = self._weights[column]
        parts: dict[str, float] = {}
        for token in set(found):
            tf = found.count(token)
            parts[token] = weights[token] * tf * (self.K1 + 1.0) / (tf + norm)
        return parts

    def score(self, terms: str, chars: str) -> float:
        """The normalized score (0..1) of a row whose columns hold ``terms`` and ``chars``.

        Plain loops over the tokens the row holds: this runs for up to 200 rows a search."""
        parts = (self._column(terms, 0, self._avg[0]), self._column(chars, 1, self._avg[1]))
        raw = 0.0
        touched: set[int] = set()
        for column in (0, 1):
            for token, value in parts[column].items():
                key = (column, token)
                if key in self._single:
                    raw += value
                groups = self._touches.get(key)
                if groups:
                    touched.update(groups)
        for index in touched:
            raw += self._group_score(index, parts)
        return min(1.0, raw / self._best)

    def _group_score(self, index: int, parts: tuple[dict[str, float], dict[str, float]]) -> float:
        """The better of the word's own tokens and :data:`TRANSLATION_WEIGHT` × its best
        translation, which counts bm25's term-frequency and length factor of its tokens (their
        mean, for a translation of several tokens) times the weight of the word itself."""
        group = self._groups[index]
        own = 0.0
        for column, token in group.originals:
            own += parts[column].get(token, 0.0)
        via = 0.0
        for translation in group.translations:
            factor = 0.0
            for column, token in translation:
                factor += parts[column].get(token, 0.0) / self._weights[column][token]
            via = max(via, factor / len(translation))
        return max(own, TRANSLATION_WEIGHT * self._own_weight[index] * via)


def _token_pattern(tokens: Iterable[str]) -> re.Pattern[str] | None:
    """Finds whole tokens in `` {space-separated tokens} ``; None for no tokens."""
    alternatives = "|".join(re.escape(token) for token in tokens)
    return re.compile(f" ({alternatives})(?= )") if alternatives else None


#: A token held by more than this share of the user's memories does not select candidates (it
#: still counts in the score of the rows the rarer tokens find).
COMMON_SHARE = 0.05


def candidate_tokens(tokens: Tokens, docs: dict[str, int], rows: int) -> Tokens:
    """The tokens that pick which rows a search scores: the rare ones.

    A row that holds only common tokens (喜欢, like, 用户 …: low IDF) cannot score well, yet
    such tokens match a large part of a user's memories and every match must be fetched and
    scored. So tokens in more than :data:`COMMON_SHARE` of the user's rows (and in more than
    50) are left out of the FTS5 query — unless all are, then the three rarest stay. ``docs``
    and ``rows`` are the user's own counts: another user's memories never change the choice.
    """
    tokens = tokens.searched()
    cap = max(COMMON_SHARE * rows, 50)
    terms = tuple(t for t in tokens.terms if docs.get(t, 0) <= cap)
    chars = tuple(c for c in tokens.chars if docs.get(c, 0) <= cap)
    if terms or chars or not (tokens.terms or tokens.chars):
        return Tokens(terms, chars)
    ranked = sorted(
        [(docs.get(t, 0), 0, t) for t in tokens.terms]
        + [(docs.get(c, 0), 1, c) for c in tokens.chars]
    )[:3]
    return Tokens(
        tuple(t for _, column, t in ranked if column == 0),
        tuple(t for _, column, t in ranked if column == 1),
    )


def token_count(text: str) -> int:
    """Tokens in a stored column value (space-separated)."""
    return text.count(" ") + 1 if text else 0


def index_row(user_id: str, text: str) -> tuple[str, str, str]:
    """The (owner, terms, chars) FTS5 column values of a memory of ``user_id``."""
    terms, chars = index_text(tokenize(text))
    return owner_token(user_id), terms, chars
