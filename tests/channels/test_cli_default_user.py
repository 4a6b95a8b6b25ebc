"""Out of the box, as real subprocesses: ``agent.default_user`` (the OS account name made a
valid user id, else ``local``) is the user of ``hermes run``/``hermes chat`` and of the memory
commands given no ``--user``, so "请记住我住在上海" works in a plain ``hermes chat``; and
``agent.timezone`` is the zone a time question without a place is answered in."""

from __future__ import annotations

import pytest

from hermes.config.local import user_id_from
from tests.channels.conftest import Hermes, write_config

KEYWORDS_ONLY = 'memory:\n  semantic: "off"\n'  # quoted: YAML 1.1 reads a bare off as false


def _as(account: str) -> dict[str, str]:
    """The environment of a process run by the OS account ``account``."""
    return {"USER": account, "LOGNAME": account, "LNAME": account, "USERNAME": account}


def test_run_without_user_remembers_for_the_os_account_and_memory_commands_find_it(
    hermes: Hermes,
) -> None:
    write_config(hermes.cwd, KEYWORDS_ONLY)
    saved = hermes("run", "请记住我住在上海", env=_as("alice"))
    assert saved.returncode == 0, saved
    assert saved.stdout.strip() == "好的，我记住了：用户住在上海。"
    listed = hermes("memory", "list", "--json", env=_as("alice"))
    assert [m["content"] for m in listed.json()] == ["用户住在上海。"]
    assert listed.json()[0]["user_id"] == "alice"
    asked = hermes("run", "我住在哪里？", env=_as("alice"))  # a new session, same user
    assert "用户住在上海。" in asked.stdout
    other = hermes("memory", "list", "--json", env=_as("bob"))
    assert other.json() == []  # another account is another user


def test_a_configured_default_user_is_used_by_run_and_memory(hermes: Hermes) -> None:
    write_config(hermes.cwd, KEYWORDS_ONLY + "agent:\n  default_user: carol\n")
    hermes("run", "remember that I live in Paris", env=_as("alice"))
    found = hermes("memory", "search", "--user", "carol", "Paris", "--json")
    assert [hit["content"] for hit in found.json()] == ["The user lives in Paris."]
    assert hermes("memory", "list", "--json", env=_as("alice")).json()[0]["user_id"] == "carol"


def test_chat_without_user_has_a_user_and_memory_works(hermes: Hermes) -> None:
    write_config(hermes.cwd, KEYWORDS_ONLY)
    chat = hermes("chat", stdin="请记住我住在上海\n我住在哪里？\n/exit\n", env=_as("dave"))
    assert chat.returncode == 0, chat
    assert "user dave" in chat.stdout
    assert "好的，我记住了：用户住在上海。" in chat.stdout
    assert "- 用户住在上海。" in chat.stdout


@pytest.mark.parametrize(
    ("account", "user_id"),
    [("José Q", "Jose-Q"), ("李雷", "local"), (".hidden", "hidden"), ("DOMAIN\\bob", "DOMAIN-bob")],
)
def test_an_account_name_is_made_a_valid_user_id(account: str, user_id: str) -> None:
    assert user_id_from(account) == user_id


def test_an_invalid_default_user_or_time_zone_is_refused_naming_the_key(hermes: Hermes) -> None:
    write_config(hermes.cwd, "agent:\n  default_user: 'not valid'\n")
    refused = hermes("run", "hi", "--json")
    assert refused.returncode == 2, refused
    assert "agent.default_user" in refused.json()["error"]["message"]
    write_config(hermes.cwd, "agent:\n  timezone: Mars/Olympus\n")
    refused = hermes("run", "hi", "--json")
    assert refused.returncode == 2, refused
    message = refused.json()["error"]["message"]
    assert "agent.timezone" in message
    assert "Asia/Shanghai" in message


def test_a_time_question_without_a_place_is_answered_in_agent_timezone(hermes: Hermes) -> None:
    write_config(hermes.cwd, "agent:\n  timezone: Asia/Kolkata\n")
    result = hermes("run", "现在几点？", "--json")
    assert result.returncode == 0, result
    data = result.json()
    assert data["tool_calls"] == [{"name": "current_time", "arguments": {}, "ok": True}]
    assert data["reply"].startswith("现在是 ")
    assert data["reply"].endswith("（Asia/Kolkata）。")  # the configured zone, and it says so
    english = hermes("run", "what time is it in Tokyo and London?").stdout
    assert "in Tokyo (Asia/Tokyo)" in english
    assert "in London (Europe/London)" in english
