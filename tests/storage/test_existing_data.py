"""A ``.hermes/`` directory written by an earlier Hermes opens and goes on (DESIGN.md,
"Scale-out": backends move behind the same interfaces; what users have on disk keeps working).

``tests/fixtures/hermes-data-v1/`` was written by ``tests/fixtures/make_hermes_data_v1.py`` with
the Hermes of before storage/ existed (sessions, memories, the tool-call index, the archive,
idempotency keys, notes); ``expected.json`` is what that Hermes read back from it. Each test
works on a copy: opening a directory may migrate it, and the fixture must stay as written.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hermes import Agent
from hermes.memory.facade import Memory
from hermes.storage.sqlite.session_migrations import SCHEMA_VERSION
from hermes.testing import FunctionModel
from tests.fixtures.make_hermes_data_v1 import open_agent

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "hermes-data-v1"
EXPECTED: dict[str, Any] = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
ADA, BOB = "session-fixture-ada", "session-fixture-bob"


@dataclass
class Opened:
    root: Path
    agent: Agent
    memory: Memory
    shipped: list[str]


@pytest.fixture
async def opened(tmp_path: Path) -> AsyncIterator[Opened]:
    root = tmp_path / "workspace"
    shutil.copytree(FIXTURE, root)
    _keep_idempotency_keys_fresh(root / ".hermes" / "idempotency.db")
    shipped: list[str] = []
    agent, memory = open_agent(root, shipped, extractor="off")
    try:
        yield Opened(root, agent, memory, shipped)
    finally:
        await agent.aclose()
        await memory.aclose()


def _keep_idempotency_keys_fresh(path: Path) -> None:
    """The fixture ages, its keys' ``idempotency_ttl`` does not: move each key's expiry to an
    hour from now, as if the directory had been written a moment ago (the test is about the
    move, not about expiry, which tests/storage/conformance covers)."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE tool_idempotency SET expires_at = ?", (time.time() + 3600,))


def _lines(items: Any) -> list[str]:
    return [f"{i.seq} {i.role} {i.kind}: {i.content}" for i in items]


async def test_the_sessions_their_items_summaries_and_state_read_as_written(opened: Opened):
    store = opened.agent.store
    listed = await store.list_sessions(limit=10)
    assert sorted(r.session_id for r in listed) == sorted(EXPECTED["sessions"])
    for record in listed:
        expected = EXPECTED["sessions"][record.session_id]
        assert (record.user_id, record.last_seq) == (expected["user_id"], expected["last_seq"])
        assert record.state.fsm_state == expected["fsm_state"]
        assert _lines(await store.read_items(record.session_id, limit=1000)) == expected["items"]
        window = await store.context_slice(record.session_id, rounds=2)
        assert window.summary is not None
        assert window.summary.seq == expected["summary_seq"]


async def test_the_session_database_is_brought_to_the_current_schema(opened: Opened):
    conn = sqlite3.connect(opened.root / ".hermes" / "hermes.db")
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()


async def test_a_session_goes_on_where_it_stopped(opened: Opened):
    result = await opened.agent.run("hello again", session_id=ADA, user_id="ada")
    assert result.reply == "ok: hello again"
    before = EXPECTED["sessions"][ADA]["last_seq"]
    items = await opened.agent.store.read_items(ADA, after_seq=before)
    assert items[0].seq == before + 1
    assert [(i.role, i.content) for i in items if i.kind == "text"] == [
        ("user", "hello again"),
        ("assistant", "ok: hello again"),
    ]


async def test_the_memories_are_there_and_recalled(opened: Opened):
    for user, contents in EXPECTED["memories"].items():
        assert sorted(r.content for r in await opened.memory.memories(user)) == contents
    hits = await opened.memory.search("ada", "where does the user live? Berlin")
    assert any("Berlin" in hit.record.content for hit in hits)
    assert await opened.memory.search("bob", "Berlin") == []  # another user's stay theirs
    # A turn recalls them: the model reads Ada's memory of Berlin, and Bob's turn does not.
    model = opened.agent.model
    assert isinstance(model, FunctionModel)
    question = "which city do I live in?"
    await opened.agent.run(question, session_id="session-fixture-ada-2", user_id="ada")
    assert "I live in Berlin." in json.dumps(model.requests[-1].messages, ensure_ascii=False)
    await opened.agent.run(question, session_id="session-fixture-bob-2", user_id="bob")
    assert "I live in Berlin." not in json.dumps(model.requests[-1].messages)


async def test_the_tool_call_records_and_their_archived_outputs_are_there(opened: Opened):
    tiers = opened.memory.tools
    assert tiers is not None
    records = (await tiers.index.query(limit=100, order="oldest")).records
    assert [f"{r.session_id} {r.user_id} {r.tool_name} {r.status}" for r in records] == (
        EXPECTED["tool_calls"]
    )
    archived = [r for r in records if r.metadata.get("archived") is True]
    assert archived, "the fixture archived the outputs of its calls"
    for record in archived:
        assert record.output_hash is not None
        assert await tiers.archive.get(record.output_hash) is not None


async def test_an_idempotency_key_of_before_is_replayed_not_run_again(opened: Opened):
    result = await opened.agent.run("ship O-7", session_id=ADA, user_id="ada")
    assert [(c.name, c.ok) for c in result.tool_calls] == [("ship", True)]
    assert "shipped O-7" in result.reply
    assert opened.shipped == []  # the order shipped before the move is not shipped twice
    again = await opened.agent.run("ship O-9", session_id=BOB, user_id="bob")
    assert "shipped O-9" in again.reply
    assert opened.shipped == ["O-9"]  # a new key runs


async def test_the_notes_of_before_are_listed_and_numbering_goes_on(opened: Opened):
    listed = await opened.agent.run("notes", session_id=BOB, user_id="bob")
    assert "call the dentist" in listed.reply
    added = await opened.agent.run("note renew the passport", session_id=ADA, user_id="ada")
    assert "note #2 saved" in added.reply  # Ada's first note was #1
