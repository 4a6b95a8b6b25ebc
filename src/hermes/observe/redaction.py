"""Which keys hold secrets, and how to hide their values (STYLE §5: logs never carry secrets).

A key is secret when its last word is one of api key, authorization, password, secret, token,
cookie or private key, in any case and with ``_``/``-``/``.`` separators: ``api_key``,
``X-Api-Key``, ``Authorization``, ``access_token``, ``client_secret``. Counters such as
``prompt_tokens`` or ``max_tokens`` are not secrets and stay visible.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "***"

_SECRET_KEY = re.compile(
    r"(?:^|[_\-.])(?:api[_\-]?key|apikey|x[_\-]api[_\-]key|authorization|proxy[_\-]authorization"
    r"|password|passwd|pwd|secret|secret[_\-]?key|private[_\-]?key|token|cookie|set[_\-]cookie)$",
    re.IGNORECASE,
)

# Keys repeat across log lines, so the regex runs once per distinct key. The cap bounds memory
# when keys come from data (HTTP headers, tool arguments) rather than from code.
_DECISIONS: dict[str, bool] = {}
_DECISIONS_CAP = 4096
_MAX_DEPTH = 6
# Tuples, not `X | Y` unions: isinstance() with a tuple is several times faster on this hot path.
_SEQUENCES = (list, tuple)
_CONTAINERS = (dict, list, tuple)


def is_secret_key(key: str) -> bool:
    """True when a value stored under ``key`` must never be logged or shown."""
    decision = _DECISIONS.get(key)
    if decision is None:
        decision = _SECRET_KEY.search(key) is not None
        if len(_DECISIONS) < _DECISIONS_CAP:
            _DECISIONS[key] = decision
    return decision


def redact(value: Any, _depth: int = 0) -> Any:
    """``value`` with every secret-keyed entry replaced by ``***``, at any nesting depth.

    Containers that hold a secret are copied; the caller's objects are never modified.
    Containers with nothing to hide are returned as they are (no copy on the common path).
    """
    if isinstance(value, dict):
        return _redact_dict(value, _depth)
    if isinstance(value, _SEQUENCES):
        return _redact_sequence(value, _depth)
    return value


def _redact_dict(value: dict[Any, Any], depth: int) -> dict[Any, Any]:
    # Runs on every log line: the decision cache is read inline and only containers recurse.
    changed: dict[Any, Any] | None = None
    for key, item in value.items():
        if item is None:
            continue
        secret = _DECISIONS.get(key) if isinstance(key, str) else False
        if secret is None:
            secret = is_secret_key(key)
        if secret:
            new_item: Any = REDACTED
        elif depth < _MAX_DEPTH and isinstance(item, _CONTAINERS):
            new_item = redact(item, depth + 1)
        else:
            continue
        if new_item is not item:
            if changed is None:
                changed = dict(value)
            changed[key] = new_item
    return value if changed is None else changed


def _redact_sequence(value: list[Any] | tuple[Any, ...], depth: int) -> Any:
    if depth >= _MAX_DEPTH:
        return value
    items = [redact(item, depth + 1) for item in value]
    if any(new is not old for new, old in zip(items, value, strict=True)):
        return items
    return value
