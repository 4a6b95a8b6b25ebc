"""Search order: explicit path, HERMES_CONFIG, ./hermes.yaml, ~/.hermes/hermes.yaml, defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.errors import ConfigError


def _config_with_iterations(path: Path, iterations: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"agent:\n  max_iterations: {iterations}\n", encoding="utf-8")
    return path


@pytest.fixture
def everywhere(place):
    """A config file at every place in the search order, each with its own max_iterations."""
    return {
        "explicit": _config_with_iterations(place.cwd / "conf" / "explicit.yaml", 1),
        "env": _config_with_iterations(place.cwd / "conf" / "from-env.yaml", 2),
        "cwd": _config_with_iterations(place.cwd / "hermes.yaml", 3),
        "home": _config_with_iterations(place.home / ".hermes" / "hermes.yaml", 4),
    }


def test_explicit_path_wins_over_everything(place, everywhere):
    place.environ["HERMES_CONFIG"] = str(everywhere["env"])
    loaded = place.load(everywhere["explicit"])
    assert loaded.source == everywhere["explicit"]
    assert loaded.config.agent.max_iterations == 1


def test_hermes_config_variable_wins_over_cwd_and_home(place, everywhere):
    place.environ["HERMES_CONFIG"] = str(everywhere["env"])
    loaded = place.load()
    assert loaded.source == everywhere["env"]
    assert loaded.config.agent.max_iterations == 2


def test_cwd_file_wins_over_home(place, everywhere):
    loaded = place.load()
    assert loaded.source == everywhere["cwd"]
    assert loaded.config.agent.max_iterations == 3


def test_home_file_is_used_when_cwd_has_none(place, everywhere):
    everywhere["cwd"].unlink()
    loaded = place.load()
    assert loaded.source == everywhere["home"]
    assert loaded.config.agent.max_iterations == 4


def test_relative_explicit_path_is_relative_to_the_run_directory(place, everywhere):
    loaded = place.load("conf/explicit.yaml")
    assert loaded.source == everywhere["explicit"]


def test_relative_hermes_config_is_relative_to_the_run_directory(place, everywhere):
    place.environ["HERMES_CONFIG"] = "conf/from-env.yaml"
    assert place.load().source == everywhere["env"]


def test_explicit_path_with_tilde_is_under_home(place, everywhere):
    assert place.load("~/.hermes/hermes.yaml").source == everywhere["home"]


def test_empty_hermes_config_variable_is_ignored(place, everywhere):
    place.environ["HERMES_CONFIG"] = ""
    assert place.load().source == everywhere["cwd"]


def test_hermes_config_may_come_from_dot_env(place, everywhere):
    place.write(".env", f"HERMES_CONFIG={everywhere['env']}\n")
    assert place.load().source == everywhere["env"]


def test_missing_explicit_file_is_an_error_naming_it(place):
    with pytest.raises(ConfigError) as caught:
        place.load("nope.yaml")
    assert caught.value.file == str(place.cwd / "nope.yaml")
    assert "nope.yaml" in str(caught.value)


def test_missing_explicit_file_does_not_fall_back_to_cwd(place, everywhere):
    with pytest.raises(ConfigError):
        place.load("nope.yaml")


def test_missing_hermes_config_file_is_an_error_naming_it(place, everywhere):
    place.environ["HERMES_CONFIG"] = str(place.cwd / "gone.yaml")
    with pytest.raises(ConfigError) as caught:
        place.load()
    assert "gone.yaml" in str(caught.value)
    assert "HERMES_CONFIG" in str(caught.value)


def test_explicit_path_that_is_a_directory_is_an_error(place):
    (place.cwd / "adir").mkdir()
    with pytest.raises(ConfigError, match="not a file"):
        place.load("adir")


def test_directory_named_hermes_yaml_in_cwd_is_skipped(place, everywhere):
    everywhere["cwd"].unlink()
    (place.cwd / "hermes.yaml").mkdir()
    assert place.load().source == everywhere["home"]
