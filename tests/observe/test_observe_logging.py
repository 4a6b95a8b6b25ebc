"""JSON lines with timestamp, level, event, module and the turn's ids (seed 002 §4.3)."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
import structlog

from hermes.errors import ConfigError
from hermes.observe import (
    bind_context,
    clear_context,
    configure_logging,
    get_context,
    get_logger,
    log_context,
)


def test_line_has_timestamp_level_event_and_module(log_file, read_lines):
    configure_logging(log_file)
    get_logger("agent").info("turn_started", rounds=3)
    [line] = read_lines()
    assert line["event"] == "turn_started"
    assert line["level"] == "info"
    assert line["module"] == "agent"
    assert line["rounds"] == 3
    stamp = datetime.fromisoformat(line["timestamp"])
    assert stamp.utcoffset() == UTC.utcoffset(None)
    assert line["timestamp"].endswith("Z")


def test_fields_are_laid_out_in_a_fixed_order(log_file, read_lines):
    configure_logging(log_file)
    with log_context(msg_id="m1", trace_id="t1", session_id="s1"):
        get_logger("tools").info("tool_call", tool="add", cost_ms=1.5)
    assert list(read_lines()[0]) == [
        "timestamp",
        "level",
        "event",
        "module",
        "msg_id",
        "trace_id",
        "session_id",
        "tool",
        "cost_ms",
    ]


def test_every_line_inside_log_context_carries_the_turn_ids(log_file, read_lines):
    configure_logging(log_file)
    agent, tools = get_logger("agent"), get_logger("tools")
    with log_context(msg_id="m1", trace_id="t1", session_id="s1"):
        agent.info("turn_started")
        tools.info("tool_call")
        agent.warning("turn_slow")
    for line in read_lines():
        assert (line["msg_id"], line["trace_id"], line["session_id"]) == ("m1", "t1", "s1")


def test_lines_after_log_context_no_longer_carry_the_ids(log_file, read_lines):
    configure_logging(log_file)
    log = get_logger("agent")
    with log_context(msg_id="m1", trace_id="t1", session_id="s1"):
        pass
    log.info("idle")
    assert "msg_id" not in read_lines()[0]


def test_nested_log_context_adds_fields_and_restores_the_outer_ones(log_file, read_lines):
    configure_logging(log_file)
    log = get_logger("agent")
    with log_context(trace_id="t1", session_id="s1"):
        with log_context(msg_id="m2", tool="add"):
            log.info("inner")
        log.info("outer")
    inner, outer = read_lines()
    assert (inner["trace_id"], inner["msg_id"], inner["tool"]) == ("t1", "m2", "add")
    assert "msg_id" not in outer
    assert "tool" not in outer


def test_none_values_in_log_context_are_skipped(log_file, read_lines):
    configure_logging(log_file)
    with log_context(msg_id="m1", trace_id=None, session_id=None):
        get_logger("agent").info("x")
    line = read_lines()[0]
    assert line["msg_id"] == "m1"
    assert "trace_id" not in line


def test_a_field_given_on_the_call_wins_over_the_context(log_file, read_lines):
    configure_logging(log_file)
    with log_context(session_id="s1"):
        get_logger("agent").info("moved", session_id="s2")
    assert read_lines()[0]["session_id"] == "s2"


async def test_concurrent_turns_never_mix_their_ids(log_file, read_lines):
    configure_logging(log_file)
    log = get_logger("agent")

    async def turn(msg_id: str) -> None:
        with log_context(msg_id=msg_id, trace_id=f"t-{msg_id}"):
            for step in range(3):
                log.info("step", step=step, expected=msg_id)
                await asyncio.sleep(0)

    await asyncio.gather(turn("a"), turn("b"), turn("c"))
    lines = read_lines()
    assert len(lines) == 9
    for line in lines:
        assert line["msg_id"] == line["expected"]
        assert line["trace_id"] == f"t-{line['expected']}"


def test_bind_context_persists_until_cleared(log_file, read_lines):
    configure_logging(log_file)
    log = get_logger("channels")
    bind_context(worker="w1", ignored=None)
    log.info("one")
    assert get_context() == {"worker": "w1"}
    clear_context()
    log.info("two")
    one, two = read_lines()
    assert one["worker"] == "w1"
    assert "ignored" not in one
    assert "worker" not in two


def test_get_context_is_read_only():
    with log_context(msg_id="m1"):
        context = get_context()
        with pytest.raises(TypeError):
            context["msg_id"] = "other"  # type: ignore[index]


def test_bound_logger_adds_its_fields_to_every_line(log_file, read_lines):
    configure_logging(log_file)
    log = get_logger("mcp").bind(server="github")
    log.info("connected")
    log.error("lost")
    assert [line["server"] for line in read_lines()] == ["github", "github"]
    assert {line["module"] for line in read_lines()} == {"mcp"}


def test_get_logger_returns_the_same_logger_for_a_module():
    assert get_logger("memory") is get_logger("memory")


def test_calls_below_the_level_are_dropped(log_file, read_lines):
    configure_logging(log_file, "WARNING")
    log = get_logger("agent")
    log.debug("d")
    log.info("i")
    log.warning("w")
    log.error("e")
    assert [line["event"] for line in read_lines()] == ["w", "e"]
    assert [line["level"] for line in read_lines()] == ["warning", "error"]


def test_debug_level_writes_debug_lines(log_file, read_lines):
    configure_logging(log_file, "debug")
    get_logger("agent").debug("details")
    assert read_lines()[0]["level"] == "debug"


def test_is_enabled_follows_the_configured_level(log_file):
    log = get_logger("agent")
    assert not log.is_enabled("ERROR")  # nothing is written before configure_logging
    configure_logging(log_file, "INFO")
    assert log.is_enabled("INFO")
    assert not log.is_enabled("DEBUG")


def test_exception_writes_the_traceback_at_error_level(log_file, read_lines):
    configure_logging(log_file)
    try:
        raise KeyError("missing")
    except KeyError:
        get_logger("agent").exception("lookup_failed")
    line = read_lines()[0]
    assert line["level"] == "error"
    assert "KeyError" in line["exception"]
    assert "Traceback" in line["exception"]


def test_chinese_text_is_written_readably(log_file):
    configure_logging(log_file)
    get_logger("agent").info("reply", text="已处理")
    assert "已处理" in log_file.read_text(encoding="utf-8")


def test_values_json_does_not_know_are_still_written(log_file, read_lines):
    configure_logging(log_file)
    when = datetime(2025, 1, 11, tzinfo=UTC)
    get_logger("agent").info("odd", when=when, where=Path("/x"), tags={"b", "a"}, obj=object())
    line = read_lines()[0]
    assert line["when"] == "2025-01-11T00:00:00+00:00"
    assert line["where"] == "/x"
    assert line["tags"] == ["a", "b"]
    assert line["obj"].startswith("<object object")


def test_nothing_is_written_before_configure_logging(log_file, capsys):
    get_logger("agent").error("early")
    assert not log_file.exists()
    assert capsys.readouterr().out == ""


def test_none_file_writes_nothing(log_file, read_lines, capsys):
    configure_logging(log_file)
    log = get_logger("agent")
    log.info("kept")
    configure_logging(None)
    log.error("dropped")
    structlog.get_logger().error("stray_dropped")
    assert [line["event"] for line in read_lines()] == ["kept"]
    assert capsys.readouterr().out == ""


def test_nothing_reaches_stdout_when_logging_to_a_file(log_file, capsys):
    configure_logging(log_file)
    get_logger("agent").info("to_file")
    structlog.get_logger().info("stray")
    assert capsys.readouterr().out == ""


def test_plain_structlog_loggers_land_in_the_same_file(log_file, read_lines):
    configure_logging(log_file)
    structlog.get_logger().info("from_library", password="hunter2")
    line = read_lines()[0]
    assert line["event"] == "from_library"
    assert line["password"] == "***"
    assert line["module"] is None


def test_parent_directories_are_created(tmp_path, read_lines):
    target = tmp_path / "a" / "b" / "c" / "h.log"
    configure_logging(target)
    get_logger("agent").info("x")
    assert target.exists()


def test_configure_logging_is_idempotent(log_file, read_lines):
    configure_logging(log_file)
    configure_logging(str(log_file))
    configure_logging(log_file, "info")
    get_logger("agent").info("once")
    assert len(read_lines()) == 1


def test_reconfiguring_moves_loggers_already_in_use(tmp_path, log_file, read_lines):
    log = get_logger("agent")
    configure_logging(log_file)
    log.info("first")
    second = tmp_path / "second.log"
    configure_logging(second)
    log.info("second")
    assert [line["event"] for line in read_lines()] == ["first"]
    assert '"event":"second"' in second.read_text(encoding="utf-8")


def test_changing_the_level_applies_to_loggers_already_in_use(log_file, read_lines):
    log = get_logger("agent")
    configure_logging(log_file, "INFO")
    log.debug("hidden")
    configure_logging(log_file, "DEBUG")
    log.debug("shown")
    assert [line["event"] for line in read_lines()] == ["shown"]


def test_appends_to_an_existing_log_file(log_file, read_lines):
    log_file.parent.mkdir(parents=True)
    log_file.write_text('{"event":"old"}\n', encoding="utf-8")
    configure_logging(log_file)
    get_logger("agent").info("new")
    assert [line["event"] for line in read_lines()] == ["old", "new"]


def test_unknown_level_is_a_config_error(log_file):
    with pytest.raises(ConfigError) as caught:
        configure_logging(log_file, "TRACE")
    assert caught.value.key == "logging.level"


def test_unopenable_file_is_a_config_error_naming_it(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        configure_logging(blocker / "h.log")
    assert caught.value.key == "logging.file"
    assert caught.value.file == str(blocker / "h.log")


def test_lines_from_many_threads_stay_whole(log_file, read_lines):
    configure_logging(log_file)
    log = get_logger("tools")

    def work(worker: int) -> None:
        for index in range(200):
            log.info("tick", worker=worker, index=index, pad="x" * 200)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = read_lines()  # every line parses as JSON
    assert len(lines) == 800
    assert {(line["worker"], line["index"]) for line in lines} == {
        (w, i) for w in range(4) for i in range(200)
    }
