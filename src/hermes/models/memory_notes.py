"""The headers of the memory notes a turn shows the model, and how to read their items back.

Memory writes the notes (:mod:`hermes.memory.recall`, :mod:`hermes.agent.memory_step`) and a
model reads them (the offline rule brain recognises them): a contract of the model's input, so
it lives with the models, and an agent without memory never loads the memory package for it.
Headers are English for every user: they instruct the model; the items keep the user's language.
"""

from __future__ import annotations

import re

__all__ = ["BLOCK_HEADER", "SAVED_HEADER", "note_items"]

#: The first line of the recalled-memories block.
BLOCK_HEADER = (
    "Things you may remember about this user (may be outdated or irrelevant; use only if they "
    "help; what the user says in this conversation takes precedence):"
)
#: The first line of the note saying what this turn will save because the user asked for it.
SAVED_HEADER = (
    "The user asked you to remember the following; it is saved to their long-term memory after "
    "this turn (acknowledge it briefly):"
)

_ITEM = re.compile(r"^- (?:\((?:preference|fact|habit|event), \d{4}-\d{2}-\d{2}\) )?(.+)$")


def note_items(text: str, header: str) -> list[str]:
    """The items (``- …`` lines) that follow ``header`` in ``text``, without their kind/date."""
    start = text.find(header)
    if start < 0:
        return []
    items: list[str] = []
    for line in text[start + len(header) :].splitlines()[1:]:
        found = _ITEM.match(line.strip())
        if found is None:
            break
        items.append(found.group(1))
    return items
