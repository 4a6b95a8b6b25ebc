"""What happens when a turn does not go to plan: timeouts with partial results, cancelled
turns, hanging sync tools, other processes, oversized results, misbehaving models."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from hermes import Agent, tool
from hermes.errors import InvalidInputError, SessionBusyError
from hermes.models.base import ModelRequest, ModelResponse
from hermes.session.items import Item, SessionState
from hermes.storage.sqlite.sessions import SQLiteStore
from hermes.testing import FunctionModel, ScriptedModel, call, calls, say
from tests.agent.conftest import AgentFactory, add, all_items, assert_pairs_complete


async def test_a_finished_call_keeps_its_result_when_a_sibling_times_out(
    make_agent: AgentFactory,
) -> None:
    charged: list[int] = []

    @tool
    async def charge(amount: int) -> str:
        """Charge the card (a side effect that must not be forgotten)."""
        charged.append(amount)
        return f"charged {amount}"

    @tool(timeout=30)
    async def slow() -> str:
        """Never in time."""
        await asyncio.sleep(30)
        return "late"

    model = ScriptedModel([calls(("charge", {"amount": 100}), ("slow", {}))])
    agent = make_agent(model, tools=[charge, slow], turn_timeout=0.5)
    result = await agent.run("pay", session_id="session-0201")
    assert result.outcome == "timeout"
    assert charged == [100]
    assert [(c.name, c.ok, c.error_type) for c in result.tool_calls] == [
        ("charge", True, None),
        ("slow", False, "timeout"),
    ]
    items = await all_items(agent, "session-0201")
    assert_pairs_complete(items)
    stored = {i.tool_name: json.loads(i.content) for i in items if i.kind == "tool_result"}
    assert stored["charge"]["output"] == "charged 100"
    assert stored["slow"]["error"]["type"] == "timeout"


async def test_leaving_a_stream_mid_tool_closes_the_turn(make_agent: AgentFactory) -> None:
    started = asyncio.Event()

    @tool(timeout=30)
    async def wait_forever() -> str:
        """Blocks."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    agent = make_agent(ScriptedModel([call("wait_forever", id="w1")]), tools=[wait_forever])
    async with contextlib.aclosing(agent.stream("go", session_id="session-0202")) as events:
        async for event in events:
            if event.type == "tool_call_started":
                break
    record = await agent.store.load_session("session-0202")
    assert record is not None
    assert record.state.fsm_state == "idle"
    items = await all_items(agent, "session-0202")
    assert_pairs_complete(items)
    [res] = [i for i in items if i.kind == "tool_result"]
    assert json.loads(res.content)["error"]["type"] == "interrupted"
    assert res.tool_name == "wait_forever"


async def test_a_turn_cancelled_by_wait_for_leaves_the_session_consistent(
    make_agent: AgentFactory,
) -> None:
    @tool(timeout=30)
    async def wait_forever() -> str:
        """Blocks."""
        await asyncio.sleep(30)
        return "never"

    model = ScriptedModel([call("wait_forever")])
    agent = make_agent(model, tools=[wait_forever])
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(agent.run("go", session_id="session-0203"), 0.3)
    assert_pairs_complete(await all_items(agent, "session-0203"))
    model.add(say("back"))
    assert (await agent.run("again", session_id="session-0203")).reply == "back"


async def test_hanging_sync_tools_do_not_starve_the_others(make_agent: AgentFactory) -> None:
    release = threading.Event()
    finished: list[int] = []

    @tool(timeout=0.1)
    def hang() -> str:
        """A sync tool stuck in a blocking call (until the test releases it)."""
        release.wait(60)
        finished.append(1)
        return "late"

    def script(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if last["role"] == "tool":
            return say(last["content"])
        return call("add", {"a": 1, "b": 1}) if last["content"] == "add" else call("hang")

    agent = make_agent(FunctionModel(script), tools=[hang, add])
    try:
        hung = [agent.run("hang", session_id=f"session-03{i:02d}") for i in range(12)]
        await asyncio.gather(*hung)
        # Order, not a clock: queued behind the twelve stuck threads, the call would wait for
        # `release`, which comes only after it (the generous bound turns that into a failure).
        result = await asyncio.wait_for(agent.run("add", session_id="session-0399"), 30)
        assert result.tool_calls[0].ok
        assert finished == []  # answered while all twelve were still stuck
    finally:
        release.set()


def test_a_hung_sync_tool_does_not_keep_the_process_alive(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import asyncio, time
            from hermes import Agent, tool
            from hermes.testing import ScriptedModel, call, say

            @tool(timeout=0.2)
            def hang() -> str:
                '''Stuck.'''
                time.sleep(60)
                return "late"

            async def main():
                agent = Agent(model=ScriptedModel([call("hang"), say("gave up")]),
                              tools=[hang], store={str(tmp_path / "h.db")!r})
                print((await agent.run("go", session_id="session-hang-1")).reply)
                await agent.aclose()

            asyncio.run(main())
            """
        ),
        encoding="utf-8",
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "gave up" in done.stdout
    assert time.monotonic() - started < 20  # not the 60 s the stuck thread sleeps


async def test_a_young_working_state_left_without_a_claim_is_repaired_at_once(
    make_agent: AgentFactory,
) -> None:
    # On a SQLite file the claim is an OS lock: a working state found under it cannot belong
    # to a live turn (that turn would hold the lock), however young it is.
    agent = make_agent(ScriptedModel([say("recovered")]))
    await agent.store.ensure_session("session-0204", None)
    running = SessionState(fsm_state="executing_tool", state_entered_at=time.time() - 1)
    await agent.store.append(
        "session-0204",
        [Item("user", "text", "x"), Item("assistant", "tool_call", "{}", "dead-1", "add")],
        state=running,
    )
    result = await agent.run("me too", session_id="session-0204")
    assert result.reply == "recovered"
    items = await all_items(agent, "session-0204")
    assert_pairs_complete(items)
    (repair,) = [i for i in items if i.kind == "tool_result"]
    assert json.loads(repair.content)["error"]["type"] == "interrupted"
    assert repair.trace_id == result.trace_id


class _ForeignStore:
    """A Store object the agent cannot see behind (not a SQLiteStore): in-process locks only."""

    def __init__(self, inner: SQLiteStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


async def test_a_store_without_cross_process_locks_keeps_a_young_working_state_busy(
    db_path: Path,
) -> None:
    inner = SQLiteStore(db_path)
    store = _ForeignStore(inner)
    agent = Agent(model=ScriptedModel([say("unused")]), tools=[add], store=store)  # type: ignore[arg-type]
    try:
        await inner.ensure_session("session-0206", None)
        running = SessionState(fsm_state="executing_tool", state_entered_at=time.time() - 1)
        await inner.append(
            "session-0206",
            [Item("user", "text", "x"), Item("assistant", "tool_call", "{}", "live-1", "add")],
            state=running,
        )
        with pytest.raises(SessionBusyError, match="another process"):
            await agent.run("me too", session_id="session-0206")
        items = await inner.read_items("session-0206")
        assert not [i for i in items if i.kind == "tool_result"]  # its live call is untouched
    finally:
        await agent.aclose()
        await inner.close()


async def test_recovery_closes_every_call_of_a_large_interrupted_turn(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(ScriptedModel([say("recovered")]))
    await agent.store.ensure_session("session-0205", None)
    calls_ = [Item("assistant", "tool_call", "{}", f"c{i}", "add") for i in range(70)]
    stale = SessionState(fsm_state="executing_tool", state_entered_at=time.time() - 3600)
    await agent.store.append("session-0205", [Item("user", "text", "many"), *calls_], state=stale)
    await agent.run("hello?", session_id="session-0205")
    assert_pairs_complete(await all_items(agent, "session-0205"))


async def test_a_huge_structured_result_is_bounded_for_the_model(
    make_agent: AgentFactory,
) -> None:
    @tool
    async def dump() -> dict[str, list[str]]:
        """Returns far too much."""
        return {"rows": ["x" * 100] * 5000}

    model = ScriptedModel([call("dump"), say("ok")])
    await make_agent(model, tools=[dump]).run("dump", session_id="session-0206")
    content = model.requests[1].messages[-1]["content"]
    assert len(content) < 25_000
    payload = json.loads(content)
    assert "truncated" in payload["note"]


async def test_tool_results_within_a_turn_are_kept_inside_the_budget(
    make_agent: AgentFactory,
) -> None:
    @tool
    async def page(n: int) -> str:
        """A large page of text."""
        return f"page {n} " + "lorem ipsum " * 1500

    model = FunctionModel(
        lambda r: (
            say("done")
            if sum(m["role"] == "tool" for m in r.messages) >= 5
            else call("page", {"n": len(r.messages)})
        )
    )
    from hermes.session.tokens import messages_tokens

    agent = make_agent(model, tools=[page], context_budget_tokens=6000)
    await agent.run("read five pages", session_id="session-0207")
    sizes = [messages_tokens(req.messages) for req in model.requests]
    assert max(sizes) <= 6000 + 500  # the budget, give or take the per-message overheads


async def test_a_timeout_error_raised_by_a_model_is_a_model_error(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([TimeoutError("socket read timed out")])
    result = await make_agent(model).run("hi", session_id="session-0208")
    assert result.outcome == "error"
    assert result.error is not None
    assert "timed out" in result.error["message"]


async def test_a_scripted_model_is_not_consumed_by_history_summaries(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([say(f"reply {i}") for i in range(8)])
    agent = make_agent(model, context_rounds=2, summary_min_backlog=2)
    for i in range(8):
        assert (await agent.run(f"question {i}", session_id="session-0209")).reply == f"reply {i}"
    model.assert_complete()


async def test_importing_into_a_session_with_history_keeps_what_it_knew(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([say(f"noted {i}") for i in range(6)] + [say("ok")])
    agent = make_agent(model, context_rounds=2, summary_min_backlog=2)
    for i in range(6):
        await agent.run(f"fact number {i}", session_id="session-0210")
    imported = [
        m
        for i in range(10)
        for m in (
            {"role": "user", "content": f"imported question {i}"},
            {"role": "assistant", "content": f"imported answer {i}"},
        )
    ]
    agent.import_history("session-0210", imported)
    await agent.run("what do you know?", session_id="session-0210")
    sent = model.requests[-1].messages
    summary = next(m["content"] for m in sent if m["role"] == "system")
    assert "fact number 5" in summary  # the session's own history survived the import
    assert "imported question 8" in summary
    assert [m["content"] for m in sent if m["role"] == "user"][-1] == "what do you know?"


async def test_a_store_passed_in_stays_open_after_the_agent_closes(tmp_path: Path) -> None:
    from hermes import Agent
    from hermes.storage.sqlite.sessions import SQLiteStore

    store = SQLiteStore(tmp_path / "shared.db")
    agent = Agent(model=ScriptedModel([say("hi")]), store=store)
    await agent.run("hi", session_id="session-0211")
    await agent.aclose()
    assert await store.load_session("session-0211") is not None  # still usable
    await store.close()


@pytest.mark.parametrize(
    "setting", ["max_iterations", "context_rounds", "max_unknown_tools", "summary_min_backlog"]
)
def test_nonsense_settings_are_refused_at_construction(tmp_path: Path, setting: str) -> None:
    from hermes import Agent

    with pytest.raises(ValueError, match=setting):
        Agent(store=str(tmp_path / "x.db"), **{setting: 0})


async def test_a_message_larger_than_the_context_budget_is_refused_clearly(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(ScriptedModel(), context_budget_tokens=1000)
    with pytest.raises(InvalidInputError, match="too long for the model's context"):
        await agent.run("长" * 5000, session_id="session-0212")


async def test_an_exception_text_reaches_the_model_clipped(make_agent: AgentFactory) -> None:
    @tool
    async def leak() -> str:
        """Raises with a huge message."""
        raise RuntimeError("x" * 10_000)

    model = ScriptedModel([call("leak"), say("sorry")])
    await make_agent(model, tools=[leak]).run("go", session_id="session-0213")
    message = json.loads(model.requests[1].messages[-1]["content"])["error"]["message"]
    assert message.startswith("RuntimeError: xxx")
    assert len(message) <= 500


async def test_a_turn_overtaken_by_a_newer_claim_stops_without_writing_over_it(
    make_agent: AgentFactory,
) -> None:
    # A newer turn writes mid-way through this one (as a turn whose lease expired would see it):
    # this turn's later writes are refused by the store's fence, and it stops there.
    holder: list[Agent] = []

    @tool
    async def usurp() -> str:
        """Let a newer turn write to the session."""
        newer = SessionState(fsm_state="parsing_intent", state_entered_at=time.time())
        await holder[0].store.append(
            "session-0207",
            [Item("user", "text", "the newer turn")],
            state=newer,
            fence=time.time_ns() + 10**12,
        )
        return "done"

    agent = make_agent(ScriptedModel([call("usurp", {}), say("never stored")]), tools=[usurp])
    holder.append(agent)
    with pytest.raises(SessionBusyError, match="newer turn"):
        await agent.run("go", session_id="session-0207")
    items = await all_items(agent, "session-0207")
    assert [(i.role, i.kind) for i in items] == [
        ("user", "text"),
        ("assistant", "tool_call"),
        ("user", "text"),  # the newer turn's message, and nothing of the old turn after it
    ]
    record = await agent.store.load_session("session-0207")
    assert record is not None
    assert record.state.fsm_state == "parsing_intent"  # the newer turn's state stands
