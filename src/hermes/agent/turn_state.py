"""What one turn carries while it runs, and the parts of an Agent it uses."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.agent.approvals import PendingApproval
from hermes.agent.client_turn import NO_CLIENT, ClientTurn
from hermes.agent.events import AgentEvent
from hermes.agent.result import ToolCallRecord, TurnOutcome
from hermes.agent.turn_memory import NO_MEMORY, NO_TURN_MEMORY, MemoryHook, TurnMemory
from hermes.models.base import Model, ToolCall, ToolSpec, TurnDirective
from hermes.models.brain import RuleBrain
from hermes.session.fsm import ConversationState, StateMachineSpec
from hermes.session.items import Item, SessionState
from hermes.session.locks import SessionClaim
from hermes.session.store import Store
from hermes.session.summary import Summarizer
from hermes.session.tokens import REPLY_PRIMING, count_tokens, message_tokens
from hermes.tools.permissions import Authorizer
from hermes.tools.pipeline import ToolExecutor
from hermes.tools.registry import ToolRegistry
from hermes.tools.toolsets import ToolsetIndex


def tools_tokens(registry: ToolRegistry) -> int:
    """Tokens the registry's tool schemas take in every model request."""
    if not len(registry):
        return 0
    return count_tokens(json.dumps([s.to_openai() for s in registry.specs()], ensure_ascii=False))


@dataclass(slots=True)
class TurnSettings:
    instructions: str | None = None
    max_iterations: int = 8
    turn_timeout: float = 120.0
    context_rounds: int = 12
    context_budget_tokens: int = 6000
    max_unknown_tools: int = 3
    summary_min_backlog: int = 8
    max_output_chars: int = 20_000
    workspace: Path = field(default_factory=Path.cwd)


@dataclass(slots=True)
class Runtime:
    """The parts of an Agent a turn uses."""

    model: Model
    tools: ToolRegistry
    store: Store
    states: StateMachineSpec
    summarizer: Summarizer
    settings: TurnSettings
    #: Tokens the offered tool schemas take in every request (subtracted from the budget).
    tools_tokens: int = 0
    #: Users → roles → scopes; None or disabled: every tool is open (seed 003 §2.2).
    authorizer: Authorizer | None = None
    #: Picks the relevant toolsets when more than ``toolset_limit`` tools would be offered.
    toolsets: ToolsetIndex | None = None
    toolset_limit: int = 20
    #: What every tool call gets in ``ToolContext.extras``: the tools' settings (http_allow, …).
    extras: dict[str, Any] = field(default_factory=dict)
    #: The tool pipeline (``Agent.executor``); set by the agent before the first turn.
    executor: ToolExecutor | None = None
    #: Working memory, recall, arguments from memory, learning (seed 001 §5): the hook that
    #: starts each turn's memory, chosen with the agent (``NO_MEMORY``: all off).
    memory: MemoryHook = NO_MEMORY

    def refresh_tools(self) -> None:
        """Recount what depends on the registry's tools (their schemas' tokens, the toolset
        index) after tools joined or left it; ``toolset_limit`` must be set."""
        self.tools_tokens = tools_tokens(self.tools)
        over = len(self.tools) > self.toolset_limit
        self.toolsets = ToolsetIndex(list(self.tools)) if over else None

    def offer(self, user_id: str | None, message: str) -> list[ToolSpec]:
        """The tools offered to the model for this message and user (seed 001 §6.3; seed 004
        §4.1: tools the user may not use are not offered at all)."""
        authorizer = (
            self.authorizer if self.authorizer is not None and self.authorizer.enabled else None
        )
        # The rule brain reads no schemas (the token cost §6.3 saves is not there) and must
        # see every tool its intents can reach, whatever the message says.
        toolsets = None if isinstance(self.model, RuleBrain) else self.toolsets
        if authorizer is None and (toolsets is None or len(self.tools) <= self.toolset_limit):
            return self.tools.specs()  # the common case: all tools, a cached list
        tools = list(self.tools)
        if toolsets is not None:
            allowed = None if authorizer is None else (lambda t: authorizer.allowed(user_id, t))
            tools = toolsets.select(message, self.toolset_limit, allowed=allowed)
        elif authorizer is not None:
            tools = authorizer.filter_tools(user_id, tools)
        return self.tools.specs([t.name for t in tools])

    def pipeline(self) -> ToolExecutor:
        """The tool pipeline (built by the agent; one per agent)."""
        if self.executor is None:
            self.executor = ToolExecutor(self.tools, authorizer=self.authorizer)
        return self.executor

    @property
    def message_budget(self) -> int:
        """The token budget left for messages once the tool schemas are counted."""
        return max(256, self.settings.context_budget_tokens - self.tools_tokens)

    @property
    def message_room(self) -> int:
        """Tokens one user message may take: the budget less the tool schemas, the system
        prompt and the reply priming (a longer message could never be sent whole)."""
        instructions = self.settings.instructions
        prompt = message_tokens({"role": "system", "content": instructions}) if instructions else 0
        return max(
            1, self.settings.context_budget_tokens - self.tools_tokens - prompt - REPLY_PRIMING
        )


@dataclass(slots=True)
class TurnState:
    session_id: str
    user_id: str | None
    trace_id: str
    chinese: bool
    fsm: ConversationState
    state: SessionState
    emit: Callable[[AgentEvent], None]
    #: The turn's claim on its session: every write carries its token (the store's fence).
    claim: SessionClaim
    records: list[ToolCallRecord] = field(default_factory=list)
    iterations: int = 0
    #: Event-loop time at which the turn's total timeout expires.
    deadline: float = 0.0
    #: (id, tool name) of calls whose tool_call items are stored but whose results are not.
    pending_calls: list[tuple[str, str]] = field(default_factory=list)
    #: The calls this turn proposed for a person's approval (asked at the end of the turn).
    proposal: PendingApproval | None = None
    #: This turn's memory (``Runtime.memory.begin``): working memory, recalled memories,
    #: fills; the null ``NO_TURN_MEMORY`` until it begins, and with memory off.
    memory: TurnMemory = NO_TURN_MEMORY
    #: Tokens the model reported for this turn's calls (``RunResult.usage``); None: none did.
    usage: dict[str, int] | None = None
    #: Items that go with the turn's next write, before its own (the history summary folded
    #: for this turn's context: derived data, folded again if the turn dies first).
    unsaved: list[Item] = field(default_factory=list)
    #: How the message's channel asked this turn to be handled (an event route's handler).
    directive: TurnDirective | None = None
    #: What a chat-completions client brought (its tools, results, history).
    client: ClientTurn = NO_CLIENT
    #: The calls to the client's tools the turn ended with (the client runs them).
    client_calls: list[ToolCall] = field(default_factory=list)

    def snapshot(self) -> SessionState:
        """A copy of the state to store (the scratch dict keeps changing during the turn)."""
        return SessionState(
            self.fsm.state,
            self.fsm.entered_at,
            dict(self.state.scratch),
            self.state.token_estimate,
            self.state.approval,
        )

    async def append(self, store: Store, items: list[Item]) -> list[Item]:
        """Append items together with the current state, in one transaction, fenced by the
        turn's claim (``ClaimLostError`` once a newer turn of the session has written); the
        :attr:`unsaved` items go first. Returns ``items`` as stored."""
        if self.unsaved:
            items, ahead = [*self.unsaved, *items], len(self.unsaved)
            self.unsaved = []
            stored = await store.append(
                self.session_id, items, state=self.snapshot(), fence=self.claim.token
            )
            return stored[ahead:]
        return await store.append(
            self.session_id, items, state=self.snapshot(), fence=self.claim.token
        )


@dataclass(slots=True)
class Ending:
    """How a turn ends: the reply a person reads and, unless ``ok``, what went wrong."""

    reply: str
    outcome: TurnOutcome = "ok"
    error: dict[str, str] | None = None
    awaiting_slot: bool = False
    #: False when the model said memory must not learn from the message (``meta["learn"]``).
    learn: bool = True
