"""hermes.observe.metrics: per-app registries fed by turn events (seed 002 §4.3)."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from tests.observe.obs_turns import drive, make_agent

from hermes.observe.metrics import UNKNOWN_TOOL, Metrics


def _value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


async def test_turn_model_tool_and_token_metrics(tmp_path: Path) -> None:
    agent = make_agent(str(tmp_path / "hermes.db"))
    metrics = Metrics(tool_names=agent.tools.names)
    try:
        await drive(agent, metrics.observe, "2+3", "session-0001")
        await drive(agent, metrics.observe, "call broken", "session-0002")
    finally:
        await agent.aclose()
    assert _value(metrics, "hermes_turns_total", outcome="ok") == 2
    assert _value(metrics, "hermes_turn_duration_seconds_count", outcome="ok") == 2
    assert _value(metrics, "hermes_tool_calls_total", tool="add", outcome="ok") == 1
    failed = [
        s
        for f in metrics.registry.collect()
        for s in f.samples
        if s.name == "hermes_tool_calls_total" and s.labels["tool"] == "broken"
    ]
    assert [s.labels["outcome"] for s in failed] == ["execution_error"]
    assert _value(metrics, "hermes_model_call_duration_seconds_count", model="function") == 4
    # Two model calls per turn, 10 + 4 tokens each.
    assert _value(metrics, "hermes_model_tokens_total", model="function", kind="prompt") == 40
    assert _value(metrics, "hermes_model_tokens_total", model="function", kind="completion") == 16


def test_unknown_tools_and_odd_error_types_share_one_label() -> None:
    from hermes.agent.events import ToolCallFinished

    metrics = Metrics(tool_names=lambda: ["add"])
    for n in range(50):
        event = ToolCallFinished(
            f"c{n}", f"invented_{n}", ok=False, cost_ms=1.0, error_type=f"X {n}!"
        )
        metrics.observe("t", "s", event)
    samples = [
        s
        for f in metrics.registry.collect()
        for s in f.samples
        if s.name == "hermes_tool_calls_total"
    ]
    assert [(s.labels, s.value) for s in samples] == [
        ({"tool": UNKNOWN_TOOL, "outcome": "error"}, 50.0)
    ]


def test_recall_listener_counts_recalls_and_hits() -> None:
    metrics = Metrics()
    metrics.recalled(0)
    metrics.recalled(3)
    assert _value(metrics, "hermes_memory_recalls_total") == 2
    assert _value(metrics, "hermes_memory_recall_hits_total") == 3


def test_registries_are_per_app_and_never_the_global_one() -> None:
    first, second = Metrics(), Metrics()
    first.recalled(1)
    assert _value(second, "hermes_memory_recalls_total") == 0
    assert REGISTRY.get_sample_value("hermes_memory_recalls_total") is None
    names = {f.name for f in text_string_to_metric_families(first.render().decode())}
    assert names
    assert all(n.startswith("hermes_") for n in names)


def test_turns_that_never_finish_do_not_grow_without_bound() -> None:
    from hermes.agent.events import TurnStarted
    from hermes.observe import metrics as module

    metrics = Metrics()
    for n in range(module.MAX_OPEN_TURNS + 10):
        metrics.observe(f"t{n}", "s", TurnStarted("s", f"t{n}", "m"))
    assert len(metrics._open_turns) == module.MAX_OPEN_TURNS
