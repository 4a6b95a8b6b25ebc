"""The two languages Hermes speaks to a person, and how to tell which one a text is in.

Shared by the offline brain (replies), memory (wording of recalled notes, habits) and the agent
(what it says around a turn): a neutral module below all of them, so none imports another for it.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["Lang", "language_of"]

Lang = Literal["zh", "en"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def language_of(text: str) -> Lang:
    """Chinese when the text contains any CJK ideograph, else English."""
    return "zh" if _CJK.search(text) else "en"
