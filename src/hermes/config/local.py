"""Defaults taken from the machine Hermes runs on: the local user id and the time zone check.

``agent.default_user`` (DESIGN "Public contracts") defaults to the OS account name made a
valid user id — 1-128 of ``[A-Za-z0-9._:@-]``, starting with a letter or digit — else
``local``, so memory works in a plain ``hermes chat`` without ``--user``.
"""

from __future__ import annotations

import getpass
import re
import unicodedata
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["FALLBACK_USER", "check_timezone", "os_user_id", "user_id_from"]

#: The default user when the account name gives no valid user id.
FALLBACK_USER = "local"
_INVALID = re.compile(r"[^A-Za-z0-9._:@-]+")
_LEADING = re.compile(r"^[^A-Za-z0-9]+")
_MAX_USER_ID = 128


def user_id_from(name: str) -> str:
    """``name`` made a valid user id: accents dropped (José → Jose), other characters that a
    user id cannot hold replaced by ``-``, a leading ``.``/``-`` removed; ``local`` when nothing
    is left."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    cleaned = _LEADING.sub("", _INVALID.sub("-", ascii_name.strip()))[:_MAX_USER_ID]
    return cleaned.rstrip("-") or FALLBACK_USER


def os_user_id() -> str:
    """This process's OS account name as a user id (:func:`user_id_from`), else ``local``."""
    try:
        name = getpass.getuser()
    except (OSError, KeyError, ImportError):  # no USER/LOGNAME and no passwd entry
        return FALLBACK_USER
    return user_id_from(name)


def check_timezone(name: str) -> str:
    """``name`` if it is an IANA zone this machine knows (``Asia/Shanghai``); ``ValueError``
    otherwise, naming an example."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name[:60]!r}: use an IANA name such as 'Asia/Shanghai' or "
            "'America/New_York' (未知时区，请使用 IANA 名称)"
        ) from None
    return name
