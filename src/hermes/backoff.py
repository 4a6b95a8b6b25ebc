"""Exponential backoff with "equal jitter": the one wait schedule of Hermes's retries.

Used by the model client's retries (:mod:`hermes.models.openai_compat`) and by MCP reconnects
(:mod:`hermes.mcp.reconnect`); it lives apart from both so neither imports the other.
"""

from __future__ import annotations

import random
from collections.abc import Callable

__all__ = ["retry_delay"]

#: 2^60 · base is beyond any cap; larger exponents would only overflow the float.
_MAX_EXPONENT = 60


def retry_delay(
    attempt: int,
    *,
    base: float,
    cap: float,
    retry_after: float | None = None,
    rng: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait before retry number ``attempt`` (1 for the first retry; 0 counts as 1).

    The server's ``Retry-After`` wins when given, capped at ``cap``; otherwise exponential
    backoff ``base * 2**(attempt-1)``, capped at ``cap``, with "equal jitter" (a random value
    between half and all of it, ``rng`` giving ``[0, 1)``) so that many clients do not retry
    in lockstep.
    """
    if retry_after is not None:
        return max(0.0, min(float(retry_after), cap))
    exponent = min(max(0, attempt - 1), _MAX_EXPONENT)
    backoff = min(cap, base * 2.0**exponent)
    return backoff / 2 + rng() * backoff / 2
