"""The Agent: the public entry point that ties a model, tools and a store into turns.

    agent = Agent(model=FunctionModel(script), tools=[add], store="hermes.db")
    result = await agent.run("what is 2+3?", session_id="session-0001", user_id="u1")

With no model it runs the offline rule brain with the built-in calculator and clock, so a
newcomer can hold a conversation with no server and no key.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from hermes.agent.approvals import Decision, PendingApproval
from hermes.agent.compose import idempotency_records, notes_stores, open_locks, open_store
from hermes.agent.events import AgentEvent, TurnFinished
from hermes.agent.history import import_chat_history
from hermes.agent.remote_tools import RemoteTools
from hermes.agent.result import RunResult
from hermes.agent.turn import run_turn
from hermes.agent.turn_memory import NO_MEMORY, MemoryHook
from hermes.agent.turn_state import Runtime, TurnSettings
from hermes.errors import InvalidInputError
from hermes.messages import Message
from hermes.models.base import Model
from hermes.models.brain import RuleBrain
from hermes.observe import get_logger, log_context
from hermes.session.fsm import StateMachineSpec
from hermes.session.ids import new_session_id, validate_session_id, validate_user_id
from hermes.session.locks import SessionClaim
from hermes.session.store import Store
from hermes.session.summary import ExtractiveSummarizer, Summarizer
from hermes.session.tokens import message_tokens
from hermes.tools.base import Tool
from hermes.tools.builtin import BUILTIN_TOOLS
from hermes.tools.builtin.notes import DEFAULT_NOTES_TOOLS, notes_tools
from hermes.tools.decorator import as_tool
from hermes.tools.permissions import Authorizer
from hermes.tools.pipeline import ToolExecutor
from hermes.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from hermes.config.mcp import ServerConfig
    from hermes.mcp.client import McpManager
    from hermes.memory.facade import Memory

DEFAULT_BUILTINS = ("calculator", "current_time")
#: How long ``aclose`` waits for the background memory work of a Memory it does not own.
MEMORY_DRAIN_TIMEOUT_S = 5.0
ToolLike = str | Tool | Callable[..., Any]

log = get_logger("agent")


class Agent:
    """A message-driven agent: ``run`` one turn, ``stream`` its events, ``handle`` a Message.

    ``tools`` takes ``@tool`` functions, ``Tool`` objects and names of built-in tools; when it
    is omitted the built-ins ``calculator`` and ``current_time`` are offered. ``store`` is a
    ``Store`` or a SQLite file path (default ``./.hermes/hermes.db``).

    ``memory`` (seed 001 §5; off by default, so a plain agent pays nothing for it): a
    :class:`hermes.memory.facade.Memory` — working memory, recall of the user's long-term
    memories, arguments from memory, learning after each turn, tool-call records and
    ``cache_ttl`` reuse across restarts, and the ``remember``/``recall_memories``/
    ``forget_memory`` tools — or a directory to open one in (``Memory.open``; then the agent
    owns and closes it, as with a store path).
    """

    def __init__(
        self,
        model: Model | None = None,
        tools: Iterable[ToolLike] | None = None,
        store: Store | str | Path | None = None,
        *,
        instructions: str | None = None,
        max_iterations: int = 8,
        turn_timeout: float = 120.0,
        context_rounds: int = 12,
        context_budget_tokens: int = 6000,
        max_message_chars: int = 100_000,
        max_unknown_tools: int = 3,
        summary_min_backlog: int = 8,
        workspace: str | Path | None = None,
        summarizer: Summarizer | None = None,
        states_file: str | Path | None = None,
        authorizer: Authorizer | None = None,
        toolset_limit: int = 20,
        http_allow: Sequence[str] = (),
        mcp_servers: Mapping[str, ServerConfig] | McpManager | None = None,
        memory: Memory | str | Path | None = None,
    ) -> None:
        _check_settings(
            max_iterations=max_iterations,
            context_rounds=context_rounds,
            max_unknown_tools=max_unknown_tools,
            summary_min_backlog=summary_min_backlog,
            max_message_chars=max_message_chars,
            context_budget_tokens=context_budget_tokens,
            toolset_limit=toolset_limit,
        )
        if turn_timeout <= 0:
            raise ValueError(f"turn_timeout must be > 0, got {turn_timeout}")
        self.model: Model = model if model is not None else RuleBrain()
        self.tools = ToolRegistry()
        for item in DEFAULT_BUILTINS if tools is None else tools:
            self.tools.register(_resolve_tool(item))
        self.store: Store = open_store(store)
        #: A store the caller built is the caller's to close; one opened from a path is ours.
        self._owns_store = not isinstance(store, Store)
        #: The agent's memory, or None; owned as the store is (see ``aclose``).
        self.memory, self._owns_memory = _open_memory(memory, self.tools)
        self.max_message_chars = max_message_chars
        if summarizer is None:
            # Deterministic and free; pass ModelSummarizer(model) to have a model write the
            # rolling summary (hermes.yaml with a model does). Never the agent's own model by
            # default: a summary request would consume a scripted model's steps.
            summarizer = ExtractiveSummarizer()
        self._runtime = Runtime(
            model=self.model,
            tools=self.tools,
            store=self.store,
            states=StateMachineSpec(states_file),
            summarizer=summarizer,
            settings=TurnSettings(
                instructions=instructions,
                max_iterations=max_iterations,
                turn_timeout=turn_timeout,
                context_rounds=context_rounds,
                context_budget_tokens=context_budget_tokens,
                max_unknown_tools=max_unknown_tools,
                summary_min_backlog=summary_min_backlog,
                workspace=Path(workspace) if workspace is not None else Path.cwd(),
            ),
        )
        runtime = self._runtime
        _equip(runtime, authorizer, toolset_limit, self.memory, http_allow)
        #: What every tool call finds in ``ToolContext.extras``: the tools' own settings
        #: (``http_allow``, ``protected_paths``, ``timezone``…), JSON data only.
        self.tool_extras = runtime.extras
        #: The tool pipeline of every call (``hermes.tools.pipeline``; ``insert`` adds a step).
        self.executor = runtime.executor = _executor(runtime, self.memory)
        #: Claims on sessions: one turn per session at a time, across processes.
        self._locks = open_locks(self.store)
        #: Problems met while building the agent that did not stop it (a skipped plugin file).
        self.startup_warnings: list[str] = []
        #: The MCP servers' tools (``None`` without servers); they connect in the background
        #: from the first turn (or ``connect_mcp``) and join the registry when ready.
        self.mcp = RemoteTools(mcp_servers, runtime) if mcp_servers else None

    # -- turns ----------------------------------------------------------------------------------
    async def run(
        self,
        text: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        channel: str = "python",
        trace_id: str | None = None,
    ) -> RunResult:
        """Run one turn and return its result (reply, state, trace_id, tool calls)."""
        message = self._request(text, channel, session_id, user_id, trace_id)
        return await self._turn(message, _ignore)

    async def stream(
        self,
        text: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        channel: str = "python",
        trace_id: str | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """Run one turn, yielding its events as they happen; the last is ``TurnFinished``.

        If the turn raises, the error is raised here instead. Leaving early cancels the turn
        and closes it cleanly (calls without results get ``interrupted``, the state goes back to
        ``idle``); use ``contextlib.aclosing(agent.stream(...))`` so that happens at once.
        """
        message = self._request(text, channel, session_id, user_id, trace_id)
        queue: asyncio.Queue[AgentEvent | BaseException] = asyncio.Queue()

        async def produce() -> None:
            try:
                result = await self._turn(message, queue.put_nowait)
                queue.put_nowait(TurnFinished(result))
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, re-raised there
                queue.put_nowait(exc)

        task = asyncio.ensure_future(produce())
        try:
            while True:
                event = await queue.get()
                if isinstance(event, BaseException):
                    raise event
                yield event
                if isinstance(event, TurnFinished):
                    break
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _request(
        self,
        text: object,
        channel: str,
        session_id: str | None,
        user_id: str | None,
        trace_id: str | None,
    ) -> Message:
        checked = _check_text(text, self.max_message_chars, self._runtime)
        return Message.request(
            checked, channel=channel, session_id=session_id, user_id=user_id, trace_id=trace_id
        )

    async def handle(self, message: Message) -> Message:
        """Answer a Message from any channel with a response Message (``reply_to`` linked)."""
        _check_text(message.content, self.max_message_chars, self._runtime)
        result = await self._turn(message, _ignore)
        return message.reply(
            result.reply,
            session_id=result.session_id,
            state=result.state,
            tool_calls=result.to_json_dict()["tool_calls"],
            approval_id=result.approval_id,  # dropped from meta when None
        )

    async def _turn(
        self,
        message: Message,
        emit: Callable[[AgentEvent], None],
        *,
        decision: Decision | None = None,
        approval_id: str | None = None,
        wait: float | None = None,
    ) -> RunResult:
        user_id = None if message.user_id is None else validate_user_id(message.user_id)
        raw_session = message.session_id
        session_id = new_session_id() if raw_session is None else validate_session_id(raw_session)
        if self.mcp is not None:
            self.mcp.sync()  # never waits: a server not ready yet joins a later turn
        with log_context(msg_id=message.msg_id, trace_id=message.trace_id, session_id=session_id):
            # Claimed before the state is read and the message stored: the busy check and the
            # user's message belong to the one turn that holds the session. A turn waits for the
            # one before it at most one turn's time, then is refused (nothing of it stored).
            if wait is None:
                wait = self._runtime.settings.turn_timeout
            async with self._locks.claim(session_id, wait=wait) as claim:
                if approval_id is not None and await self.store.load_session(session_id) is None:
                    raise InvalidInputError(
                        f"no pending approval {approval_id!r}: session {session_id!r} does not "
                        "exist / 会话不存在",
                        approval_id=approval_id,
                    )
                return await run_turn(
                    self._runtime,
                    message,
                    session_id,
                    user_id,
                    emit,
                    claim=claim,
                    decision=decision,
                    approval_id=approval_id,
                )

    # --- chat: one Message from a channel, streamed, with a busy policy (DESIGN.md, HTTP) ---
    async def run_message(
        self,
        message: Message,
        *,
        on_event: Callable[[AgentEvent], None] | None = None,
        busy: Literal["enqueue", "reject"] = "enqueue",
    ) -> RunResult:
        """Run the turn of ``message`` (``hermes.channels.intake`` is the one caller), calling
        ``on_event`` with each event as it happens (not ``TurnFinished``: the result is that).

        ``busy="enqueue"`` waits its turn behind the session's running turn (first come, first
        served in this process; at most ``turn_timeout``); ``"reject"`` does not wait. Either
        way a session that stays busy raises ``SessionBusyError`` and nothing of it is stored.
        """
        _check_text(message.content, self.max_message_chars, self._runtime)
        wait = 0.0 if busy == "reject" else None
        return await self._turn(message, on_event or _ignore, wait=wait)

    def check_message(self, text: object) -> str:
        """``text`` if this agent would take it as a message, else ``InvalidInputError``."""
        return _check_text(text, self.max_message_chars, self._runtime)

    # --- end chat ---

    # -- approvals (seed 004 §4.3) ---------------------------------------------------------------
    async def approve(
        self, approval_id: str, *, session_id: str, user_id: str | None = None
    ) -> RunResult:
        """Run the call(s) waiting for approval ``approval_id`` and finish the turn with the
        model, as if the person had answered "yes" (which is recorded as their message).

        Raises ``InvalidInputError`` for an unknown, decided or expired approval and
        ``SessionAccessError`` when the session belongs to another user.
        """
        return await self._decide(approval_id, "approve", session_id, user_id)

    async def reject(
        self, approval_id: str, *, session_id: str, user_id: str | None = None
    ) -> RunResult:
        """Drop the call(s) waiting for approval ``approval_id`` without running them, as if
        the person had answered "no". Raises like :meth:`approve`."""
        return await self._decide(approval_id, "reject", session_id, user_id)

    async def decide(
        self,
        approval_id: str,
        decision: Decision,
        *,
        session_id: str,
        user_id: str | None = None,
        trace_id: str | None = None,
        on_event: Callable[[AgentEvent], None] | None = None,
    ) -> RunResult:
        """:meth:`approve` or :meth:`reject` (``decision``) as a channel runs it: the turn
        named ``trace_id`` (else a new one), its events to ``on_event`` as they happen."""
        return await self._decide(approval_id, decision, session_id, user_id, trace_id, on_event)

    async def _decide(  # noqa: PLR0917 - private: approve, reject and decide call it
        self,
        approval_id: str,
        decision: Decision,
        session_id: str,
        user_id: str | None,
        trace_id: str | None = None,
        emit: Callable[[AgentEvent], None] | None = None,
    ) -> RunResult:
        if not isinstance(approval_id, str) or not approval_id.strip():
            raise InvalidInputError("an approval id is required / 缺少确认编号")
        chinese = await self._approval_language(session_id, approval_id)
        words = {"approve": ("确认", "yes"), "reject": ("取消", "no")}[decision]
        message = Message.request(
            words[0] if chinese else words[1],
            channel="api",
            session_id=session_id,
            user_id=user_id,
            trace_id=trace_id,
        )
        return await self._turn(
            message, emit or _ignore, decision=decision, approval_id=approval_id
        )

    async def _approval_language(self, session_id: str, approval_id: str) -> bool:
        """Whether the approval was asked in Chinese (the recorded answer uses that language)."""
        record = await self.store.load_session(validate_session_id(session_id))
        pending = None if record is None else PendingApproval.from_data(record.state.approval)
        return pending is not None and pending.approval_id == approval_id and pending.chinese

    # -- history and lifecycle ------------------------------------------------------------------
    def import_history(
        self, session_id: str, messages: Sequence[dict[str, Any]], *, user_id: str | None = None
    ) -> int:
        """Bring an existing chat-format conversation into a session (blocking, bulk).

        Returns the number of items stored. History older than the context window is folded
        into a summary at once, so the next turn costs what it costs in a short session.
        """
        return import_chat_history(
            self.store,
            validate_session_id(session_id),
            None if user_id is None else validate_user_id(user_id),
            messages,
            rounds=max(1, self._runtime.settings.context_rounds - 1),
        )

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session and all its items, under the session's claim (the lock its turns
        take, in this process and across processes), so no running turn is cut off mid-write:
        a session a turn holds raises ``SessionBusyError`` at once. False when it did not exist.
        """
        sid = validate_session_id(session_id)
        async with self._locks.claim(sid, wait=0.0):
            return await self.store.delete_session(sid)

    @property
    def turn_timeout(self) -> float:
        """Seconds a whole turn may take (and a turn waits at most for its session)."""
        return self._runtime.settings.turn_timeout

    @property
    def workspace(self) -> Path:
        """The tools' working directory (``tools.workspace``)."""
        return self._runtime.settings.workspace

    def session_claim(
        self, session_id: str, *, wait: float
    ) -> contextlib.AbstractAsyncContextManager[SessionClaim]:
        """Hold ``session_id`` as a turn does (one writer at a time, across processes):
        what writes into a session from outside a turn use (a finished plan run)."""
        return self._locks.claim(session_id, wait=wait)

    @property
    def authorizer(self) -> Authorizer | None:
        """Users → roles → scopes for permission-protected tools (``None``: not enforced)."""
        return self._runtime.authorizer

    async def connect_mcp(self, timeout: float | None = None) -> list[dict[str, Any]]:  # noqa: ASYNC109 - a bounded wait is the API
        """Connect the MCP servers now and wait until each is ready or failed; their status.

        Turns never wait for servers (a slow one joins a later turn); a one-shot caller that
        needs the remote tools in its first turn awaits this first. Each server's wait is
        bounded by ``timeout`` (default: its ``connect_timeout`` plus a second).
        """
        if self.mcp is None:
            return []
        await self.mcp.wait_ready(timeout)
        return self.mcp.status()

    async def aclose(self) -> None:
        """Close what the agent opened: its memory, MCP connections, the model's connections
        and a store it opened itself (a ``Store``, ``Memory`` or ``McpManager`` passed in stays
        open: its owner closes it; the memory work this agent started is awaited, bounded)."""
        if self.memory is not None:  # first: its background work may still use the model
            if self._owns_memory:
                await self.memory.aclose()
            elif not await self.memory.drain(MEMORY_DRAIN_TIMEOUT_S):
                log.warning("memory_work_pending_at_close", pending=self.memory.pending)
        if self.mcp is not None:
            await self.mcp.aclose()
        closer = getattr(self.model, "aclose", None)
        if closer is not None:
            await closer()
        self._locks.close()
        if self._owns_store:
            await self.store.close()

    async def __aenter__(self) -> Agent:
        if self.mcp is not None:
            self.mcp.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _ignore(event: AgentEvent) -> None:
    """The event sink of ``run``: events are only built for ``stream``."""


def _resolve_tool(item: ToolLike) -> Tool:
    """A tool given by object or by name: a built-in, or one of memory's tools (unbound here,
    bound to the agent's memory once it is open: ``_bind_memory_tools``)."""
    if isinstance(item, str):
        builtin = BUILTIN_TOOLS.get(item)
        if builtin is not None:
            return builtin
        unbound = _unbound_memory_tools()
        if item in unbound:
            return unbound[item]
        known = ", ".join(sorted([*BUILTIN_TOOLS, *unbound]))
        raise ValueError(f"unknown built-in tool '{item}' (built-ins: {known})")
    return as_tool(item)


@functools.cache
def _unbound_memory_tools() -> Mapping[str, Tool]:
    """Memory's tools bound to no memory (they refuse with ``memory_unavailable``), by name:
    what a name stands for until the agent's memory is open, and without one."""
    from hermes.memory.tools import memory_tools  # loads only for a name that is no built-in

    return MappingProxyType({t.name: t for t in memory_tools(None)})


def _bind_memory_tools(registry: ToolRegistry, memory: Memory) -> None:
    """Memory's tools named among the agent's tools now work on ``memory``, in their place;
    the others join when the memory offers them (``offer_tools``). Only with a long-term store:
    without one they could only refuse. A tool of the same name that is not memory's (a
    plugin, a program's own) is kept."""
    if memory.store is None:
        return
    from hermes.memory.tools import memory_tools  # the memory package is loaded already

    for bound in memory_tools(memory):
        held = registry.get(bound.name)
        if held is None and memory.offer_tools:
            registry.register(bound)
        elif held is not None and held is _unbound_memory_tools().get(bound.name):
            registry.register(bound, replace=True)  # keeps its place in the offered order


def _equip(
    runtime: Runtime,
    authorizer: Authorizer | None,
    toolset_limit: int,
    memory: Memory | None,
    http_allow: Sequence[str],
) -> None:
    """Token count of the tool schemas, RBAC, toolset selection, memory and the tools'
    settings on the runtime."""
    runtime.authorizer = authorizer
    runtime.toolset_limit = toolset_limit
    runtime.refresh_tools()
    runtime.memory = _memory_hook(memory)
    runtime.extras = {"http_allow": list(http_allow)}


def _memory_hook(memory: Memory | None) -> MemoryHook:
    """The turn's memory hook: memory's touch points of every turn (``NO_MEMORY``: all off)."""
    if memory is None:
        return NO_MEMORY
    from hermes.agent.memory_step import MemoryTurns  # the memory package loads only when used

    return MemoryTurns(memory)


def _open_memory(
    memory: Memory | str | Path | None, registry: ToolRegistry
) -> tuple[Memory | None, bool]:
    """The agent's Memory and whether it owns it (it opened it from a directory); memory's
    tools in ``registry`` are bound to it (``_bind_memory_tools``)."""
    if memory is None:
        return None, False
    owned = isinstance(memory, str | Path)
    if isinstance(memory, str | Path):
        from hermes.memory.facade import Memory  # the memory package loads only when used

        memory = Memory.open(memory)
    _bind_memory_tools(registry, memory)
    return memory, owned


def _bind_notes_tools(registry: ToolRegistry, store: Store) -> None:
    """The notes tools among the agent's tools (by name or as the module's objects) work on the
    stores the composition root picks for ``store`` (``<workspace>/.hermes/notes.db``) instead
    of the in-process default, keeping their place in the offered order."""
    held = [name for name, t in DEFAULT_NOTES_TOOLS.items() if registry.get(name) is t]
    if not held:
        return
    for bound in notes_tools(notes_stores(store)):
        if bound.name in held:
            registry.register(bound, replace=True)


def _executor(runtime: Runtime, memory: Memory | None) -> ToolExecutor:
    """The agent's tool pipeline: its authorizer; durable idempotency records where the
    storage layer keeps them for this store; memory's step in the cache's place. The tools'
    own backends are bound here too (the notes tools: ``_bind_notes_tools``)."""
    _bind_notes_tools(runtime.tools, runtime.store)
    executor = ToolExecutor(
        runtime.tools,
        authorizer=runtime.authorizer,
        idempotency=idempotency_records(runtime.store),
        max_output_chars=runtime.settings.max_output_chars,
    )
    step = None if memory is None else memory.pipeline_step()
    if step is not None:
        executor.replace("cache", step)
    return executor


def _check_settings(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")


def _check_text(text: object, limit: int, runtime: Runtime) -> str:
    """The message text, or ``InvalidInputError`` naming what is wrong with it (4xx-style)."""
    if not isinstance(text, str):
        raise InvalidInputError(f"a message must be text, got {type(text).__name__}")
    if not text.strip():
        raise InvalidInputError("the message is empty / 消息为空")
    if len(text) > limit:
        raise InvalidInputError(
            f"the message is too long: {len(text):,} characters (limit {limit:,}) / "
            f"消息过长：{len(text):,} 个字符（上限 {limit:,}）"
        )
    if "\x00" in text:
        raise InvalidInputError("the message contains a NUL character / 消息包含非法的 NUL 字符")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate ("\ud800" is valid JSON)
            raise InvalidInputError(
                f"the message contains an unpaired surrogate at character {exc.start}: it is "
                "not valid Unicode text / 消息包含无效的 Unicode 字符（孤立的代理项）"
            ) from None
    tokens = message_tokens({"role": "user", "content": text})
    room = runtime.message_room
    if tokens > room:
        # It could never be sent whole: refuse it now rather than as a server error later.
        budget = runtime.settings.context_budget_tokens
        raise InvalidInputError(
            f"the message is too long for the model's context: about {tokens:,} tokens, and "
            f"a request holds {room:,} besides the system prompt and tool schemas "
            f"(agent.context_budget_tokens = {budget:,}); shorten it or raise "
            f"agent.context_budget_tokens / 消息超出上下文预算：约 {tokens:,} 个 token，"
            f"除去系统提示和工具定义后一次请求只能容纳 {room:,} 个"
            f"（agent.context_budget_tokens = {budget:,}）；请缩短消息或调高 "
            "agent.context_budget_tokens"
        )
    return text
