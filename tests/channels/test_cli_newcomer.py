"""What a newcomer reaches for first: ``--version``, ``init``, ``sessions export|delete``, the
note of ``sessions show`` when it hides items, the session-id rule, ``/help`` in ``chat``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hermes import __version__
from hermes.channels.cli.init_cmd import init_config_text
from hermes.config import EXAMPLE_CONFIG, load_config
from tests.channels.conftest import Hermes
from tests.channels.test_cli_interactive import reply_lines

PHONE = "13812345678"
SID = "newcomer-0001"


def test_version_prints_the_package_version(hermes: Hermes) -> None:
    result = hermes("--version")
    assert result.returncode == 0, result
    assert result.stdout.strip() == f"hermes {__version__}"


def test_init_writes_a_commented_config_the_loader_accepts(hermes: Hermes) -> None:
    result = hermes("init")
    assert result.returncode == 0, result
    path = hermes.cwd / "hermes.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count("\n#") > 20  # commented: every key says what it does
    loaded = load_config(path, cwd=hermes.cwd, environ={}, home=hermes.home)
    assert loaded.config.model is None  # runs offline until the model section is uncommented
    assert hermes("run", "15乘以27", "--session", SID).returncode == 0


def test_init_refuses_to_overwrite_without_force(hermes: Hermes) -> None:
    path = hermes.cwd / "hermes.yaml"
    path.write_text("agent: {}\n", encoding="utf-8")
    refused = hermes("init")
    assert refused.returncode == 2, refused
    assert "--force" in refused.stderr
    assert path.read_text(encoding="utf-8") == "agent: {}\n"
    forced = hermes("init", "--force")
    assert forced.returncode == 0, forced
    assert path.read_text(encoding="utf-8") == init_config_text()


def test_the_init_file_with_its_model_section_uncommented_loads_too(tmp_path: Path) -> None:
    path = tmp_path / "hermes.yaml"
    path.write_text(EXAMPLE_CONFIG, encoding="utf-8")
    assert load_config(path, cwd=tmp_path, environ={}, home=tmp_path).config.model is not None


@pytest.fixture(scope="module")
def personal(tmp_path_factory: pytest.TempPathFactory) -> Hermes:
    """A session whose first message holds a phone number, then two more turns (shared by
    the tests of this module: each CLI process costs a second or more)."""
    root = tmp_path_factory.mktemp("personal")
    hermes = Hermes(root / "work", root / "home")
    for text in (f"我的手机号是{PHONE}", "15乘以27", "再加100呢？"):
        assert hermes("run", text, "--session", SID).returncode == 0
    return hermes


def test_export_json_masks_personal_data_unless_revealed(personal: Hermes) -> None:
    result = personal("sessions", "export", SID)
    assert result.returncode == 0, result
    data = result.json()
    assert data["session"]["session_id"] == SID
    assert len(data["items"]) == data["session"]["items"]
    first = data["items"][0]["content"]
    assert PHONE not in result.stdout
    assert "138*****678" in first
    revealed = personal("sessions", "export", SID, "--reveal-personal").json()
    assert PHONE in revealed["items"][0]["content"]


def test_export_jsonl_is_one_item_per_line(personal: Hermes) -> None:
    result = personal("sessions", "export", SID, "--format", "jsonl")
    assert result.returncode == 0, result
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["seq"] for row in rows] == list(range(1, len(rows) + 1))
    assert PHONE not in result.stdout


def test_show_masks_personal_data_and_says_what_it_hides(personal: Hermes) -> None:
    everything = personal("sessions", "show", SID, "--all")
    assert everything.returncode == 0, everything
    assert PHONE not in everything.stdout
    assert "showing the last" not in everything.stderr
    items = personal("sessions", "export", SID).json()["session"]["items"]
    some = personal("sessions", "show", SID, "--limit", "2")
    assert f"showing the last 2 of {items} items; --all for all" in some.stderr, some


def test_delete_needs_yes_without_a_terminal_then_removes_the_session(personal: Hermes) -> None:
    doomed = "newcomer-doomed-1"
    assert personal("run", "15乘以27", "--session", doomed).returncode == 0
    refused = personal("sessions", "delete", doomed)
    assert refused.returncode == 2, refused
    assert "--yes" in refused.stderr
    assert personal("sessions", "show", doomed).returncode == 0
    deleted = personal("sessions", "delete", doomed, "--yes", "--json")
    assert deleted.returncode == 0, deleted
    assert deleted.json()["deleted"] is True
    gone = personal("sessions", "show", doomed, "--json")
    assert gone.returncode == 2
    assert gone.json()["error"]["type"] == "session_not_found"
    assert personal("sessions", "show", SID).returncode == 0  # the other session stays
    again = personal("sessions", "delete", doomed, "--yes", "--json")
    assert again.returncode == 2
    assert again.json()["error"]["type"] == "session_not_found"


_HOLD_CLAIM = """
import asyncio, sys
from hermes.storage.sqlite.session_locks import FileSessionLocks

async def main():
    locks = FileSessionLocks(sys.argv[1])
    async with locks.claim(sys.argv[2], wait=0):
        print("held", flush=True)
        await asyncio.sleep(60)

asyncio.run(main())
"""


def test_delete_of_a_session_whose_turn_runs_elsewhere_is_refused_and_loses_nothing(
    hermes: Hermes,
) -> None:
    busy = "newcomer-busy-01"
    assert hermes("run", "15乘以27", "--session", busy).returncode == 0
    db = hermes.data_dir / "hermes.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_CLAIM, str(db), busy], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        refused = hermes("sessions", "delete", busy, "--yes", "--json")
        assert refused.returncode == 2, refused
        assert refused.json()["error"]["type"] == "session_busy"
    finally:
        holder.kill()
        holder.wait(timeout=10)
    kept = hermes("sessions", "show", busy, "--json")
    assert kept.returncode == 0, kept
    assert hermes("sessions", "delete", busy, "--yes").returncode == 0  # free once it ended


def test_a_short_session_id_is_refused_with_the_rule(hermes: Hermes) -> None:
    result = hermes("run", "hi", "--session", "lat-1")
    assert result.returncode == 2, result
    result.assert_no_traceback()
    assert "8 to 128 characters" in result.stderr
    assert "8–128" in result.stderr  # and in Chinese


def test_help_in_chat_is_a_command_not_a_message(hermes: Hermes) -> None:
    result = hermes("chat", "--session", "chat-help-0001", stdin="/help\n/nope\n/exit\n")
    assert result.returncode == 0, result
    assert "/help" in result.stdout
    assert "/exit" in result.stdout
    assert "unknown command /nope" in result.stderr
    assert reply_lines(result.stdout) == []  # nothing reached the brain
    assert hermes("sessions", "show", "chat-help-0001").returncode == 2  # nothing stored
