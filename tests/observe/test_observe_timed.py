"""``timed`` logs how long a block took, and how it failed."""

from __future__ import annotations

import asyncio

import pytest

from hermes.errors import ToolTimeoutError
from hermes.observe import configure_logging, get_logger, log_context, timed


def test_timed_logs_cost_ms_and_its_fields(log_file, read_lines):
    configure_logging(log_file)
    with timed(get_logger("tools"), "tool_call", tool="add") as span:
        span.add(ok=True)
    line = read_lines()[0]
    assert line["event"] == "tool_call"
    assert line["level"] == "info"
    assert (line["tool"], line["ok"]) == ("add", True)
    assert isinstance(line["cost_ms"], float)
    assert line["cost_ms"] >= 0
    assert span.cost_ms == line["cost_ms"]


def test_timed_lines_carry_the_turn_context(log_file, read_lines):
    configure_logging(log_file)
    with (
        log_context(msg_id="m1", trace_id="t1", session_id="s1"),
        timed(get_logger("models"), "model_call"),
    ):
        pass
    line = read_lines()[0]
    assert (line["msg_id"], line["trace_id"], line["session_id"]) == ("m1", "t1", "s1")
    assert "cost_ms" in line


def test_timed_at_debug_level_is_dropped_at_info(log_file, read_lines):
    configure_logging(log_file, "INFO")
    with timed(get_logger("tools"), "cache_lookup", level="debug") as span:
        pass
    assert read_lines() == []
    assert span.cost_ms is not None


def test_a_failing_block_is_logged_as_an_error_and_reraised(log_file, read_lines):
    configure_logging(log_file)
    with pytest.raises(ValueError, match="bad"), timed(get_logger("tools"), "tool_call", tool="x"):
        raise ValueError("bad password=hunter2")
    line = read_lines()[0]
    assert line["level"] == "error"
    assert line["error_type"] == "ValueError"
    assert line["tool"] == "x"
    assert "cost_ms" in line
    assert "hunter2" not in str(line)  # arbitrary exception text may hold secrets


def test_a_hermes_error_message_is_logged(log_file, read_lines):
    configure_logging(log_file)
    with pytest.raises(ToolTimeoutError), timed(get_logger("tools"), "tool_call"):
        raise ToolTimeoutError("tool 'slow' timed out after 10s")
    line = read_lines()[0]
    assert line["error_type"] == "ToolTimeoutError"
    assert line["error"] == "tool 'slow' timed out after 10s"


async def test_a_cancelled_block_is_logged_as_a_warning(log_file, read_lines):
    configure_logging(log_file)

    async def slow() -> None:
        with timed(get_logger("agent"), "turn"):
            await asyncio.sleep(3600)

    task = asyncio.create_task(slow())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    line = read_lines()[0]
    assert line["level"] == "warning"
    assert line["error_type"] == "CancelledError"


def test_a_field_named_cost_ms_does_not_break_timed(log_file, read_lines):
    configure_logging(log_file)
    with timed(get_logger("tools"), "x", cost_ms=-1.0):
        pass
    assert read_lines()[0]["cost_ms"] >= 0
