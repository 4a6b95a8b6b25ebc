"""Implicit habits (seed 001 §5.2 "隐式积累"): behaviours counted per user.

Each time a user does something countable — calls a tool, or calls it with the same argument
value (``get_weather`` with ``city=上海``) — the agent tells a :class:`HabitCounter`. When a
behaviour has been seen *more than* ``threshold`` times (default 3, so on the 4th time) the
counter returns a ``habit`` :class:`~hermes.memory.extract.MemoryCandidate` once ("用户经常用
get_weather 查询 city=上海"); the long-term store decides whether to keep it.

Off by default (seed 001: "隐式积累的开关默认关，因为需要观察期"): the switch is
``Memory(habits=True)`` / ``memory.habits`` — with it off no counter is ever loaded or fed.
The counter is a plain in-memory structure for one user; ``to_dict`` /
``from_dict`` let the agent persist it (JSON) in a :class:`HabitStore` — one document per user,
kept by the long-term store (the habits it makes are long-term memories; STYLE.md §11: the
protocol lives here, its SQLite backend beside the memory tables).

Only names and short, categorical argument values are counted: free text (``query``,
``content``, ``expression`` …), long values and sensitive values (passwords, phone numbers …)
never become part of a behaviour.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol, runtime_checkable

from hermes.memory.extract import MemoryCandidate, detect_sensitive
from hermes.observe import get_logger, is_secret_key
from hermes.text.lang import Lang

__all__ = ["Behaviour", "HabitCounter", "HabitStore", "tool_behaviours"]

log = get_logger("memory")


@runtime_checkable
class HabitStore(Protocol):
    """Where each user's habit counts are kept: one JSON document (``HabitCounter.to_dict``)
    per user. Every backend passes ``tests/storage/conformance/test_habit_store.py``."""

    async def load_habits(self, user_id: str) -> Any:
        """The user's document as saved, or None (never saved, deleted, or unreadable)."""
        ...

    async def save_habits(self, user_id: str, data: Mapping[str, Any]) -> None:
        """Replace the user's document with ``data``."""
        ...

    async def delete_habits(self, user_id: str) -> int:
        """Delete the user's document; 1 if there was one, else 0."""
        ...


_FORMAT_VERSION: Final = 1
_MAX_VALUE_CHARS: Final = 40
_MAX_KEY_CHARS: Final = 300
#: Arguments whose values are free text or secrets, never a habit ("usually asks for 2+3").
_FREE_TEXT: Final = re.compile(
    r"^(?:text|content|contents|query|q|question|message|msg|body|prompt|expression|expr|command"
    r"|cmd|code|sql|script|input|data|html|markdown|description|note|notes|comment|password"
    r"|passwd|token|secret|key|api_?key|url|path|file|filename|email|phone|id|.*_id)$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Behaviour:
    """Something a user does that can become a habit: a stable ``key`` and how to say it."""

    key: str
    zh: str
    en: str

    def describe(self, lang: Lang) -> str:
        return self.zh if lang == "zh" else self.en


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _countable(name: str, value: Any) -> bool:
    if _FREE_TEXT.match(name) or is_secret_key(name):
        return False
    if isinstance(value, bool) or (isinstance(value, int) and not isinstance(value, bool)):
        return True
    if not isinstance(value, str):
        return False  # floats (amounts), lists and objects are not categories
    text = value.strip()
    return 0 < len(text) <= _MAX_VALUE_CHARS and "\n" not in text and not detect_sensitive(text)


def tool_behaviours(tool: str, arguments: Mapping[str, Any]) -> list[Behaviour]:
    """The behaviours one tool call shows: using the tool, and using it with each countable
    argument value."""
    found = [Behaviour(f"tool:{tool}", f"用户经常使用 {tool}", f"The user often uses {tool}")]
    for name, value in arguments.items():
        if not _countable(name, value):
            continue
        shown = f"{name}={_format_value(value)}"
        found.append(
            Behaviour(
                f"tool:{tool}|{name}={_format_value(value)}",
                f"用户经常用 {tool} 查询 {shown}",
                f"The user often calls {tool} with {shown}",
            )
        )
    return found


@dataclass(slots=True)
class _Count:
    count: int
    first_seen: float
    last_seen: float
    reported: bool = False


def _epoch(now: datetime | float) -> float:
    return now.timestamp() if isinstance(now, datetime) else float(now)


class HabitCounter:
    """Counts one user's behaviours; returns a habit candidate when one becomes a habit.

    ``threshold``: a behaviour seen more than this many times is a habit (seed: "超过3次").
    ``window_days``: when set, a behaviour not seen for that long starts counting again.
    ``max_behaviours``: the least recently seen behaviours are forgotten beyond this.
    """

    def __init__(
        self,
        user_id: str,
        *,
        threshold: int = 3,
        window_days: float | None = None,
        max_behaviours: int = 500,
    ) -> None:
        if threshold < 1 or max_behaviours < 1:
            raise ValueError("threshold and max_behaviours must be at least 1")
        self.user_id = user_id
        self.threshold = threshold
        self.window_days = window_days
        self.max_behaviours = max_behaviours
        self._counts: dict[str, _Count] = {}

    def count(self, key: str) -> int:
        """How often the behaviour ``key`` was seen (0 if never, or forgotten)."""
        entry = self._counts.get(key)
        return 0 if entry is None else entry.count

    def __len__(self) -> int:
        return len(self._counts)

    def observe(
        self, behaviour: Behaviour, *, now: datetime | float, lang: Lang = "zh"
    ) -> MemoryCandidate | None:
        """Count ``behaviour``; a habit candidate the first time it passes the threshold."""
        if len(behaviour.key) > _MAX_KEY_CHARS:
            return None
        when = _epoch(now)
        entry = self._counts.pop(behaviour.key, None)  # re-inserted: most recent last
        if entry is not None and self._expired(entry, when):
            entry = None
        if entry is None:
            entry = _Count(0, when, when)
        entry.count += 1
        entry.last_seen = max(entry.last_seen, when)
        self._counts[behaviour.key] = entry
        self._bound()
        if entry.reported or entry.count <= self.threshold:
            return None
        entry.reported = True
        log.info("habit_found", key_kind=behaviour.key.split(":", 1)[0], count=entry.count)
        confidence = min(0.95, 0.85 + 0.02 * (entry.count - self.threshold - 1))
        return MemoryCandidate("habit", behaviour.describe(lang), confidence, topic="habit 习惯")

    def observe_tool_call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        now: datetime | float,
        lang: Lang = "zh",
    ) -> list[MemoryCandidate]:
        """Count a tool call (see :func:`tool_behaviours`). When the tool and one of its
        argument values become habits together, only the more specific one is returned."""
        behaviours = tool_behaviours(tool, arguments)
        found = [(b, self.observe(b, now=now, lang=lang)) for b in behaviours]
        specific = [c for b, c in found[1:] if c is not None]
        general = found[0][1]
        return specific if specific else [general] if general is not None else []

    def _expired(self, entry: _Count, when: float) -> bool:
        return self.window_days is not None and when - entry.last_seen > self.window_days * 86400

    def _bound(self) -> None:
        while len(self._counts) > self.max_behaviours:
            oldest = min(self._counts, key=lambda k: self._counts[k].last_seen)
            del self._counts[oldest]

    # -- persistence ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe counts."""
        return {
            "version": _FORMAT_VERSION,
            "user_id": self.user_id,
            "threshold": self.threshold,
            "window_days": self.window_days,
            "counts": {
                key: [entry.count, entry.first_seen, entry.last_seen, entry.reported]
                for key, entry in self._counts.items()
            },
        }

    @classmethod
    def from_dict(
        cls,
        data: Any,
        *,
        user_id: str,
        max_behaviours: int = 500,
    ) -> HabitCounter:
        """The counter saved by :meth:`to_dict` for ``user_id``.

        Never mixes users: data saved for another user gives an empty counter (and a log
        line). Malformed data or entries are dropped, never raised: a turn must not fail on
        stored state.
        """
        saved = data if isinstance(data, Mapping) else {}
        threshold = saved.get("threshold", 3)
        window = saved.get("window_days")
        counter = cls(
            user_id,
            threshold=threshold if isinstance(threshold, int) and threshold >= 1 else 3,
            window_days=float(window) if isinstance(window, int | float) else None,
            max_behaviours=max_behaviours,
        )
        if saved and saved.get("user_id") != user_id:
            log.warning("habits_other_user_ignored")
            return counter
        counts = saved.get("counts")
        for key, raw in counts.items() if isinstance(counts, Mapping) else ():
            entry = _entry(raw)
            if isinstance(key, str) and entry is not None:
                counter._counts[key] = entry
        counter._bound()
        return counter


def _entry(raw: Any) -> _Count | None:
    if not isinstance(raw, list) or len(raw) != 4:
        return None
    count, first, last, reported = raw
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        return None
    if not all(isinstance(t, int | float) and not isinstance(t, bool) for t in (first, last)):
        return None
    return _Count(count, float(first), float(last), reported is True)
