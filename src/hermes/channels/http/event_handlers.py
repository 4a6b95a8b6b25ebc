"""What handles a route's events (``webhooks.routes.ROUTE.handler``, seed 002 §3.3): the
turn's :class:`~hermes.models.base.TurnDirective`.

- ``{intent: NAME}``: the offline rule brain runs intent ``NAME`` with the event's content
  (whatever its patterns say) — deterministic handling with no model server;
- ``{prompt: TEXT}``: ``TEXT`` with the event's fields filled in (``{content}``, ``{type}``,
  ``{msg_id}``, ``{route}``, ``{session_id}``, ``{user_id}``, ``{meta}`` as JSON,
  ``{meta.KEY}``) is added to the system message of the event's turn: the instruction the model
  follows for it. The session stores the event's content verbatim, never the template.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hermes.channels.http.errors import ApiError
from hermes.config.webhooks import PROMPT_PLACEHOLDER, HandlerConfig, WebhooksConfig
from hermes.errors import ConfigError
from hermes.models.base import TurnDirective
from hermes.models.brain import RuleBrain

if TYPE_CHECKING:
    import re

    from hermes.agent.agent import Agent
    from hermes.channels.http.event_adapters import Event


def directive(
    handler: HandlerConfig | None,
    event: Event,
    route: str,
    session_id: str,
    user_id: str | None,
) -> TurnDirective | None:
    """The directive of ``event``'s turn under ``handler`` (``None``: none)."""
    if handler is None:
        return None
    if handler.intent is not None:
        return TurnDirective(intent=handler.intent)
    assert handler.prompt is not None  # the config allows exactly one
    fields: dict[str, Any] = {
        "content": event.content, "type": event.type, "msg_id": event.msg_id, "route": route,
        "session_id": session_id, "user_id": user_id or "", "meta": event.meta,
    }  # fmt: skip
    return TurnDirective(prompt=render_prompt(handler.prompt, fields))


def render_prompt(template: str, fields: dict[str, Any]) -> str:
    """``template`` with ``{name}`` / ``{meta.a.b}`` replaced by ``fields`` (a missing key is
    empty; a dict or list is JSON); ``{{`` and ``}}`` are literal braces."""

    def value(found: re.Match[str]) -> str:
        whole = found.group(0)
        if whole in ("{{", "}}"):
            return whole[0]
        current: Any = fields.get(found.group(1))
        for part in (found.group(2) or "").split(".")[1:]:
            current = current.get(part) if isinstance(current, dict) else None
        if current is None:
            return ""
        if isinstance(current, dict | list):
            return json.dumps(current, ensure_ascii=False, sort_keys=True)
        return str(current)

    return PROMPT_PLACEHOLDER.sub(value, template)


def unavailable(agent: Agent, intent: str | None, route: str) -> str | None:
    """Why ``agent`` cannot honour an ``intent`` handler of ``route`` (its model is not the
    rule brain, or the brain has no such intent), or None when it can (or there is none)."""
    if intent is None:
        return None
    model = agent.model
    if not isinstance(model, RuleBrain):
        return (
            f"route {route!r} has an intent handler, which needs the offline rule brain, but a "
            "model is configured; use handler: {prompt: ...} / intent 处理器需要离线规则大脑"
        )
    if intent not in {known.name for known in model.intents}:
        return (
            f"route {route!r} names intent {intent!r}, which the rule brain does not have "
            "(add it with brain.intents) / 规则大脑中没有该意图"
        )
    return None


def check_routes(agent: Agent, settings: WebhooksConfig) -> None:
    """Refuse, at start, routes whose handler this agent cannot honour (``ConfigError``):
    a configuration mistake is said before any sender is told "accepted"."""
    for route, config in settings.routes.items():
        handler = config.handler
        problem = unavailable(agent, None if handler is None else handler.intent, route)
        if problem is not None:
            raise ConfigError(f"webhooks.routes: {problem}")


def check_available(agent: Agent, wanted: TurnDirective | None, route: str) -> None:
    """503 ``handler_unavailable`` for an ``intent`` handler the agent cannot honour — what
    :func:`check_routes` refuses at start; here for an app built without that check."""
    problem = unavailable(agent, None if wanted is None else wanted.intent, route)
    if problem is not None:
        raise ApiError(503, "handler_unavailable", problem)
