"""The entry point's last line of defence, and output under a terminal that is not UTF-8."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from hermes.channels.cli import DEBUG_ENV_VAR, app, main
from tests.channels.conftest import Hermes

EXPLODING_COMMAND = "explode-for-test"


@pytest.fixture
def exploding_command(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A command that raises an unexpected exception, registered only for this test.

    Typer installs its own ``sys.excepthook`` when the app runs; monkeypatch restores ours.
    """

    @app.command(EXPLODING_COMMAND)
    def explode() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(sys, "argv", ["hermes", EXPLODING_COMMAND])
    try:
        yield
    finally:
        app.registered_commands = [
            c for c in app.registered_commands if c.name != EXPLODING_COMMAND
        ]


@pytest.mark.usefixtures("exploding_command")
def test_an_unexpected_exception_is_one_line_and_exit_code_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(DEBUG_ENV_VAR, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "internal error" in lines[0]
    assert "RuntimeError: boom" in lines[0]
    assert DEBUG_ENV_VAR in lines[0]


@pytest.mark.usefixtures("exploding_command")
def test_hermes_debug_shows_the_real_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEBUG_ENV_VAR, "1")
    with pytest.raises(RuntimeError, match="boom"):
        main()


def test_json_output_is_utf8_whatever_the_terminal_encoding(hermes: Hermes) -> None:
    result = hermes("run", "你好", "--json", env={"PYTHONIOENCODING": "latin-1"})
    assert result.returncode == 0, result
    assert "你好" in result.json()["reply"]


def test_text_output_escapes_what_the_terminal_cannot_encode(hermes: Hermes) -> None:
    result = hermes("run", "你好", env={"PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0, result
    result.assert_no_traceback()
    assert "\\u4f60\\u597d" in result.stdout  # 你好, escaped instead of a crash
