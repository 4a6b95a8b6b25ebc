"""``deliver_to``: a POST of the finished run object, signed like inbound events (DESIGN.md,
"Public contracts", HTTP Events), retried with backoff (tenacity), its outcome recorded.

Headers: ``Content-Type: application/json``, ``X-Hermes-Timestamp`` (unix seconds) and, with
``scheduler.deliver_secret``, ``X-Hermes-Signature: sha256=<hex>`` where the hex is
HMAC-SHA256(secret, timestamp + "." + raw body) — what a receiver checks with the same code
Hermes checks events with. Each attempt is signed anew (its own timestamp), so a retry long
after the first one still falls inside a receiver's 300-second window.

A 2xx is delivered. A 5xx, 408, 429 or a network failure is retried (``deliver_attempts`` in
all, exponential backoff with jitter, ``Retry-After`` honoured up to the cap); another status
fails at once (the receiver refused the run: sending it again will not help).
"""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2

from hermes.backoff import retry_delay

__all__ = ["Delivery", "DeliveryResult", "sign"]

SIGNATURE_HEADER = "X-Hermes-Signature"
TIMESTAMP_HEADER = "X-Hermes-Timestamp"
_RETRY_STATUSES = frozenset({408, 429})
_MAX_ERROR_CHARS = 300


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256(secret, timestamp + "." + body)."""
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, "sha256")
    return "sha256=" + mac.hexdigest()


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    """How a delivery ended: ``ok``, the attempts made, the last error (``None`` when ok)."""

    ok: bool
    attempts: int
    error: str | None = None


class _Retryable(Exception):
    """An attempt that may succeed when repeated (5xx, 408, 429, network)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Delivery:
    """POSTs run objects. ``secret`` signs them (``None``: unsigned); ``attempts``, ``timeout``
    per attempt; the backoff starts at ``backoff_base`` seconds and stays under ``backoff_cap``
    (tests make it small); ``clock`` gives the timestamp."""

    secret: str | None = None
    attempts: int = 4
    timeout: float = 10.0
    backoff_base: float = 1.0
    backoff_cap: float = 30.0
    clock: Callable[[], float] = time.time

    async def deliver(self, url: str, run: dict[str, Any]) -> DeliveryResult:
        """POST ``run`` (JSON) to ``url`` until delivered or out of attempts; never raises for
        the receiver's failure."""
        from tenacity import (
            AsyncRetrying,
            RetryCallState,
            retry_if_exception_type,
            stop_after_attempt,
        )

        body = json.dumps(run, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

        def wait(state: RetryCallState) -> float:
            failure = state.outcome.exception() if state.outcome is not None else None
            after = failure.retry_after if isinstance(failure, _Retryable) else None
            return retry_delay(
                state.attempt_number, base=self.backoff_base, cap=self.backoff_cap,
                retry_after=after,
            )  # fmt: skip

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait,
            retry=retry_if_exception_type(_Retryable),
            reraise=True,
        )
        attempts = 0
        async with httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False) as client:
            try:
                async for attempt in retrying:
                    with attempt:
                        attempts = attempt.retry_state.attempt_number
                        refused = await self._post(client, url, body)
                        if refused is not None:
                            return DeliveryResult(False, attempts, refused)
            except _Retryable as exc:
                return DeliveryResult(False, attempts, _clip(str(exc)))
        return DeliveryResult(True, attempts)

    async def _post(self, client: httpx2.AsyncClient, url: str, body: bytes) -> str | None:
        """One attempt: ``None`` when delivered, the reason when refused for good; raises
        ``_Retryable`` when another attempt may succeed."""
        timestamp = str(int(self.clock()))
        headers = {"Content-Type": "application/json", TIMESTAMP_HEADER: timestamp}
        if self.secret is not None:
            headers[SIGNATURE_HEADER] = sign(self.secret, timestamp, body)
        try:
            response = await client.post(url, content=body, headers=headers)
        except httpx2.HTTPError as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}") from None
        status = response.status_code
        if 200 <= status < 300:
            return None
        reason = f"HTTP {status} from the receiver"
        if status >= 500 or status in _RETRY_STATUSES:
            raise _Retryable(reason, _retry_after(response.headers.get("Retry-After")))
        return reason


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"
