"""``hermes sessions``, ``hermes tools``, ``hermes --help`` and the JSON log of a ``run``."""

from __future__ import annotations

import json

from tests.channels.conftest import CONVERSATION_SESSION, Conversation, Hermes

LOG_KEYS = {"msg_id", "trace_id", "session_id", "module", "event"}


def test_sessions_list_json_shows_the_session_of_earlier_runs(
    conversation: Conversation,
) -> None:
    result = conversation.hermes("sessions", "list", "--json")
    assert result.returncode == 0, result
    rows = {row["session_id"]: row for row in result.json()}
    row = rows[CONVERSATION_SESSION]
    assert row["state"] == "awaiting_feedback"
    assert row["items"] >= 4  # two user messages and two replies, plus the tool items
    assert {"session_id", "user_id", "state", "items", "last_active"} <= set(row)


def test_sessions_show_json_lists_the_items_in_order(conversation: Conversation) -> None:
    result = conversation.hermes("sessions", "show", CONVERSATION_SESSION, "--json")
    assert result.returncode == 0, result
    data = result.json()
    assert data["session"]["session_id"] == CONVERSATION_SESSION
    items = data["items"]
    assert [i["seq"] for i in items] == sorted(i["seq"] for i in items)
    user_texts = [i["content"] for i in items if i["role"] == "user" and i["kind"] == "text"]
    assert user_texts == ["15乘以27", "再加100呢？"]
    assert any(i["kind"] == "tool_call" and i["tool_name"] == "calculator" for i in items)


def test_sessions_show_of_an_unknown_session_is_a_clear_error(
    conversation: Conversation,
) -> None:
    result = conversation.hermes("sessions", "show", "no-such-session", "--json")
    assert result.returncode == 2, result
    result.assert_no_traceback()
    assert result.json()["error"]["type"] == "session_not_found"
    text = conversation.hermes("sessions", "show", "no-such-session")
    assert text.returncode == 2
    assert "no-such-session" in text.stderr


def test_sessions_list_in_a_fresh_directory_is_empty_and_creates_nothing(
    hermes: Hermes,
) -> None:
    result = hermes("sessions", "list", "--json")
    assert result.returncode == 0, result
    assert result.json() == []
    assert not hermes.data_dir.exists()


def test_tools_list_json_gives_each_builtin_with_its_schema(hermes: Hermes) -> None:
    result = hermes("tools", "list", "--json")
    assert result.returncode == 0, result
    tools = {tool["name"]: tool for tool in result.json()}
    assert set(tools) == {"calculator", "current_time"}
    calculator = tools["calculator"]["parameters"]
    assert calculator["type"] == "object"
    assert calculator["required"] == ["expression"]
    assert "timezone" in tools["current_time"]["parameters"]["properties"]
    assert all(tool["description"] for tool in tools.values())
    assert not hermes.data_dir.exists(), "listing tools must not create a store"


def test_help_lists_the_commands(hermes: Hermes) -> None:
    result = hermes("--help")
    assert result.returncode == 0, result
    for command in ("run", "chat", "demo", "sessions", "tools", "--config"):
        assert command in result.stdout, result


def test_run_writes_json_log_lines_linked_by_ids(conversation: Conversation) -> None:
    log_file = conversation.hermes.data_dir / "logs" / "hermes.log"
    lines = [json.loads(line) for line in log_file.read_text(encoding="utf-8").splitlines()]
    trace_ids = {conversation.first.json()["trace_id"], conversation.second.json()["trace_id"]}
    turn_lines = [line for line in lines if line.get("trace_id") in trace_ids]
    assert turn_lines, lines
    for line in turn_lines:
        assert set(line) >= LOG_KEYS, line
        assert line["session_id"] == CONVERSATION_SESSION
    events = {line["event"] for line in turn_lines}
    assert {"turn_finished", "model_call"} <= events
    for line in turn_lines:
        if line["event"] in ("turn_finished", "model_call"):
            assert isinstance(line["cost_ms"], int | float), line
    finished = [line for line in turn_lines if line["event"] == "turn_finished"]
    assert {line["trace_id"] for line in finished} == trace_ids
