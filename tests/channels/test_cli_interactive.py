"""``hermes chat`` driven through standard input, and the offline ``hermes demo``."""

from __future__ import annotations

from tests.channels.conftest import ANSI_ESCAPE, Hermes


def reply_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("hermes ")]


def test_demo_runs_offline_to_the_end_without_touching_the_cwd(hermes: Hermes) -> None:
    tmpdir = hermes.cwd.parent / "tmp"
    tmpdir.mkdir()
    result = hermes("demo", env={"TMPDIR": str(tmpdir)})
    assert result.returncode == 0, result
    result.assert_no_traceback()
    expected = ("405", "505", "≈ 2.333333", "请问要计算什么", "126", "预订工具", "23.5")
    for piece in (*expected, "好的，我记住了：用户住在上海。", "- 用户住在上海。"):
        assert piece in result.stdout, result
    assert ANSI_ESCAPE.search(result.stdout) is None
    assert list(hermes.cwd.iterdir()) == [], "the demo must not write to the working directory"
    assert list(tmpdir.iterdir()) == [], "the demo must remove its temporary database"


def test_chat_reads_lines_until_exit_and_survives_a_bad_line(hermes: Hermes) -> None:
    stdin = "15乘以27\n".encode() + b"\xff\xfe oops\n" + "再加100呢？\n/exit\n15乘以27\n".encode()
    result = hermes("chat", "--session", "chat-piped-0001", stdin=stdin)
    assert result.returncode == 0, result
    result.assert_no_traceback()
    replies = reply_lines(result.stdout)
    assert len(replies) == 2, result  # the line after /exit is never read
    assert "405" in replies[0]
    assert "505" in replies[1]
    assert "UTF-8" in result.stderr
    assert "chat-piped-0001" in result.stdout


def test_chat_ends_cleanly_at_end_of_input(hermes: Hermes) -> None:
    result = hermes("chat", stdin="what is 2 to the power of 10?")
    assert result.returncode == 0, result
    result.assert_no_traceback()
    (reply,) = reply_lines(result.stdout)
    assert "1024" in reply


def test_chat_with_a_bad_session_id_stops_before_reading(hermes: Hermes) -> None:
    result = hermes("chat", "--session", "bad", stdin="15乘以27\n")
    assert result.returncode == 2, result
    result.assert_no_traceback()
    assert "session id" in result.stderr
    assert reply_lines(result.stdout) == []
