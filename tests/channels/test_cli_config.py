"""Configuration through the command line: search order, and bad files as one clear error.

Order: ``--config FILE`` → ``HERMES_CONFIG`` → ``./hermes.yaml`` → ``~/.hermes/hermes.yaml`` →
embedded defaults (DESIGN "Public contracts").
"""

from __future__ import annotations

import pytest

from tests.channels.conftest import Hermes, Result, write_config

# A configuration whose effect is visible: the store goes to ./custom/ and logging is off.
CUSTOM_STORE = "store:\n  path: custom/sessions.db\nlogging:\n  file: null\n"


def assert_config_refused(result: Result, *fragments: str) -> str:
    """Exit 2, no traceback, one error line on stderr naming every fragment (file, key)."""
    assert result.returncode == 2, result
    result.assert_no_traceback()
    assert result.stdout == "", result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result
    for fragment in fragments:
        assert fragment in lines[0], result
    return lines[0]


def test_yaml_syntax_error_names_the_file_and_the_line(hermes: Hermes) -> None:
    path = write_config(hermes.cwd, "agent:\n  max_iterations: [3\n")
    line = assert_config_refused(hermes("--config", str(path), "run", "hi"), str(path))
    assert "line" in line


def test_unknown_key_names_the_file_and_the_dotted_key(hermes: Hermes) -> None:
    path = write_config(hermes.cwd, "agent:\n  max_iteration: 3\n")
    line = assert_config_refused(
        hermes("--config", str(path), "run", "hi"), str(path), "agent.max_iteration"
    )
    assert "max_iterations" in line  # the suggestion


def test_wrong_type_with_json_prints_a_config_error_object(hermes: Hermes) -> None:
    path = write_config(hermes.cwd, "agent:\n  max_iterations: lots\n")
    result = hermes("--config", str(path), "run", "hi", "--json")
    assert result.returncode == 2, result
    result.assert_no_traceback()
    error = result.json()["error"]
    assert error["type"] == "config_error"
    assert str(path) in error["message"]
    assert "agent.max_iterations" in error["message"]


def test_unknown_builtin_tool_is_a_config_error_not_a_traceback(hermes: Hermes) -> None:
    path = write_config(hermes.cwd, "tools:\n  builtins: [calculator, teleport]\n")
    assert_config_refused(hermes("--config", str(path), "run", "hi"), str(path), "teleport")


def test_missing_config_file_is_named(hermes: Hermes) -> None:
    missing = hermes.cwd / "nowhere.yaml"
    line = assert_config_refused(hermes("--config", str(missing), "run", "hi"), str(missing))
    assert "does not exist" in line


def test_hermes_config_variable_is_honoured(hermes: Hermes) -> None:
    path = write_config(hermes.home, CUSTOM_STORE, name="elsewhere/cfg.yaml")
    result = hermes("run", "15乘以27", "--json", env={"HERMES_CONFIG": str(path)})
    assert result.returncode == 0, result
    assert (hermes.cwd / "custom" / "sessions.db").is_file()
    assert not hermes.data_dir.exists()


def test_config_option_wins_over_the_variable(hermes: Hermes) -> None:
    broken = write_config(hermes.cwd, "not: [valid\n", name="broken.yaml")
    good = write_config(hermes.cwd, CUSTOM_STORE, name="good.yaml")
    result = hermes("--config", str(good), "run", "15乘以27", env={"HERMES_CONFIG": str(broken)})
    assert result.returncode == 0, result
    assert (hermes.cwd / "custom" / "sessions.db").is_file()


def test_hermes_yaml_in_the_working_directory_is_read(hermes: Hermes) -> None:
    path = write_config(hermes.cwd, "agent:\n  turn_timeout: soon\n")
    assert_config_refused(hermes("run", "hi"), str(path), "agent.turn_timeout")


def test_hermes_yaml_in_the_home_directory_is_read_when_the_cwd_has_none(hermes: Hermes) -> None:
    path = write_config(hermes.home / ".hermes", "agent:\n  turn_timeout: soon\n")
    assert_config_refused(hermes("run", "hi"), str(path), "agent.turn_timeout")


def test_an_alias_bomb_is_one_config_error_not_a_hang(hermes: Hermes) -> None:
    lines = ['  a0: &a0 ["${HOME}", "lol"]']
    for level in range(1, 10):
        lines.append(f"  a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    path = write_config(hermes.cwd, "x-bomb:\n" + "\n".join(lines) + "\n")
    line = assert_config_refused(hermes("--config", str(path), "run", "hi"), str(path))
    assert "alias" in line


@pytest.mark.parametrize("scheme", ["postgres", "postgresql"])
@pytest.mark.parametrize("command", [("run", "hi"), ("memory", "add", "--user", "u1", "x")])
def test_a_server_store_says_the_backend_is_not_in_this_build_first(
    hermes: Hermes, scheme: str, command: tuple[str, ...]
) -> None:
    path = write_config(hermes.cwd, f"store:\n  path: {scheme}://u@127.0.0.1/test\n")
    line = assert_config_refused(hermes("--config", str(path), *command), "store.path")
    assert f"the '{scheme}' store backend is not in this build" in line
    assert "memory.dir" not in line
