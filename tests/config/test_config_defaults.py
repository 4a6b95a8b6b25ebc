"""With no file, or an empty one, Hermes runs on the embedded defaults."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hermes.config import (
    AgentConfig,
    HermesConfig,
    LoggingConfig,
    StoreConfig,
    ToolsConfig,
)


def test_no_file_anywhere_gives_embedded_defaults(place):
    loaded = place.load()
    assert loaded.source is None
    assert loaded.config == HermesConfig()
    assert loaded.base_dir == place.cwd


def test_defaults_select_the_offline_brain_and_sqlite_under_dot_hermes(place):
    loaded = place.load()
    assert loaded.config.model is None
    assert loaded.store_path == place.cwd / ".hermes" / "hermes.db"
    assert loaded.log_file == place.cwd / ".hermes" / "logs" / "hermes.log"


def test_default_values_match_the_documented_ones():
    config = HermesConfig()
    assert config.agent == AgentConfig(
        instructions=None,
        max_iterations=8,
        turn_timeout=120,
        context_rounds=12,
        context_budget_tokens=6000,
        max_message_chars=100_000,
        summary_min_backlog=8,
        max_unknown_tools=3,
    )
    assert config.store == StoreConfig(path=".hermes/hermes.db")
    assert config.logging == LoggingConfig(file=".hermes/logs/hermes.log", level="INFO")
    assert config.brain.intents == []
    assert config.tools == ToolsConfig(builtins=["calculator", "current_time"], workspace=".")


def test_empty_file_gives_defaults(place, load_text):
    loaded = load_text("")
    assert loaded.source == place.cwd / "hermes.yaml"
    assert loaded.config == HermesConfig()


def test_comment_only_file_gives_defaults(load_text):
    assert load_text("# nothing here yet\n").config == HermesConfig()


def test_section_with_every_key_commented_out_gives_that_sections_defaults(load_text):
    loaded = load_text("agent:\n  # max_iterations: 3\nstore:\n")
    assert loaded.config.agent == AgentConfig()
    assert loaded.config.store == StoreConfig()


def test_model_null_selects_the_offline_brain(load_text):
    assert load_text("model: null\n").config.model is None


def test_partial_section_keeps_other_defaults(load_text):
    config = load_text("agent:\n  max_iterations: 3\n").config
    assert config.agent.max_iterations == 3
    assert config.agent.context_rounds == 12


def test_model_section_gets_its_defaults(load_text):
    model = load_text("model:\n  base_url: http://127.0.0.1:8000/v1\n  model: qwen\n").config.model
    assert model is not None
    assert (model.provider, model.temperature, model.timeout, model.connect_timeout) == (
        "openai_compatible",
        0.2,
        60,
        10,
    )
    assert (model.max_retries, model.tool_mode, model.stream, model.extra_headers) == (
        2,
        "native",
        False,
        {},
    )
    assert model.api_key is None
    assert model.max_tokens is None


def test_empty_api_key_means_no_key(load_text):
    text = "model:\n  base_url: http://h/v1\n  model: m\n  api_key: ''\n"
    model = load_text(text).config.model
    assert model is not None
    assert model.api_key is None


def test_log_level_is_accepted_in_any_case(load_text):
    assert load_text("logging:\n  level: debug\n").config.logging.level == "DEBUG"


def test_logging_file_null_disables_the_log_file(load_text):
    loaded = load_text("logging:\n  file: null\n")
    assert loaded.log_file is None


def test_relative_paths_resolve_against_the_run_directory(place, load_text):
    loaded = load_text(
        "store:\n  path: data/h.db\ntools:\n  workspace: ws\nbrain:\n  intents: [mine.yaml]\n"
    )
    assert loaded.store_path == place.cwd / "data" / "h.db"
    assert loaded.workspace == place.cwd / "ws"
    assert loaded.intent_files == [place.cwd / "mine.yaml"]


def test_absolute_paths_are_kept(place, load_text, tmp_path):
    target = tmp_path / "elsewhere" / "h.db"
    assert load_text(f"store:\n  path: {target}\n").store_path == target


def test_loaded_config_is_immutable(load_text):
    config = load_text("").config
    with pytest.raises(ValidationError):
        config.agent.max_iterations = 99  # type: ignore[misc]
