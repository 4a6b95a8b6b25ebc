"""Secrets never reach the log: values under secret-looking keys become ***."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.observe import REDACTED, configure_logging, get_logger, is_secret_key, log_context
from hermes.observe import redact as redact_value


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "API_KEY",
        "apikey",
        "openai_api_key",
        "X-Api-Key",
        "Authorization",
        "proxy-authorization",
        "password",
        "db_password",
        "token",
        "access_token",
        "refresh-token",
        "client_secret",
        "secret_key",
        "private_key",
        "cookie",
        "Set-Cookie",
    ],
)
def test_secret_keys_are_recognised(key):
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "prompt_tokens",
        "max_tokens",
        "context_budget_tokens",
        "token_count",
        "tokens",
        "cache_key",
        "idempotency_key",
        "msg_id",
        "session_id",
        "event",
        "author",
    ],
)
def test_ordinary_keys_are_not_secret(key):
    assert not is_secret_key(key)


def test_secret_fields_are_redacted_in_the_line(log_file, read_lines):
    configure_logging(log_file)
    get_logger("models").info(
        "request",
        api_key="sk-1",
        password="p",
        token="t",
        prompt_tokens=12,
        headers={"Authorization": "Bearer abc", "Accept": "json"},
        calls=[{"secret": "s", "name": "n"}],
    )
    line = read_lines()[0]
    assert (line["api_key"], line["password"], line["token"]) == (REDACTED,) * 3
    assert line["prompt_tokens"] == 12
    assert line["headers"] == {"Authorization": REDACTED, "Accept": "json"}
    assert line["calls"] == [{"secret": REDACTED, "name": "n"}]
    text = log_file.read_text(encoding="utf-8")
    for secret in ("sk-1", "Bearer abc"):
        assert secret not in text


def test_secrets_in_the_bound_context_are_redacted(log_file, read_lines):
    configure_logging(log_file)
    with log_context(msg_id="m", auth_token="tok-123"):
        get_logger("channels").bind(api_key="sk-2").info("x")
    line = read_lines()[0]
    assert line["auth_token"] == REDACTED
    assert line["api_key"] == REDACTED


def test_logging_never_modifies_the_callers_data(log_file):
    configure_logging(log_file)
    headers = {"Authorization": "Bearer abc"}
    get_logger("models").info("request", headers=headers)
    assert headers == {"Authorization": "Bearer abc"}


def test_none_secret_stays_none():
    assert redact_value({"api_key": None}) == {"api_key": None}


def test_data_without_secrets_is_returned_as_is():
    data = {"a": [1, {"b": 2}], "c": (3,)}
    assert redact_value(data) is data


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["a", "api_key", "token", "n", "headers", "Authorization"]),
            children,
            max_size=4,
        )
    ),
    max_leaves=20,
)


def _secret_values_survive(value, *, under_secret=False):
    if isinstance(value, dict):
        return any(
            _secret_values_survive(item, under_secret=under_secret or is_secret_key(key))
            for key, item in value.items()
        )
    if isinstance(value, list):
        return any(_secret_values_survive(item, under_secret=under_secret) for item in value)
    return under_secret and value is not None and value != REDACTED


@given(json_values)
def test_no_value_under_a_secret_key_survives_redaction(value):
    assert not _secret_values_survive(redact_value(value))
