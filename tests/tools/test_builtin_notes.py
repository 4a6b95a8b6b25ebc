"""The notes tools: per user, private to each user, with clear limits and errors. Run on the
SQLite stores an agent binds them to (``<workspace>/.hermes/notes.db``); the store contract is
``tests/storage/conformance/test_notes.py``, SQLite's own behaviour
``tests/storage/sqlite/test_notes.py``."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from hermes.errors import ToolArgumentError
from hermes.models.base import ToolCall
from hermes.storage.sqlite.notes import workspace_notes
from hermes.tools import BUILTIN_TOOLS, ToolContext, ToolRegistry, execute_tool_call
from hermes.tools.builtin.files import read_file
from hermes.tools.builtin.notes import (
    MAX_ENTRIES_PER_USER,
    MAX_LISTED,
    MAX_TEXT_CHARS,
    NotesError,
    notes_tools,
)

#: The tools as an agent has them: on the SQLite file of each call's workspace.
TOOLS = {t.name: t for t in notes_tools(workspace_notes)}
note_add, note_list = TOOLS["note_add"].fn, TOOLS["note_list"].fn
todo_add, todo_list, todo_done = TOOLS["todo_add"].fn, TOOLS["todo_list"].fn, TOOLS["todo_done"].fn


@pytest.fixture
def alice(tmp_path: Path) -> ToolContext:
    return ToolContext(user_id="alice", workspace=tmp_path)


@pytest.fixture
def bob(tmp_path: Path) -> ToolContext:
    return ToolContext(user_id="bob", workspace=tmp_path)


def _db(workspace: Path) -> sqlite3.Connection:
    return sqlite3.connect(workspace / ".hermes" / "notes.db")


def _fill(ctx: ToolContext, kind: str, count: int) -> None:
    """Store ``count`` entries directly (fast set-up for the limit tests)."""
    note_list(ctx=ctx)  # creates the database
    with _db(ctx.workspace) as db:
        db.executemany(
            "INSERT INTO entries (user_id, kind, number, text, created_at) VALUES (?, ?, ?, ?, ?)",
            [
                (ctx.user_id, kind, n, f"{kind} {n}", "2024-01-01T00:00:00+00:00")
                for n in range(1, count + 1)
            ],
        )


# --- notes ---------------------------------------------------------------------------------


def test_note_round_trip(alice: ToolContext) -> None:
    saved = note_add("  Wi-Fi 密码在冰箱上  ", ctx=alice)
    assert saved == {"id": 1, "text": "Wi-Fi 密码在冰箱上", "summary": "note #1 saved (已保存)"}
    listed = note_list(ctx=alice)
    assert [n["text"] for n in listed["notes"]] == ["Wi-Fi 密码在冰箱上"]
    assert listed["total"] == 1
    assert listed["truncated"] is False


def test_notes_are_listed_newest_first(alice: ToolContext) -> None:
    for text in ("first", "second", "third"):
        note_add(text, ctx=alice)
    assert [n["id"] for n in note_list(ctx=alice)["notes"]] == [3, 2, 1]


def test_notes_survive_a_restart(alice: ToolContext, tmp_path: Path) -> None:
    note_add("remember me", ctx=alice)
    again = ToolContext(user_id="alice", workspace=tmp_path)  # a new process, same workspace
    assert note_list(ctx=again)["notes"][0]["text"] == "remember me"


# --- isolation between users ---------------------------------------------------------------


def test_one_user_never_sees_another_users_notes(alice: ToolContext, bob: ToolContext) -> None:
    note_add("alice's secret", ctx=alice)
    todo_add("alice's task", ctx=alice)
    assert note_list(ctx=bob) == {"notes": [], "total": 0, "truncated": False, "summary": "0 notes"}
    assert todo_list(include_done=True, ctx=bob)["todos"] == []


def test_ids_are_numbered_per_user(alice: ToolContext, bob: ToolContext) -> None:
    note_add("a1", ctx=alice)
    note_add("a2", ctx=alice)
    assert note_add("b1", ctx=bob)["id"] == 1


def test_a_user_cannot_complete_another_users_todo(alice: ToolContext, bob: ToolContext) -> None:
    todo_add("alice's task", ctx=alice)
    with pytest.raises(NotesError) as exc:
        todo_done(1, ctx=bob)
    assert exc.value.code == "not_found"
    assert todo_list(ctx=alice)["todos"][0]["done"] is False


def test_limits_are_counted_per_user(alice: ToolContext, bob: ToolContext) -> None:
    _fill(alice, "note", MAX_ENTRIES_PER_USER)
    assert note_add("bob still has room", ctx=bob)["id"] == 1


@pytest.mark.parametrize("user", [None, "", "   "])
async def test_a_call_without_a_user_is_refused(tmp_path: Path, user: str | None) -> None:
    registry = ToolRegistry([TOOLS["note_list"]])
    ctx = ToolContext(user_id=user, workspace=tmp_path)
    result = await execute_tool_call(registry, ToolCall("c1", "note_list", {}), ctx)
    assert result.ok is False
    assert result.error is not None
    assert result.error.type == "user_required"
    assert "notes need a user id" in result.error.message


def test_the_file_tools_cannot_read_the_notes_database(alice: ToolContext) -> None:
    note_add("private", ctx=alice)
    with pytest.raises(ToolArgumentError, match=r"\.hermes"):
        read_file(".hermes/notes.db", ctx=alice)


# --- to-dos --------------------------------------------------------------------------------


def test_todo_done_marks_and_hides_the_item(alice: ToolContext) -> None:
    todo_add("renew passport", ctx=alice)
    todo_add("buy milk", ctx=alice)
    done = todo_done(1, ctx=alice)
    assert done["done"] is True
    assert done["summary"] == "to-do #1 done (已完成): renew passport"
    assert [t["text"] for t in todo_list(ctx=alice)["todos"]] == ["buy milk"]
    everything = todo_list(include_done=True, ctx=alice)["todos"]
    assert [(t["id"], t["done"]) for t in everything] == [(1, True), (2, False)]


def test_todo_done_twice_is_harmless(alice: ToolContext) -> None:
    todo_add("task", ctx=alice)
    first = todo_done(1, ctx=alice)
    second = todo_done(1, ctx=alice)
    assert second["done_at"] == first["done_at"]


@pytest.mark.parametrize("todo_id", [0, -1, 99])
def test_unknown_todo_is_not_found(alice: ToolContext, todo_id: int) -> None:
    todo_add("task", ctx=alice)
    with pytest.raises(NotesError, match=f"no to-do #{todo_id}"):
        todo_done(todo_id, ctx=alice)


async def test_todo_id_of_the_wrong_type_is_invalid_arguments(alice: ToolContext) -> None:
    registry = ToolRegistry([TOOLS["todo_done"]])
    call = ToolCall("c1", "todo_done", {"todo_id": "first one"})
    result = await execute_tool_call(registry, call, alice)
    assert result.error is not None
    assert result.error.type == "invalid_arguments"


# --- bad input and limits ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("   \n ", "empty"),
        ("x" * (MAX_TEXT_CHARS + 1), "longer than"),
        ("bell\x07", "control characters"),
        ("nul\x00", "control characters"),
    ],
)
def test_bad_text_is_refused(alice: ToolContext, text: str, problem: str) -> None:
    with pytest.raises(ToolArgumentError, match=problem):
        note_add(text, ctx=alice)
    with pytest.raises(ToolArgumentError, match=problem):
        todo_add(text, ctx=alice)


def test_text_at_the_limit_is_fine(alice: ToolContext) -> None:
    assert len(note_add("字" * MAX_TEXT_CHARS, ctx=alice)["text"]) == MAX_TEXT_CHARS


def test_count_limit_is_a_clear_error(alice: ToolContext) -> None:
    _fill(alice, "todo", MAX_ENTRIES_PER_USER - 1)
    assert todo_add("the last one that fits", ctx=alice)["id"] == MAX_ENTRIES_PER_USER
    with pytest.raises(NotesError) as exc:
        todo_add("one too many", ctx=alice)
    assert exc.value.code == "limit_reached"
    assert f"{MAX_ENTRIES_PER_USER}" in exc.value.message


def test_lists_are_capped(alice: ToolContext) -> None:
    _fill(alice, "note", MAX_LISTED + 50)
    listed = note_list(ctx=alice)
    assert len(listed["notes"]) == MAX_LISTED
    assert listed["total"] == MAX_LISTED + 50
    assert listed["truncated"] is True
    assert listed["notes"][0]["id"] == MAX_LISTED + 50  # newest first


def test_concurrent_adds_get_distinct_ids(alice: ToolContext) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        results: list[dict[str, Any]] = list(
            pool.map(lambda i: todo_add(f"task {i}", ctx=alice), range(40))
        )
    assert sorted(r["id"] for r in results) == list(range(1, 41))


def test_notes_tools_are_registered_in_their_toolset() -> None:
    for name in ("note_add", "note_list", "todo_add", "todo_list", "todo_done"):
        assert BUILTIN_TOOLS[name].toolset == "notes"
        assert "ctx" not in BUILTIN_TOOLS[name].parameters["properties"]
    assert BUILTIN_TOOLS["todo_done"].parameters["required"] == ["todo_id"]


def test_the_bound_tools_have_the_built_ins_contract() -> None:
    for name, bound in TOOLS.items():
        builtin = BUILTIN_TOOLS[name]
        assert (bound.parameters, bound.description) == (builtin.parameters, builtin.description)
        assert (bound.toolset, bound.parallel_safe, bound.timeout) == (
            builtin.toolset,
            builtin.parallel_safe,
            builtin.timeout,
        )


async def test_the_built_ins_without_an_agent_keep_notes_in_process(tmp_path: Path) -> None:
    registry = ToolRegistry([BUILTIN_TOOLS["note_add"], BUILTIN_TOOLS["note_list"]])
    ctx = ToolContext(user_id="alice", workspace=tmp_path)
    saved = await execute_tool_call(registry, ToolCall("c1", "note_add", {"text": "x"}), ctx)
    assert saved.output == {"id": 1, "text": "x", "summary": "note #1 saved (已保存)"}
    listed = await execute_tool_call(registry, ToolCall("c2", "note_list", {}), ctx)
    assert isinstance(listed.output, dict)
    assert [n["text"] for n in listed.output["notes"]] == ["x"]
    assert not (tmp_path / ".hermes").exists()  # no file: nothing outlives the process


async def test_notes_kept_in_process_say_so_once(tmp_path: Path) -> None:
    """Outside an Agent the notes tools keep their entries in the process: the first store
    made logs that (``notes_in_process``), once, so nobody learns it from a restart."""
    import json

    from hermes.observe import configure_logging, reset_logging
    from hermes.tools.builtin.notes_store import LocalNotesStores

    log_file = tmp_path / "hermes.log"
    configure_logging(log_file, level="INFO")
    try:
        registry = ToolRegistry()
        for made in notes_tools(LocalNotesStores()):
            registry.register(made)
        for n, workspace in enumerate((tmp_path / "a", tmp_path / "b", tmp_path / "a")):
            workspace.mkdir(exist_ok=True)
            ctx = ToolContext(user_id="u1", workspace=workspace)
            result = await execute_tool_call(
                registry, ToolCall(f"c{n}", "note_add", {"text": f"note {n}"}), ctx
            )
            assert result.ok, result
    finally:
        reset_logging()
    events = [json.loads(line) for line in log_file.read_text().splitlines()]
    warned = [e for e in events if e["event"] == "notes_in_process"]
    assert len(warned) == 1
    assert "Agent(tools=" in warned[0]["reason"]
    assert not (tmp_path / "a" / ".hermes").exists()
