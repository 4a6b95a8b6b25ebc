"""Adapters over real HTTP with real payload samples from each sender's documentation
(``tests/fixtures/webhooks/``): Alertmanager, Grafana and GitHub deliveries become events whose
``msg_id`` comes from the payload, so the sender's retry is a duplicate."""

from __future__ import annotations

import json
from pathlib import Path

from hermes.channels.http.signatures import github_signature
from tests.channels.http.events_support import serve_events

SAMPLES = Path(__file__).parents[2] / "fixtures" / "webhooks"
CONFIG = """\
webhooks:
  routes:
    alerts: {session_id: ops-alerts}
    code: {session_id: ops-code, secret: gh-secret-0123}
"""
JSON = {"Content-Type": "application/json"}


def sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


async def test_an_alertmanager_notification_is_one_event_and_its_repeat_a_duplicate(tmp_path):
    payload = sample("alertmanager.json")
    async with serve_events(tmp_path, CONFIG) as served, served.client() as client:
        url = "/v1/events/alerts?format=alertmanager"
        first = await client.post(url, content=payload, headers=JSON)
        await served.settled("alerts", first.json()["msg_id"])
        # Alertmanager's repeat_interval resends the group; endsAt may move, the alert is one.
        again = json.loads(payload)
        again["alerts"][0]["endsAt"] = "2023-02-06T13:20:45.828Z"
        repeat = await client.post(url, content=json.dumps(again), headers=JSON)
        resolved = json.loads(payload)
        resolved["status"] = resolved["alerts"][0]["status"] = "resolved"
        resolution = await client.post(url, content=json.dumps(resolved), headers=JSON)
        await served.settled("alerts", resolution.json()["msg_id"])
        items = await served.items("ops-alerts")
        delivery = await served.delivery("alerts", first.json()["msg_id"])
    assert first.json()["status"] == "accepted"
    assert first.json()["msg_id"].startswith("alertmanager-")
    assert repeat.json() == {**first.json(), "status": "duplicate"}
    assert resolution.json()["status"] == "accepted"
    assert resolution.json()["msg_id"] != first.json()["msg_id"]
    firing = next(i.content for i in items if i.role == "user")
    assert firing.splitlines() == [
        "Alertmanager [FIRING:1]",
        "- ProbeFailure (firing) [instance=https://server.example.org job=http_checks "
        "monitor=master severity=critical]: BlackBox Probe Failure: https://server.example.org"
        " — Instance https://server.example.org has been down for over 5m. Job: http_checks"
        " (since 2023-02-06T13:08:45.828Z)",
    ]
    assert delivery is not None
    assert delivery.status == "done"


async def test_a_grafana_notification_lists_its_alerts(tmp_path):
    payload = sample("grafana.json")
    async with serve_events(tmp_path, CONFIG) as served, served.client() as client:
        answer = await client.post(
            "/v1/events/alerts?format=grafana", content=payload, headers=JSON
        )
        await served.settled("alerts", answer.json()["msg_id"])
        again = await client.post("/v1/events/alerts?format=grafana", content=payload, headers=JSON)
        [user, _] = [i for i in await served.items("ops-alerts") if i.kind == "text"]
    assert answer.json()["msg_id"].startswith("grafana-")
    assert again.json()["status"] == "duplicate"
    lines = user.content.splitlines()
    assert lines[0] == "Grafana [FIRING:2] (blue)"
    assert lines[1].startswith("- High memory usage (firing) [team=blue zone=us-1]: This alert")
    assert lines[2].startswith("- High CPU usage (firing) [team=blue zone=eu-1]")


async def test_a_github_delivery_is_keyed_by_its_delivery_id_and_signed_githubs_way(tmp_path):
    payload = sample("github-issues.json")
    headers = {
        **JSON,
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "X-Hub-Signature-256": github_signature("gh-secret-0123", payload),
    }
    url = "/v1/events/code?format=github"
    async with serve_events(tmp_path, CONFIG) as served, served.client() as client:
        unsigned = await client.post(
            url, content=payload, headers={**headers, "X-Hub-Signature-256": ""}
        )
        wrong = await client.post(
            url, content=payload,
            headers={**headers, "X-Hub-Signature-256": github_signature("nope", payload)},
        )  # fmt: skip
        first = await client.post(url, content=payload, headers=headers)
        await served.settled("code", first.json()["msg_id"])
        redelivered = await client.post(url, content=payload, headers=headers)
        [user, _] = [i for i in await served.items("ops-code") if i.kind == "text"]
    assert (unsigned.status_code, wrong.status_code) == (401, 401)
    assert first.json()["msg_id"] == "github-72d3162e-cc78-11e3-81ab-4c9367dc0958"
    assert redelivered.json()["status"] == "duplicate"
    assert user.content == (
        "GitHub issues opened in Codertocat/Hello-World by Codertocat: "
        "#1 Spelling error in the README file"
    )


async def test_a_payload_that_is_not_the_formats_is_422_and_not_seen(tmp_path):
    async with serve_events(tmp_path, CONFIG) as served, served.client() as client:
        bad = await client.post(
            "/v1/events/alerts?format=alertmanager", content=b'{"alerts": 3}', headers=JSON
        )
        no_delivery = await client.post(
            "/v1/events/code?format=github", content=sample("github-issues.json"),
            headers={**JSON, "X-Hub-Signature-256": github_signature(
                "gh-secret-0123", sample("github-issues.json"))},
        )  # fmt: skip
        unknown = await client.post(
            "/v1/events/alerts?format=pagerduty", content=b"{}", headers=JSON
        )
    assert bad.status_code == 422
    assert no_delivery.status_code == 400
    assert unknown.status_code == 422
