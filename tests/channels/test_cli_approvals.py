"""The human-approval flow through the command line: a model proposes ``shell``, the person
says yes in the next ``hermes run`` (another process), and only then does the command run."""

from __future__ import annotations

from tests.channels.conftest import Hermes, write_config
from tests.channels.test_cli_model import model_config
from tests.models.fake_chat_server import FakeChatServer, Reply, ScriptedCall


def _config(base_url: str) -> str:
    return model_config(base_url) + "tools:\n  builtins: [shell]\n"


def test_a_shell_call_waits_for_a_yes_in_the_next_run(
    hermes: Hermes, server: FakeChatServer
) -> None:
    write_config(hermes.cwd, _config(server.base_url))
    server.push(Reply.calls(ScriptedCall("shell", {"command": "echo approved-run > marker.txt"})))
    asked = hermes("run", "write the marker", "--session", "cli-approval-1", "--json")
    assert asked.returncode == 0, asked
    data = asked.json()
    assert data["state"] == "awaiting_confirmation"
    assert data["approval"]["tool"] == "shell"
    assert not (hermes.cwd / "marker.txt").exists()  # nothing ran yet

    server.push(Reply.text("Done: the marker is written."))
    confirmed = hermes("run", "yes", "--session", "cli-approval-1", "--json")
    assert confirmed.returncode == 0, confirmed
    result = confirmed.json()
    assert result["reply"] == "Done: the marker is written."
    assert [c["name"] for c in result["tool_calls"]] == ["shell"]
    assert result["tool_calls"][0]["ok"] is True
    assert (hermes.cwd / "marker.txt").read_text(encoding="utf-8").strip() == "approved-run"


def test_a_no_runs_nothing(hermes: Hermes, server: FakeChatServer) -> None:
    write_config(hermes.cwd, _config(server.base_url))
    server.push(Reply.calls(ScriptedCall("shell", {"command": "echo nope > marker.txt"})))
    assert hermes("run", "do it", "--session", "cli-approval-2", "--json").returncode == 0
    refused = hermes("run", "取消", "--session", "cli-approval-2", "--json")
    assert refused.returncode == 0, refused
    assert "取消" in refused.json()["reply"] or "ancel" in refused.json()["reply"]
    assert not (hermes.cwd / "marker.txt").exists()
