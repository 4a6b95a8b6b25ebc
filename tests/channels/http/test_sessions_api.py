"""``/v1/sessions`` (DESIGN.md, HTTP, "Sessions"): listing and reading in keyset pages, deleting,
cancelling a running turn — over real HTTP to an agent on a SQLite file."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes import tool
from hermes.channels.http.errors import ApiError
from hermes.channels.http.sessions import decode_cursor, encode_cursor
from hermes.session.items import Item
from hermes.testing import ScriptedModel, call, say
from tests.channels.http.resources_fixtures import (
    ADMIN_KEY,
    ALICE_KEY,
    BOB_KEY,
    KEYED,
    bearer,
    serve,
)

__all__ = ["serve"]

ITEM_FIELDS = {
    "seq", "role", "kind", "content", "tool_call_id", "tool_name", "sticky", "trace_id",
    "created_at",
}  # fmt: skip


def _items(n: int) -> list[Item]:
    return [Item("user" if i % 2 == 0 else "assistant", "text", f"message {i}") for i in range(n)]


async def _pages(client: Any, url: str, limit: int, **query: str) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit, **query}
        if cursor is not None:
            params["cursor"] = cursor
        response = await client.get(url, params=params)
        assert response.status_code == 200, response.text
        body = response.json()
        pages.append(body)
        cursor = body["next_cursor"]
        if cursor is None:
            return pages


# -- reading ----------------------------------------------------------------------------------


async def test_session_items_come_in_pages_of_rising_seq_without_gaps_or_repeats(serve):
    async with serve() as s:
        s.agent.store.bulk_import("session-long-0001", "alice", _items(2_345))
        for limit in (1000, 999, 7):
            pages = await _pages(s.client, "/v1/sessions/session-long-0001", limit)
            seqs = [item["seq"] for page in pages for item in page["items"]]
            assert seqs == list(range(1, 2_346))
            assert all(len(p["items"]) == limit for p in pages[:-1])
            assert pages[-1]["next_cursor"] is None


async def test_a_session_page_has_its_identity_state_and_the_item_fields(serve):
    async with serve() as s:
        s.agent.store.bulk_import("session-show-0001", "alice", _items(3))
        body = (await s.client.get("/v1/sessions/session-show-0001")).json()
        assert {k: body[k] for k in ("session_id", "user_id", "state", "next_cursor")} == {
            "session_id": "session-show-0001",
            "user_id": "alice",
            "state": "idle",
            "next_cursor": None,
        }
        assert [set(i) for i in body["items"]] == [ITEM_FIELDS] * 3
        assert body["items"][0]["content"] == "message 0"
        assert body["items"][0]["sticky"] is False


async def test_the_default_page_is_100_items_and_more_than_1000_is_refused(serve):
    async with serve() as s:
        s.agent.store.bulk_import("session-page-0001", "alice", _items(150))
        body = (await s.client.get("/v1/sessions/session-page-0001")).json()
        assert len(body["items"]) == 100
        assert body["next_cursor"] is not None
        for bad in (1001, 0, -1):
            got = await s.client.get("/v1/sessions/session-page-0001", params={"limit": bad})
            assert got.status_code == 422
            assert got.json()["error"]["type"] == "invalid_request"


async def test_an_invalid_cursor_is_400(serve):
    async with serve() as s:
        s.agent.store.bulk_import("session-curs-0001", "alice", _items(3))
        listing = encode_cursor("s", [1.0, "session-curs-0001"])
        for bad in ("not a cursor", "eyJ", listing, encode_cursor("i", -3)):
            got = await s.client.get("/v1/sessions/session-curs-0001", params={"cursor": bad})
            assert got.status_code == 400, bad
            assert got.json()["error"]["type"] == "invalid_cursor"
        got = await s.client.get("/v1/sessions", params={"cursor": encode_cursor("i", 3)})
        assert got.status_code == 400


@given(st.text(max_size=40))
def test_a_cursor_that_was_not_made_for_the_list_never_decodes_to_a_value(text: str):
    # Only text that is itself a well-formed item cursor decodes; everything else is a 400.
    if text and text.rstrip("=") == encode_cursor("i", _decoded_or_none(text)):
        return
    with pytest.raises(ApiError) as caught:
        decode_cursor("i", text)
    assert caught.value.status == 400


def _decoded_or_none(text: str) -> Any:
    try:
        return decode_cursor("i", text)
    except ApiError:
        return None


@given(st.floats(allow_nan=False, allow_infinity=False), st.text(min_size=1, max_size=30))
def test_a_session_cursor_round_trips_exactly(active: float, session_id: str):
    assert decode_cursor("s", encode_cursor("s", [active, session_id])) == [active, session_id]


async def test_unknown_and_malformed_session_ids(serve):
    async with serve() as s:
        missing = await s.client.get("/v1/sessions/session-none-0001")
        assert missing.status_code == 404
        assert missing.json()["error"]["type"] == "session_not_found"
        bad = await s.client.get("/v1/sessions/x")
        assert bad.status_code == 400
        assert bad.json()["error"]["type"] == "invalid_id"


# -- listing ----------------------------------------------------------------------------------


async def test_sessions_are_listed_in_pages_most_recently_active_first(serve):
    async with serve() as s:
        for n in range(23):
            await s.agent.store.ensure_session(f"session-list-{n:04}", "alice", f"chat {n}")
        await s.agent.store.ensure_session("session-bobs-0001", "bob")
        await s.agent.store.append("session-list-0003", [Item("user", "text", "hi")])
        pages = await _pages(s.client, "/v1/sessions", 5, user_id="alice")
        listed = [row for page in pages for row in page["sessions"]]
        assert len(listed) == 23
        assert len({row["session_id"] for row in listed}) == 23
        assert listed[0]["session_id"] == "session-list-0003"
        actives = [row["last_active"] for row in listed]
        assert actives == sorted(actives, reverse=True)
        assert set(listed[0]) == {"session_id", "user_id", "title", "state", "last_active"}
        assert {row["user_id"] for row in listed} == {"alice"}
        everyone = (await s.client.get("/v1/sessions", params={"limit": 1000})).json()
        assert len(everyone["sessions"]) == 24
        assert everyone["next_cursor"] is None


# -- deleting ---------------------------------------------------------------------------------


async def test_deleting_a_session_removes_it_and_its_items(serve):
    async with serve() as s:
        s.agent.store.bulk_import("session-del-00001", "alice", _items(5))
        deleted = await s.client.delete("/v1/sessions/session-del-00001")
        assert deleted.status_code == 204
        assert deleted.content == b""
        assert await s.agent.store.load_session("session-del-00001") is None
        again = await s.client.delete("/v1/sessions/session-del-00001")
        assert again.status_code == 404


# -- cancelling a running turn ----------------------------------------------------------------


def _slow_tool() -> tuple[Any, asyncio.Event]:
    started = asyncio.Event()

    @tool
    async def slow_lookup(query: str) -> str:
        """Look something up, slowly."""
        started.set()
        await asyncio.sleep(30)
        return "found"

    return slow_lookup, started


async def _running_turn(s: Any, started: asyncio.Event, session_id: str) -> asyncio.Task[Any]:
    task = asyncio.ensure_future(s.agent.run("look it up", session_id=session_id, user_id="alice"))
    s.svc.running.add(session_id, task)
    await asyncio.wait_for(started.wait(), 10)
    return task


async def test_cancel_stops_a_running_turn_and_its_call_gets_an_interrupted_result(serve):
    slow, started = _slow_tool()
    model = ScriptedModel([call("slow_lookup", {"query": "x"}, id="c1"), say("unused")])
    async with serve(model, [slow]) as s:
        task = await _running_turn(s, started, "session-cancel-01")
        got = await asyncio.wait_for(s.client.post("/v1/sessions/session-cancel-01/cancel"), 15)
        assert got.status_code == 200
        assert got.json() == {"cancelled": 1}
        assert task.cancelled()
        assert s.svc.running.of("session-cancel-01") == []
        body = (await s.client.get("/v1/sessions/session-cancel-01")).json()
        assert body["state"] == "idle"
        [result] = [i for i in body["items"] if i["kind"] == "tool_result"]
        assert result["tool_call_id"] == "c1"
        assert json.loads(result["content"])["error"]["type"] == "interrupted"


async def test_cancel_with_nothing_running_cancels_nothing(serve):
    async with serve() as s:
        await s.agent.store.ensure_session("session-quiet-01", "alice")
        got = await s.client.post("/v1/sessions/session-quiet-01/cancel")
        assert (got.status_code, got.json()) == (200, {"cancelled": 0})
        unknown = await s.client.post("/v1/sessions/session-nobody-1/cancel")
        assert unknown.status_code == 404


async def test_a_session_with_a_running_turn_is_not_deleted(serve):
    slow, started = _slow_tool()
    model = ScriptedModel([call("slow_lookup", {"query": "x"}), say("unused")])
    async with serve(model, [slow]) as s:
        task = await _running_turn(s, started, "session-busy-001")
        got = await s.client.delete("/v1/sessions/session-busy-001")
        assert got.status_code == 409
        assert got.json()["error"]["type"] == "session_busy"
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


# -- who may see what (API keys) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/sessions/session-bobs-0001"),
        ("DELETE", "/v1/sessions/session-bobs-0001"),
        ("POST", "/v1/sessions/session-bobs-0001/cancel"),
        ("GET", "/v1/sessions?user_id=bob"),
    ],
)
async def test_a_key_does_not_reach_another_users_sessions(serve, method: str, path: str):
    async with serve(settings=KEYED) as s:
        s.agent.store.bulk_import("session-bobs-0001", "bob", _items(2))
        got = await s.client.request(method, path, headers=bearer(ALICE_KEY))
        assert got.status_code == 403
        assert got.json()["error"]["type"] in {"forbidden", "session_forbidden"}
        assert await s.agent.store.load_session("session-bobs-0001") is not None
        assert (await s.client.request(method, path, headers=bearer(BOB_KEY))).is_success
        assert (await s.client.request(method, path)).status_code == 401


async def test_a_key_lists_its_own_sessions_and_an_admin_any_users(serve):
    async with serve(settings=KEYED) as s:
        await s.agent.store.ensure_session("session-alic-0001", "alice")
        await s.agent.store.ensure_session("session-bobs-0001", "bob")
        mine = (await s.client.get("/v1/sessions", headers=bearer(ALICE_KEY))).json()
        assert [r["session_id"] for r in mine["sessions"]] == ["session-alic-0001"]
        admin = await s.client.get("/v1/sessions?user_id=bob", headers=bearer(ADMIN_KEY))
        assert [r["session_id"] for r in admin.json()["sessions"]] == ["session-bobs-0001"]
        shown = await s.client.get("/v1/sessions/session-bobs-0001", headers=bearer(ADMIN_KEY))
        assert shown.status_code == 200
