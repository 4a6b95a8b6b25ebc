"""What a user's message becomes before a turn works with it (seed 001 §2.2, seed 003 §2.1).

:func:`read_inbound` runs once per turn on the user's text, before it is stored:

- its secrets are replaced by a marker (``hermes.session.privacy``): the stored item, the model,
  memory and every log see only the marker, and the reply says Hermes does not keep secrets
  (:meth:`Inbound.notice`) — alone when the message held nothing but secrets, or asked Hermes
  to recite one ("我的密码是多少？"), which needs no model (:attr:`Inbound.answer_alone`);
- it is marked sticky when it asks to keep something or states the user's name or own ids
  (``hermes.session.sticky``), with those facts in ``meta["sticky"]``;
- the personal data it holds (phone, address, order ids …) is named in ``meta["personal"]``,
  so logs and exports know to mask it; the text itself stays usable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes.session.items import Item
from hermes.session.privacy import (
    Redaction,
    SecretKind,
    asks_for_secret,
    may_hold_secret,
    only_secrets,
    personal_kinds,
    redact_secrets,
    secret_notice,
)
from hermes.session.sticky import sticky_facts

__all__ = ["PERSONAL_DATA_KEY", "Inbound", "read_inbound"]

#: Where a session's ``sensitive_flag`` lives in ``SessionState.scratch`` (seed 003 §2.1): the
#: kinds of personal data its messages held, sorted; exports and logs mask a flagged session.
PERSONAL_DATA_KEY = "personal_data"


@dataclass(frozen=True, slots=True)
class Inbound:
    """The user's message as a turn uses it."""

    #: The text with its secrets replaced by the marker: all the turn ever works with.
    text: str
    #: The item to store (sticky or not, flagged or not).
    item: Item
    #: The kinds of secret removed from the message.
    secrets: tuple[SecretKind, ...] = ()
    #: The kind of secret the user asked Hermes to tell them, if any.
    asked: SecretKind | None = None

    #: The reply is the notice alone: nothing but secrets, or a request to recite one.
    answer_alone: bool = False
    #: The kinds of personal data the message holds (phone, address, order_id …).
    personal: tuple[str, ...] = ()

    def flag(self, scratch: dict[str, Any]) -> None:
        """Add the message's kinds of personal data to the session's flag (in its scratch)."""
        if not self.personal:
            return
        known = scratch.get(PERSONAL_DATA_KEY)
        kinds = set(known) if isinstance(known, list) else set()
        scratch[PERSONAL_DATA_KEY] = sorted(kinds | set(self.personal))

    def notice(self, chinese: bool) -> str | None:
        """What the reply must say about secrets (None: nothing to say)."""
        if self.secrets:
            return secret_notice(self.secrets, chinese)
        if self.asked is not None:
            return secret_notice((self.asked,), chinese, asked=True)
        return None

    def reply(self, reply: str, chinese: bool) -> str:
        """``reply`` with the notice before it, unless it says it already."""
        notice = self.notice(chinese)
        if notice is None or notice in reply:
            return reply
        return f"{notice}\n\n{reply}" if reply.strip() else notice


def read_inbound(content: str, *, trace_id: str, meta: dict[str, Any]) -> Inbound:
    """The user's ``content`` made ready to store and work with (see the module docstring)."""
    suspect = may_hold_secret(content)  # most messages: no secret, nothing more to look at
    redaction = redact_secrets(content) if suspect else Redaction(content)
    text = redaction.text
    facts = sticky_facts(text)
    meta = dict(meta)
    if redaction.removed:
        meta["secrets_removed"] = list(redaction.kinds)
    if facts:
        meta["sticky"] = [fact.line() for fact in facts]
    personal = personal_kinds(text)
    if personal:
        meta["personal"] = list(personal)
    item = Item("user", "text", text, sticky=bool(facts), trace_id=trace_id, meta=meta)
    asked = asks_for_secret(text) if suspect else None
    alone = asked is not None or (redaction.removed and only_secrets(text))
    return Inbound(text, item, redaction.kinds, asked, alone, personal)
