"""Query words with their translations, so keyword recall crosses Chinese↔English (seed 001 §5.3).

:func:`expand` adds :class:`~hermes.memory.keywords.Group`\\ s to a query's tokens: each English
word with the Chinese words the lexicon gives for it, each Chinese dictionary word of the query
with its English translations (:mod:`hermes.memory.lexicon`). The memories' index is unchanged:
translations are looked up per query, so no memory is rewritten when the dictionary changes,
and a store written before this module existed gains cross-language recall as it is.

Translations are tokens like any other (a Chinese word becomes its bigrams, or its character
in the ``chars`` column; an English word its stemmed form), scored by
:class:`~hermes.memory.keywords.Bm25` as the better of "the word itself" and
``TRANSLATION_WEIGHT`` × "its best translation".
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from hermes.memory.keywords import (
    MAX_QUERY_TOKENS,
    WORD_RUNS,
    Group,
    Tok,
    Tokens,
    bigrams,
    is_stop_char,
    is_stop_term,
    normalize,
    tokenize,
)
from hermes.memory.lexicon import Lexicon

#: Most query words that are translated (the first ones; a pasted essay stays a bounded query).
MAX_TRANSLATED_WORDS = 16
#: Characters of one Chinese run that are split into words (the rest adds no translation).
MAX_RUN_CHARS = 256
#: Words looked at, translated or not: a query keeps only its first 48 tokens
#: (``keywords.MAX_QUERY_TOKENS``), so words past these hold none of them.
MAX_EXAMINED_WORDS = 2 * MAX_QUERY_TOKENS
#: Characters of a query read for words to translate.
MAX_EXAMINED_CHARS = 1000


def expand(text: str, tokens: Tokens, lexicon: Lexicon | None) -> Tokens:
    """``tokens`` (from ``query_tokens(text)``) with translation groups for the words of
    ``text``; unchanged without a lexicon or when nothing translates."""
    if lexicon is None:
        return tokens
    own = {(0, t) for t in tokens.terms} | {(1, c) for c in tokens.chars}
    groups: list[Group] = []
    claimed: set[Tok] = set()
    words = itertools.islice(_words(text, tokens, lexicon), MAX_EXAMINED_WORDS)
    for word_tokens, translations in words:
        # A translation sharing a token with the query is left out: that token already counts.
        kept = tuple(tr for tr in translations if tr and own.isdisjoint(tr))
        originals = tuple(tok for tok in word_tokens if tok in own and tok not in claimed)
        if not kept or not originals:
            continue
        claimed.update(originals)
        groups.append(Group(originals, kept))
        if len(groups) == MAX_TRANSLATED_WORDS:
            break
    if not groups:
        return tokens
    return Tokens(tokens.terms, tokens.chars, tuple(groups))


def _words(
    text: str, tokens: Tokens, lexicon: Lexicon
) -> Iterator[tuple[tuple[Tok, ...], list[tuple[Tok, ...]]]]:
    """(the word's own tokens, its translations' tokens) for each word of ``text`` in order;
    lazily, so a long text is read only as far as :func:`expand` needs."""
    asked = set(tokens.terms)
    for match in WORD_RUNS.finditer(normalize(text[:MAX_EXAMINED_CHARS])):
        run, word = match.group(1), match.group(2)
        if run:
            for piece in lexicon.segment(run[:MAX_RUN_CHARS]):
                if all(is_stop_char(ch) for ch in piece):
                    continue
                translations: list[tuple[Tok, ...]] = [
                    ((0, w),) for w in lexicon.english(piece) if not is_stop_term(w)
                ]
                yield _chinese_tokens(piece), translations
        elif word:
            # The query token this word became; none for a stop word or a number.
            for term in tokenize(word).terms:
                if term in asked and not term[0].isdigit():
                    yield ((0, term),), [_chinese_tokens(zh) for zh in lexicon.chinese(term)]


def _chinese_tokens(word: str) -> tuple[Tok, ...]:
    """A Chinese word as index tokens: its bigrams, or its character (``chars`` column)."""
    if len(word) == 1:
        return () if is_stop_char(word) else ((1, word),)
    return tuple((0, b) for b in bigrams(word))
