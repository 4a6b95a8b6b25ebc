"""Memory's look-ups and edits for a person (what ``hermes memory`` goes through): search,
list, forget one, export, upkeep — on a real memory.db."""

from __future__ import annotations

from pathlib import Path

from hermes.memory.facade import Memory


def _memory(tmp_path: Path) -> Memory:
    return Memory.open(tmp_path / "mem", semantic=False, cross_language=False, extractor="off")


async def test_list_forget_and_export_see_only_the_users_memories(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    try:
        tea, _ = await memory.remember("u-alice", "I drink green tea", kind="preference")
        await memory.remember("u-alice", "My dog is called Rex")
        await memory.remember("u-bobby", "I drink coffee", kind="preference")
        listed = await memory.memories("u-alice")
        assert {r.content for r in listed} == {"I drink green tea", "My dog is called Rex"}
        assert [r.content for r in await memory.memories("u-alice", limit=1)] == [listed[0].content]
        assert await memory.forget("u-bobby", tea.id) is False  # another user's id
        assert await memory.forget("u-alice", tea.id) is True
        assert await memory.forget("u-alice", tea.id) is False
        assert [r.content for r in await memory.memories("u-alice")] == ["My dog is called Rex"]
        history = await memory.memories("u-alice", include_inactive=True)
        assert len(history) >= 1
        exported = await memory.export("u-alice")
        assert "My dog is called Rex" in {m["content"] for m in exported}
        assert "I drink coffee" not in {m["content"] for m in exported}
    finally:
        await memory.aclose()


async def test_search_ranks_the_users_memories_with_the_given_floor(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    try:
        await memory.remember(
            "u-alice", "I drink green tea every morning", kind="preference", explicit=False
        )
        await memory.remember("u-alice", "My dog is called Rex")
        await memory.remember("u-bobby", "I drink green tea too")
        hits = await memory.search("u-alice", "green tea", limit=5, min_score=0.2)
        assert [h.record.content for h in hits] == ["I drink green tea every morning"]
        assert all(h.record.user_id == "u-alice" for h in hits)
        # (an explicit memory passes recall's lower floor for explicit ones: not this one)
        assert await memory.search("u-alice", "green tea", min_score=1.01) == []
    finally:
        await memory.aclose()


async def test_upkeep_prunes_the_tool_tiers_only_for_every_user(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    try:
        await memory.remember("u-alice", "I drink green tea")
        one = await memory.upkeep(user_id="u-alice")
        everyone = await memory.upkeep()
        assert one.examined == 1
        assert one.tool_calls == {}
        assert everyone.tool_calls != {}  # the tiers' counts, zeros included
        assert (await memory.upkeep(dry_run=True)).dry_run
    finally:
        await memory.aclose()


async def test_without_a_long_term_store_lookups_are_empty(tmp_path: Path) -> None:
    memory = Memory.open(tmp_path / "mem", semantic=False, long_term=False, tool_index=False)
    try:
        assert await memory.search("u-alice", "tea") == []
        assert await memory.memories("u-alice") == []
        assert await memory.forget("u-alice", "m" * 26) is False
        assert await memory.export("u-alice") == []
        assert (await memory.upkeep()).examined == 0
    finally:
        await memory.aclose()


def test_the_cli_memory_commands_go_through_memory_not_the_store() -> None:
    """``hermes memory`` uses the facade: no store method, recall selection or upkeep run of
    its own (the store it opens is handed to ``Memory``)."""
    import ast

    import hermes.channels.cli.memory_cmd as cli

    tree = ast.parse(Path(cli.__file__).read_text(encoding="utf-8"))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    } | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    called = {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }
    store_only = {
        "hermes.memory.store",
        "hermes.storage.sqlite.memories",
        "hermes.memory.recall",
        "run_upkeep",
        "select_hits",
    }
    assert sorted(imported & store_only) == []
    assert sorted(called & {"add_unique", "delete_all", "find_exact"}) == []
