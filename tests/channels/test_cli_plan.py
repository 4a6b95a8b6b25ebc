"""``hermes plan validate|run|list|resume`` as real subprocesses (DESIGN.md, "More CLI",
Plans): JSON shapes, exit codes, ``run_id: R`` on stderr, templates of ``plans.dir``, and a
``kill -9`` mid-plan followed by ``hermes plan resume`` that repeats no side effect."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from tests.channels.conftest import Hermes, write_config

PLUGIN = '''
import time
from pathlib import Path

from hermes.tools import tool

EFFECTS = Path(__file__).resolve().parent.parent / "effects.txt"
GO = Path(__file__).resolve().parent.parent / "go"
WAITING = Path(__file__).resolve().parent.parent / "waiting"


def _effect(line):
    with EFFECTS.open("a", encoding="utf-8") as f:
        f.write(line + "\\n")


@tool
def book_room(room: str) -> dict:
    """Book a room (a side effect: one line in effects.txt)."""
    _effect(f"book {room}")
    return {"booking": f"b-{room}", "room_id": room}


@tool
def cancel_booking(booking: str) -> str:
    """Cancel a booking."""
    _effect(f"cancel {booking}")
    return "cancelled"


@tool
def send_invite(booking: str) -> str:
    """Send the invitation (a side effect)."""
    _effect(f"invite {booking}")
    return "sent"


@tool
def broken(booking: str) -> str:
    """Always fails."""
    raise RuntimeError("mail server down")


@tool(timeout=60, side_effects=False)
def wait_for_go(booking: str) -> str:
    """Read-only: wait until the file 'go' exists."""
    WAITING.write_text("yes")
    while not GO.exists():
        time.sleep(0.05)
    return "go"
'''

CONFIG = """
tools:
  plugins_dir: tools
plans:
  lease_seconds: 1
"""

MEETING = """
name: book-meeting
params:
  room: {type: string}
nodes:
  - id: book
    tool: book_room
    params: {room: "{{params.room}}"}
    compensate: {tool: cancel_booking, params: {booking: "{{book.result.booking}}"}}
  - id: wait
    tool: wait_for_go
    params: {booking: "{{book.result.booking}}"}
    depends_on: [book]
  - id: invite
    tool: %s
    params: {booking: "{{book.result.booking}}"}
    depends_on: [wait]
outputs:
  room: "{{book.result.room_id}}"
"""


def _setup(hermes: Hermes, last_tool: str = "send_invite") -> None:
    (hermes.cwd / "tools").mkdir()
    (hermes.cwd / "tools" / "meeting_tools.py").write_text(PLUGIN, encoding="utf-8")
    (hermes.cwd / "plans").mkdir()
    (hermes.cwd / "plans" / "book-meeting.yaml").write_text(MEETING % last_tool, encoding="utf-8")
    write_config(hermes.cwd, CONFIG)


def _effects(hermes: Hermes) -> list[str]:
    path = hermes.cwd / "effects.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_validate_reports_valid_and_invalid_plans(hermes: Hermes) -> None:
    _setup(hermes)
    ok = hermes("plan", "validate", "plans/book-meeting.yaml", "--json")
    assert ok.returncode == 0, ok
    assert ok.json() == {"valid": True, "errors": []}
    bad = hermes.cwd / "bad.json"
    bad.write_text(json.dumps({"nodes": [
        {"id": "a", "tool": "book_room", "params": {"room": "x"}, "depends_on": ["b"]},
        {"id": "b", "tool": "book_room", "params": {"room": "x"}, "depends_on": ["a"]},
        {"id": "c", "tool": "no_such_tool"},
    ]}), encoding="utf-8")  # fmt: skip
    result = hermes("plan", "validate", "bad.json", "--json")
    assert result.returncode == 2, result
    data = result.json()
    assert data["valid"] is False
    named = [sorted(e["nodes"]) for e in data["errors"]]
    assert ["a", "b"] in named
    assert ["c"] in named
    result.assert_no_traceback()


def test_run_a_template_prints_the_run_object_and_the_run_id(hermes: Hermes) -> None:
    _setup(hermes)
    (hermes.cwd / "go").write_text("now")
    result = hermes("plan", "run", "book-meeting", "--param", "room=R2", "--json")
    assert result.returncode == 0, result
    data = result.json()
    assert set(data) == {"run_id", "status", "nodes"}
    assert data["status"] == "succeeded"
    assert f"run_id: {data['run_id']}" in result.stderr
    assert data["nodes"]["book"] == {
        "status": "succeeded", "result": {"booking": "b-R2", "room_id": "R2"}
    }  # fmt: skip
    assert data["nodes"]["invite"]["result"] == "sent"
    assert _effects(hermes) == ["book R2", "invite b-R2"]
    listed = hermes("plan", "list", "--json")
    assert listed.returncode == 0, listed
    [entry] = listed.json()
    assert entry["run_id"] == data["run_id"]
    assert entry["plan"] == "book-meeting"
    assert entry["status"] == "succeeded"


def test_a_failed_run_is_compensated_and_exits_3(hermes: Hermes) -> None:
    _setup(hermes, last_tool="broken")
    (hermes.cwd / "go").write_text("now")
    result = hermes("plan", "run", "book-meeting", "--param", "room=R1", "--json")
    assert result.returncode == 3, result
    data = result.json()
    assert data["status"] == "compensated"
    assert data["nodes"]["book"]["status"] == "compensated"
    assert data["nodes"]["invite"]["status"] == "failed"
    assert data["nodes"]["invite"]["error"]["type"] == "execution_error"
    assert _effects(hermes) == ["book R1", "cancel b-R1"]


def test_refusals_exit_2(hermes: Hermes) -> None:
    _setup(hermes)
    missing = hermes("plan", "run", "no-such-template", "--json")
    assert missing.returncode == 2, missing
    assert missing.json()["error"]["type"] == "template_not_found"
    no_param = hermes("plan", "run", "book-meeting", "--json")
    assert no_param.returncode == 2, no_param
    assert no_param.json()["error"]["type"] == "invalid_plan"
    assert "room" in no_param.json()["error"]["message"]
    bad_pair = hermes("plan", "run", "book-meeting", "--param", "room", "--json")
    assert bad_pair.returncode == 2, bad_pair
    unknown = hermes("plan", "resume", "plan-000000000000000000000000", "--json")
    assert unknown.returncode == 2, unknown
    assert unknown.json()["error"]["type"] == "run_not_found"
    assert _effects(hermes) == []


def test_kill_9_mid_plan_then_resume_repeats_no_side_effect(hermes: Hermes) -> None:
    _setup(hermes)
    process = subprocess.Popen(
        [hermes.executable, "plan", "run", "book-meeting", "--param", "room=R7"],
        cwd=hermes.cwd,
        env=hermes.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not (hermes.cwd / "waiting").exists():
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the plan never reached its waiting node"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
    run_id = next(
        line.split(":", 1)[1].strip()
        for line in stderr.decode().splitlines()
        if line.startswith("run_id:")
    )
    assert _effects(hermes) == ["book R7"]
    (hermes.cwd / "go").write_text("now")
    resumed = hermes("plan", "resume", run_id, "--json")
    assert resumed.returncode == 0, resumed
    data = resumed.json()
    assert data["run_id"] == run_id
    assert data["status"] == "succeeded"
    assert {node: v["status"] for node, v in data["nodes"].items()} == {
        "book": "succeeded", "wait": "succeeded", "invite": "succeeded"
    }  # fmt: skip
    assert _effects(hermes) == ["book R7", "invite b-R7"]  # the booking was not repeated
    again = hermes("plan", "resume", run_id, "--json")
    assert again.returncode == 0, again
    assert _effects(hermes) == ["book R7", "invite b-R7"]
