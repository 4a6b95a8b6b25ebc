"""Durable ``Idempotency-Key`` records of the HTTP API: the ``RequestKeys`` protocol (DESIGN.md,
"Public contracts", HTTP: ``Idempotency-Key`` on ``POST /v1/chat``).

A request that sends a key is claimed *before* it runs, under its scope (the caller and the
route: :func:`request_scope`) and key::

    claim = await keys.claim(scope, key, body_hash=request_body_hash(body), user_id=u)
    match claim.outcome:
        case "new":          # ours: run it, then keys.finish(..., status_code, body) or release
        case "replay":       # done already: answer claim.record.status_code / .response
        case "in_progress":  # another request runs it now: wait (poll) for it
        case "conflict":     # the key came with another body: 409 idempotency_conflict
        case _: assert_never(claim.outcome)

The contract every backend keeps (SQLite: ``hermes.storage.sqlite.request_keys``; it is the
``EventDedupe`` contract of ``hermes.channels.dedupe`` with a stored response instead of a
failed state — a PostgreSQL backend does the same with one row per key under a unique
constraint, claimed in one transaction):

- **One winner.** However many workers and processes claim one key at once, exactly one gets
  ``new``; the others see ``in_progress`` (or ``replay`` once it is finished).
- **Body check first.** A stored key whose ``body_hash`` differs is ``conflict``, whatever its
  state: a client that reuses a key for another request has a bug that must be seen.
- **What is stored** (Stripe's rule): a request that *ran* — a completed turn, a 2xx answer,
  a turn that failed honestly with ``error`` included — is :meth:`~RequestKeys.finish`-ed and
  replayed for the window. A request refused before it ran (a 4xx validation failure, 409
  ``session_busy``, 503 shutting down or store down) is :meth:`~RequestKeys.release`-d: the key
  is forgotten, and a retry runs it (with this or another body).
- **Leases.** A ``new`` claim holds the key ``lease`` seconds; the holder renews it while it
  runs. A holder that died (lease passed, nothing finished) leaves the key to the next request,
  which gets ``new`` again (``attempts`` counts them). Each claim carries a fencing ``token``:
  finishing, renewing or releasing with a token that is no longer the key's raises
  ``LeaseLostError`` and writes nothing.
- **Window.** A key is kept ``keep`` seconds (``server.idempotency_hours``, 24 h) from its latest
  ``new`` claim; after that it is as if never seen, and :meth:`~RequestKeys.expire` deletes it.
  A key under a live lease never expires.
- **Durable.** A finished response survives a restart (a reopen of the same storage).

Personal data: only a hash of the request body is stored, but the stored response is the
reply the user was given. Each record therefore names the user it acted for (``user_id``), and
:meth:`~RequestKeys.forget_user` deletes a user's records (``DELETE /v1/users/{id}``); they
expire on their own after the window anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from hermes.channels.dedupe import event_body_hash
from hermes.errors import InvalidInputError

#: ``server.idempotency_hours`` (24) in seconds.
DEFAULT_KEEP_SECONDS = 24 * 3600.0
#: How long a ``new`` claim holds its key unless renewed (the HTTP helper renews every third).
DEFAULT_LEASE_SECONDS = 30.0
#: Longest key (Stripe's limit) and scope a backend accepts (characters).
MAX_KEY_LENGTH = 255
MAX_SCOPE_LENGTH = 512

#: A stored key: ``processing`` (claimed, not finished) or ``done`` (its response stored).
KeyStatus = Literal["processing", "done"]
#: What a claim found (see the module docstring).
KeyOutcome = Literal["new", "replay", "in_progress", "conflict"]


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """What is stored about one ``(scope, key)``.

    ``token`` is the fencing token of the standing claim; ``attempts`` counts its ``new``
    claims; ``lease_until`` is set while ``processing``; ``status_code`` and ``response`` (the
    JSON body) once ``done``.
    """

    scope: str
    key: str
    body_hash: str
    user_id: str | None
    status: KeyStatus
    token: int
    attempts: int
    first_seen_at: float
    claimed_at: float
    lease_until: float | None
    finished_at: float | None
    status_code: int | None
    response: Any
    expires_at: float


@dataclass(frozen=True, slots=True)
class KeyClaim:
    """The outcome of :meth:`RequestKeys.claim` and the record as it stands after it; for
    ``new`` its ``token`` is the caller's (for ``finish``), otherwise someone else's."""

    outcome: KeyOutcome
    record: RequestRecord

    @property
    def token(self) -> int:
        return self.record.token


@runtime_checkable
class RequestKeys(Protocol):
    """Durable ``Idempotency-Key`` records (the module docstring is the contract)."""

    async def claim(
        self,
        scope: str,
        key: str,
        *,
        body_hash: str,
        user_id: str | None = None,
        lease: float = DEFAULT_LEASE_SECONDS,
        keep: float = DEFAULT_KEEP_SECONDS,
    ) -> KeyClaim:
        """Claim the key atomically: ``new`` (yours, held ``lease`` s, kept ``keep`` s),
        ``replay``, ``in_progress`` or ``conflict``. ``InvalidInputError`` for a malformed
        scope or key (:func:`check_request_key`)."""
        ...

    async def finish(
        self, scope: str, key: str, token: int, *, status_code: int, body: Any
    ) -> RequestRecord:
        """Store the response of the caller's claim (``body``: JSON data), replayed from now
        on. ``LeaseLostError`` when ``token`` is not the key's standing claim."""
        ...

    async def renew(self, scope: str, key: str, token: int, *, lease: float) -> RequestRecord:
        """Hold the claim ``lease`` more seconds from now (``LeaseLostError`` as ``finish``)."""
        ...

    async def release(self, scope: str, key: str, token: int) -> None:
        """Forget the caller's claim, as if the request never came (it was refused before it
        ran). ``LeaseLostError`` as ``finish``."""
        ...

    async def get(self, scope: str, key: str) -> RequestRecord | None:
        """The key as stored, ``None`` when unknown or past its window."""
        ...

    async def expire(self) -> int:
        """Delete the keys past their window (never one under a live lease); the count."""
        ...

    async def forget_user(self, user_id: str) -> int:
        """Delete every record made for ``user_id`` (user erasure); the count."""
        ...

    async def close(self) -> None:
        """Release connections and threads."""
        ...


#: The ``body_hash`` of a request: SHA-256 of its canonical JSON (sorted keys, no spaces), so
#: the same body with its keys in another order or other whitespace is the same request.
request_body_hash = event_body_hash


def request_scope(caller_scope: str, route: str) -> str:
    """The scope of a key: the caller (``Caller.scope``) and the route (``POST /v1/chat``)."""
    return f"{route} {caller_scope}"


def check_request_key(scope: str, key: str) -> None:
    """Raise ``InvalidInputError`` unless ``key`` is 1 to :data:`MAX_KEY_LENGTH` printable
    ASCII characters and ``scope`` a non-empty printable string of at most
    :data:`MAX_SCOPE_LENGTH` (every backend checks with this, so all refuse the same keys)."""
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_LENGTH:
        raise InvalidInputError(
            f"an Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters / "
            f"Idempotency-Key 须为 1 到 {MAX_KEY_LENGTH} 个字符"
        )
    if not all(" " <= ch <= "~" for ch in key):
        raise InvalidInputError(
            "an Idempotency-Key must be printable ASCII characters / "
            "Idempotency-Key 只能包含可打印的 ASCII 字符"
        )
    if not isinstance(scope, str) or not 1 <= len(scope) <= MAX_SCOPE_LENGTH:
        raise InvalidInputError(f"an idempotency scope must be 1 to {MAX_SCOPE_LENGTH} characters")
    if not scope.isprintable():
        raise InvalidInputError("an idempotency scope must not contain control characters")
