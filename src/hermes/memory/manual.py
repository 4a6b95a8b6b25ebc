"""Memories a person adds or looks up by hand — ``hermes memory add|search`` and
``/v1/memory`` share these, so the command line and the HTTP API read a memory alike.

- :func:`guess_kind`: the kind the offline extraction rules read in a text ("I prefer…" →
  ``preference``), ``fact`` when they read none.
- :func:`detect_sensitive`: the sensitive topic a text touches (health, money, …) or None;
  such a memory is stored marked sensitive (seed 001 §2.2).
- :data:`SEARCH_MIN_SCORE`: the lowest score a ranked list for a person shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from hermes.memory.records import MemoryKind

#: Lowest score a search for a person shows. Recall's thresholds (0.45 blended, 0.4
#: keyword-only) keep noise out of a prompt; a person reading a ranked list can take weaker
#: matches, each shown with its score — but not hits that share nothing but a common word.
SEARCH_MIN_SCORE: Final = 0.2

__all__ = ["SEARCH_MIN_SCORE", "detect_sensitive", "guess_kind"]


def guess_kind(content: str) -> MemoryKind:
    """The kind the offline extraction rules read in ``content``; ``fact`` when none."""
    from hermes.memory.extract import extract_candidates

    found = extract_candidates(content, threshold=0.0)
    return found[0].kind if found else "fact"


def detect_sensitive(content: str) -> str | None:
    """The sensitive topic ``content`` touches, or None."""
    from hermes.memory.extract import detect_sensitive as detect

    return detect(content)
