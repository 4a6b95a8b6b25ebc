"""What a trace id may be: ours (32 hex digits) or a caller's ``X-Request-Id`` / W3C
``traceparent`` trace id — 8 to 128 of ``[A-Za-z0-9._:-]``, starting with a letter or digit,
what is safe in a log line, a header and a URL. ``hermes trace`` and the HTTP routes that take a
trace id check the same rule, so a malformed one is refused (400 / exit 2), never "not found".
"""

from __future__ import annotations

import re
from typing import Final

TRACE_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{7,127}")

__all__ = ["TRACE_ID", "is_trace_id"]


def is_trace_id(value: str) -> bool:
    """Whether ``value`` is a well-formed trace id."""
    return TRACE_ID.fullmatch(value) is not None
