"""``hermes run``: the one-turn command and its ``--json`` contract (DESIGN "Public contracts")."""

from __future__ import annotations

import pytest

from tests.channels.conftest import (
    ANSI_ESCAPE,
    CONVERSATION_SESSION,
    FSM_STATES,
    RUN_JSON_KEYS,
    Conversation,
    Hermes,
    Result,
)

ERROR_KEYS = {"type", "message"}


def assert_refused(result: Result, error_type: str) -> dict[str, str]:
    """A ``--json`` run that was refused: exit 2 and only ``{"error": {type, message}}``."""
    assert result.returncode == 2, result
    result.assert_no_traceback()
    data = result.json()
    assert set(data) == {"error"}, result
    assert set(data["error"]) == ERROR_KEYS
    assert data["error"]["type"] == error_type, result
    assert isinstance(data["error"]["message"], str)
    error: dict[str, str] = data["error"]
    assert error["message"]
    return error


def assert_one_error_line(result: Result) -> str:
    """A refused text-mode run: exit 2, nothing on stdout, one clear line on stderr."""
    assert result.returncode == 2, result
    result.assert_no_traceback()
    assert result.stdout == "", result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result
    assert lines[0].startswith("error: "), result
    return lines[0]


# -- the --json contract ------------------------------------------------------------------------
def test_run_json_stdout_is_one_uncoloured_json_line(conversation: Conversation) -> None:
    first = conversation.first
    assert first.returncode == 0, first
    assert ANSI_ESCAPE.search(first.stdout) is None, first
    assert first.stdout.endswith("\n")
    assert len(first.stdout.splitlines()) == 1, first
    assert isinstance(first.json(), dict)


def test_run_json_writes_nothing_to_stderr(conversation: Conversation) -> None:
    assert conversation.first.stderr == ""
    assert conversation.second.stderr == ""


def test_run_json_has_exactly_the_contract_keys_and_types(conversation: Conversation) -> None:
    data = conversation.first.json()
    assert set(data) == RUN_JSON_KEYS
    assert isinstance(data["reply"], str)
    assert data["session_id"] == CONVERSATION_SESSION
    assert data["state"] in FSM_STATES
    assert isinstance(data["trace_id"], str)
    assert data["trace_id"]
    assert isinstance(data["tool_calls"], list)


def test_run_json_lists_each_tool_call_with_name_arguments_and_ok(
    conversation: Conversation,
) -> None:
    (call,) = conversation.first.json()["tool_calls"]
    assert set(call) == {"name", "arguments", "ok"}
    assert call["name"] == "calculator"
    assert isinstance(call["arguments"], dict)
    assert "15" in call["arguments"]["expression"]
    assert call["ok"] is True


def test_follow_up_in_a_second_process_continues_the_session(conversation: Conversation) -> None:
    first, second = conversation.first.json(), conversation.second.json()
    assert "405" in first["reply"]
    assert "505" in second["reply"]
    assert second["session_id"] == first["session_id"] == CONVERSATION_SESSION
    assert second["state"] == "awaiting_feedback"
    assert second["tool_calls"][0]["ok"] is True


def test_each_turn_gets_its_own_trace_id(conversation: Conversation) -> None:
    assert conversation.first.json()["trace_id"] != conversation.second.json()["trace_id"]


def test_run_without_session_makes_up_a_new_session_id(hermes: Hermes) -> None:
    result = hermes("run", "what is 2 to the power of 10?", "--json")
    assert result.returncode == 0, result
    data = result.json()
    assert "1024" in data["reply"]
    assert len(data["session_id"]) >= 8


# -- text mode --------------------------------------------------------------------------------
def test_run_prints_the_plain_reply_on_stdout_and_the_session_on_stderr(hermes: Hermes) -> None:
    result = hermes("run", "15乘以27", "--session", "text-mode-0001")
    assert result.returncode == 0, result
    assert "405" in result.stdout
    assert not result.stdout.lstrip().startswith("{")
    assert ANSI_ESCAPE.search(result.stdout) is None
    assert "text-mode-0001" not in result.stdout
    assert "text-mode-0001" in result.stderr
    assert "awaiting_feedback" in result.stderr


# -- standard input -----------------------------------------------------------------------------
def test_run_dash_reads_the_message_from_stdin(hermes: Hermes) -> None:
    result = hermes("run", "-", "--json", stdin="15乘以27等于多少？\n")
    assert result.returncode == 0, result
    assert "405" in result.json()["reply"]


def test_run_dash_with_invalid_utf8_on_stdin_is_one_clear_error(hermes: Hermes) -> None:
    line = assert_one_error_line(hermes("run", "-", stdin=b"15\xff\xfe27"))
    assert "UTF-8" in line


def test_run_dash_with_invalid_utf8_on_stdin_and_json_prints_a_json_error(hermes: Hermes) -> None:
    error = assert_refused(hermes("run", "-", "--json", stdin=b"\xc3\x28"), "invalid_input")
    assert "UTF-8" in error["message"]


def test_run_with_an_argument_that_is_not_utf8_is_refused(hermes: Hermes) -> None:
    line = assert_one_error_line(hermes("run", b"15\xff27"))
    assert "UTF-8" in line


# -- refused input ------------------------------------------------------------------------------
def test_run_with_a_blank_message_is_refused(hermes: Hermes) -> None:
    error = assert_refused(hermes("run", "   ", "--json"), "invalid_input")
    assert "empty" in error["message"]


@pytest.mark.parametrize("chars", [150_000, 1_000_000], ids=["over-limit", "one-megabyte"])
def test_run_with_a_too_long_message_on_stdin_is_refused(hermes: Hermes, chars: int) -> None:
    error = assert_refused(hermes("run", "-", "--json", stdin="x" * chars), "invalid_input")
    assert "too long" in error["message"]


@pytest.mark.parametrize(
    ("option", "value"),
    [("--session", "short"), ("--session", "has space!"), ("--user", "")],
)
def test_run_with_a_bad_id_is_refused_with_a_json_error(
    hermes: Hermes, option: str, value: str
) -> None:
    assert_refused(hermes("run", "hello", option, value, "--json"), "invalid_id")
    assert not hermes.data_dir.exists(), "a refused run must not create the store"


def test_run_with_a_session_id_that_looks_like_markup_is_reported_literally(
    hermes: Hermes,
) -> None:
    line = assert_one_error_line(hermes("run", "hello", "--session", "[/bold]abcdefgh"))
    assert "[/bold]abcdefgh" in line
