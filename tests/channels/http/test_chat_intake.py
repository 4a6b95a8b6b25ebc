"""The one inbound path (``hermes.channels.intake``): validate → dedupe by ``msg_id`` →
``Message`` → ``Agent.run_message``, with its events and busy policy, on a real SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes import Agent
from hermes.agent.events import AgentEvent
from hermes.channels.intake import DuplicateMessageError, Intake, RecentMessages
from hermes.errors import InvalidIdError, InvalidInputError, SessionBusyError
from tests.channels.http.chat_support import assert_consistent, items_of, make_agent


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    made = make_agent(tmp_path / "hermes.db")
    yield made
    await made.aclose()


async def test_a_message_runs_once_and_streams_its_events(agent: Agent) -> None:
    intake = Intake(agent)
    message = intake.message("sleep 0.01", channel="test", session_id="intake-001", user_id="u1")
    seen: list[AgentEvent] = []
    result = await intake.submit(message, on_event=seen.append)
    assert result.reply == "done"
    assert result.trace_id == message.trace_id
    assert seen[0].type == "turn_started"
    assert "turn_finished" not in {e.type for e in seen}
    with pytest.raises(DuplicateMessageError):
        await intake.submit(message)
    users = [i for i in await items_of(agent, "intake-001") if i.role == "user"]
    assert len(users) == 1


async def test_a_message_gets_a_new_session_and_is_checked(agent: Agent) -> None:
    intake = Intake(agent)
    assert intake.message("hi", channel="test").session_id is not None
    with pytest.raises(InvalidInputError):
        intake.message("  ", channel="test")
    with pytest.raises(InvalidIdError):
        intake.message("hi", channel="test", session_id="bad")
    with pytest.raises(InvalidIdError):
        intake.message("hi", channel="test", user_id="no such user!")


async def test_reject_refuses_a_busy_session_and_forgets_the_refused_id(agent: Agent) -> None:
    intake = Intake(agent)
    first = intake.message("sleep 0.3", channel="test", session_id="intake-002")
    second = intake.message("hi", channel="test", session_id="intake-002")
    running = asyncio.create_task(intake.submit(first, busy="reject"))
    await asyncio.sleep(0.1)
    with pytest.raises(SessionBusyError):
        await intake.submit(second, busy="reject")
    await running
    again = await intake.submit(second, busy="reject")  # refused, not seen: it may come again
    assert again.reply == "echo: hi"


async def test_enqueued_messages_of_one_session_run_in_arrival_order(agent: Agent) -> None:
    intake = Intake(agent)
    texts = ["sleep 0.2 a", "sleep 0.01 b", "c", "sleep 0.05 d"]
    tasks = []
    for text in texts:
        message = intake.message(text, channel="test", session_id="intake-003")
        tasks.append(asyncio.create_task(intake.submit(message)))
        await asyncio.sleep(0.01)
    results = await asyncio.gather(*tasks)
    items = await items_of(agent, "intake-003")
    assert_consistent(items)
    assert [i.content for i in items if i.role == "user"] == texts
    order = [r.trace_id for r in results]
    assert [i.trace_id for i in items] == sorted((i.trace_id for i in items), key=order.index)


def test_recent_ids_are_bounded() -> None:
    recent = RecentMessages(2)
    assert recent.claim("a")
    assert recent.claim("b")
    assert not recent.claim("a")
    assert recent.claim("c")  # "a" is forgotten now
    assert len(recent) == 2
    assert recent.claim("a")
    with pytest.raises(ValueError, match="size"):
        RecentMessages(0)
