"""Secrets are not memories (seed 003 §2.1 ``sensitive_flag``, §4.4): a password, PIN, card or ID
number, API key or token in the user's message is replaced by a marker before anything sees it;
the reply says (zh/en) that Hermes does not keep secrets, with any model; the session log, the
logs, the memories and the tool-call tiers only ever carry the marker. Other personal data stays
usable, flagged."""

from __future__ import annotations

import contextlib
import json
import lzma
import zlib
from pathlib import Path
from typing import Any

from hermes import Agent, tool
from hermes.memory.facade import Memory
from hermes.models.base import ModelRequest, ModelResponse
from hermes.observe import configure_logging, reset_logging
from hermes.session.inbound import PERSONAL_DATA_KEY
from hermes.session.privacy import MARKER_EN, MARKER_ZH
from hermes.testing import FunctionModel, call, say

ZH_NOTICE = "Hermes 不保存密码"
EN_NOTICE = "Hermes does not keep secrets"


def every_byte_under(root: Path) -> bytes:
    """All files under ``root``, archive blobs decompressed (``z``/``x`` + compressed bytes)."""
    chunks = []
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        chunks.append(data)
        for codec, decompress in ((b"z", zlib.decompress), (b"x", lzma.decompress)):
            if data[:1] == codec:
                with contextlib.suppress(zlib.error, lzma.LZMAError):
                    chunks.append(decompress(data[1:]))
    return b"\n".join(chunks)


async def test_a_secret_to_remember_is_refused_with_the_offline_brain(tmp_path: Path) -> None:
    memory = Memory.open(tmp_path / "mem", semantic=False)
    agent = Agent(store=tmp_path / "hermes.db", memory=memory)
    try:
        saved = await agent.run("记住我的银行卡密码是123456", session_id="s-secret-1", user_id="u1")
        assert ZH_NOTICE in saved.reply
        assert "123456" not in saved.reply
        await memory.drain()
        asked = await agent.run("我的密码是多少？", session_id="s-secret-1", user_id="u1")
        assert ZH_NOTICE in asked.reply
        assert "123456" not in asked.reply
        items = await agent.store.read_items("s-secret-1", after_seq=0, limit=100)
        first = items[0]
        assert first.content == f"记住我的银行卡密码是{MARKER_ZH}"  # the message is never lost
        assert first.meta is not None
        assert first.meta["secrets_removed"] == ["password"]
        assert not first.sticky
        assert await memory.store.list("u1") == []  # type: ignore[union-attr]
    finally:
        await agent.aclose()
        await memory.aclose()
    assert b"123456" not in every_byte_under(tmp_path)


async def test_any_model_gets_the_notice_and_never_the_secret(tmp_path: Path) -> None:
    seen: list[str] = []

    def script(request: ModelRequest) -> ModelResponse:
        seen.append(json.dumps(request.messages, ensure_ascii=False))
        return say("Sure, I will remember that.")

    memory = Memory.open(tmp_path / "mem", semantic=False)
    agent = Agent(model=FunctionModel(script), store=tmp_path / "hermes.db", memory=memory)
    try:
        result = await agent.run(
            "remember my api key sk-proj-abcdefghijklmnopqrstuvwx1234", session_id="s-secret-2"
        )
        assert result.reply.startswith(EN_NOTICE.replace("Hermes", "For your safety, Hermes"))
        assert seen == []  # nothing but a secret: the notice alone, no model needed
        mixed = await agent.run(
            "my password is hunter2!, can you look up order ORD-4411?", session_id="s-secret-2"
        )
        assert EN_NOTICE in mixed.reply
        assert mixed.reply.endswith("Sure, I will remember that.")
        assert seen
        assert all("hunter2" not in request for request in seen)
        assert all(MARKER_EN in request for request in seen)
    finally:
        await agent.aclose()
        await memory.aclose()
    everything = every_byte_under(tmp_path)
    assert b"hunter2" not in everything
    assert b"abcdefghijklmnopqrstuvwx1234" not in everything


async def test_tool_calls_and_their_archives_only_carry_the_marker(tmp_path: Path) -> None:
    @tool
    def echo(text: str) -> dict[str, Any]:
        """Echo a text back."""
        return {"text": text, "blob": text * 40}

    def script(request: ModelRequest) -> ModelResponse:
        if request.messages[-1]["role"] == "tool":
            return say("done")
        user = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
        return call("echo", {"text": user})

    memory = Memory.open(tmp_path / "mem", semantic=False)
    log_file = tmp_path / "logs" / "hermes.log"
    configure_logging(log_file, level="DEBUG")
    agent = Agent(
        model=FunctionModel(script), tools=[echo], store=tmp_path / "hermes.db", memory=memory
    )
    try:
        result = await agent.run(
            "登录密码是 Tr0ub4dor&3，帮我查一下订单 ORD-8812", session_id="s-secret-3", user_id="u2"
        )
        assert result.tool_calls[0].arguments["text"].startswith(f"登录密码是 {MARKER_ZH}")
        assert ZH_NOTICE in result.reply
    finally:
        await agent.aclose()
        await memory.aclose()
        reset_logging()
    everything = every_byte_under(tmp_path)
    assert b"Tr0ub4dor" not in everything
    assert log_file.read_text(encoding="utf-8")  # the logs were written, without the secret


async def test_personal_data_stays_usable_and_is_flagged(tmp_path: Path) -> None:
    seen: list[str] = []

    def script(request: ModelRequest) -> ModelResponse:
        seen.append(json.dumps(request.messages, ensure_ascii=False))
        return say("好的")

    agent = Agent(model=FunctionModel(script), store=tmp_path / "hermes.db")
    try:
        result = await agent.run(
            "我的手机号是13812345678，寄到北京市朝阳区建国路88号", session_id="s-personal-1"
        )
        assert result.reply == "好的"
        assert "13812345678" in seen[0]  # usable: the model sees it
        (item, _) = await agent.store.read_items("s-personal-1", after_seq=0, limit=10)
        assert "13812345678" in item.content
        assert item.meta is not None
        assert set(item.meta["personal"]) >= {"phone", "address"}
        record = await agent.store.load_session("s-personal-1")
        assert record is not None
        assert set(record.state.scratch[PERSONAL_DATA_KEY]) >= {"phone", "address"}
    finally:
        await agent.aclose()


async def test_an_imported_history_keeps_only_the_marker(tmp_path: Path) -> None:
    agent = Agent(model=FunctionModel(lambda r: say("ok")), store=tmp_path / "hermes.db")
    try:
        agent.import_history(
            "s-import-secret",
            [
                {"role": "user", "content": "my PIN is 9911, remember it"},
                {"role": "assistant", "content": "Your PIN 9911 is noted."},
            ],
        )
        items = await agent.store.read_items("s-import-secret", after_seq=0, limit=10)
        assert all("9911" not in i.content for i in items)
        assert items[0].content == f"my PIN is {MARKER_EN}, remember it"
    finally:
        await agent.aclose()
