"""``/v1/memory`` and ``DELETE /v1/users/{id}`` (DESIGN.md, HTTP, "Memory"): a user's long-term
memories over HTTP, and erasing a user everywhere — a real agent with a memory directory."""

from __future__ import annotations

from typing import Any

import pytest

from hermes.agent.compose import open_plan_runs
from hermes.session.items import Item
from hermes.testing import ScriptedModel, call, say
from tests.agent.conftest import add
from tests.channels.http.resources_fixtures import ADMIN_KEY, ALICE_KEY, KEYED, bearer, serve

__all__ = ["serve"]

HIT_FIELDS = {"id", "content", "kind", "score"}


async def _add(s: Any, user: str, content: str, **kw: Any) -> dict[str, Any]:
    got = await s.client.post(f"/v1/memory/{user}", json={"content": content}, **kw)
    assert got.status_code == 201, got.text
    body: dict[str, Any] = got.json()
    return body


async def test_a_memory_added_is_listed_newest_first_and_found_by_search(serve):
    async with serve() as s:
        first = await _add(s, "alice", "I prefer window seats on flights")
        assert set(first) == HIT_FIELDS | {"created"}
        assert first["created"] is True
        assert first["kind"] == "preference"
        second = await _add(s, "alice", "My dog is called Biscuit")
        listed = (await s.client.get("/v1/memory/alice")).json()
        assert [m["id"] for m in listed] == [second["id"], first["id"]]
        assert all(set(m) == HIT_FIELDS and m["score"] is None for m in listed)
        found = await s.client.get("/v1/memory/alice", params={"q": "window seat flight"})
        assert found.status_code == 200
        hits = found.json()
        assert hits[0]["id"] == first["id"]
        assert set(hits[0]) == HIT_FIELDS
        assert 0 < hits[0]["score"] <= 1
        assert (await s.client.get("/v1/memory/bob")).json() == []


async def test_the_same_content_twice_is_one_memory(serve):
    async with serve() as s:
        first = await _add(s, "alice", "I live in Hangzhou")
        again = await _add(s, "alice", "I live in Hangzhou")
        assert (again["id"], again["created"]) == (first["id"], False)
        assert len((await s.client.get("/v1/memory/alice")).json()) == 1


async def test_a_memory_is_deleted_once(serve):
    async with serve() as s:
        added = await _add(s, "alice", "I am allergic to peanuts")
        url = f"/v1/memory/alice/{added['id']}"
        assert (await s.client.delete(url)).status_code == 204
        assert (await s.client.get("/v1/memory/alice")).json() == []
        again = await s.client.delete(url)
        assert (again.status_code, again.json()["error"]["type"]) == (404, "memory_not_found")
        bad = await s.client.delete("/v1/memory/alice/!!")
        assert bad.status_code == 400


async def test_bad_input_is_refused(serve):
    async with serve() as s:
        assert (await s.client.post("/v1/memory/alice", json={"content": "  "})).status_code == 400
        assert (await s.client.post("/v1/memory/alice", json={})).status_code == 422
        assert (await s.client.get("/v1/memory/alice", params={"q": " "})).status_code == 400
        assert (await s.client.get("/v1/memory/bad%20user")).status_code == 400


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/memory/alice"), ("POST", "/v1/memory/alice"), ("DELETE", "/v1/users/alice")],
)
async def test_memory_off_is_a_clear_error(serve, method: str, path: str):
    async with serve(memory=False) as s:
        got = await s.client.request(method, path, json={"content": "x"})
        if path.startswith("/v1/users"):
            assert got.status_code == 200
            assert got.json()["memories"] == 0
            return
        assert got.status_code == 409
        assert got.json()["error"]["type"] == "memory_disabled"


async def test_erasing_a_user_deletes_their_sessions_and_memories_and_nobody_elses(serve):
    async with serve() as s:
        store = s.agent.store
        store.bulk_import("session-alic-0001", "alice", [Item("user", "text", "hi")])
        store.bulk_import("session-alic-0002", "alice", [Item("user", "text", "hey")])
        store.bulk_import("session-bobs-0001", "bob", [Item("user", "text", "yo")])
        await _add(s, "alice", "I prefer tea")
        await _add(s, "alice", "My sister is called Ann")
        await _add(s, "bob", "I prefer coffee")
        await s.agent.memory.store.save_habits("alice", {"weather": 3})
        await s.agent.memory.store.save_habits("bob", {"news": 1})
        runs = open_plan_runs(store)
        try:
            for user in ("alice", "bob"):
                await runs.create(
                    "trip", spec={"nodes": []}, params={"who": user}, node_ids=["n1"],
                    user_id=user,
                )  # fmt: skip
            got = await s.client.delete("/v1/users/alice")
            assert [r.user_id for r in await runs.list_runs()] == ["bob"]
        finally:
            await runs.close()
        assert got.status_code == 200
        body = got.json()
        assert body["plans"] == 1
        assert body["user_id"] == "alice"
        assert (body["sessions"], body["memories"]) == (2, 2)
        assert body["habits"] == 1
        assert await s.agent.memory.store.load_habits("alice") is None
        assert await s.agent.memory.store.load_habits("bob") == {"news": 1}
        assert await store.list_sessions("alice") == []
        assert (await s.client.get("/v1/memory/alice")).json() == []
        assert [r.session_id for r in await store.list_sessions("bob")] == ["session-bobs-0001"]
        assert len((await s.client.get("/v1/memory/bob")).json()) == 1
        again = (await s.client.delete("/v1/users/alice")).json()
        assert (again["sessions"], again["memories"]) == (0, 0)


async def test_a_key_acts_only_on_its_own_memories_unless_admin(serve):
    async with serve(settings=KEYED) as s:
        await _add(s, "bob", "I prefer coffee", headers=bearer(ADMIN_KEY))
        alice = bearer(ALICE_KEY)
        for method, path in [
            ("GET", "/v1/memory/bob"),
            ("POST", "/v1/memory/bob"),
            ("DELETE", "/v1/memory/bob/some-id"),
            ("DELETE", "/v1/users/bob"),
        ]:
            got = await s.client.request(method, path, json={"content": "x"}, headers=alice)
            assert got.status_code == 403, (method, path)
        assert len((await s.client.get("/v1/memory/bob", headers=bearer(ADMIN_KEY))).json()) == 1
        assert (await s.client.get("/v1/memory/alice", headers=alice)).json() == []
        assert (await s.client.get("/v1/memory/alice")).status_code == 401


async def test_erasing_a_user_deletes_the_tool_call_records_of_their_turns(serve):
    model = ScriptedModel([call("add", {"a": 2, "b": 3}), say("5")] * 2)
    async with serve(model, [add]) as s:
        await s.agent.run("2+3", session_id="session-tool-alic", user_id="alice")
        await s.agent.run("2+3", session_id="session-tool-bobs", user_id="bob")
        tools = s.agent.memory.tools
        assert tools is not None
        assert len(await tools.index.by_session("session-tool-alic")) == 1
        got = await s.client.delete("/v1/users/alice")
        assert got.json()["sessions"] == 1
        assert len(await tools.index.by_session("session-tool-alic")) == 0
        assert len(await tools.index.by_session("session-tool-bobs")) == 1
