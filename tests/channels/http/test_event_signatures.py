"""Signed routes over real HTTP: ``X-Hermes-Timestamp`` + ``X-Hermes-Signature`` (HMAC-SHA256 of
timestamp + "." + raw body) are required with a secret; wrong, stale (either way) or missing is
401 and nothing is seen (DESIGN.md, "Public contracts", HTTP Events)."""

from __future__ import annotations

import time

import pytest

from hermes.channels.http.errors import ApiError
from hermes.channels.http.signatures import check_signature, github_signature, sign
from tests.channels.http.events_support import SECRET, body, raw, serve_events, signed

CONFIG = f"""\
webhooks:
  secret: {SECRET}
  routes:
    db-alerts: {{session_id: ops-db-alerts}}
    own-key: {{session_id: ops-own-key, secret: route-only-secret}}
"""


def test_the_signature_is_hmac_sha256_of_timestamp_dot_body():
    # hmac.new(b"k", b"1700000000.{}", "sha256").hexdigest(), computed once by hand.
    assert (
        sign("k", "1700000000", b"{}")
        == "sha256=c6ef4734033cee2367414a0939385eca0397754aa7a59716da7463a9298b5146"
    )


def test_githubs_own_test_vector_verifies():
    # docs.github.com, "Validating webhook deliveries": secret, payload and expected signature.
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert github_signature("It's a Secret to Everybody", b"Hello, World!") == expected


@pytest.mark.parametrize(("offset", "ok"), [(-300, True), (300, True), (-301, False), (301, False)])
def test_the_timestamp_may_be_300_seconds_off_either_way(offset, ok):
    now = 1_700_000_000
    content = b'{"msg_id": "x"}'
    stamp = str(now + offset)
    headers = {"X-Hermes-Timestamp": stamp, "X-Hermes-Signature": sign(SECRET, stamp, content)}
    if ok:
        check_signature(SECRET, headers, content, clock=lambda: now)
    else:
        with pytest.raises(ApiError) as refused:
            check_signature(SECRET, headers, content, clock=lambda: now)
        assert refused.value.status == 401


async def test_a_correctly_signed_delivery_is_accepted(tmp_path):
    content = raw(body("sig-ok"))
    async with serve_events(tmp_path, CONFIG) as served, served.client() as client:
        answer = await client.post("/v1/events/db-alerts", content=content, headers=signed(content))
    assert answer.status_code == 202
    assert answer.json()["status"] == "accepted"


@pytest.mark.parametrize(
    ("case", "headers"),
    [
        ("missing", {"Content-Type": "application/json"}),
        ("wrong secret", "wrong"),
        ("stale", -400),
        ("from the future", 400),
        ("not a number", {"X-Hermes-Timestamp": "soon", "X-Hermes-Signature": "sha256=00"}),
    ],
)
async def test_a_missing_wrong_or_stale_signature_is_401_and_not_seen(tmp_path, case, headers):
    content = raw(body("sig-bad"))
    if headers == "wrong":
        headers = signed(content, "another-secret")
    elif isinstance(headers, int):
        headers = signed(content, at=time.time() + headers)
    async with serve_events(tmp_path, CONFIG) as served, served.client() as client:
        answer = await client.post("/v1/events/db-alerts", content=content, headers=headers)
        assert answer.status_code == 401, case
        assert answer.json()["error"]["type"] == "invalid_signature"
        assert await served.delivery("db-alerts", "sig-bad") is None
        # The same delivery, signed, is then new: the refused one was never "seen".
        fixed = await client.post("/v1/events/db-alerts", content=content, headers=signed(content))
    assert fixed.json()["status"] == "accepted"


async def test_a_body_changed_after_signing_is_refused(tmp_path):
    content = raw(body("sig-tampered"))
    headers = signed(content)
    tampered = content.replace(b"80%", b"10%")
    async with serve_events(tmp_path, CONFIG) as served, served.client() as client:
        answer = await client.post("/v1/events/db-alerts", content=tampered, headers=headers)
    assert answer.status_code == 401


async def test_a_routes_own_secret_replaces_the_sections(tmp_path):
    content = raw(body("sig-route"))
    async with serve_events(tmp_path, CONFIG) as served, served.client() as client:
        section = await client.post("/v1/events/own-key", content=content, headers=signed(content))
        own = await client.post(
            "/v1/events/own-key", content=content, headers=signed(content, "route-only-secret")
        )
    assert section.status_code == 401
    assert own.json()["status"] == "accepted"


async def test_a_signature_stands_in_for_an_api_key(tmp_path):
    # GitHub and Alertmanager may not send a bearer key; the route's secret vouches instead.
    keys = "server:\n  api_keys: [{key: ops-key-0123456789abcdef, user: ops}]\n"
    content = raw(body("sig-keys"))
    async with serve_events(tmp_path, CONFIG + keys) as served, served.client() as client:
        answer = await client.post("/v1/events/db-alerts", content=content, headers=signed(content))
        unsigned = await client.post(
            "/v1/events/db-alerts", content=content, headers={"Content-Type": "application/json"}
        )
    assert answer.status_code == 202
    assert unsigned.status_code == 401
