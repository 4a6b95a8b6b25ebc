"""Durable dedupe of inbound events: the ``EventDedupe`` protocol (DESIGN.md, "Public contracts",
Events; seed 002 §4.2: the same alert pushed again must not run its handling again).

Every delivery of ``POST /v1/events[/{route}]`` is keyed by ``(route, msg_id)`` — the route is
``default`` for ``/v1/events`` — and claimed *before* anything runs::

    claim = await dedupe.claim(route, msg_id, body_hash=event_body_hash(body), trace_id=t)
    match claim.outcome:
        case "new":          # ours: process it, then dedupe.finish(..., status="done"|"failed")
        case "duplicate":    # processed already: 202 "duplicate" with claim.delivery.trace_id
        case "in_progress":  # another worker processes it right now: same answer, runs nothing
        case "conflict":     # the msg_id came with another body: 409 conflict
        case _: assert_never(claim.outcome)

The contract every backend keeps (SQLite: ``hermes.storage.sqlite.event_dedupe``; a PostgreSQL
backend does the same with one row per key under a unique constraint, read and written in one
transaction — ``INSERT … ON CONFLICT`` plus ``SELECT … FOR UPDATE`` — never a read-then-write
across two transactions):

- **One winner.** However many workers and processes claim one key at once, exactly one gets
  ``new``; the others see ``in_progress`` (or ``duplicate`` once it is done).
- **Body check first.** A stored key whose ``body_hash`` differs from the claim's is
  ``conflict``, whatever its status (a failed delivery included): a sender that reuses a
  message id for another message has a bug that must be seen.
- **Failed is not seen.** A delivery finished as ``failed`` (its processing failed) is claimed
  ``new`` again by its next delivery (``attempts`` counts them); one *released*
  (:meth:`EventDedupe.release`: refused with a 4xx after the claim) is forgotten entirely.
- **Leases.** A ``new`` claim holds the key for ``lease`` seconds; a holder that died (its
  lease passed, nothing finished) leaves the key to the next delivery, which gets ``new``
  again. A live holder may :meth:`~EventDedupe.renew`. Each claim carries a ``token``; finishing,
  renewing or releasing with a token that is no longer the key's raises ``LeaseLostError`` and
  writes nothing, so a holder that lost its key never overwrites its successor's outcome.
- **The trace.** ``delivery.trace_id`` is the trace of the standing claim: the first delivery's,
  or that of the delivery that claimed it again after a failure or a dead holder.
- **Window.** A key is kept ``keep`` seconds (``webhooks.dedupe_hours``, default 72 h) from its
  latest ``new`` claim (a duplicate, in-progress or conflicting delivery does not extend it);
  after that it is as if never seen (``get`` returns ``None``, a claim is
  ``new``), and :meth:`~EventDedupe.expire` deletes it. A key under a live lease never expires.
- **Durable.** A finished outcome survives a restart (a reopen of the same storage).

Times are seconds since the epoch from the backend's clock (``clock=`` of the SQLite backend:
``time.time`` by default, a fake one in tests). Only a hash of the body is stored, never the
body: the table holds no personal data to erase.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from hermes.errors import InvalidInputError

#: How long a key is kept by default: ``webhooks.dedupe_hours`` (72) in seconds.
DEFAULT_KEEP_SECONDS = 72 * 3600.0
#: How long a ``new`` claim holds its key unless renewed (an agent turn fits well within it).
DEFAULT_LEASE_SECONDS = 300.0
#: The route of ``POST /v1/events``.
DEFAULT_ROUTE = "default"
#: Longest route and message id a backend accepts (characters).
MAX_ROUTE_LENGTH = 128
MAX_MSG_ID_LENGTH = 256

#: A stored delivery: ``processing`` (claimed, not finished), ``done`` or ``failed``.
DeliveryStatus = Literal["processing", "done", "failed"]
#: What a claim found (see the module docstring).
ClaimOutcome = Literal["new", "duplicate", "in_progress", "conflict"]


@dataclass(frozen=True, slots=True)
class Delivery:
    """What is stored about one ``(route, msg_id)``.

    ``token`` is the fencing token of the standing claim (it changes with every ``new``
    claim); ``attempts`` counts the ``new`` claims of the key; ``lease_until`` is set while it
    is ``processing``; ``error`` is the short reason of a ``failed`` outcome.
    """

    route: str
    msg_id: str
    body_hash: str
    trace_id: str
    status: DeliveryStatus
    token: int
    attempts: int
    first_seen_at: float
    claimed_at: float
    lease_until: float | None
    finished_at: float | None
    error: str | None
    expires_at: float


@dataclass(frozen=True, slots=True)
class DedupeClaim:
    """The outcome of :meth:`EventDedupe.claim` and the delivery as it stands after it.

    For ``new``, ``delivery.token`` is the caller's token (pass it to ``finish``); for the
    other outcomes it is someone else's and must not be used.
    """

    outcome: ClaimOutcome
    delivery: Delivery

    @property
    def token(self) -> int:
        return self.delivery.token


@runtime_checkable
class EventDedupe(Protocol):
    """Durable ``(route, msg_id)`` dedupe of inbound events (the module docstring is the
    contract)."""

    async def claim(
        self,
        route: str,
        msg_id: str,
        *,
        body_hash: str,
        trace_id: str,
        lease: float = DEFAULT_LEASE_SECONDS,
        keep: float = DEFAULT_KEEP_SECONDS,
    ) -> DedupeClaim:
        """Claim the key atomically: ``new`` (yours, held ``lease`` s, kept ``keep`` s),
        ``duplicate``, ``in_progress`` or ``conflict``. Raises ``InvalidInputError`` for a
        malformed route or message id."""
        ...

    async def finish(
        self,
        route: str,
        msg_id: str,
        token: int,
        *,
        status: Literal["done", "failed"],
        error: str | None = None,
    ) -> Delivery:
        """Record the outcome of the caller's claim (``failed``: the next delivery runs it
        again). Raises ``LeaseLostError`` when ``token`` is not the key's standing claim."""
        ...

    async def renew(self, route: str, msg_id: str, token: int, *, lease: float) -> Delivery:
        """Hold the claim ``lease`` more seconds from now (``LeaseLostError`` as ``finish``)."""
        ...

    async def release(self, route: str, msg_id: str, token: int) -> None:
        """Forget the caller's claim as if the delivery never came (refused with a 4xx after
        it was claimed). Raises ``LeaseLostError`` as ``finish``."""
        ...

    async def get(self, route: str, msg_id: str) -> Delivery | None:
        """The key as stored, ``None`` when unknown or past its window."""
        ...

    async def expire(self) -> int:
        """Delete the keys past their window (never one under a live lease); the count."""
        ...

    async def close(self) -> None:
        """Release connections and threads."""
        ...


def event_body_hash(body: Mapping[str, Any] | bytes | str) -> str:
    """The ``body_hash`` of an event: SHA-256 of its canonical JSON (sorted keys, no spaces),
    so the same event sent with its keys in another order or other whitespace is the same
    body; ``bytes``/``str`` are hashed as given (a raw body that is not JSON)."""
    if isinstance(body, bytes):
        data = body
    elif isinstance(body, str):
        data = body.encode("utf-8")
    else:
        text = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        data = text.encode("utf-8")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def check_event_key(route: str, msg_id: str) -> None:
    """Raise ``InvalidInputError`` unless ``route`` and ``msg_id`` are non-empty strings
    without control characters, at most :data:`MAX_ROUTE_LENGTH` / :data:`MAX_MSG_ID_LENGTH`
    long (every backend checks with this, so all refuse the same keys)."""
    checks = ((route, "route", MAX_ROUTE_LENGTH), (msg_id, "msg_id", MAX_MSG_ID_LENGTH))
    for value, what, limit in checks:
        if not isinstance(value, str) or not value or len(value) > limit:
            raise InvalidInputError(f"an event {what} must be 1 to {limit} characters")
        if not value.isprintable():
            raise InvalidInputError(f"an event {what} must not contain control characters")
