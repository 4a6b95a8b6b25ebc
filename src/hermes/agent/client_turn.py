"""Tools a client runs itself, and the history a client brings (DESIGN.md, HTTP,
"OpenAI-compatible").

A chat-completions client (the ``openai`` client, Open WebUI, LibreChat) may send its own
``tools``: they are offered to the model beside Hermes's tools, and a call to one is not run
here — the turn ends with it (:attr:`RunResult.client_calls`) and the client runs it. Its next
request brings the results (``role: "tool"`` messages): that turn starts by storing them as
the calls' results, then the model goes on. A client that resends the whole conversation
seeds a new session with it (:attr:`ClientTurn.history`); a session that exists is never
seeded twice.

All of it travels as JSON in ``Message.meta["client"]`` (:meth:`ClientTurn.to_meta`), so a
turn's options cross a queue as the message does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes.agent.history import chat_history_items, import_items
from hermes.errors import InvalidInputError
from hermes.models.base import ModelResponse, ToolCall, ToolSpec
from hermes.session.items import Item

if TYPE_CHECKING:
    from hermes.messages import Message
    from hermes.session.store import Store

#: Where a message carries its :class:`ClientTurn` (``Message.meta``).
CLIENT_META = "client"


@dataclass(frozen=True, slots=True)
class ClientResult:
    """A client's result for one of its tool calls."""

    tool_call_id: str
    content: str


@dataclass(frozen=True, slots=True)
class ClientTurn:
    """What a chat-completions client brings to a turn (see the module docstring)."""

    #: The client's tools, offered to the model; a call to one ends the turn.
    tools: tuple[ToolSpec, ...] = ()
    #: Results of the client's calls: the turn's input instead of a user message.
    results: tuple[ClientResult, ...] = ()
    #: Chat-format messages that seed the session when it does not exist yet.
    history: tuple[dict[str, Any], ...] = ()

    @property
    def names(self) -> frozenset[str]:
        return frozenset(spec.name for spec in self.tools)

    def to_meta(self) -> dict[str, Any]:
        """The JSON form (``Message.meta["client"]``)."""
        return {
            "tools": [
                {"name": s.name, "description": s.description, "parameters": s.parameters}
                for s in self.tools
            ],
            "results": [
                {"tool_call_id": r.tool_call_id, "content": r.content} for r in self.results
            ],
            "history": list(self.history),
        }

    @classmethod
    def of(cls, message: Message) -> ClientTurn:
        """The message's client options (:data:`NO_CLIENT` when it has none)."""
        data = message.meta.get(CLIENT_META)
        if not isinstance(data, Mapping):
            return NO_CLIENT
        tools = tuple(
            ToolSpec(str(t["name"]), str(t.get("description") or ""), dict(t["parameters"]))
            for t in data.get("tools") or ()
        )
        results = tuple(
            ClientResult(str(r["tool_call_id"]), str(r["content"]))
            for r in data.get("results") or ()
        )
        return cls(tools, results, tuple(dict(m) for m in data.get("history") or ()))

    def client_calls(self, response: ModelResponse) -> list[ToolCall]:
        """The calls of ``response`` to the client's tools (run by the client, not here)."""
        if not self.tools:
            return []
        names = self.names
        return [tc for tc in response.tool_calls if tc.name in names]


#: The options of a turn no chat-completions client started.
NO_CLIENT = ClientTurn()


def pending_calls(items: Sequence[Item]) -> dict[str, str | None]:
    """The calls of the last round of ``items`` without a result: call id → tool name."""
    start = 0
    for index in range(len(items) - 1, -1, -1):
        if items[index].role == "user" and items[index].kind == "text":
            start = index
            break
    pending: dict[str, str | None] = {}
    for item in items[start:]:
        if item.kind == "tool_call" and item.tool_call_id:
            pending[item.tool_call_id] = item.tool_name
        elif item.kind == "tool_result" and item.tool_call_id:
            pending.pop(item.tool_call_id, None)
    return pending


async def open_client_turn(
    store: Store,
    session_id: str,
    user_id: str | None,
    client: ClientTurn,
    *,
    trace_id: str,
    rounds: int,
    max_chars: int,
) -> list[Item]:
    """Before a client's turn, under its claim: seed a new session with the client's history,
    and check that every result answers a call of the session still waiting for one. Returns
    the results as the items to store (none for a user message). ``InvalidInputError``
    before anything is stored when a result answers no waiting call."""
    record = await store.load_session(session_id)
    seed = chat_history_items(client.history) if record is None or record.last_seq == 0 else []
    if client.results:
        if seed:
            waiting = pending_calls(seed)
        else:
            last_round = await store.context_slice(session_id, 1)
            waiting = pending_calls(last_round.window)
        _check_results(client.results, waiting)
    else:
        waiting = {}
    if seed:
        await import_items(store, session_id, user_id, seed, rounds=rounds)
    return [
        Item(
            "tool",
            "tool_result",
            _bounded(result.content, max_chars),
            tool_call_id=result.tool_call_id,
            tool_name=waiting.get(result.tool_call_id),
            trace_id=trace_id,
            meta={"ok": True, "client": True},
        )
        for result in client.results
    ]


def _check_results(results: Sequence[ClientResult], waiting: Mapping[str, str | None]) -> None:
    seen: set[str] = set()
    for result in results:
        call_id = result.tool_call_id
        if call_id in seen:
            raise InvalidInputError(
                f"two results for tool call {call_id!r}; send one per call / "
                f"同一个工具调用 {call_id!r} 只能有一个结果"
            )
        seen.add(call_id)
        if call_id not in waiting:
            known = ", ".join(sorted(waiting)) or "none"
            raise InvalidInputError(
                f"tool call {call_id!r} is not waiting for a result in this session "
                f"(waiting: {known}); send results only for the tool_calls of the last reply "
                f"/ 该会话中没有等待结果的工具调用 {call_id!r}"
            )


def _bounded(text: str, max_chars: int) -> str:
    """A client's result as the model reads it, at most about ``max_chars``."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n[output truncated from {len(text):,} to {max_chars:,} characters]"


def client_call_dicts(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """The calls as :attr:`RunResult.client_calls` holds them."""
    return [{"id": tc.id, "name": tc.name, "arguments": dict(tc.arguments)} for tc in calls]
