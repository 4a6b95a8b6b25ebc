"""``hermes run`` against a configured model: a local fake server, or nothing listening.

The fake chat server runs in this process on 127.0.0.1; the ``hermes`` subprocess is its
client (the suite's guard against real model requests applies only to this process).
"""

from __future__ import annotations

import socket

from tests.channels.conftest import ANSI_ESCAPE, FSM_STATES, RUN_JSON_KEYS, Hermes, write_config
from tests.models.fake_chat_server import FakeChatServer, Reply, ScriptedCall


def model_config(base_url: str) -> str:
    return (
        "model:\n"
        f"  base_url: {base_url}\n"
        "  model: fake-model\n"
        "  max_retries: 0\n"
        "  timeout: 5\n"
        "  connect_timeout: 2\n"
    )


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound once, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_model_gives_an_honest_reply_and_an_error_in_the_json(
    hermes: Hermes,
) -> None:
    write_config(hermes.cwd, model_config(f"http://127.0.0.1:{closed_port()}/v1"))
    result = hermes("run", "15乘以27", "--json")
    # The turn ran and ended honestly: exit 0, the contract's keys plus "error".
    assert result.returncode == 0, result
    result.assert_no_traceback()
    data = result.json()
    assert set(data) == RUN_JSON_KEYS | {"error"}
    assert data["error"]["type"] == "model_error"
    assert "unreachable" in data["error"]["message"]
    assert "连接不上模型服务" in data["reply"]  # a Chinese message gets a Chinese reply
    assert "model.base_url" in data["reply"]
    assert data["state"] in FSM_STATES
    assert data["tool_calls"] == []


def test_unreachable_model_in_text_mode_names_the_error_on_stderr(hermes: Hermes) -> None:
    write_config(hermes.cwd, model_config(f"http://127.0.0.1:{closed_port()}/v1"))
    result = hermes("run", "hello")
    assert result.returncode == 0, result
    result.assert_no_traceback()
    assert "cannot be reached" in result.stdout
    assert "model_error" in result.stderr


def test_model_tool_call_is_reported_in_the_json(hermes: Hermes, server: FakeChatServer) -> None:
    server.push(
        Reply.calls(ScriptedCall("calculator", {"expression": "6*7"})),
        Reply.text("The answer is 42."),
    )
    write_config(hermes.cwd, model_config(server.base_url))
    result = hermes("run", "what is 6*7?", "--session", "model-call-0001", "--json")
    assert result.returncode == 0, result
    data = result.json()
    assert set(data) == RUN_JSON_KEYS | {"usage"}  # the fake server reports usage
    assert data["reply"] == "The answer is 42."
    assert data["tool_calls"] == [
        {"name": "calculator", "arguments": {"expression": "6*7"}, "ok": True}
    ]
    assert data["session_id"] == "model-call-0001"


def test_model_reply_that_looks_like_markup_is_printed_exactly(
    hermes: Hermes, server: FakeChatServer
) -> None:
    reply = "[/bold] [red]not red[/red] :smile: [link=x]y[/link] \\[z]"
    server.push(Reply.text(reply))
    write_config(hermes.cwd, model_config(server.base_url))
    result = hermes("run", "say something odd", env={"FORCE_COLOR": "1"})
    assert result.returncode == 0, result
    assert result.stdout == reply + "\n"
    assert ANSI_ESCAPE.search(result.stdout) is None


def test_run_json_marks_a_turn_whose_every_tool_call_failed(
    hermes: Hermes, server: FakeChatServer
) -> None:
    server.push(
        Reply.calls(ScriptedCall("book_hotel", {"hotel": "Hilton"})),
        Reply.text("已为您预订。"),
    )
    write_config(hermes.cwd, model_config(server.base_url))
    result = hermes("run", "帮我订酒店", "--json")
    assert result.returncode == 0, result
    data = result.json()
    assert data["tools_failed"] is True
    assert data["tool_calls"] == [
        {"name": "book_hotel", "arguments": {"hotel": "Hilton"}, "ok": False}
    ]
    told = server.requests[1]["messages"][-1]
    assert "no action was carried out" in told["content"]


def test_run_json_carries_the_usage_the_model_reports(
    hermes: Hermes, server: FakeChatServer
) -> None:
    server.push(Reply.text("hi", usage=(30, 6)))
    write_config(hermes.cwd, model_config(server.base_url))
    data = hermes("run", "hello", "--json").json()
    assert data["usage"] == {"prompt_tokens": 30, "completion_tokens": 6}
