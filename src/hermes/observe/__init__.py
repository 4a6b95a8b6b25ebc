"""Observability: structured JSON logs linked by msg_id / trace_id / session_id."""

from hermes.observe.logging import (
    HermesLogger,
    Span,
    bind_context,
    clear_context,
    configure_logging,
    get_context,
    get_logger,
    log_context,
    reset_logging,
    timed,
)
from hermes.observe.redaction import REDACTED, is_secret_key, redact

__all__ = [
    "REDACTED",
    "HermesLogger",
    "Span",
    "bind_context",
    "clear_context",
    "configure_logging",
    "get_context",
    "get_logger",
    "is_secret_key",
    "log_context",
    "redact",
    "reset_logging",
    "timed",
]
