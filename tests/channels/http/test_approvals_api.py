"""``/v1/approvals`` (DESIGN.md, HTTP, "Approvals"; seed 004 §4.3): the calls waiting for a
person, and deciding them over HTTP — end to end through a real agent on a SQLite file."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hermes import tool
from hermes.session.items import SessionState
from hermes.testing import ScriptedModel, call, say
from tests.channels.http.resources_fixtures import ALICE_KEY, BOB_KEY, KEYED, bearer, serve

__all__ = ["serve"]

SENT: list[str] = []


@tool(requires_approval=True)
async def send_email(to: str) -> str:
    """Send an email to someone."""
    SENT.append(to)
    return f"sent to {to}"


def _model(*after: Any) -> ScriptedModel:
    return ScriptedModel([call("send_email", {"to": "bob@example.com"}, id="c1"), *after])


async def _ask(s: Any, session_id: str = "session-appr-001", user: str = "alice") -> str:
    result = await s.agent.run("email bob", session_id=session_id, user_id=user)
    assert result.approval_id is not None
    return result.approval_id


async def test_pending_approvals_are_listed_with_their_call(serve):
    SENT.clear()
    async with serve(_model(), [send_email]) as s:
        approval_id = await _ask(s)
        await s.agent.store.ensure_session("session-idle-0001", "alice")
        got = await s.client.get("/v1/approvals", params={"user_id": "alice"})
        assert got.status_code == 200
        [listed] = got.json()["approvals"]
        assert set(listed) == {"id", "session_id", "tool", "arguments", "expires_at"}
        assert listed["id"] == approval_id
        assert listed["session_id"] == "session-appr-001"
        assert (listed["tool"], listed["arguments"]) == ("send_email", {"to": "bob@example.com"})
        assert listed["expires_at"] > 0
        other = await s.client.get("/v1/approvals", params={"user_id": "carol"})
        assert other.json() == {"approvals": []}


async def test_approving_runs_the_call_and_returns_the_run_json_of_what_followed(serve):
    SENT.clear()
    async with serve(_model(say("Sent.")), [send_email]) as s:
        approval_id = await _ask(s)
        got = await s.client.post(
            f"/v1/approvals/{approval_id}",
            json={"session_id": "session-appr-001", "decision": "approve"},
        )
        assert got.status_code == 200, got.text
        body = got.json()
        assert SENT == ["bob@example.com"]
        assert body["reply"] == "Sent."
        assert body["session_id"] == "session-appr-001"
        assert body["state"] != "awaiting_confirmation"
        assert body["tool_calls"] == [
            {"name": "send_email", "arguments": {"to": "bob@example.com"}, "ok": True}
        ]
        assert "approval" not in body
        assert s.svc.running.of("session-appr-001") == []
        assert (await s.client.get("/v1/approvals")).json() == {"approvals": []}
        again = await s.client.post(
            f"/v1/approvals/{approval_id}",
            json={"session_id": "session-appr-001", "decision": "approve"},
        )
        assert again.status_code == 404
        assert again.json()["error"]["type"] == "approval_not_found"
        assert SENT == ["bob@example.com"]


async def test_rejecting_drops_the_call(serve):
    SENT.clear()
    async with serve(_model(say("unused")), [send_email]) as s:
        approval_id = await _ask(s)
        got = await s.client.post(
            f"/v1/approvals/{approval_id}",
            json={"session_id": "session-appr-001", "decision": "reject"},
        )
        assert got.status_code == 200, got.text
        assert SENT == []
        assert got.json()["state"] != "awaiting_confirmation"
        assert "approval" not in got.json()


async def test_unknown_expired_and_malformed_approvals(serve):
    async with serve(_model(), [send_email]) as s:
        approval_id = await _ask(s)
        body = {"session_id": "session-appr-001", "decision": "approve"}
        unknown = await s.client.post("/v1/approvals/ap-0000000000", json=body)
        assert (unknown.status_code, unknown.json()["error"]["type"]) == (
            404, "approval_not_found",
        )  # fmt: skip
        malformed = await s.client.post("/v1/approvals/nope", json=body)
        assert (malformed.status_code, malformed.json()["error"]["type"]) == (400, "invalid_id")
        wrong = await s.client.post(f"/v1/approvals/{approval_id}", json={**body, "decision": "y"})
        assert wrong.status_code == 422
        no_session = await s.client.post(
            f"/v1/approvals/{approval_id}", json={**body, "session_id": "session-none-0001"}
        )
        assert no_session.status_code == 404
        record = await s.agent.store.load_session("session-appr-001")
        assert record is not None
        assert record.state.approval is not None
        expired = {**record.state.approval, "expires_at": 1.0}
        state = SessionState(
            fsm_state=record.state.fsm_state,
            state_entered_at=record.state.state_entered_at,
            approval=expired,
        )
        await s.agent.store.save_state("session-appr-001", state)
        assert (await s.client.get("/v1/approvals")).json() == {"approvals": []}
        late = await s.client.post(f"/v1/approvals/{approval_id}", json=body)
        assert (late.status_code, late.json()["error"]["type"]) == (404, "approval_expired")


async def test_a_key_neither_sees_nor_decides_another_users_approvals(serve):
    SENT.clear()
    async with serve(_model(say("Sent.")), [send_email], settings=KEYED) as s:
        approval_id = await _ask(s, "session-bobs-0001", "bob")
        body = {"session_id": "session-bobs-0001", "decision": "approve"}
        decided = await s.client.post(
            f"/v1/approvals/{approval_id}", json=body, headers=bearer(ALICE_KEY)
        )
        assert decided.status_code == 403
        listed = await s.client.get("/v1/approvals?user_id=bob", headers=bearer(ALICE_KEY))
        assert listed.status_code == 403
        mine = await s.client.get("/v1/approvals", headers=bearer(ALICE_KEY))
        assert mine.json() == {"approvals": []}
        assert SENT == []
        bobs = await s.client.get("/v1/approvals", headers=bearer(BOB_KEY))
        assert [a["id"] for a in bobs.json()["approvals"]] == [approval_id]
        done = await s.client.post(
            f"/v1/approvals/{approval_id}", json=body, headers=bearer(BOB_KEY)
        )
        assert done.status_code == 200
        assert SENT == ["bob@example.com"]


async def test_an_approved_call_still_running_is_stopped_by_cancel(serve):
    started = asyncio.Event()

    @tool(requires_approval=True)
    async def slow_transfer(amount: int) -> str:
        """Transfer money, slowly."""
        started.set()
        await asyncio.sleep(30)
        return "done"

    model = ScriptedModel([call("slow_transfer", {"amount": 5}, id="c1"), say("unused")])
    async with serve(model, [slow_transfer]) as s:
        result = await s.agent.run("pay", session_id="session-slow-0001", user_id="alice")
        assert result.approval_id is not None
        decided = asyncio.ensure_future(
            s.client.post(
                f"/v1/approvals/{result.approval_id}",
                json={"session_id": "session-slow-0001", "decision": "approve"},
            )
        )
        await asyncio.wait_for(started.wait(), 10)
        cancelled = await s.client.post("/v1/sessions/session-slow-0001/cancel")
        assert cancelled.json() == {"cancelled": 1}
        got = await asyncio.wait_for(decided, 10)
        assert (got.status_code, got.json()["error"]["type"]) == (409, "turn_cancelled")
        items = (await s.client.get("/v1/sessions/session-slow-0001")).json()["items"]
        # The approved call runs as a new call of the "yes" turn; cancelled, it is interrupted.
        last = [i for i in items if i["kind"] == "tool_result"][-1]
        assert last["tool_name"] == "slow_transfer"
        assert json.loads(last["content"])["error"]["type"] == "interrupted"
        assert s.svc.running.of("session-slow-0001") == []


async def test_a_decision_is_a_turn_like_any_other_its_events_replayable_and_observed(serve):
    SENT.clear()
    seen: list[tuple[str, str]] = []
    async with serve(_model(say("Sent.")), [send_email]) as s:
        s.svc.observers.append(lambda trace, session, event: seen.append((trace, event.type)))
        approval_id = await _ask(s)
        got = await s.client.post(
            f"/v1/approvals/{approval_id}",
            json={"session_id": "session-appr-001", "decision": "approve"},
            headers={"X-Request-Id": "decide-trace-0001"},
        )
        assert got.status_code == 200, got.text
        assert got.json()["trace_id"] == "decide-trace-0001"
        assert got.headers["X-Hermes-Trace-Id"] == "decide-trace-0001"
        replay = await s.client.get("/v1/turns/decide-trace-0001/events")
    assert replay.status_code == 200
    events = [line.removeprefix("event: ") for line in replay.text.splitlines()
              if line.startswith("event: ")]  # fmt: skip
    assert events[0] == "turn_started"
    assert "tool_call_finished" in events
    assert events[-1] == "reply"
    types = [t for trace, t in seen if trace == "decide-trace-0001"]
    assert types[0] == "turn_started"
    assert types[-1] == "turn_finished"
