"""A connection's health: its state, its last error, and the retry bookkeeping that moves it.

The state machine (drawn in :mod:`hermes.mcp.client.connection`) changes only through
:meth:`Health.set_state`, which grows :attr:`Health.version` and wakes every waiter of
:attr:`Health.changed`. Failed connects feed the per-server circuit breaker and the backoff of
:class:`~hermes.mcp.reconnect.ReconnectPolicy`; a connect counts as a success only once its
session proved stable (:meth:`Health.stable`).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Literal

from hermes.mcp.client.diagnosis import Diagnosis
from hermes.mcp.failures import clip
from hermes.mcp.reconnect import ReconnectPolicy
from hermes.observe import get_logger
from hermes.tools.policies.breaker import CircuitBreaker, Ticket

__all__ = ["ConnectionState", "Health"]

logger = get_logger("mcp")

ConnectionState = Literal["disabled", "connecting", "ready", "reconnecting", "failed", "closed"]

#: States in which a next attempt is scheduled (``retry_at`` is shown).
_RETRYING: frozenset[ConnectionState] = frozenset({"failed", "reconnecting"})


class Health:
    """The state of one server's connection and the failure counts behind it."""

    def __init__(
        self, name: str, *, enabled: bool, policy: ReconnectPolicy, diagnosis: Diagnosis
    ) -> None:
        self.name = name
        self.state: ConnectionState = "connecting" if enabled else "disabled"
        #: Why the connection is not ready (redacted), ``None`` once it is.
        self.error: str | None = None
        #: Grows with every state change and every change of the offered tools.
        self.version = 0
        #: Set and replaced on every state change (a wait for readiness waits on it).
        self.changed = asyncio.Event()
        self.policy = policy
        self.breaker = CircuitBreaker(f"mcp:{name}", policy.breaker(), time.monotonic)
        #: Failed connects in a row (reset once a session proves stable).
        self.failures = 0
        #: ``time.time()`` of the next attempt while one is scheduled.
        self.retry_at: float | None = None
        self._say = diagnosis.say

    def set_state(self, state: ConnectionState) -> None:
        if state == self.state:
            return
        self.state = state
        self.version += 1
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    def stable(self, ticket: Ticket) -> None:
        """The attempt of ``ticket`` stayed up long enough: the connect was a success."""
        self.breaker.record(ticket, failed=False)
        if self.failures:
            logger.info("mcp_server_stable", server=self.name, after_failures=self.failures)
            self.failures = 0

    def connect_failed(self, ticket: Ticket, reason: str) -> None:
        """The attempt of ``ticket`` failed to connect (or lost its session too soon)."""
        reason = self._say(reason)
        self.failures += 1
        self.breaker.record(ticket, failed=True)
        cooldown = self.breaker.retry_in()
        if cooldown > 0:
            self.error = clip(
                f"{reason}; circuit open after {self.failures} failed connects in a row, "
                f"next attempt in {cooldown:g} s"
            )
            self.set_state("failed")
            logger.error(
                "mcp_server_circuit_open",
                server=self.name,
                failures=self.failures,
                retry_in_s=cooldown,
                error=reason,
            )
            return
        self.error = reason
        if self.state != "reconnecting":
            self.set_state("failed")
        log = logger.error if self.failures == 1 else logger.warning
        log("mcp_server_failed", server=self.name, attempt=self.failures, error=reason)

    def lost(self, reason: str) -> None:
        """A ready connection lost its session: reconnecting (no-op in any other state)."""
        if self.state != "ready":
            return
        self.error = self._say(reason)
        self.set_state("reconnecting")
        logger.error("mcp_connection_lost", server=self.name, error=self.error)

    def next_delay(self, stable: bool) -> float:
        """Seconds until the next attempt (after a stable session's loss: the shortest), and
        :attr:`retry_at` set to match."""
        cooldown = self.breaker.retry_in()  # > 0 only while the circuit is open
        if stable:
            delay = self.policy.delay(0)
        elif cooldown > 0:
            delay = cooldown
        else:
            delay = self.policy.delay(self.failures)
        self.retry_at = time.time() + delay
        return delay

    def retry_at_text(self) -> str | None:
        """When the next attempt is due (ISO 8601, UTC), while one is scheduled."""
        if self.retry_at is None or self.state not in _RETRYING:
            return None
        return datetime.fromtimestamp(self.retry_at, UTC).isoformat(timespec="seconds")

    def unavailable_message(self) -> str:
        """Why a request cannot be sent now, and when the next attempt is due."""
        reason = f": {self.error}" if self.error else ""
        retry = ""
        if self.retry_at is not None and self.state in _RETRYING:
            wait = self.retry_at - time.time()
            retry = f"; next attempt in {wait:.1f} s" if wait > 0 else "; retrying now"
        return f"MCP server {self.name!r} is not connected (state {self.state}{reason}{retry})"
