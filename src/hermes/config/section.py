"""What every section of ``hermes.yaml`` shares: unknown keys refused, values frozen once
loaded (a typo is an error naming the key, and a loaded configuration is not changed by the
code that reads it), and the check of a name a section gives its entries (routes, jobs)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

__all__ = ["Section", "check_name"]


class Section(BaseModel):
    """The base of every configuration section."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def check_name(value: str, pattern: re.Pattern[str], rule: str, what: str) -> str:
    """``value`` if ``pattern`` matches all of it, else ``ValueError`` naming ``what`` and the
    ``rule`` (shown to the person with the key it came from)."""
    if not pattern.fullmatch(value):
        raise ValueError(f"invalid {what} {value[:70]!r}: use {rule}")
    return value
