"""Validation of session and user ids (seed 001 §2.1).

A session id names one conversation; a user id names who owns it. Both are short ASCII tokens
(``[A-Za-z0-9._:@-]``, starting with a letter or digit) so they are safe in paths, logs, URLs
and SQL. The seed's war story — front-end code passing the user id as the session id, so every
window of one user wrote into the same conversation — is why session ids have a minimum length
and why a store refuses a session id equal to its user id.
"""

from __future__ import annotations

import re
import secrets

from hermes.errors import InvalidIdError

MAX_ID_LENGTH = 128
MIN_SESSION_ID_LENGTH = 8
MIN_USER_ID_LENGTH = 1

_VALID_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]*")
_BAD_CHAR = re.compile(r"[^A-Za-z0-9._:@-]")
_ALLOWED = "letters, digits and . _ : @ -"
#: The rule, said in every refusal of a session id (the README states it too).
SESSION_ID_RULE = (
    "a session id is 8 to 128 characters: letters, digits and . _ : @ -, starting with a letter"
    " or digit, e.g. my-session-1"
    " / 会话 ID 为 8–128 个字符（字母、数字及 . _ : @ -，以字母或数字开头）"
)


def _shown(value: str) -> str:
    """The id as it may appear in an error message: quoted, escaped and shortened."""
    return repr(value if len(value) <= 40 else value[:40] + "...")


def _validate(value: object, what: str, min_length: int, rule: str | None = None) -> str:
    try:
        return _check(value, what, min_length)
    except InvalidIdError as exc:
        if rule is None:
            raise
        raise InvalidIdError(f"{exc.message}; {rule}") from None


def _check(value: object, what: str, min_length: int) -> str:
    if not isinstance(value, str):
        raise InvalidIdError(f"{what} must be a string, not {type(value).__name__}")
    if _VALID_ID.fullmatch(value) and min_length <= len(value) <= MAX_ID_LENGTH:
        return value  # the common case: one regex match, no further checks
    if not value:
        raise InvalidIdError(f"{what} is empty")
    if len(value) < min_length:
        raise InvalidIdError(
            f"{what} {_shown(value)} is too short ({len(value)} characters, at least {min_length})"
        )
    if len(value) > MAX_ID_LENGTH:
        raise InvalidIdError(
            f"{what} is too long ({len(value)} characters, at most {MAX_ID_LENGTH})"
        )
    bad = _BAD_CHAR.search(value)
    if bad is not None:
        raise InvalidIdError(
            f"{what} {_shown(value)} contains a character that is not allowed: "
            f"{bad.group()!r} at position {bad.start()} (allowed: {_ALLOWED})"
        )
    raise InvalidIdError(f"{what} {_shown(value)} must start with a letter or a digit")


def validate_session_id(value: object) -> str:
    """Return ``value`` if it is a valid session id, else raise :class:`InvalidIdError`.

    Valid: a string of 8 to 128 characters from ``[A-Za-z0-9._:@-]`` starting with a letter
    or digit (no whitespace, control characters, slashes or non-ASCII letters).
    """
    return _validate(value, "session id", MIN_SESSION_ID_LENGTH, SESSION_ID_RULE)


def validate_user_id(value: object) -> str:
    """Return ``value`` if it is a valid user id, else raise :class:`InvalidIdError`.

    Same charset as session ids; 1 to 128 characters.
    """
    return _validate(value, "user id", MIN_USER_ID_LENGTH)


def new_session_id() -> str:
    """A fresh random session id (``s-`` + 24 hex characters); always valid."""
    return "s-" + secrets.token_hex(12)
