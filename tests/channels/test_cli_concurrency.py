"""Several real ``hermes run`` processes on one session, and processes killed mid-turn.

The model is the fake chat server on 127.0.0.1 (in this process): every answer takes 0.25 s,
the first of a turn asks for the ``pause`` plugin tool (0.25 s), the second replies. What the
processes did is read back from the SQLite file itself: each turn's items must be one
contiguous run of seqs and every tool call must have its result; an invocation that finds the
session claimed waits its turn (bounded), or is refused cleanly (exit 2, ``session_busy``,
nothing of it stored).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.channels.conftest import TIMEOUT_SECONDS, Hermes, Result, write_config
from tests.models.fake_chat_server import FakeChatServer, Reply, ScriptedCall

SESSION = "shared-session-0001"
MODEL_DELAY_S = 0.25
PAUSE_S = 0.25
# The slow tool: it marks its start with a file (where the crash tests wait), then sleeps.
PLUGIN = '''
import os
import time
from pathlib import Path

from hermes import tool


@tool
def pause(seconds: float) -> str:
    """Wait a moment, then say so (a slow tool for the crash tests)."""
    Path(f"pause-started-{os.getpid()}").touch()
    time.sleep(seconds)
    return "paused"
'''
# The offline brain calls it for "pause …" (no model: a process starts in half the time).
INTENTS = f"""
version: 1
intents:
  - name: pause
    description: {{zh: 稍等, en: Pause a moment}}
    priority: 90
    patterns: ['\\bpause\\b']
    tool: pause
    args: {{seconds: {PAUSE_S}}}
    reply: {{zh: "好了", en: "Paused as asked."}}
"""


def _respond(body: dict[str, Any]) -> Reply:
    if body["messages"][-1]["role"] == "tool":
        return Reply.text("Paused as asked.", delay=MODEL_DELAY_S)
    return Reply.calls(ScriptedCall("pause", {"seconds": PAUSE_S}), delay=MODEL_DELAY_S)


@pytest.fixture
def slow_model() -> Iterator[FakeChatServer]:
    with FakeChatServer(responder=_respond) as server:
        yield server


def _configure(
    hermes: Hermes, server: FakeChatServer | None = None, turn_timeout: float = 30
) -> None:
    """The pause plugin, and the fake model when ``server`` is given, else the offline brain
    with an intent that calls it."""
    (hermes.cwd / "plugins").mkdir(parents=True, exist_ok=True)
    (hermes.cwd / "plugins" / "pause.py").write_text(PLUGIN, encoding="utf-8")
    if server is None:
        (hermes.cwd / "intents.yaml").write_text(INTENTS, encoding="utf-8")
        model = "brain:\n  intents: [intents.yaml]\n"
    else:
        model = (
            "model:\n"
            f"  base_url: {server.base_url}\n"
            "  model: fake-model\n"
            "  max_retries: 0\n"
            "  timeout: 10\n"
        )
    write_config(
        hermes.cwd,
        model + f"agent:\n  turn_timeout: {turn_timeout}\ntools:\n  plugins_dir: plugins\n",
    )


@dataclass(frozen=True, slots=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def _spawn(hermes: Hermes, text: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [hermes.executable, "run", text, "--session", SESSION, "--json"],
        cwd=hermes.cwd,
        env=hermes.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _finish(proc: subprocess.Popen[bytes]) -> Finished:
    out, err = proc.communicate(timeout=TIMEOUT_SECONDS)
    return Finished(proc.returncode, out.decode("utf-8"), err.decode("utf-8", "replace"))


def _log(hermes: Hermes) -> list[tuple[int, str, str, str, str | None, str]]:
    """(seq, trace_id, role, kind, tool_call_id, content) of the session, straight from disk."""
    conn = sqlite3.connect(hermes.data_dir / "hermes.db")
    try:
        rows = conn.execute(
            "SELECT seq, trace_id, role, kind, tool_call_id, content FROM items "
            "WHERE session_id = ? ORDER BY seq",
            (SESSION,),
        ).fetchall()
    finally:
        conn.close()
    return [tuple(r) for r in rows]


def _state(hermes: Hermes) -> str:
    conn = sqlite3.connect(hermes.data_dir / "hermes.db")
    try:
        (state,) = conn.execute(
            "SELECT fsm_state FROM sessions WHERE session_id = ?", (SESSION,)
        ).fetchone()
    finally:
        conn.close()
    return str(state)


def _assert_turns_contiguous(log: list[tuple[int, str, str, str, str | None, str]]) -> None:
    """No two turns interleave: the items of each trace form one unbroken run of seqs."""
    runs: list[str] = []
    for _, trace, *_rest in log:
        if not runs or runs[-1] != trace:
            runs.append(trace)
    assert len(runs) == len(set(runs)), f"turns interleave in the log: {runs}"
    assert [row[0] for row in log] == list(range(1, len(log) + 1))


def _assert_pairs_complete(log: list[tuple[int, str, str, str, str | None, str]]) -> None:
    calls = [row[4] for row in log if row[3] == "tool_call"]
    results = [row[4] for row in log if row[3] == "tool_result"]
    assert sorted(calls) == sorted(results), f"calls {calls} vs results {results}"


def test_four_processes_on_one_session_never_interleave(
    hermes: Hermes, slow_model: FakeChatServer
) -> None:
    _configure(hermes, slow_model)
    procs = [_spawn(hermes, f"pause please, number {n}") for n in range(4)]
    finished = [_finish(p) for p in procs]
    log = _log(hermes)
    _assert_turns_contiguous(log)
    _assert_pairs_complete(log)
    # A process finding the session claimed waits for it (at most its turn timeout, 30 s
    # here): under this load every invocation completes, one whole turn after another.
    for run in finished:
        assert run.returncode == 0, run
        assert "Traceback" not in run.stderr, run.stderr
    replies = [run.json() for run in finished]
    assert [r["reply"] for r in replies] == ["Paused as asked."] * 4
    turns = {row[1]: [(r[2], r[3]) for r in log if r[1] == row[1]] for row in log}
    assert sorted(turns) == sorted(r["trace_id"] for r in replies)
    for shape in turns.values():
        assert shape == [
            ("user", "text"),
            ("assistant", "tool_call"),
            ("tool", "tool_result"),
            ("assistant", "text"),
        ]
    users = sorted(row[5] for row in log if row[2] == "user")
    assert users == [f"pause please, number {n}" for n in range(4)]  # each message once


def test_a_run_on_a_session_another_process_holds_is_refused_cleanly(hermes: Hermes) -> None:
    from hermes.storage.sqlite.session_locks import FileSessionLocks

    _configure(hermes, turn_timeout=1)
    hermes.data_dir.mkdir(parents=True)
    locks = FileSessionLocks(hermes.data_dir / "hermes.db")

    async def while_held() -> Result:
        # This process holds the session's OS lock (beside the database) for longer than the
        # newcomer's turn timeout, its bound for waiting.
        async with locks.claim(SESSION, wait=0):
            return await asyncio.to_thread(
                hermes, "run", "pause please", "--session", SESSION, "--json"
            )

    try:
        refused = asyncio.run(while_held())
    finally:
        locks.close()
    assert refused.returncode == 2, refused
    refused.assert_no_traceback()
    error = refused.json()["error"]
    assert error["type"] == "session_busy"
    assert SESSION in error["message"]
    assert "会话" in error["message"]  # one sentence, English and Chinese
    assert _log(hermes) == []  # nothing of the refused turn was stored


def _kill_at_random_point(hermes: Hermes, phase: str, rng: random.Random) -> None:
    """Start a turn and SIGKILL it: at any moment of its first 1.5 s (``start``: starting,
    claiming, storing the message, or already in the tool), or while its slow tool runs."""
    proc = _spawn(hermes, "pause please")
    if phase == "start":
        time.sleep(rng.uniform(0.0, 1.5))
    else:
        deadline = time.monotonic() + TIMEOUT_SECONDS
        marker = hermes.cwd / f"pause-started-{proc.pid}"
        while not marker.exists() and proc.poll() is None:
            assert time.monotonic() < deadline, "the turn never reached its tool"
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, PAUSE_S * 0.8))
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=TIMEOUT_SECONDS)


@pytest.mark.parametrize(("phase", "seed"), [("start", 1), ("tool", 2), ("tool", 3), ("tool", 4)])
def test_the_turn_after_a_sigkill_recovers_at_once(hermes: Hermes, phase: str, seed: int) -> None:
    # A turn timeout of a minute: the old rule would have refused the next turn for 65 s.
    _configure(hermes, turn_timeout=60)
    _kill_at_random_point(hermes, phase, random.Random(seed))
    database = hermes.data_dir / "hermes.db"
    left = _state(hermes) if database.exists() and _log(hermes) else "idle"
    after = hermes("run", "pause again", "--session", SESSION, "--json")
    # Not "session_busy … repaired after 65 s": the dead process's lock died with it.
    assert after.returncode == 0, after
    data = after.json()
    assert data["reply"] == "Paused as asked."
    assert data["state"] == "awaiting_feedback"
    log = _log(hermes)
    _assert_turns_contiguous(log)
    _assert_pairs_complete(log)
    assert _state(hermes) == "awaiting_feedback"
    # The dead turn's call got its result from the next turn (its trace id), before its message.
    repairs = [r for r in log if r[3] == "tool_result" and '"interrupted"' in r[5]]
    assert all(r[1] == data["trace_id"] for r in repairs)
    if left == "executing_tool":
        assert len(repairs) == 1
