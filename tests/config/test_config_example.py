"""The shipped hermes.yaml.example loads, validates and documents every key."""

from __future__ import annotations

import re

import pytest
import yaml

from hermes.config import EXAMPLE_CONFIG, HermesConfig, ModelConfig


def test_example_loads_and_validates_with_an_empty_environment(load_text):
    config = load_text(EXAMPLE_CONFIG).config
    assert config.model is not None
    assert config.model.base_url.startswith("http://127.0.0.1")
    assert config.model.api_key is None


def test_example_values_equal_the_defaults_outside_the_model_section(load_text):
    config = load_text(EXAMPLE_CONFIG).config
    assert config.model_copy(update={"model": None}) == HermesConfig()


def test_example_takes_model_settings_from_the_environment(load_text):
    environ = {
        "HERMES_BASE_URL": "http://127.0.0.1:11434/v1",
        "HERMES_API_KEY": "k",
        "HERMES_MODEL": "q",
    }
    model = load_text(EXAMPLE_CONFIG, environ).config.model
    assert model is not None
    assert (model.base_url, model.api_key, model.model) == ("http://127.0.0.1:11434/v1", "k", "q")


@pytest.mark.parametrize(
    ("section", "model"),
    [(name, info.annotation) for name, info in HermesConfig.model_fields.items()],
)
def test_example_shows_every_key_of_every_section(section, model):
    data = yaml.safe_load(EXAMPLE_CONFIG)
    assert section in data
    if section == "mcp_servers":  # named servers: every key is shown in the commented example
        from hermes.config.mcp import ServerConfig

        keys = set(re.findall(r"^#\s+(\w+):", EXAMPLE_CONFIG, re.MULTILINE))
        assert set(ServerConfig.model_fields) <= keys
        return
    fields = ModelConfig.model_fields if section == "model" else model.model_fields
    assert set(data[section]) == set(fields)


def test_example_has_chinese_comments():
    assert re.search(r"#.*[\u4e00-\u9fff]", EXAMPLE_CONFIG)
