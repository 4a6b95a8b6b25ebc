"""Sessions across turns and processes: persistence, recovery, timeouts, bounds, bad input."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes import Agent
from hermes.errors import InvalidIdError, InvalidInputError
from hermes.models.base import ModelRequest, ModelResponse
from hermes.session.items import Item, SessionState
from hermes.session.store import Store
from hermes.testing import FunctionModel, ScriptedModel, say
from tests.agent.conftest import AgentFactory, all_items, assert_pairs_complete


async def test_state_survives_a_restart(db_path: Path) -> None:
    first = Agent(store=db_path)
    asked = await first.run("帮我算一下", session_id="session-0101")
    await first.aclose()
    assert asked.state == "collecting_parameters"
    second = Agent(store=db_path)
    try:
        answered = await second.run("3+4", session_id="session-0101")
    finally:
        await second.aclose()
    assert "7" in answered.reply
    assert answered.state == "awaiting_feedback"


async def test_a_turn_cut_off_mid_tool_is_repaired_by_the_next_one(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(ScriptedModel([say("recovered")]))
    store = agent.store
    await store.ensure_session("session-0102", None)
    # Left by a process that died long ago (a recent one could still be running it).
    crashed = SessionState(fsm_state="executing_tool", state_entered_at=time.time() - 3600)
    await store.append(
        "session-0102",
        [
            Item("user", "text", "do it"),
            Item("assistant", "tool_call", "{}", tool_call_id="lost-1", tool_name="add"),
        ],
        state=crashed,
    )
    result = await agent.run("are you there?", session_id="session-0102")
    assert result.reply == "recovered"
    items = await all_items(agent, "session-0102")
    assert_pairs_complete(items)
    repaired = next(i for i in items if i.tool_call_id == "lost-1" and i.kind == "tool_result")
    assert json.loads(repaired.content)["error"]["type"] == "interrupted"


async def test_a_state_held_past_its_timeout_falls_back_to_idle(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(ScriptedModel([say("fresh start")]))
    await agent.store.ensure_session("session-0103", None)
    stale = SessionState(
        fsm_state="collecting_parameters",
        state_entered_at=time.time() - 10 * 86400,
        scratch={"pending": {"intent": "calculate"}},
    )
    await agent.store.save_state("session-0103", stale)
    events = [e async for e in agent.stream("hi", session_id="session-0103")]
    changes = [(e.source, e.dest, e.trigger) for e in events if e.type == "state_changed"]
    assert changes[0] == ("collecting_parameters", "idle", "expire")
    record = await agent.store.load_session("session-0103")
    assert record is not None
    assert "pending" not in record.state.scratch


async def test_context_stays_bounded_and_older_rounds_are_summarized(
    make_agent: AgentFactory,
) -> None:
    from hermes.session.summary import ExtractiveSummarizer

    model = FunctionModel(lambda r: say(f"reply {len(r.messages)}"))
    agent = make_agent(
        model, context_rounds=4, summary_min_backlog=4, summarizer=ExtractiveSummarizer()
    )
    for n in range(30):
        await agent.run(f"message number {n}", session_id="session-0104")
    last = model.requests[-1].messages
    users = [m for m in last if m["role"] == "user"]
    assert len(users) == 4
    assert users[-1]["content"] == "message number 29"
    summary = next(m["content"] for m in last if m["role"] == "system")
    assert "Summary" in summary
    assert "message number 24" in summary  # the newest folded round is in the summary


async def test_a_summary_carries_the_trace_id_of_the_turn_that_folded_it(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(FunctionModel(lambda r: say("ok")), context_rounds=2, summary_min_backlog=2)
    traces = [
        (await agent.run(f"message number {n}", session_id="session-0106")).trace_id
        for n in range(8)
    ]
    items = await all_items(agent, "session-0106")
    summaries = [i for i in items if i.kind == "summary"]
    assert summaries
    for summary in summaries:
        # Folded by the turn whose user message was stored just before it.
        folder = [i for i in items if i.seq < summary.seq and i.role == "user"][-1]
        assert summary.trace_id == folder.trace_id
        assert summary.trace_id in traces


async def test_import_history_then_a_turn_reads_only_the_window(
    make_agent: AgentFactory,
) -> None:
    messages: list[dict[str, object]] = []
    for i in range(500):
        messages += [
            {"role": "user", "content": f"question {i}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"t{i}",
                        "type": "function",
                        "function": {"name": "add", "arguments": f'{{"a": {i}, "b": 1}}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"t{i}", "content": str(i + 1)},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    model = ScriptedModel([say("ok")])
    agent = make_agent(model, context_rounds=12)
    stored = agent.import_history("session-0105", messages, user_id="u1")
    assert stored == 2001  # 2,000 items + the summary of what left the window
    await agent.run("and now?", session_id="session-0105", user_id="u1")
    sent = model.requests[0].messages
    assert sum(1 for m in sent if m["role"] == "user") == 12
    assert sent[-1] == {"role": "user", "content": "and now?"}
    assert any("Summary" in (m.get("content") or "") for m in sent if m["role"] == "system")
    tool_ids = [tc["id"] for m in sent if m.get("tool_calls") for tc in m["tool_calls"]]
    assert tool_ids == [f"t{i}" for i in range(489, 500)]


def test_import_history_names_a_malformed_message(make_agent: AgentFactory) -> None:
    agent = make_agent(ScriptedModel())
    with pytest.raises(InvalidInputError, match=r"messages\[1\]\.role"):
        agent.import_history(
            "session-0106", [{"role": "user", "content": "hi"}, {"role": "bot", "content": "?"}]
        )


@pytest.mark.parametrize(
    ("text", "match"),
    [("", "empty"), ("   \n", "empty"), ("x" * 1_048_576, "too long"), ("a\x00b", "NUL")],
)
async def test_bad_messages_are_refused_before_anything_is_stored(
    make_agent: AgentFactory, text: str, match: str
) -> None:
    agent = make_agent(ScriptedModel())
    with pytest.raises(InvalidInputError, match=match):
        await agent.run(text, session_id="session-0107")
    assert await agent.store.load_session("session-0107") is None


@pytest.mark.parametrize(
    "session_id", ["", "short", "has space here", "../../etc/passwd", "é" * 10]
)
async def test_bad_session_ids_are_refused(make_agent: AgentFactory, session_id: str) -> None:
    agent = make_agent(ScriptedModel())
    with pytest.raises(InvalidIdError):
        await agent.run("hi", session_id=session_id)


async def test_a_session_of_another_user_is_refused(make_agent: AgentFactory) -> None:
    from hermes.errors import SessionAccessError

    agent = make_agent(ScriptedModel([say("hi alice")]))
    await agent.run("hi", session_id="session-0108", user_id="alice")
    with pytest.raises(SessionAccessError):
        await agent.run("hi", session_id="session-0108", user_id="mallory")


async def test_without_a_session_id_each_run_gets_a_new_session(make_agent: AgentFactory) -> None:
    agent = make_agent(ScriptedModel([say("a"), say("b")]))
    first = await agent.run("hi", user_id="u1")
    second = await agent.run("hi", user_id="u1")
    assert first.session_id != second.session_id
    assert first.session_id != "u1"


async def test_the_model_sees_scratch_changes_persisted(make_agent: AgentFactory) -> None:
    def script(request: ModelRequest) -> ModelResponse:
        request.scratch["count"] = request.scratch.get("count", 0) + 1
        return say(str(request.scratch["count"]))

    agent = make_agent(FunctionModel(script))
    await agent.run("one", session_id="session-0109")
    result = await agent.run("two", session_id="session-0109")
    assert result.reply == "2"


async def test_a_tool_call_with_unparseable_arguments_is_answered_not_run(
    make_agent: AgentFactory,
) -> None:
    from hermes.models.base import ToolCall

    broken = ModelResponse(
        tool_calls=[ToolCall("b1", "add", {}, arguments_error="not JSON: {a: 1,,")],
        finish_reason="tool_calls",
    )
    model = ScriptedModel([broken, say("sorry")])
    result = await make_agent(model).run("1+?", session_id="session-0110")
    payload = json.loads(model.requests[1].messages[-1]["content"])
    assert payload["error"]["type"] == "invalid_arguments"
    assert result.tool_calls[0].ok is False


async def test_the_agents_apology_for_a_failed_model_is_not_shown_to_the_model(
    make_agent: AgentFactory,
) -> None:
    from hermes.errors import ModelError

    model = ScriptedModel(
        [ModelError("model server http://10.0.0.1/v1 answered HTTP 500"), say("hi")]
    )
    agent = make_agent(model)
    await agent.run("first", session_id="session-0111")
    await agent.run("second", session_id="session-0111")
    sent = model.requests[-1].messages
    assert [m["role"] for m in sent] == ["user", "user"]
    assert all("HTTP 500" not in (m["content"] or "") for m in sent)


async def test_the_summary_is_stored_with_the_turns_next_write_once(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(FunctionModel(lambda r: say("ok")), context_rounds=2, summary_min_backlog=2)
    for n in range(9):
        await agent.run(f"message number {n}", session_id="session-0107")
    items = await all_items(agent, "session-0107")
    kinds = [(i.role, i.kind) for i in items]
    summaries = [n for n, i in enumerate(items) if i.kind == "summary"]
    assert len(summaries) >= 3
    for n in summaries:  # in the transaction of the reply, before it
        assert kinds[n - 1] == ("user", "text")
        assert kinds[n + 1] == ("assistant", "text")
        assert items[n].created_at == items[n + 1].created_at
    covered = [items[n].meta["covers_until"] for n in summaries]
    assert covered == sorted(set(covered))  # each backlog folded once


_DIES_WHILE_THE_MODEL_THINKS = """
import asyncio, os, sys
from hermes import Agent
from hermes.testing import FunctionModel, say

def model(request):
    if request.messages[-1]["content"] == "the last words":
        os._exit(9)  # the process dies mid-turn: after the fold, before the turn wrote again
    return say("ok")

async def main():
    agent = Agent(model=FunctionModel(model), store=sys.argv[1], context_rounds=2,
                  summary_min_backlog=2)
    for n in range(3):
        await agent.run(f"message number {n}", session_id="session-0108", user_id="u1")
    await agent.run("the last words", session_id="session-0108", user_id="u1")

asyncio.run(main())
"""


def test_a_summary_folded_by_a_turn_that_dies_is_folded_again_by_the_next(
    tmp_path: Path,
) -> None:
    db = tmp_path / "hermes.db"
    proc = subprocess.run(
        [sys.executable, "-c", _DIES_WHILE_THE_MODEL_THINKS, str(db)], timeout=60, check=False
    )
    assert proc.returncode == 9
    seen: list[list[dict[str, object]]] = []

    def model(request: ModelRequest) -> ModelResponse:
        seen.append(request.messages)
        return say("ok")

    agent = Agent(model=FunctionModel(model), store=db, context_rounds=2, summary_min_backlog=2)

    async def go() -> list[Item]:
        # The dead turn's message went in with its working state: the next turn repairs it.
        record = await agent.store.load_session("session-0108")
        assert record is not None
        assert record.state.fsm_state == "parsing_intent"
        await agent.run("back again", session_id="session-0108", user_id="u1")
        items = await agent.store.read_items("session-0108", limit=500)
        await agent.aclose()
        return items

    items = asyncio.run(go())
    last_words = next(i.seq for i in items if i.content == "the last words")
    back_again = next(i.seq for i in items if i.content == "back again")
    # The dying turn folded rounds 0-1 but never wrote again: no summary after its message
    # until the next turn's, which folded them (and the dead turn's message) again.
    (summary,) = [i for i in items if i.kind == "summary" and i.seq > last_words]
    assert summary.seq == back_again + 1
    assert "message number 1" in summary.content
    assert any("Summary" in str(m["content"]) for m in seen[-1] if m["role"] == "system")


class _ForeignStore:
    """A ``Store`` object that is not the SQLite store the agent knows (as a PostgreSQL one
    will be): its claims are in-process only, so a live turn elsewhere shows only in the
    stored working state."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        if name == "begin_turn":
            raise AttributeError(name)
        return getattr(self._inner, name)


async def test_a_turn_on_a_foreign_store_is_busy_while_another_process_thinks(
    tmp_path: Path,
) -> None:
    from hermes.errors import SessionBusyError
    from hermes.storage.sqlite.sessions import SQLiteStore

    db = tmp_path / "h.db"
    thinking, go_on = asyncio.Event(), asyncio.Event()

    async def slow(request: ModelRequest) -> ModelResponse:
        thinking.set()
        await go_on.wait()
        return say("first done")

    inner1, inner2 = SQLiteStore(db), SQLiteStore(db)
    first = Agent(model=FunctionModel(slow), store=_ForeignStore(inner1))  # type: ignore[arg-type]
    second = Agent(model=FunctionModel(lambda r: say("second")), store=_ForeignStore(inner2))  # type: ignore[arg-type]
    try:
        running = asyncio.create_task(first.run("one", session_id="session-0109", user_id="u1"))
        await asyncio.wait_for(thinking.wait(), 10)
        with pytest.raises(SessionBusyError):
            await second.run("two", session_id="session-0109", user_id="u1")
        go_on.set()
        assert (await running).reply == "first done"
        items = await inner2.read_items("session-0109")
        assert [i.content for i in items] == ["one", "first done"]
    finally:
        go_on.set()
        for agent in (first, second):
            await agent.aclose()
        await inner1.close()
        await inner2.close()
