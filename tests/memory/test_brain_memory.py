"""The offline brain with memory: it acknowledges what an explicit "记住…" saves and answers a
question from the recalled memories — only what memory gave it, only the asker's own."""

from __future__ import annotations

from pathlib import Path

from hermes import Agent
from hermes.memory.facade import Memory
from hermes.models.base import ModelRequest
from hermes.models.brain import RuleBrain
from hermes.models.memory_notes import BLOCK_HEADER, SAVED_HEADER, note_items


async def test_remember_then_ask_in_a_new_session_and_never_for_another_user(
    tmp_path: Path,
) -> None:
    memory = Memory.open(tmp_path / "mem", semantic=False, extractor="rules")
    agent = Agent(store=tmp_path / "hermes.db", memory=memory)
    try:
        saved = await agent.run("请记住我住在上海", session_id="brain-mem-0001", user_id="alice")
        assert saved.reply.startswith("好的，我记住了")
        assert "上海" in saved.reply
        await memory.drain()
        asked = await agent.run("我住在哪里？", session_id="brain-mem-0002", user_id="alice")
        assert "我记得" in asked.reply
        assert "上海" in asked.reply
        other = await agent.run("我住在哪里？", session_id="brain-mem-0003", user_id="bob")
        assert "上海" not in other.reply
        anonymous = await agent.run("记住我住在北京", session_id="brain-mem-0004")
        assert "记住了" not in anonymous.reply  # no user: nothing is saved, nothing is claimed
    finally:
        await agent.aclose()
        await memory.aclose()


def test_without_a_memory_note_the_brain_claims_nothing() -> None:
    brain = RuleBrain()
    request = ModelRequest(messages=[{"role": "user", "content": "记住我住在上海"}])
    reply = brain.respond(request).content or ""
    assert "记住了" not in reply


def test_a_statement_with_recalled_memories_is_not_answered_from_them() -> None:
    brain = RuleBrain()
    note = f"{BLOCK_HEADER}\n- (fact, 2026-01-01) 用户住在上海。"
    request = ModelRequest(
        messages=[{"role": "system", "content": note}, {"role": "user", "content": "我喜欢下雨天"}]
    )
    assert "上海" not in (brain.respond(request).content or "")


def test_note_items_reads_only_the_items_under_the_header() -> None:
    text = (
        f"working memory: x\n\n{BLOCK_HEADER}\n- (preference, 2026-01-02) likes tea\n"
        f"- (fact, 2026-01-03) lives in Paris\n\n{SAVED_HEADER}\n- 用户对花生过敏。"
    )
    assert note_items(text, BLOCK_HEADER) == ["likes tea", "lives in Paris"]
    assert note_items(text, SAVED_HEADER) == ["用户对花生过敏。"]
    assert note_items("nothing here", BLOCK_HEADER) == []
