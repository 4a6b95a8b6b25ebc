"""Session and user id validation (seed 001 §2.1)."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.errors import InvalidIdError
from hermes.session.ids import (
    MAX_ID_LENGTH,
    new_session_id,
    validate_session_id,
    validate_user_id,
)

_FIRST = string.ascii_letters + string.digits
_REST = _FIRST + "._:@-"

valid_session_ids = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(_FIRST),
    st.text(alphabet=_REST, min_size=7, max_size=MAX_ID_LENGTH - 1),
)


@pytest.mark.parametrize(
    "value", ["session-0001", "s-0123456789abcdef", "tg:chat:12345", "a.b_c@d-e:f", "A" * 128]
)
def test_well_formed_session_ids_are_accepted(value: str):
    assert validate_session_id(value) == value


@given(valid_session_ids)
def test_every_id_in_the_charset_and_length_range_is_accepted(value: str):
    assert validate_session_id(value) == value
    assert validate_user_id(value) == value


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "is empty"),
        ("abc1234", "too short (7 characters, at least 8)"),
        ("x" * 129, "too long (129 characters, at most 128)"),
        ("session 0001", "not allowed: ' ' at position 7"),
        ("session/0001", "not allowed: '/'"),
        ("session\n0001", "not allowed: '\\n'"),
        ("session\x000001", "not allowed: '\\x00'"),
        ("会话-00000001", "not allowed: '会'"),
        ("-session-0001", "must start with a letter or a digit"),
        (".session-0001", "must start with a letter or a digit"),
    ],
)
def test_malformed_session_ids_are_rejected_with_the_reason(value: str, message: str):
    with pytest.raises(InvalidIdError, match="session id") as caught:
        validate_session_id(value)
    assert message in caught.value.message


@pytest.mark.parametrize("value", [None, 12345678, b"session-0001", ["session-0001"]])
def test_ids_that_are_not_strings_are_rejected(value: object):
    with pytest.raises(InvalidIdError, match="must be a string"):
        validate_session_id(value)
    with pytest.raises(InvalidIdError, match="must be a string"):
        validate_user_id(value)


@given(st.text(min_size=1, max_size=40).filter(lambda s: any(c not in _REST for c in s)))
def test_any_character_outside_the_charset_is_rejected(value: str):
    with pytest.raises(InvalidIdError):
        validate_user_id(value)


def test_user_ids_may_be_short():
    assert validate_user_id("u") == "u"
    with pytest.raises(InvalidIdError, match="user id is empty"):
        validate_user_id("")


def test_a_long_bad_id_is_shortened_in_the_message():
    with pytest.raises(InvalidIdError) as caught:
        validate_session_id("x" * 60 + " ")
    assert "x" * 41 not in caught.value.message


def test_new_session_ids_are_valid_and_unique():
    ids = {new_session_id() for _ in range(1000)}
    assert len(ids) == 1000
    for value in ids:
        assert validate_session_id(value) == value
        assert value.startswith("s-")
        assert len(value) == 26
