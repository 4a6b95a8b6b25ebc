"""Small helpers shared by the memory tests."""

from __future__ import annotations


class Clock:
    """A settable clock (epoch seconds) for TTLs and record times."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
