"""Every bad file becomes one ConfigError naming the file and the key, never a secret."""

from __future__ import annotations

import pytest

from hermes.errors import ConfigError

SECRET = "sk-very-secret-value-123"


def _error(load_text, text: str, environ=None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_text(text, environ)
    return caught.value


def test_yaml_syntax_error_names_file_and_line(place, load_text):
    error = _error(load_text, "agent:\n  max_iterations: 3\n bad_indent: 1\n")
    assert error.file == str(place.cwd / "hermes.yaml")
    assert "invalid YAML at line 3" in str(error)
    assert "hermes.yaml" in str(error)


def test_yaml_tab_indentation_error_reports_its_line(load_text):
    error = _error(load_text, "agent:\n\tmax_iterations: 3\n")
    assert "line 2" in str(error)


def test_duplicate_key_is_reported_with_its_line(load_text):
    error = _error(load_text, "agent:\n  max_iterations: 3\n  max_iterations: 4\n")
    assert "duplicate key 'max_iterations'" in str(error)
    assert "line 3" in str(error)


def test_yaml_merge_keys_may_be_overridden_without_a_duplicate_error(load_text):
    text = "agent:\n  <<: {max_iterations: 3, context_rounds: 5}\n  context_rounds: 7\n"
    agent = load_text(text).config.agent
    assert (agent.max_iterations, agent.context_rounds) == (3, 7)


def test_python_object_tags_are_refused(load_text):
    error = _error(load_text, "agent: !!python/object/apply:os.system ['true']\n")
    assert "invalid YAML" in str(error)


@pytest.mark.parametrize(("text", "kind"), [("- a\n- b\n", "list"), ("just text\n", "string")])
def test_top_level_must_be_a_mapping(load_text, text, kind):
    error = _error(load_text, text)
    assert "top level must be a mapping" in str(error)
    assert kind in str(error)


def test_unknown_top_level_key_is_named_with_a_suggestion(load_text):
    error = _error(load_text, "modle:\n  model: m\n")
    assert error.key == "modle"
    assert "did you mean 'model'" in str(error)


def test_unknown_nested_key_is_named_as_a_dotted_path(load_text):
    error = _error(load_text, "agent:\n  max_iteration: 3\n")
    assert error.key == "agent.max_iteration"
    assert "agent.max_iteration: unknown key; did you mean 'max_iterations'" in str(error)


def test_unknown_key_without_a_close_match_lists_the_allowed_keys(load_text):
    error = _error(load_text, "store:\n  zzz: 1\n")
    assert "expected one of: path" in str(error)


def test_out_of_range_value_names_the_dotted_key_and_file(place, load_text):
    error = _error(load_text, "model:\n  base_url: http://h/v1\n  model: m\n  temperature: 3\n")
    assert error.key == "model.temperature"
    assert error.file == str(place.cwd / "hermes.yaml")
    assert "model.temperature: Input should be less than or equal to 2" in str(error)


def test_wrong_type_names_the_dotted_key(load_text):
    error = _error(load_text, "agent:\n  max_iterations: lots\n")
    assert error.key == "agent.max_iterations"
    assert "valid integer" in str(error)


def test_wrong_type_inside_a_list_names_the_index(load_text):
    error = _error(load_text, "tools:\n  builtins: [calculator, {a: 1}]\n")
    assert error.key == "tools.builtins[1]"


def test_section_of_the_wrong_type_is_named(load_text):
    error = _error(load_text, "agent: 5\n")
    assert error.key == "agent"


def test_every_bad_key_is_named_in_one_error(load_text):
    error = _error(load_text, "agent:\n  max_iterations: 0\n  context_budget_tokens: 10\n")
    message = str(error)
    assert "agent.max_iterations" in message
    assert "agent.context_budget_tokens" in message
    assert error.key is None  # several keys: each is in the message


def test_missing_required_model_keys_are_named(load_text):
    error = _error(load_text, "model:\n  temperature: 0.5\n")
    assert "model.base_url: required key is missing" in str(error)
    assert "model.model: required key is missing" in str(error)


@pytest.mark.parametrize("url", ["ftp://h/v1", "127.0.0.1:8000", "http://", "not a url"])
def test_base_url_must_be_http_or_https(load_text, url):
    error = _error(load_text, f"model:\n  base_url: '{url}'\n  model: m\n")
    assert error.key == "model.base_url"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("model.temperature", "-0.1"),
        ("model.max_tokens", "0"),
        ("model.timeout", "0"),
        ("model.connect_timeout", "-1"),
        ("model.max_retries", "11"),
        ("model.tool_mode", "magic"),
        ("model.provider", "anthropic"),
        ("agent.max_iterations", "101"),
        ("agent.turn_timeout", "0"),
        ("agent.context_rounds", "0"),
        ("agent.context_budget_tokens", "255"),
        ("logging.level", "TRACE"),
    ],
)
def test_out_of_bounds_values_are_rejected_by_name(load_text, key, value):
    section, name = key.split(".")
    model_keys = "  base_url: http://h/v1\n  model: m\n" if section == "model" else ""
    error = _error(load_text, f"{section}:\n{model_keys}  {name}: {value}\n")
    assert error.key == key


def test_secret_never_appears_in_a_validation_error(load_text):
    text = f"model:\n  base_url: http://h/v1\n  model: m\n  api_key: {SECRET}\n  temperature: 9\n"
    error = _error(load_text, text)
    assert SECRET not in str(error)
    assert SECRET not in repr(error)
    assert error.__cause__ is None
    assert error.__suppress_context__


def test_secret_of_the_wrong_type_is_not_echoed(load_text):
    error = _error(
        load_text, "model:\n  base_url: http://h/v1\n  model: m\n  api_key: [sk-abcdef]\n"
    )
    assert error.key == "model.api_key"
    assert "sk-abcdef" not in str(error)


def test_secret_in_a_base_url_query_is_not_echoed(load_text):
    error = _error(load_text, f"model:\n  base_url: 'ftp://h/v1?key={SECRET}'\n  model: m\n")
    assert SECRET not in str(error)


def test_secret_from_the_environment_is_not_echoed(load_text):
    text = "model:\n  base_url: http://h/v1\n  model: m\n  api_key: ${KEY}\n  stream: maybe\n"
    error = _error(load_text, text, {"KEY": SECRET})
    assert error.key == "model.stream"
    assert SECRET not in str(error)


def test_secret_is_not_in_the_config_repr(load_text):
    text = f"model:\n  base_url: http://h/v1\n  model: m\n  api_key: {SECRET}\n"
    text += "  extra_headers:\n    Authorization: Bearer hidden-header-value\n"
    config = load_text(text).config
    assert SECRET not in repr(config)
    assert SECRET not in str(config)
    assert "hidden-header-value" not in repr(config)


def test_non_utf8_file_is_an_error(place):
    (place.cwd / "hermes.yaml").write_bytes(b"agent:\n  instructions: \xff\xfe\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        place.load()


def test_utf8_bom_and_chinese_text_are_accepted(place):
    text = "agent:\n  instructions: 你是一个运维助手\n"
    (place.cwd / "hermes.yaml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert place.load().config.agent.instructions == "你是一个运维助手"


def test_config_error_is_a_400_with_a_stable_code(load_text):
    error = _error(load_text, "agent: 5\n")
    assert error.to_dict()["type"] == "config_error"
    assert error.status == 400
