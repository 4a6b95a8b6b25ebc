"""``hermes trace TRACE_ID [--json]`` (DESIGN.md "More CLI"; seed 002 §4.3): after a real
``hermes run``, and over large and rotated logs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.channels.conftest import Hermes

from hermes.channels.cli.trace_cmd import collect_steps, log_files, read_log_steps

STEP_KEYS = {"module", "event", "at", "ms", "detail"}


@pytest.fixture
def hermes(tmp_path: Path) -> Hermes:
    return Hermes(tmp_path / "work", tmp_path / "home")


def test_trace_shows_the_chain_of_a_real_run(hermes: Hermes) -> None:
    run = hermes("run", "what is 15*27?", "--json")
    assert run.returncode == 0, run
    trace_id = run.json()["trace_id"]
    traced = hermes("trace", trace_id, "--json")
    assert traced.returncode == 0, traced
    body = traced.json()
    assert set(body) == {"trace_id", "steps"}
    assert body["trace_id"] == trace_id
    steps = body["steps"]
    assert all(set(step) == STEP_KEYS for step in steps)
    events = [(s["module"], s["event"]) for s in steps]
    assert ("agent", "model_call") in events
    assert ("agent", "tool_call") in events
    assert ("agent", "turn_finished") in events
    # The stored items of the turn: the user's message first, the reply.
    items = [s for s in steps if s["module"] == "session"]
    assert items[0]["detail"]["role"] == "user"
    assert items[0]["ms"] is None
    assert any(s["detail"].get("role") == "assistant" for s in items)
    assert [s["at"] for s in steps] == sorted(s["at"] for s in steps)
    finished = next(s for s in steps if s["event"] == "turn_finished")
    assert isinstance(finished["ms"], float)

    human = hermes("trace", trace_id)
    assert human.returncode == 0, human
    assert "turn_finished" in human.stdout
    assert "model_call" in human.stdout
    assert "total" in human.stderr
    assert "总耗时" in human.stderr


def test_an_unknown_trace_is_refused_with_exit_2(hermes: Hermes) -> None:
    assert hermes("run", "hello").returncode == 0
    result = hermes("trace", "0" * 32)
    assert result.returncode == 2, result
    assert "no trace" in result.stderr
    assert "没有追踪" in result.stderr
    result.assert_no_traceback()
    as_json = hermes("trace", "0" * 32, "--json")
    assert as_json.returncode == 2
    assert as_json.json()["error"]["type"] == "invalid_input"


@pytest.mark.parametrize("bad", ["short", "has space in it", "x" * 200, "-leading-dash-id"])
def test_an_invalid_trace_id_is_refused_with_exit_2(hermes: Hermes, bad: str) -> None:
    result = hermes("trace", "--json", "--", bad)
    assert result.returncode == 2, result
    assert result.json()["error"]["type"] == "invalid_id"


def _line(trace_id: str, event: str, second: int, **extra: object) -> str:
    data = {
        "timestamp": f"2026-01-01T00:00:{second:02d}.000000Z",
        "level": "info",
        "event": event,
        "module": "agent",
        "trace_id": trace_id,
        "session_id": "session-0001",
        "cost_ms": 1.5,
        **extra,
    }
    return json.dumps(data)


def test_rotated_files_are_read_oldest_first(tmp_path: Path) -> None:
    log = tmp_path / "hermes.log"
    trace = "a" * 32
    (tmp_path / "hermes.log.2").write_text(_line(trace, "model_call", 1) + "\n")
    (tmp_path / "hermes.log.1").write_text(_line(trace, "tool_call", 2) + "\n")
    log.write_text(_line(trace, "turn_finished", 3) + "\nnot json " + trace + "\n")
    assert log_files(log) == [tmp_path / "hermes.log.2", tmp_path / "hermes.log.1", log]
    steps, sessions = read_log_steps(log_files(log), trace)
    assert [s.event for s in steps] == ["model_call", "tool_call", "turn_finished"]
    assert sessions == {"session-0001"}
    assert steps[0].ms == 1.5
    assert steps[0].detail == {"session_id": "session-0001"}


async def test_a_large_log_is_streamed_fast(tmp_path: Path) -> None:
    log = tmp_path / "hermes.log"
    trace, other = "b" * 32, "c" * 32
    noise = _line(other, "tool_call", 5, tool="calculator", ok=True) + "\n"
    with log.open("w") as f:
        for _ in range(100):
            f.write(noise * 2000)  # 200,000 lines of other traces (~50 MB)
        f.write(_line(trace, "turn_finished", 9) + "\n")
    size_mb = log.stat().st_size / 1e6
    started = time.perf_counter()
    steps = await collect_steps(log, None, trace)
    elapsed = time.perf_counter() - started
    assert [s.event for s in steps] == ["turn_finished"]
    assert elapsed < 5.0, f"{elapsed:.2f} s for {size_mb:.0f} MB"


async def test_the_items_of_a_recent_trace_cost_a_page_whatever_the_session_length(
    tmp_path: Path,
) -> None:
    """Principle 5: a long session is read backwards from its newest item, page by page, and
    the scan stops once the trace's block is behind it."""
    import time as clock

    from hermes.channels.cli.trace_cmd import read_item_steps
    from hermes.session.items import Item
    from hermes.storage.open import open_store

    store = open_store(tmp_path / "h.db")
    try:
        old = [
            Item("user", "text", f"m{n}", trace_id=f"old-trace-{n // 2:06d}") for n in range(6000)
        ]
        store.bulk_import("session-0001", "u1", old)
        recent = "f" * 32
        await store.append(
            "session-0001",
            [
                Item("user", "text", "hi", trace_id=recent),
                Item("assistant", "text", "hello", trace_id=recent),
            ],
        )
        reads = 0
        real = store.read_items

        async def counted(*args: object, **kwargs: object) -> list[Item]:
            nonlocal reads
            reads += 1
            return await real(*args, **kwargs)  # type: ignore[arg-type]

        store.read_items = counted  # type: ignore[method-assign]
        steps = await read_item_steps(store, "session-0001", recent, clock.time())
    finally:
        await store.close()
    assert [s.detail["content"] for s in steps] == ["hi", "hello"]
    assert [s.detail["seq"] for s in steps] == [6001, 6002]
    assert reads <= 2
