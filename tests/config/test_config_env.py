"""``${VAR}`` placeholders, fed by the environment and .env files (seed 002 §3.1)."""

from __future__ import annotations

import os

import pytest

from hermes.config import load_config
from hermes.errors import ConfigError

MODEL = "model:\n  base_url: {url}\n  model: {model}\n  api_key: {key}\n"


def _model_yaml(url="http://127.0.0.1:8000/v1", model="m", key="null"):
    return MODEL.format(url=url, model=model, key=key)


def test_placeholder_takes_the_environment_value(load_text):
    model = load_text(_model_yaml(key="${LLM_API_KEY}"), {"LLM_API_KEY": "sk-live"}).config.model
    assert model is not None
    assert model.api_key == "sk-live"


def test_placeholder_inside_a_longer_string(load_text):
    text = _model_yaml(url="http://${HOST}:${PORT}/v1")
    model = load_text(text, {"HOST": "127.0.0.1", "PORT": "9000"}).config.model
    assert model is not None
    assert model.base_url == "http://127.0.0.1:9000/v1"


def test_default_is_used_when_the_variable_is_unset(load_text):
    model = load_text(_model_yaml(model="${MODEL_NAME:-qwen}")).config.model
    assert model is not None
    assert model.model == "qwen"


def test_default_is_used_when_the_variable_is_empty(load_text):
    model = load_text(_model_yaml(model="${MODEL_NAME:-qwen}"), {"MODEL_NAME": ""}).config.model
    assert model is not None
    assert model.model == "qwen"


def test_variable_wins_over_the_default(load_text):
    text = _model_yaml(model="${MODEL_NAME:-qwen}")
    model = load_text(text, {"MODEL_NAME": "llama"}).config.model
    assert model is not None
    assert model.model == "llama"


def test_placeholder_value_is_coerced_to_the_keys_type(load_text):
    config = load_text("agent:\n  max_iterations: ${ITER:-5}\n").config
    assert config.agent.max_iterations == 5


def test_placeholders_expand_inside_lists_and_header_values(load_text):
    text = (
        _model_yaml()
        + "  extra_headers:\n    X-Tenant: ${TENANT}\nbrain:\n  intents: ['${DIR}/a.yaml']\n"
    )
    config = load_text(text, {"TENANT": "ops", "DIR": "/intents"}).config
    assert config.model is not None
    assert config.model.extra_headers == {"X-Tenant": "ops"}
    assert config.brain.intents == ["/intents/a.yaml"]


def test_unset_variable_without_default_names_key_and_file(place, load_text):
    with pytest.raises(ConfigError) as caught:
        load_text(_model_yaml(key="${LLM_API_KEY}"))
    error = caught.value
    assert error.key == "model.api_key"
    assert error.file == str(place.cwd / "hermes.yaml")
    assert "LLM_API_KEY" in str(error)
    assert "model.api_key" in str(error)


def test_unset_variable_in_a_list_names_the_index(load_text):
    with pytest.raises(ConfigError) as caught:
        load_text("brain:\n  intents: [a.yaml, '${MISSING}']\n")
    assert caught.value.key == "brain.intents[1]"


def test_double_dollar_escapes_a_literal_placeholder(load_text):
    config = load_text("agent:\n  instructions: 'say $${NAME} verbatim'\n").config
    assert config.agent.instructions == "say ${NAME} verbatim"


def test_malformed_placeholder_is_an_error(load_text):
    with pytest.raises(ConfigError, match="malformed placeholder") as caught:
        load_text("agent:\n  instructions: 'hello ${'\n")
    assert caught.value.key == "agent.instructions"


def test_dollar_without_brace_is_literal(load_text):
    config = load_text("agent:\n  instructions: 'costs $5, $HOME stays'\n").config
    assert config.agent.instructions == "costs $5, $HOME stays"


def test_dot_env_in_run_directory_supplies_variables(place, load_text):
    place.write(".env", "LLM_API_KEY=from-dotenv\n")
    model = load_text(_model_yaml(key="${LLM_API_KEY}")).config.model
    assert model is not None
    assert model.api_key == "from-dotenv"


def test_environment_wins_over_dot_env(place, load_text):
    place.write(".env", "LLM_API_KEY=from-dotenv\n")
    model = load_text(_model_yaml(key="${LLM_API_KEY}"), {"LLM_API_KEY": "from-env"}).config.model
    assert model is not None
    assert model.api_key == "from-env"


def test_dot_env_beside_the_config_file_supplies_variables(place):
    config_dir = place.home / ".hermes"
    config_dir.mkdir()
    (config_dir / "hermes.yaml").write_text(_model_yaml(key="${LLM_API_KEY}"), encoding="utf-8")
    (config_dir / ".env").write_text("LLM_API_KEY=beside-config\n", encoding="utf-8")
    model = place.load().config.model
    assert model is not None
    assert model.api_key == "beside-config"


def test_run_directory_dot_env_wins_over_the_one_beside_the_config(place):
    config_dir = place.home / ".hermes"
    config_dir.mkdir()
    (config_dir / "hermes.yaml").write_text(_model_yaml(key="${LLM_API_KEY}"), encoding="utf-8")
    (config_dir / ".env").write_text("LLM_API_KEY=beside-config\n", encoding="utf-8")
    place.write(".env", "LLM_API_KEY=run-dir\n")
    model = place.load().config.model
    assert model is not None
    assert model.api_key == "run-dir"


def test_loading_never_modifies_os_environ(place, load_text):
    place.write(".env", "HERMES_TEST_ONLY_VARIABLE=1\n")
    before = dict(os.environ)
    load_text("agent:\n  instructions: ${HERMES_TEST_ONLY_VARIABLE}\n")
    assert dict(os.environ) == before


def test_dot_env_values_are_not_interpolated_against_the_process_environment(place, load_text):
    place.write(".env", "GREETING=${HOME}-x\n")
    config = load_text("agent:\n  instructions: ${GREETING}\n").config
    assert config.agent.instructions == "${HOME}-x"


def test_process_environment_is_used_when_none_is_injected(place, monkeypatch):
    monkeypatch.setenv("HERMES_TEST_MODEL_NAME", "from-process")
    monkeypatch.delenv("HERMES_CONFIG", raising=False)
    place.write("hermes.yaml", _model_yaml(model="${HERMES_TEST_MODEL_NAME}"))
    model = load_config(cwd=place.cwd, home=place.home).config.model
    assert model is not None
    assert model.model == "from-process"
