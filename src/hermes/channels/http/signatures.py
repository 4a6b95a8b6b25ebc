"""Signatures of inbound events (DESIGN.md, "Public contracts", HTTP Events).

Hermes's own scheme (what ``deliver_to`` POSTs carry too, ``hermes.scheduler.delivery``):
``X-Hermes-Timestamp`` (unix seconds) and ``X-Hermes-Signature: sha256=<hex>``, the hex being
HMAC-SHA256(secret, timestamp + "." + raw body). A timestamp more than the tolerance (300 s)
off the server's clock, either way, is refused: a captured delivery cannot be replayed later.

GitHub's scheme (``?format=github``): ``X-Hub-Signature-256: sha256=<hex>`` = HMAC-SHA256(secret,
raw body), no timestamp (GitHub signs none; its ``X-GitHub-Delivery`` id is deduplicated).

Every comparison is constant time; the messages never echo a signature or the secret.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Mapping

from hermes.channels.http.errors import ApiError
from hermes.scheduler.delivery import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

__all__ = [
    "GITHUB_SIGNATURE_HEADER",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "check_github_signature",
    "check_signature",
    "github_signature",
    "sign",
]

GITHUB_SIGNATURE_HEADER = "X-Hub-Signature-256"


def github_signature(secret: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256(secret, body), as GitHub signs a delivery."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, "sha256").hexdigest()


def _refused(message: str) -> ApiError:
    return ApiError(401, "invalid_signature", message)


def check_signature(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance: float = 300.0,
    clock: Callable[[], float] = time.time,
) -> None:
    """Raise 401 ``invalid_signature`` unless ``headers`` sign ``body`` with ``secret``
    within ``tolerance`` seconds of ``clock``."""
    stamp = headers.get(TIMESTAMP_HEADER, "").strip()
    given = headers.get(SIGNATURE_HEADER, "").strip()
    if not stamp or not given:
        raise _refused(
            f"this route needs a signature: send {TIMESTAMP_HEADER} and {SIGNATURE_HEADER} "
            "(sha256=HMAC-SHA256(secret, timestamp + '.' + body)) / 此路由需要签名"
        )
    if not stamp.isascii() or not stamp.isdigit() or len(stamp) > 12:
        raise _refused(f"{TIMESTAMP_HEADER} must be unix seconds / 时间戳必须是 Unix 秒数")
    if abs(clock() - int(stamp)) > tolerance:
        raise _refused(
            f"{TIMESTAMP_HEADER} is more than {tolerance:g} s off the server's clock; sign "
            "the delivery anew (and check the sender's clock) / 签名时间戳已过期或时钟不同步"
        )
    if not hmac.compare_digest(
        given.encode("utf-8", "replace"), sign(secret, stamp, body).encode()
    ):
        raise _refused(
            "the signature does not match the body; check the secret / 签名与请求体不符，请检查密钥"
        )


def check_github_signature(secret: str, headers: Mapping[str, str], body: bytes) -> None:
    """Raise 401 ``invalid_signature`` unless ``X-Hub-Signature-256`` signs ``body``."""
    given = headers.get(GITHUB_SIGNATURE_HEADER, "").strip()
    if not given:
        raise _refused(
            f"this route needs GitHub's {GITHUB_SIGNATURE_HEADER}: set the webhook's secret "
            "in GitHub / 需要 GitHub 的签名头，请在 GitHub 中设置 Webhook 密钥"
        )
    expected = github_signature(secret, body).encode()
    if not hmac.compare_digest(given.encode("utf-8", "replace"), expected):
        raise _refused(
            f"{GITHUB_SIGNATURE_HEADER} does not match the body; check the secret / "
            "签名与请求体不符，请检查密钥"
        )
