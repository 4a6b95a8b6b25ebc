"""What an inbound delivery means: Hermes's own event body, or the payload of a monitoring or
code-hosting sender mapped onto one (DESIGN.md, "Public contracts", HTTP Events: adapters at
``?format=alertmanager|grafana|github``; seed 002 §3.3: an alert becomes one Message).

Every adapter gives an :class:`Event` whose ``msg_id`` comes from the payload itself, so a
sender's retry of one notification is the same event and is deduplicated:

- **Alertmanager** (webhook_config, payload version 4): the group key, the status and each
  alert's fingerprint and start — a repeat notification of the same firing group is a
  duplicate, its resolution a new event;
- **Grafana** (unified alerting webhook contact point): the same, with the organisation;
- **GitHub**: the ``X-GitHub-Delivery`` header (GitHub's redelivery keeps it).

The event's ``content`` is a short text a person or a model reads (the alert names, summaries
and labels); ``meta`` keeps the fields a handler or prompt may want (``{meta.status}``).
Malformed input raises ``ApiError`` 400/422 (nothing is claimed for it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hermes.channels.dedupe import MAX_MSG_ID_LENGTH, event_body_hash
from hermes.channels.http.errors import ApiError

EventFormat = Literal["hermes", "alertmanager", "grafana", "github"]
#: Alerts listed one per line in an alert's content; the rest are counted.
MAX_LISTED_ALERTS = 20
_MAX_FIELD = 300


@dataclass(frozen=True, slots=True)
class Event:
    """One inbound event, whatever sent it."""

    msg_id: str
    type: str
    content: str
    meta: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    user_id: str | None = None

    def body_hash(self) -> str:
        """The hash that tells a retry (same hash) from a reused id (another one)."""
        return event_body_hash(
            {
                "msg_id": self.msg_id, "type": self.type, "content": self.content,
                "meta": self.meta, "session_id": self.session_id, "user_id": self.user_id,
            }
        )  # fmt: skip


class EventBody(BaseModel):
    """The body of ``POST /v1/events[/{route}]`` (unknown fields are refused: 422)."""

    model_config = ConfigDict(extra="forbid")

    msg_id: str = Field(
        min_length=1,
        max_length=MAX_MSG_ID_LENGTH,
        description="The sender's id of this event: its retries carry the same one.",
    )
    type: str = Field(min_length=1, max_length=128, description="What kind of event, e.g. alert.")
    content: str = Field(min_length=1, description="The text the session receives, verbatim.")
    meta: dict[str, Any] = Field(default_factory=dict, description="Extras, e.g. {level}.")
    session_id: str | None = Field(default=None, description="Wins over the route's session.")
    user_id: str | None = None


def parse_event(fmt: EventFormat, raw: bytes, headers: Mapping[str, str]) -> Event:
    """The event of a delivery in format ``fmt`` (400 not JSON, 422 not the format's shape)."""
    data = _json(raw)
    if fmt == "hermes":
        try:
            body = EventBody.model_validate(data)
        except ValidationError as exc:
            fields = ", ".join(
                ".".join(str(p) for p in e["loc"]) or "body" for e in exc.errors()[:10]
            )
            raise ApiError(422, "invalid_request", f"invalid fields / 字段无效: {fields}") from None
        return Event(body.msg_id, body.type, body.content, body.meta, body.session_id, body.user_id)
    if not isinstance(data, dict):
        raise _not_shaped(fmt, "the body is not a JSON object")
    if fmt == "github":
        return _github(data, headers)
    return _alerts(fmt, data)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(
            400, "invalid_json", "the body is not valid JSON / 请求体不是合法的 JSON"
        ) from None


def _not_shaped(fmt: str, why: str) -> ApiError:
    return ApiError(
        422,
        "invalid_request",
        f"not a {fmt} payload: {why} / 不是有效的 {fmt} 负载",
    )


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else "" if value is None else json.dumps(value)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_FIELD else text[: _MAX_FIELD - 1] + "…"


def _labels(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): _text(v) for k, v in value.items()}


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:40]


def _alerts(fmt: Literal["alertmanager", "grafana"], data: dict[str, Any]) -> Event:
    """Alertmanager's and Grafana's webhook payloads (the same shape; Grafana adds ``orgId``,
    ``title`` and ``message``)."""
    alerts = data.get("alerts")
    status = data.get("status")
    if not isinstance(alerts, list) or status not in ("firing", "resolved"):
        raise _not_shaped(fmt, "it needs 'status' (firing|resolved) and a list of 'alerts'")
    group_key = data.get("groupKey")
    if not isinstance(group_key, str):
        raise _not_shaped(fmt, "it needs 'groupKey'")
    entries = [a for a in alerts if isinstance(a, dict)]
    # A repeat of the same notification (same alerts, same starts) is the same event.
    identity = sorted(f"{_text(a.get('fingerprint'))}@{_text(a.get('startsAt'))}" for a in entries)
    org = str(data.get("orgId", "")) if fmt == "grafana" else ""
    msg_id = f"{fmt}-{_digest(org, group_key, status, *identity)}"
    firing = sum(1 for a in entries if a.get("status") == "firing")
    title = _text(data.get("title")) or f"[{status.upper()}:{len(entries)}]"
    lines = [f"{'Grafana' if fmt == 'grafana' else 'Alertmanager'} {title}"]
    for alert in entries[:MAX_LISTED_ALERTS]:
        lines.append(_alert_line(alert))
    if len(entries) > MAX_LISTED_ALERTS:
        lines.append(f"- … {len(entries) - MAX_LISTED_ALERTS} more")
    common = _labels(data.get("commonLabels"))
    meta: dict[str, Any] = {
        "source": fmt,
        "status": status,
        "group_key": _text(group_key),
        "receiver": _text(data.get("receiver")),
        "alerts": len(entries),
        "firing": firing,
        "alertname": common.get("alertname", ""),
        "severity": common.get("severity", ""),
        "labels": common,
        "fingerprints": sorted(_text(a.get("fingerprint")) for a in entries),
    }
    if org:
        meta["org_id"] = org
    return Event(msg_id, f"alert.{status}", "\n".join(lines), meta)


def _alert_line(alert: Mapping[str, Any]) -> str:
    labels = _labels(alert.get("labels"))
    notes = _labels(alert.get("annotations"))
    name = labels.pop("alertname", "") or "alert"
    shown = " ".join(f"{k}={v}" for k, v in sorted(labels.items()))
    about = " — ".join(x for x in (notes.get("summary", ""), notes.get("description", "")) if x)
    since = _text(alert.get("startsAt"))
    state = _text(alert.get("status")) or "?"
    return (
        f"- {name} ({state})"
        + (f" [{shown}]" if shown else "")
        + (f": {about}" if about else "")
        + (f" (since {since})" if since else "")
    )


def _github(data: dict[str, Any], headers: Mapping[str, str]) -> Event:
    delivery = headers.get("x-github-delivery", "").strip()
    kind = headers.get("x-github-event", "").strip()
    if not delivery or not kind:
        raise ApiError(
            400,
            "invalid_request",
            "a GitHub delivery needs its X-GitHub-Delivery and X-GitHub-Event headers / "
            "缺少 GitHub 的投递头",
        )
    if len(delivery) > MAX_MSG_ID_LENGTH - 7 or not delivery.isprintable():
        raise ApiError(400, "invalid_request", "X-GitHub-Delivery is not a delivery id")
    action = _text(data.get("action"))
    repo = data.get("repository")
    repo_name = _text(repo.get("full_name")) if isinstance(repo, dict) else ""
    sender = data.get("sender")
    login = _text(sender.get("login")) if isinstance(sender, dict) else ""
    subject, url = _github_subject(kind, data)
    head = f"GitHub {kind}" + (f" {action}" if action else "")
    where = f" in {repo_name}" if repo_name else ""
    who = f" by {login}" if login else ""
    content = f"{head}{where}{who}" + (f": {subject}" if subject else "")
    meta = {
        "source": "github", "event": _text(kind), "action": action, "repository": repo_name,
        "sender": login, "url": url,
    }  # fmt: skip
    event_type = f"github.{_text(kind)}" + (f".{action}" if action else "")
    return Event(f"github-{delivery}", event_type, content, meta)


def _github_subject(kind: str, data: Mapping[str, Any]) -> tuple[str, str]:
    """The one line that says what happened, and its link."""
    for key in ("pull_request", "issue", "release", "discussion"):
        found = data.get(key)
        if isinstance(found, dict):
            number = found.get("number")
            name = _text(found.get("title") or found.get("name") or found.get("tag_name"))
            label = f"#{number} {name}" if number is not None else name
            return label, _text(found.get("html_url"))
    if kind == "push":
        commit = data.get("head_commit")
        message = _text(commit.get("message")) if isinstance(commit, dict) else ""
        return f"{_text(data.get('ref'))} {message}".strip(), _text(data.get("compare"))
    if kind == "ping":
        return _text(data.get("zen")), ""
    return "", ""
