"""The ``memory:`` section of hermes.yaml: its bounds, each refused naming its key, and the
``auto``/``off`` switches that YAML 1.1 would otherwise read as booleans."""

from __future__ import annotations

import pytest

from hermes.errors import ConfigError


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("threshold: 1.5", "memory.threshold"),
        ("threshold: -0.1", "memory.threshold"),
        ("recall_max_items: 0", "memory.recall_max_items"),
        ("recall_max_items: 21", "memory.recall_max_items"),
        ("recency_days: 0", "memory.recency_days"),
        ("semantic: maybe", "memory.semantic"),
        ("cross_language: maybe", "memory.cross_language"),
        ("extraction: sometimes", "memory.extraction"),
    ],
)
def test_out_of_range_values_are_refused_naming_the_key(load_text, line: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_text(f"memory:\n  {line}\n")
    assert info.value.key == key
    assert f"{key}: " in str(info.value)
    assert info.value.file is not None
    assert info.value.file.endswith("hermes.yaml")


def test_the_bounds_themselves_are_accepted(load_text) -> None:
    low = load_text("memory:\n  threshold: 0\n  recall_max_items: 1\n").config.memory
    assert (low.threshold, low.recall_max_items) == (0, 1)
    high = load_text("memory:\n  threshold: 1\n  recall_max_items: 20\n").config.memory
    assert (high.threshold, high.recall_max_items) == (1, 20)
    assert load_text("memory:\n  recency_days: 0.5\n").config.memory.recency_days == 0.5


@pytest.mark.parametrize("key", ["semantic", "cross_language", "extraction"])
@pytest.mark.parametrize(
    ("value", "expected"),
    [("on", "auto"), ("off", "off"), ("yes", "auto"), ("no", "off"), ("auto", "auto")],
)
def test_bare_yaml_on_and_off_mean_auto_and_off(
    load_text, key: str, value: str, expected: str
) -> None:
    memory = load_text(f"memory:\n  {key}: {value}\n").config.memory
    assert getattr(memory, key) == expected


def test_quoted_off_is_off_too(load_text) -> None:
    assert load_text("memory:\n  semantic: 'off'\n").config.memory.semantic == "off"
