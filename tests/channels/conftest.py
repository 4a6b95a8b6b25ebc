"""Run the real ``hermes`` console script as a subprocess, isolated in a temporary directory.

Every run gets its own working directory and ``HOME`` (so no user configuration leaks in),
no ``HERMES_*`` variables unless a test sets them, and a timeout.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TIMEOUT_SECONDS = 60
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
RUN_JSON_KEYS = {"reply", "session_id", "state", "tool_calls", "trace_id"}
FSM_STATES = {
    "idle",
    "parsing_intent",
    "collecting_parameters",
    "executing_tool",
    "awaiting_feedback",
    "awaiting_confirmation",
}


def hermes_executable() -> str:
    """The console script installed beside this interpreter (the project's venv), else PATH's."""
    beside = Path(sys.executable).parent / "hermes"
    if beside.is_file():
        return str(beside)
    found = shutil.which("hermes")
    if found is None:
        pytest.fail("the `hermes` console script is not installed (pip install -e .)")
    return found


@dataclass(frozen=True, slots=True)
class Result:
    """What one ``hermes`` process did."""

    args: tuple[str, ...]
    returncode: int
    stdout_bytes: bytes
    stderr_bytes: bytes

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """stdout parsed as exactly one JSON document (fails the test otherwise)."""
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError as exc:
            pytest.fail(f"stdout of {self.args} is not one JSON document ({exc}): {self.stdout!r}")

    def assert_no_traceback(self) -> None:
        for name, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            assert "Traceback" not in text, f"{name} of {self.args} shows a traceback:\n{text}"

    def __str__(self) -> str:
        return (
            f"hermes {' '.join(self.args)} -> {self.returncode}\n"
            f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"
        )


class Hermes:
    """Runs ``hermes`` in ``cwd`` with ``HOME=home``."""

    def __init__(self, cwd: Path, home: Path) -> None:
        cwd.mkdir(parents=True, exist_ok=True)
        home.mkdir(parents=True, exist_ok=True)
        self.cwd = cwd
        self.home = home
        self.executable = hermes_executable()

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if (not name.startswith("HERMES_") or name == "HERMES_CACHE_DIR")
            and name not in ("FORCE_COLOR", "NO_COLOR", "PYTHONWARNINGS")
        }
        env["HOME"] = str(self.home)
        env.update(extra or {})
        return env

    def __call__(
        self,
        *args: str | bytes,
        stdin: bytes | str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        completed = subprocess.run(
            [self.executable, *args],
            cwd=self.cwd,
            env=self.env(env),
            input=data if data is not None else b"",
            capture_output=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
        shown = tuple(a if isinstance(a, str) else repr(a) for a in args)
        return Result(shown, completed.returncode, completed.stdout, completed.stderr)

    @property
    def data_dir(self) -> Path:
        """The default ``./.hermes`` directory of the embedded configuration."""
        return self.cwd / ".hermes"


@pytest.fixture
def hermes(tmp_path: Path) -> Hermes:
    """``hermes`` in a fresh working directory, with a fresh ``HOME``."""
    return Hermes(tmp_path / "work", tmp_path / "home")


def write_config(directory: Path, text: str, name: str = "hermes.yaml") -> Path:
    """Write a configuration file and return its path."""
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


CONVERSATION_SESSION = "cli-conversation-0001"


@dataclass(frozen=True, slots=True)
class Conversation:
    """Two ``run --json`` turns of one session, in two processes, in one working directory."""

    hermes: Hermes
    first: Result
    second: Result


@pytest.fixture(scope="session")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    """'15乘以27' then '再加100呢？' in session ``CONVERSATION_SESSION``.

    The first run forces colour and a 20-column terminal: neither may touch the JSON.
    """
    root = tmp_path_factory.mktemp("conversation")
    hermes = Hermes(root / "work", root / "home")
    hostile_terminal = {"FORCE_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "20"}
    first = hermes(
        "run", "15乘以27", "--session", CONVERSATION_SESSION, "--json", env=hostile_terminal
    )
    second = hermes("run", "再加100呢？", "--session", CONVERSATION_SESSION, "--json")
    return Conversation(hermes, first, second)
