"""``deliver_to``: a real HTTP receiver on 127.0.0.1 gets the run object, signed like events
(HMAC-SHA256 over timestamp + "." + raw body); a 500 is retried with backoff; a receiver that
keeps failing or refuses is recorded as a failed delivery, and the run stays succeeded."""

from __future__ import annotations

import json
import socket

from hermes.scheduler.delivery import Delivery
from tests.scheduler.conftest import SECRET, message_job


def _delivery(**options) -> Delivery:
    settings = {"secret": SECRET, "backoff_base": 0.01, "backoff_cap": 0.05, "timeout": 5.0}
    return Delivery(**{**settings, **options})


async def test_the_run_object_is_posted_signed_like_events(open_scheduler, receiver):
    scheduler = open_scheduler([message_job(deliver_to=receiver.url)], delivery=_delivery())
    report = await scheduler.run_job("daily-report")
    [(headers, body)] = receiver.requests
    assert receiver.verify(headers, body)
    assert headers["Content-Type"] == "application/json"
    sent = json.loads(body)
    assert sent["run_id"] == report.run.run_id
    assert (sent["job"], sent["status"], sent["reply"]) == ("daily-report", "succeeded", "report 1")
    assert sent["trace_id"] == report.run.trace_id
    assert sent["due_at"].endswith("+08:00")
    assert (report.run.delivery, report.run.delivery_attempts) == ("delivered", 1)
    assert report.to_json_dict()["delivery"] == {
        "status": "delivered",
        "attempts": 1,
        "error": None,
    }


async def test_a_500_is_retried_and_then_delivered(open_scheduler, receiver):
    receiver.statuses = [500, 503]
    scheduler = open_scheduler([message_job(deliver_to=receiver.url)], delivery=_delivery())
    report = await scheduler.run_job("daily-report")
    assert len(receiver.requests) == 3
    assert all(receiver.verify(h, b) for h, b in receiver.requests)  # each attempt signed anew
    stored = await scheduler.runs.get(report.run.run_id)
    assert stored is not None
    assert (stored.delivery, stored.delivery_attempts, stored.delivery_error) == (
        "delivered",
        3,
        None,
    )


async def test_a_receiver_that_keeps_failing_is_recorded_as_a_failed_delivery(
    open_scheduler, receiver
):
    receiver.statuses = [500] * 10
    delivery = _delivery(attempts=3)
    scheduler = open_scheduler([message_job(deliver_to=receiver.url)], delivery=delivery)
    report = await scheduler.run_job("daily-report")
    assert len(receiver.requests) == 3
    stored = await scheduler.runs.get(report.run.run_id)
    assert stored is not None
    assert stored.status == "succeeded"  # the run did its work; only its delivery failed
    assert (stored.delivery, stored.delivery_attempts) == ("failed", 3)
    assert stored.delivery_error == "HTTP 500 from the receiver"


async def test_a_refusal_is_not_retried(open_scheduler, receiver):
    receiver.statuses = [401]
    scheduler = open_scheduler([message_job(deliver_to=receiver.url)], delivery=_delivery())
    report = await scheduler.run_job("daily-report")
    assert len(receiver.requests) == 1
    assert (report.run.delivery, report.run.delivery_error) == (
        "failed",
        "HTTP 401 from the receiver",
    )


async def test_an_unreachable_receiver_is_retried_then_recorded(open_scheduler, receiver):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = f"http://127.0.0.1:{port}/nothing-listens-here"
    scheduler = open_scheduler(
        [message_job(deliver_to=dead)], delivery=_delivery(attempts=2, timeout=2)
    )
    report = await scheduler.run_job("daily-report")
    assert (report.run.delivery, report.run.delivery_attempts) == ("failed", 2)
    assert report.run.delivery_error


async def test_without_a_secret_the_post_carries_no_signature(open_scheduler, receiver):
    delivery = Delivery(backoff_base=0.01, backoff_cap=0.05)
    scheduler = open_scheduler([message_job(deliver_to=receiver.url)], delivery=delivery)
    await scheduler.run_job("daily-report")
    [(headers, _)] = receiver.requests
    assert "X-Hermes-Signature" not in headers
    assert "X-Hermes-Timestamp" in headers
