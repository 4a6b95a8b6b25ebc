"""Human approval of tool calls (seed 004 §4.3): ask, then yes / no / correction,
by message or by API, surviving restarts and expiring."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes import tool
from hermes.agent.approvals import classify
from hermes.errors import InvalidInputError, SessionAccessError
from hermes.testing import ScriptedModel, call, calls, say
from tests.agent.conftest import AgentFactory, add, all_items, assert_pairs_complete

RUNS: list[str] = []


@tool(requires_approval=True)
async def send_email(to: str) -> str:
    """Send an email to someone."""
    RUNS.append(to)
    return f"sent to {to}"


@pytest.fixture(autouse=True)
def _clear_runs() -> Iterator[None]:
    RUNS.clear()
    yield
    RUNS.clear()


TOOLS = [add, send_email]


def _last_tool_payload(model: ScriptedModel, request: int) -> dict[str, object]:
    message = model.requests[request].messages[-1]
    assert message["role"] == "tool"
    payload: dict[str, object] = json.loads(message["content"])
    return payload


async def test_a_call_needing_approval_is_not_run_and_the_user_is_asked(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([call("send_email", {"to": "bob@example.com"}, id="c1")])
    agent = make_agent(model, TOOLS)
    result = await agent.run("email bob", session_id="session-ap01", user_id="u1")
    assert RUNS == []
    assert result.state == "awaiting_confirmation"
    assert result.approval_id is not None
    assert result.approval_id.startswith("ap-")
    assert len(result.approval_id) == 13
    assert "send_email" in result.reply
    assert "bob@example.com" in result.reply
    assert "yes" in result.reply
    assert "no" in result.reply
    assert result.to_json_dict()["approval"] == {
        "id": result.approval_id,
        "tool": "send_email",
        "arguments": {"to": "bob@example.com"},
    }
    items = await all_items(agent, "session-ap01")
    assert_pairs_complete(items)
    [pending] = [i for i in items if i.kind == "tool_result"]
    assert json.loads(pending.content)["error"]["type"] == "approval_pending"


async def test_the_question_is_asked_in_chinese_to_a_chinese_message(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([call("send_email", {"to": "bob@example.com"})])
    result = await make_agent(model, TOOLS).run("给 bob 发邮件", session_id="session-ap02")
    assert result.reply.startswith("将要执行 send_email：`bob@example.com`")
    assert result.reply.endswith("确认执行吗？回复「确认」或「取消」。")


async def test_yes_runs_the_call_once_and_the_model_sees_its_result(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([call("send_email", {"to": "bob@example.com"}, id="c1"), say("Sent.")])
    agent = make_agent(model, TOOLS)
    await agent.run("email bob", session_id="session-ap03")
    result = await agent.run("Yes!", session_id="session-ap03")
    assert RUNS == ["bob@example.com"]
    assert result.reply == "Sent."
    assert result.state == "awaiting_feedback"
    assert result.approval_id is None
    assert "approval" not in result.to_json_dict()
    payload = _last_tool_payload(model, 1)
    assert payload == {"ok": True, "output": "sent to bob@example.com"}
    items = await all_items(agent, "session-ap03")
    assert_pairs_complete(items)
    fresh = [i for i in items if i.kind == "tool_call"][-1]
    assert fresh.tool_call_id != "c1"  # a new call with a fresh id, paired with its result
    model.assert_complete()
    model.add(say("ok"))
    again = await agent.run("yes", session_id="session-ap03")  # nothing pending: normal turn
    assert (again.reply, RUNS) == ("ok", ["bob@example.com"])


async def test_no_drops_the_call_without_running_it(make_agent: AgentFactory) -> None:
    model = ScriptedModel([call("send_email", {"to": "bob@example.com"})])
    agent = make_agent(model, TOOLS)
    await agent.run("给 bob 发邮件", session_id="session-ap04")
    result = await agent.run("取消。", session_id="session-ap04")
    assert RUNS == []
    assert result.reply == "已取消：send_email 没有执行。"
    assert result.state == "awaiting_feedback"
    assert len(model.requests) == 1  # the model was not asked again
    record = await agent.store.load_session("session-ap04")
    assert record is not None
    assert record.state.approval is None
    assert_pairs_complete(await all_items(agent, "session-ap04"))


async def test_a_correction_is_sent_to_the_model_which_proposes_again(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel(
        [
            call("send_email", {"to": "bob@example.com"}),
            call("send_email", {"to": "alice@example.com"}),
            say("Sent to Alice."),
        ]
    )
    agent = make_agent(model, TOOLS)
    first = await agent.run("email bob", session_id="session-ap05")
    second = await agent.run("wait, send it to alice instead", session_id="session-ap05")
    assert RUNS == []
    assert second.state == "awaiting_confirmation"
    assert second.approval_id not in (None, first.approval_id)
    assert "alice@example.com" in second.reply
    told = model.requests[1].messages
    assert told[-1] == {"role": "user", "content": "wait, send it to alice instead"}
    # The note ends the one system message at the start (strict templates take no other).
    assert [m["role"] for m in told].count("system") == 1
    assert told[0]["role"] == "system"
    assert "NOT run" in told[0]["content"]
    done = await agent.run("ok", session_id="session-ap05")
    assert RUNS == ["alice@example.com"]
    assert done.reply == "Sent to Alice."
    assert_pairs_complete(await all_items(agent, "session-ap05"))


async def test_a_pending_approval_survives_a_restart(make_agent: AgentFactory) -> None:
    first = make_agent(ScriptedModel([call("send_email", {"to": "bob@example.com"})]), TOOLS)
    await first.run("给 bob 发邮件", session_id="session-ap06", user_id="u1")
    await first.aclose()
    model = ScriptedModel([say("已发送。")])
    second = make_agent(model, TOOLS)
    result = await second.run("确认", session_id="session-ap06", user_id="u1")
    assert RUNS == ["bob@example.com"]
    assert result.reply == "已发送。"
    assert_pairs_complete(await all_items(second, "session-ap06"))


async def test_an_expired_approval_is_dropped_and_the_message_handled_normally(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([call("send_email", {"to": "bob@example.com"}), say("Hello again.")])
    agent = make_agent(model, TOOLS)
    await agent.run("email bob", session_id="session-ap07")
    record = await agent.store.load_session("session-ap07")
    assert record is not None
    assert record.state.approval is not None
    old = time.time() - 7200
    record.state.state_entered_at = old
    record.state.approval = {**record.state.approval, "created_at": old, "expires_at": old + 3600}
    await agent.store.save_state("session-ap07", record.state)
    result = await agent.run("yes", session_id="session-ap07")
    assert RUNS == []
    assert result.reply == "Hello again."
    assert model.requests[1].messages[-1] == {"role": "user", "content": "yes"}
    after = await agent.store.load_session("session-ap07")
    assert after is not None
    assert after.state.approval is None


async def test_an_approval_past_its_own_expiry_is_dropped_too(make_agent: AgentFactory) -> None:
    model = ScriptedModel([call("send_email", {"to": "bob@example.com"}), say("Hi.")])
    agent = make_agent(model, TOOLS)
    await agent.run("email bob", session_id="session-ap08")
    record = await agent.store.load_session("session-ap08")
    assert record is not None
    assert record.state.approval is not None
    record.state.approval = {**record.state.approval, "expires_at": time.time() - 1}
    await agent.store.save_state("session-ap08", record.state)
    result = await agent.run("ok", session_id="session-ap08")
    assert (RUNS, result.reply, result.state) == ([], "Hi.", "awaiting_feedback")


async def test_approve_by_id_runs_the_call(make_agent: AgentFactory) -> None:
    model = ScriptedModel([call("send_email", {"to": "bob@example.com"}), say("Done.")])
    agent = make_agent(model, TOOLS)
    asked = await agent.run("email bob", session_id="session-ap09", user_id="u1")
    assert asked.approval_id is not None
    result = await agent.approve(asked.approval_id, session_id="session-ap09", user_id="u1")
    assert RUNS == ["bob@example.com"]
    assert result.reply == "Done."
    with pytest.raises(InvalidInputError, match="no pending approval"):
        await agent.approve(asked.approval_id, session_id="session-ap09", user_id="u1")


async def test_reject_by_id_drops_the_call(make_agent: AgentFactory) -> None:
    model = ScriptedModel([call("send_email", {"to": "bob@example.com"})])
    agent = make_agent(model, TOOLS)
    asked = await agent.run("email bob", session_id="session-ap10")
    assert asked.approval_id is not None
    result = await agent.reject(asked.approval_id, session_id="session-ap10")
    assert RUNS == []
    assert result.reply == "Cancelled: send_email was not run."
    assert_pairs_complete(await all_items(agent, "session-ap10"))


async def test_unknown_or_expired_ids_and_other_users_are_refused(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([call("send_email", {"to": "bob@example.com"})])
    agent = make_agent(model, TOOLS)
    asked = await agent.run("email bob", session_id="session-ap11", user_id="u1")
    assert asked.approval_id is not None
    with pytest.raises(InvalidInputError, match="no pending approval"):
        await agent.approve("ap-0000000000", session_id="session-ap11", user_id="u1")
    with pytest.raises(InvalidInputError, match="does not exist"):
        await agent.approve(asked.approval_id, session_id="session-none", user_id="u1")
    with pytest.raises(SessionAccessError):
        await agent.approve(asked.approval_id, session_id="session-ap11", user_id="u2")
    record = await agent.store.load_session("session-ap11")
    assert record is not None
    assert record.state.approval is not None
    record.state.approval = {**record.state.approval, "expires_at": time.time() - 1}
    await agent.store.save_state("session-ap11", record.state)
    with pytest.raises(InvalidInputError, match="expired"):
        await agent.approve(asked.approval_id, session_id="session-ap11", user_id="u1")
    assert RUNS == []


async def test_a_mixed_response_runs_the_plain_call_and_holds_the_other(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel(
        [
            calls(("add", {"a": 2, "b": 3}), ("send_email", {"to": "bob@example.com"})),
            say("5, and sent."),
        ]
    )
    agent = make_agent(model, TOOLS)
    asked = await agent.run("add and email", session_id="session-ap12")
    assert [(c.name, c.ok) for c in asked.tool_calls] == [("add", True), ("send_email", False)]
    assert asked.state == "awaiting_confirmation"
    assert RUNS == []
    assert_pairs_complete(await all_items(agent, "session-ap12"))
    done = await agent.run("y", session_id="session-ap12")
    assert RUNS == ["bob@example.com"]
    assert done.reply == "5, and sent."
    assert_pairs_complete(await all_items(agent, "session-ap12"))


async def test_several_calls_are_asked_about_together(make_agent: AgentFactory) -> None:
    model = ScriptedModel(
        [
            calls(("send_email", {"to": "a@example.com"}), ("send_email", {"to": "b@example.com"})),
            say("Both sent."),
        ]
    )
    agent = make_agent(model, TOOLS)
    asked = await agent.run("email a and b", session_id="session-ap13")
    assert asked.reply.startswith("About to run 2 actions:")
    assert len(asked.to_json_dict()["approval"]["calls"]) == 2
    await agent.run("go ahead", session_id="session-ap13")
    assert sorted(RUNS) == ["a@example.com", "b@example.com"]


async def test_a_yes_word_with_nothing_pending_is_a_normal_message(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([say("Yes to what?")])
    result = await make_agent(model, TOOLS).run("yes", session_id="session-ap14")
    assert (result.reply, result.state, RUNS) == ("Yes to what?", "awaiting_feedback", [])


async def test_a_malformed_call_is_refused_not_proposed(make_agent: AgentFactory) -> None:
    model = ScriptedModel([call("send_email", {"recipient": "bob"}), say("Sorry.")])
    result = await make_agent(model, TOOLS).run("email bob", session_id="session-ap15")
    assert result.state == "awaiting_feedback"
    assert result.approval_id is None
    error = _last_tool_payload(model, 1)["error"]
    assert isinstance(error, dict)
    assert error["type"] == "invalid_arguments"
    assert RUNS == []


@pytest.mark.parametrize(
    ("text", "decision"),
    [
        ("好的", "approve"),
        (" 确认。", "approve"),
        ("Go Ahead!", "approve"),
        ("OK", "approve"),
        ("算了", "reject"),
        ("No.", "reject"),
        ("不确认", "correct"),
        ("yes please change it", "correct"),
        ("等等，改成北京", "correct"),
        ("", "correct"),
    ],
)
def test_only_a_whole_message_is_a_yes_or_a_no(text: str, decision: str) -> None:
    assert classify(text) == decision


async def test_the_shell_tool_runs_echo_after_approval(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    model = ScriptedModel([call("shell", {"command": "echo hi"}), say("It printed hi.")])
    agent = make_agent(model, ["shell"], workspace=tmp_path)
    asked = await agent.run("run echo hi", session_id="session-ap16")
    assert "`echo hi`" in asked.reply
    assert asked.state == "awaiting_confirmation"
    done = await agent.run("yes", session_id="session-ap16")
    assert done.reply == "It printed hi."
    payload = _last_tool_payload(model, 1)
    assert payload["ok"] is True
    assert payload["output"] == {"exit_code": 0, "stdout": "hi\n", "stderr": "", "truncated": False}
    assert payload["summary"] == "exit code 0"


async def test_a_deny_listed_shell_command_is_refused_before_anyone_is_asked(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    model = ScriptedModel([call("shell", {"command": "rm -rf /"}), say("I won't do that.")])
    agent = make_agent(model, ["shell"], workspace=tmp_path)
    result = await agent.run("wipe the disk", session_id="session-ap17")
    assert result.approval_id is None
    assert result.state == "awaiting_feedback"
    error = _last_tool_payload(model, 1)["error"]
    assert isinstance(error, dict)
    assert error["type"] == "invalid_arguments"
    assert "refused" in error["message"]
