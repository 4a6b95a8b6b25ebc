"""Offer only the relevant toolsets when there are too many tools (seed 001 §6.3).

Seed 001 §6.3: tool schemas are about a third of a turn's tokens, so "when more than 20 tools
are registered, group them and inject them dynamically" — guess from the message which group
is needed and offer only that group's schemas. Tools are grouped by ``Tool.toolset``
(``"default"`` unless the tool says otherwise).

How :meth:`ToolsetIndex.select` chooses, deterministically:

1. At most ``limit`` tools are offered in any case; when the candidates fit, all are offered.
2. The message and every tool's name and description are cut into terms: lowercase English
   words (``get_weather`` → ``weather``; a plural ``s`` dropped, common words ignored) and
   Chinese character bigrams (``查询天气`` → ``查询``, ``询天``, ``天气``) — the same bigrams the
   FTS index uses, because single characters are too vague and most Chinese words have two.
3. A toolset scores the sum of the weights of the message terms its tools mention, each
   weighted by rarity across toolsets (a term every toolset mentions weighs almost nothing),
   plus a bonus for each of its keywords (given to the index) found in the message.
4. Toolsets are ordered: the always-kept ones (``core``, then ``default``), the ones the caller
   asks to keep (e.g. those used earlier in the session, so a follow-up like "好的" keeps its
   tools), then the others with a positive score, best first (ties: the order tools were
   given). A toolset with no matching term is not offered. In that order every toolset that
   still fits whole is taken; then the room left is filled with the most relevant tools of
   the toolsets that did not fit (so a single oversized ``default`` toolset still yields its
   best ``limit`` tools).
5. The chosen tools come back in their original order, so the prompt stays stable.

Build the index once (start-up, or when the tool list changes); a selection costs one pass
over the first 2,000 characters of the message plus a few dictionary lookups per term.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from hermes.tools.base import Tool

__all__ = ["ToolsetIndex", "message_terms", "select_toolsets"]

DEFAULT_LIMIT = 20
#: Only the start of a message is read: the request is there, and the cost stays bounded.
MAX_MESSAGE_CHARS = 2000
ALWAYS_KEPT = ("core", "default")

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# Words too common to point to a toolset (kept as text: one glance shows the whole list).
_EN_STOP_TEXT = """
a an the to of for and or in on at by with from is are be was me my i you your it its this that
these those what which how please can could would will do does did get give show tell about into
all any some use using via want need let now then just also
"""
_ZH_STOP_TEXT = """
一下 帮我 给我 我们 你们 可以 什么 怎么 一个 这个 那个 请你 我的 你的 告诉 一些 的话 是否 一点 看看
现在 需要 想要 能否
"""
_EN_STOP = frozenset(_EN_STOP_TEXT.split())
_ZH_STOP = frozenset(_ZH_STOP_TEXT.split())
# Scores are integers (weights x 1000) so sums are exact: the result never depends on the
# order in which terms happen to be visited (set order varies with PYTHONHASHSEED).
_SCALE = 1000
_KEYWORD_BONUS = 2  # a configured keyword is worth twice the rarest term


def message_terms(text: str) -> frozenset[str]:
    """The terms of ``text`` (see the module docstring); also used for names and descriptions."""
    text = text[:MAX_MESSAGE_CHARS]
    terms: set[str] = set()
    for word in _WORD.findall(_CAMEL.sub(" ", text).lower()):
        if len(word) < 2 or word in _EN_STOP:
            continue
        plural = len(word) > 3 and word.endswith("s") and not word.endswith("ss")
        terms.add(word[:-1] if plural else word)
    for run in _CJK_RUN.findall(text):
        if len(run) == 1:
            terms.add(run)
            continue
        for start in range(len(run) - 1):
            bigram = run[start : start + 2]
            if bigram not in _ZH_STOP:
                terms.add(bigram)
    return frozenset(terms)


def _toolset_of(tool: Any) -> str:
    return str(getattr(tool, "toolset", "") or "default")


class ToolsetIndex:
    """Tools grouped by toolset with a term index for choosing the relevant groups.

    ``keywords`` maps a toolset to extra words that point to it (``{"mail": ["邮件",
    "email"]}``), matched as case-insensitive substrings of the message. ``always`` names the
    toolsets kept whenever they fit. Immutable; safe to share.
    """

    __slots__ = (
        "_always",
        "_groups",
        "_keyword_bonus",
        "_keywords",
        "_set_postings",
        "_tool_postings",
        "_tools",
    )

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        keywords: Mapping[str, Iterable[str]] | None = None,
        always: Sequence[str] = ALWAYS_KEPT,
    ) -> None:
        self._tools: tuple[Tool, ...] = tuple(tools)
        groups: dict[str, list[int]] = {}
        tool_terms: list[frozenset[str]] = []
        for position, tool in enumerate(self._tools):
            groups.setdefault(_toolset_of(tool), []).append(position)
            text = f"{tool.name} {tool.name.replace('_', ' ')} {tool.description}"
            tool_terms.append(message_terms(text))
        self._groups: dict[str, tuple[int, ...]] = {k: tuple(v) for k, v in groups.items()}
        self._always = tuple(name for name in always if name in self._groups)
        self._keywords: dict[str, tuple[str, ...]] = {
            name: tuple(word.lower() for word in words if word.strip())
            for name, words in (keywords or {}).items()
            if name in self._groups
        }
        set_terms = {
            name: frozenset().union(*(tool_terms[i] for i in members))
            for name, members in self._groups.items()
        }
        for name, words in self._keywords.items():
            set_terms[name] |= frozenset().union(*(message_terms(word) for word in words))
        weights = _rarity_weights(set_terms.values(), len(self._groups))
        self._keyword_bonus = _KEYWORD_BONUS * max(weights.values(), default=_SCALE)
        set_postings: dict[str, list[tuple[str, int]]] = {}
        for name, terms in set_terms.items():
            for term in terms:
                set_postings.setdefault(term, []).append((name, weights[term]))
        self._set_postings = {term: tuple(hits) for term, hits in set_postings.items()}
        tool_postings: dict[str, list[int]] = {}
        for position, terms in enumerate(tool_terms):
            for term in terms:
                tool_postings.setdefault(term, []).append(position)
        self._tool_postings = {
            term: (weights.get(term, 0), tuple(hits)) for term, hits in tool_postings.items()
        }

    @property
    def toolsets(self) -> dict[str, tuple[Tool, ...]]:
        """The tools of each toolset, toolsets in order of first appearance."""
        return {name: tuple(self._tools[i] for i in idx) for name, idx in self._groups.items()}

    def scores(self, message: str) -> dict[str, float]:
        """Each toolset's relevance to ``message`` (0 for none), for logs and tuning."""
        raw = self._set_scores(message_terms(message), message)
        return {name: raw.get(name, 0) / _SCALE for name in self._groups}

    def select(
        self,
        message: str,
        limit: int = DEFAULT_LIMIT,
        *,
        keep: Iterable[str] = (),
        allowed: Callable[[Tool], bool] | None = None,
    ) -> list[Tool]:
        """The tools to offer for ``message``: all of them when at most ``limit`` qualify,
        else the relevant toolsets (module docstring). ``keep``: toolsets to keep like the
        always-kept ones; ``allowed``: a filter applied first (e.g. the user's permissions)."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        candidates = [i for i, tool in enumerate(self._tools) if allowed is None or allowed(tool)]
        if len(candidates) <= limit:
            return [self._tools[i] for i in candidates]
        terms = message_terms(message)
        set_scores = self._set_scores(terms, message)
        tool_scores = self._tool_scores(terms)
        eligible = set(candidates)
        order = self._order(set_scores, keep)
        chosen: set[int] = set()
        room = limit
        # First pass: whole toolsets that fit. Second: the most relevant tools of the toolsets
        # that did not fit, in the same order, until the room is used up.
        for whole in (True, False):
            for name in order:
                members = [i for i in self._groups[name] if i in eligible and i not in chosen]
                if whole and len(members) > room:
                    continue
                if len(members) > room:
                    members = sorted(members, key=lambda i: (-tool_scores.get(i, 0), i))[:room]
                chosen.update(members)
                room -= len(members)
                if room == 0:
                    return [self._tools[i] for i in sorted(chosen)]
        return [self._tools[i] for i in sorted(chosen)]

    def _order(self, set_scores: Mapping[str, int], keep: Iterable[str]) -> list[str]:
        first = [*self._always, *(name for name in keep if name in self._groups)]
        ranked = sorted(
            (name for name, score in set_scores.items() if score > 0),
            key=lambda name: (-set_scores[name], self._groups[name][0]),
        )
        return list(dict.fromkeys([*first, *ranked]))

    def _set_scores(self, terms: frozenset[str], message: str) -> dict[str, int]:
        scores: dict[str, int] = {}
        for term in terms:
            for name, weight in self._set_postings.get(term, ()):
                scores[name] = scores.get(name, 0) + weight
        if self._keywords:
            lowered = message[:MAX_MESSAGE_CHARS].lower()
            for name, words in self._keywords.items():
                hits = sum(1 for word in words if word in lowered)
                if hits:
                    scores[name] = scores.get(name, 0) + hits * self._keyword_bonus
        return scores

    def _tool_scores(self, terms: frozenset[str]) -> dict[int, int]:
        scores: dict[int, int] = {}
        for term in terms:
            weight, positions = self._tool_postings.get(term, (0, ()))
            for position in positions:
                scores[position] = scores.get(position, 0) + weight
        return scores

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolsetIndex({len(self._tools)} tools in {len(self._groups)} toolsets)"


def _rarity_weights(term_sets: Iterable[frozenset[str]], count: int) -> dict[str, int]:
    """Inverse document frequency over toolsets, as integers: ``log(1 + N / df) x 1000``."""
    frequency: dict[str, int] = {}
    for terms in term_sets:
        for term in terms:
            frequency[term] = frequency.get(term, 0) + 1
    return {
        term: max(1, round(math.log(1 + count / df) * _SCALE)) for term, df in frequency.items()
    }


def select_toolsets(
    message: str,
    tools: Iterable[Tool],
    *,
    limit: int = DEFAULT_LIMIT,
    keywords: Mapping[str, Iterable[str]] | None = None,
) -> list[Tool]:
    """One-off :meth:`ToolsetIndex.select`; build a :class:`ToolsetIndex` once to reuse it."""
    return ToolsetIndex(tools, keywords=keywords).select(message, limit)
