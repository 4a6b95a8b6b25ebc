"""The SQLite notes store (``hermes.storage.sqlite.notes``): what is SQLite's own — the file in
the workspace, WAL, a replaced file, a symbolic link refused — and that an agent's notes tools
use it. The contract itself: ``tests/storage/conformance/test_notes.py``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from hermes import Agent
from hermes.errors import StoreError
from hermes.storage.sqlite.notes import SQLiteNotes, workspace_notes
from hermes.testing import FunctionModel, call, say
from hermes.tools import ToolContext, tool
from hermes.tools.builtin.notes import DEFAULT_NOTES_TOOLS, NotesError, notes_tools
from hermes.tools.builtin.notes import note_add as module_note_add

TOOLS = {t.name: t.fn for t in notes_tools(workspace_notes)}


@pytest.fixture
def alice(tmp_path: Path) -> ToolContext:
    return ToolContext(user_id="alice", workspace=tmp_path)


def test_the_database_lives_in_the_workspace_in_wal_mode(alice: ToolContext, tmp_path: Path):
    TOOLS["note_add"]("x", ctx=alice)
    with sqlite3.connect(tmp_path / ".hermes" / "notes.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_one_store_object_per_workspace_file(tmp_path: Path) -> None:
    store = workspace_notes(tmp_path)
    assert isinstance(store, SQLiteNotes)
    assert store.path == tmp_path.resolve() / ".hermes" / "notes.db"


def test_a_missing_workspace_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="notes database unavailable"):
        workspace_notes(tmp_path / "gone")


def test_a_symlinked_data_directory_is_refused(alice: ToolContext, tmp_path: Path) -> None:
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".hermes").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(NotesError) as exc:
        TOOLS["note_add"]("x", ctx=alice)
    assert exc.value.code == "store_error"
    assert "symbolic link" in exc.value.message
    assert not (elsewhere / "notes.db").exists()


def test_a_replaced_database_file_is_reopened(alice: ToolContext, tmp_path: Path) -> None:
    TOOLS["note_add"]("before", ctx=alice)
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / ".hermes" / f"notes.db{suffix}").unlink(missing_ok=True)
    assert TOOLS["note_add"]("after", ctx=alice)["id"] == 1
    assert [n["text"] for n in TOOLS["note_list"](ctx=alice)["notes"]] == ["after"]


def test_a_damaged_file_is_a_store_error(alice: ToolContext, tmp_path: Path) -> None:
    (tmp_path / ".hermes").mkdir()
    (tmp_path / ".hermes" / "notes.db").write_bytes(b"this is not a database file" * 100)
    with pytest.raises(NotesError) as exc:
        TOOLS["note_list"](ctx=alice)
    assert exc.value.code == "store_error"


def _script(request: Any) -> Any:
    last = request.messages[-1]
    if last["role"] == "tool":
        return say(f"done: {last['content']}")
    return call("note_add", {"text": str(last["content"])})


@pytest.mark.parametrize("given", ["note_add", module_note_add])
async def test_an_agents_notes_tools_write_the_workspace_file(tmp_path: Path, given: Any) -> None:
    agent = Agent(model=FunctionModel(_script), tools=[given], store=":memory:", workspace=tmp_path)
    try:
        assert agent.tools.get("note_add") is not DEFAULT_NOTES_TOOLS["note_add"]
        result = await agent.run("buy oat milk", session_id="session-0001", user_id="ada")
    finally:
        await agent.aclose()
    assert "note #1 saved" in result.reply
    with sqlite3.connect(tmp_path / ".hermes" / "notes.db") as db:
        rows = db.execute("SELECT user_id, kind, number, text FROM entries").fetchall()
    assert rows == [("ada", "note", 1, "buy oat milk")]


def test_a_tool_of_ones_own_named_note_add_is_kept(tmp_path: Path) -> None:
    @tool(name="note_add")
    def my_note_add(text: str) -> str:
        """My own notes."""
        return text

    agent = Agent(tools=[my_note_add], store=":memory:", workspace=tmp_path)
    try:
        held = agent.tools.get("note_add")
        assert held is not None
        assert held.description == "My own notes."
    finally:
        agent.store.close_sync()  # type: ignore[attr-defined]
