"""The shape of ``hermes.yaml``: one pydantic model per section, every key typed and bounded.

Every model forbids unknown keys, so a typo (``temprature``) is reported by name instead of being
silently ignored. An empty file gives the embedded defaults: the offline rule brain (``model`` is
``None``), SQLite under ``./.hermes/`` and a JSON log file beside it (DESIGN "Public contracts").
Models are frozen: a loaded configuration is a value; derive a variant with ``model_copy``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from hermes.config.checks import check_scopes
from hermes.config.local import check_timezone, os_user_id
from hermes.config.mcp import ServerConfig, parse_mcp_servers
from hermes.config.plans import PlansConfig  # --- plans --- (one line)
from hermes.config.scheduler import SchedulerConfig  # --- sched --- (one line)
from hermes.config.section import Section as _Section
from hermes.config.server import ServerConfig as HttpServerConfig
from hermes.config.urls import http_url
from hermes.config.webhooks import WebhooksConfig  # --- events --- (one line)
from hermes.errors import InvalidIdError
from hermes.session.ids import validate_user_id

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


class ModelConfig(_Section):
    """An OpenAI-compatible chat completions endpoint (seed 002 §3.1: swap vendors by URL)."""

    provider: Literal["openai_compatible"] = "openai_compatible"
    #: Root of the API, e.g. ``http://127.0.0.1:8000/v1``.
    base_url: str
    #: Sent as a bearer token; ``None`` (or an empty string) for servers that need none.
    #: Kept out of ``repr`` and out of every error message.
    api_key: str | None = Field(default=None, repr=False)
    model: str = Field(min_length=1)
    temperature: float = Field(default=0.2, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    #: Seconds to wait for each read/write of a request (``connect_timeout`` for connecting).
    timeout: float = Field(default=60, gt=0)
    connect_timeout: float = Field(default=10, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    #: ``native``: the server's ``tools`` parameter; ``hermes``: ``<tool_call>`` tags in the prompt
    #: for servers without function calling.
    tool_mode: Literal["native", "hermes"] = "native"
    stream: bool = False
    #: Often carries credentials (``Authorization``), so it is kept out of ``repr`` too.
    extra_headers: dict[str, str] = Field(default_factory=dict, repr=False)

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        return http_url(value)

    @field_validator("api_key")
    @classmethod
    def _empty_key_is_none(cls, value: str | None) -> str | None:
        # ``api_key: ${LLM_API_KEY:-}`` yields "" when the variable is unset: that means "no key".
        return value or None


class AgentConfig(_Section):
    """The agent loop's limits (seed 001 §2.2: 12 rounds, ~6000 tokens of context)."""

    #: The system prompt; ``None``: Hermes's built-in one when a model is configured
    #: (``hermes.agent.factory.DEFAULT_INSTRUCTIONS``), none for the offline brain.
    instructions: str | None = None
    #: Model calls per turn before the loop gives up with an honest failure.
    max_iterations: int = Field(default=8, ge=1, le=100)
    #: Seconds a whole turn may take.
    turn_timeout: float = Field(default=120, gt=0)
    #: Most recent rounds kept verbatim; older ones are summarised.
    context_rounds: int = Field(default=12, ge=1, le=1000)
    context_budget_tokens: int = Field(default=6000, ge=256)
    #: A longer inbound message is rejected (``InvalidInputError``).
    max_message_chars: int = Field(default=100_000, ge=1)
    #: Items beyond the window before a summary is written.
    summary_min_backlog: int = Field(default=8, ge=1)
    #: Hallucinated tool names in one turn before it stops (seed 002 §4.2: three).
    max_unknown_tools: int = Field(default=3, ge=1)
    #: The user of CLI turns and memory commands given no ``--user`` (DESIGN); ``None``: the
    #: OS account name made a valid user id, else ``local`` (see :attr:`default_user_id`).
    default_user: str | None = None
    #: The IANA zone the brain and the clock use when a message names none; ``None``: this
    #: machine's zone, else UTC (and the answer says so).
    timezone: str | None = None

    @field_validator("default_user")
    @classmethod
    def _check_default_user(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return validate_user_id(value)
        except InvalidIdError as exc:  # a ValueError for pydantic, so the key is named
            raise ValueError(exc.message) from None

    @property
    def default_user_id(self) -> str:
        """``default_user``, else the OS account name made a valid user id, else ``local``."""
        return self.default_user or os_user_id()

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str | None) -> str | None:
        return None if value is None or not value.strip() else check_timezone(value.strip())


class StoreConfig(_Section):
    """Where sessions and memory live."""

    #: SQLite file; a relative path is relative to the directory Hermes runs in.
    path: str = Field(default=".hermes/hermes.db", min_length=1)


class LoggingConfig(_Section):
    """Structured JSON logs (seed 002 §4.3)."""

    #: JSON-lines file; ``None`` (``file: null``) disables logging. Relative to the run directory.
    file: str | None = ".hermes/logs/hermes.log"
    level: LogLevel = "INFO"

    @field_validator("level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        # ``level: debug`` is what people type; accept any case.
        return value.upper() if isinstance(value, str) else value


class BrainConfig(_Section):
    """The offline rule brain."""

    #: Extra intent YAML files (zh/en patterns and slots), added to the built-in intents.
    intents: list[str] = Field(default_factory=list)


class ToolsConfig(_Section):
    """Which built-in tools are enabled and where file tools may work."""

    builtins: list[str] = Field(default_factory=lambda: ["calculator", "current_time"])
    #: The directory tools get as ``ToolContext.workspace``; relative to the run directory.
    workspace: str = Field(default=".", min_length=1)
    #: A directory of plugin ``*.py`` files (``@tool`` functions or ``TOOL_METADATA``);
    #: ``None``: no plugins. Relative to the run directory.
    plugins_dir: str | None = Field(default=None, min_length=1)
    #: With more tools than this, only the toolsets relevant to the message are offered
    #: (seed 001 §6.3: past ~20 tool schemas, group them and inject them dynamically).
    toolset_limit: int = Field(default=20, ge=1, le=1000)
    #: Hosts or CIDRs ``http_request`` may reach although they are loopback/private/link-local
    #: (blocked by default against SSRF), e.g. ``["127.0.0.1", "10.1.0.0/16"]``.
    http_allow: list[str] = Field(default_factory=list)


_ROLE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


class RoleConfig(_Section):
    """A role: the scopes it grants, plus those of the roles it inherits."""

    scopes: list[str] = Field(default_factory=list)
    inherits: list[str] = Field(default_factory=list)

    @field_validator("scopes")
    @classmethod
    def _check_scopes(cls, value: list[str]) -> list[str]:
        check_scopes(value)  # the syntax hermes.config.checks shares with mcp_servers
        return value


class UserConfig(_Section):
    """A user's roles (by name, from ``rbac.roles``)."""

    roles: list[str] = Field(default_factory=list)


class RbacConfig(_Section):
    """Users → roles → scopes (seed 003 §2.2, "dynamic RBAC gateway").

    Off by default: with ``enabled: false`` the ``permissions`` of tools are not enforced and
    nothing is audited, so configurations written before RBAC behave as they did.
    """

    enabled: bool = False
    roles: dict[str, RoleConfig] = Field(default_factory=dict)
    #: The role of every user not listed in ``users`` (and of anonymous callers);
    #: ``None``: they hold no scope, so only tools without ``permissions`` are open to them.
    default_role: str | None = None
    users: dict[str, UserConfig] = Field(default_factory=dict)
    #: JSON-lines audit log of every decision on a permission-protected tool; relative to the
    #: run directory.
    audit_log: str = Field(default=".hermes/audit.log", min_length=1)

    def role_scopes(self) -> dict[str, frozenset[str]]:
        """Each role's scopes with those of every role it inherits, transitively (what
        ``hermes.tools.permissions.Authorizer.from_roles`` takes).

        Validation has already refused unknown parents and cycles; a cycle reaching here
        anyway (a config built without validation) raises ``ValueError`` rather than recursing
        forever.
        """
        resolved: dict[str, frozenset[str]] = {}
        resolving: set[str] = set()

        def resolve(name: str) -> frozenset[str]:
            done = resolved.get(name)
            if done is not None:
                return done
            if name in resolving:
                raise ValueError(f"role {name!r} inherits itself")
            resolving.add(name)
            role = self.roles[name]
            scopes = frozenset(role.scopes).union(*(resolve(parent) for parent in role.inherits))
            resolving.discard(name)
            resolved[name] = scopes
            return scopes

        for name in self.roles:
            resolve(name)
        return resolved

    def user_roles(self) -> dict[str, tuple[str, ...]]:
        """Each listed user's role names."""
        return {user: tuple(entry.roles) for user, entry in self.users.items()}

    @field_validator("roles")
    @classmethod
    def _check_roles(cls, value: dict[str, RoleConfig]) -> dict[str, RoleConfig]:
        for name, role in value.items():
            if not _ROLE_NAME.fullmatch(name):
                raise ValueError(f"invalid role name {name!r}: use 1-64 of A-Z a-z 0-9 _ . -")
            for parent in role.inherits:
                if parent not in value:
                    raise ValueError(
                        f"role {name!r} inherits unknown role {parent!r} "
                        f"(defined roles: {_names(value)})"
                    )
        cycle = _inheritance_cycle(value)
        if cycle:
            raise ValueError("roles inherit in a cycle: " + " -> ".join(cycle))
        return value

    @field_validator("default_role")
    @classmethod
    def _check_default_role(cls, value: str | None, info: ValidationInfo) -> str | None:
        roles = info.data.get("roles")  # absent when ``roles`` itself was invalid
        if value is not None and roles is not None and value not in roles:
            raise ValueError(f"unknown role {value!r} (defined roles: {_names(roles)})")
        return value

    @field_validator("users", mode="before")
    @classmethod
    def _user_ids_are_text(cls, value: Any) -> Any:
        # YAML reads ``10086: {roles: [...]}`` with an int key; user ids are strings.
        if isinstance(value, dict):
            return {str(key): item for key, item in value.items()}
        return value

    @field_validator("users")
    @classmethod
    def _check_users(
        cls, value: dict[str, UserConfig], info: ValidationInfo
    ) -> dict[str, UserConfig]:
        roles = info.data.get("roles")
        if roles is None:
            return value
        for user_id, user in value.items():
            if not user_id:
                raise ValueError("a user id must not be empty")
            for role in user.roles:
                if role not in roles:
                    raise ValueError(
                        f"user {user_id!r} has unknown role {role!r} "
                        f"(defined roles: {_names(roles)})"
                    )
        return value


def _names(roles: dict[str, Any]) -> str:
    return ", ".join(sorted(roles)) or "none"


def _inheritance_cycle(roles: dict[str, RoleConfig]) -> list[str]:
    """The first inheritance cycle found (``[a, b, a]``), or ``[]``; every parent must exist."""
    on_path, done = 1, 2
    state: dict[str, int] = {}
    for start, role in roles.items():
        if start in state:
            continue
        # Iterative depth-first search: the current path and, per node, an iterator of parents.
        path = [start]
        state[start] = on_path
        pending = [iter(role.inherits)]
        while pending:
            parent = next(pending[-1], None)
            if parent is None:
                state[path.pop()] = done
                pending.pop()
            elif state.get(parent) == on_path:
                return [*path[path.index(parent) :], parent]
            elif parent not in state:
                state[parent] = on_path
                path.append(parent)
                pending.append(iter(roles[parent].inherits))
    return []


class McpServeConfig(_Section):
    """``hermes mcp serve``: Hermes's own tools offered to other MCP clients (seed 001 §4.1;
    DESIGN.md, "Public contracts")."""

    transport: Literal["stdio", "http"] = "stdio"
    #: The HTTP transport's address; anything but loopback needs ``token``.
    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=8765, ge=0, le=65535)
    #: Bearer token every HTTP request must carry (``Authorization: Bearer …``); ``None`` or
    #: empty: none (loopback only). Use ``${HERMES_MCP_TOKEN}``; kept out of ``repr``.
    token: str | None = Field(default=None, repr=False)
    #: Tools that need a person's approval are refused over MCP unless this is true (the MCP
    #: client is then trusted to have asked its user).
    allow_approval: bool = False
    #: Also serve the tools of the configured ``mcp_servers`` (off: only built-ins and plugins).
    include_mcp_tools: bool = False
    #: The user id calls run as (for ``rbac``); ``None``: anonymous.
    user: str | None = None

    @field_validator("token")
    @classmethod
    def _empty_token_is_none(cls, value: str | None) -> str | None:
        return value or None


class MemoryConfig(_Section):
    """Memory (seed 000 §2.4, seed 001 §5): the tool-call index and archive, working memory,
    long-term memories.

    Files live beside the session database (``memory.db`` and ``archive/`` in the store's
    directory) unless ``dir`` says otherwise; an in-memory store keeps memory in memory.
    """

    enabled: bool = True
    #: Directory of ``memory.db`` and ``archive/``; ``None``: the session store's directory.
    dir: str | None = Field(default=None, min_length=1)
    #: Long-term memories written after each turn: ``auto`` = by the configured model (fixed
    #: JSON output), by rules with the offline brain; ``rules``; ``model``; ``off``.
    extraction: Literal["auto", "rules", "model", "off"] = "auto"
    #: Candidates below this confidence are not kept.
    threshold: float = Field(default=0.8, ge=0, le=1)
    #: Implicit habits (a behaviour seen more than 3 times) — off by default.
    habits: bool = False
    #: ``auto``: vector recall when the ``hermes[semantic]`` extra is installed; ``off``: keywords.
    semantic: Literal["auto", "off"] = "auto"
    #: ``auto``: keyword recall also finds a memory written in the other language (Chinese ↔
    #: English, through the CC-CEDICT dictionary); ``off``: each language finds only itself.
    cross_language: Literal["auto", "off"] = "auto"
    recall_min_score: float = Field(default=0.45, ge=0, le=1)
    recall_max_items: int = Field(default=5, ge=1, le=20)
    #: Habits and events older than this are not recalled (facts and preferences are).
    recency_days: float = Field(default=30, gt=0)
    #: Complete a tool call's missing required arguments from working/long-term memory.
    fill_arguments: bool = True
    #: Record every tool call in the index (L2) and its output in the archive (L3).
    tool_index: bool = True
    #: Upkeep (merge, demote, resolve conflicts) every this many hours while an agent runs;
    #: ``None``: only ``hermes memory upkeep``.
    upkeep_interval_hours: float | None = Field(default=24, gt=0)
    #: Never-recalled memories are demoted after this many days and deleted after
    #: ``delete_after_days``.
    demote_after_days: float = Field(default=90, gt=0)
    delete_after_days: float = Field(default=180, gt=0)
    #: Tool-call index entries (and the archived outputs only they used) are pruned by upkeep
    #: after this many days.
    tool_calls_retention_days: float = Field(default=90, gt=0)

    @field_validator("semantic", "extraction", "cross_language", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare ``off`` as false (and ``on`` as true).
        if isinstance(value, bool):
            return "auto" if value else "off"
        return value


_SECTIONS = (
    "agent", "store", "logging", "brain", "tools", "rbac", "mcp_serve", "memory", "server",
    "scheduler",  # --- sched --- (one line)
    "webhooks",  # --- events --- (one line)
    "plans",  # --- plans --- (one line)
)  # fmt: skip


class HermesConfig(_Section):
    """The whole configuration; ``HermesConfig()`` is the embedded default."""

    #: ``None`` selects the offline rule brain.
    model: ModelConfig | None = None
    agent: AgentConfig = Field(default_factory=AgentConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    brain: BrainConfig = Field(default_factory=BrainConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    rbac: RbacConfig = Field(default_factory=RbacConfig)
    #: MCP servers whose tools the agent offers (``hermes.config.mcp``); both our shape and
    #: the pasted ``{"mcpServers": {...}}`` shape.
    mcp_servers: dict[str, ServerConfig] = Field(default_factory=dict)
    mcp_serve: McpServeConfig = Field(default_factory=McpServeConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    #: ``hermes serve`` (``hermes.config.server``).
    server: HttpServerConfig = Field(default_factory=HttpServerConfig)
    # --- sched: cron jobs (``hermes.config.scheduler``) ---
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    # --- end sched ---
    # --- events: inbound webhooks (``hermes.config.webhooks``) ---
    webhooks: WebhooksConfig = Field(default_factory=WebhooksConfig)
    # --- end events ---
    # --- plans: multi-call plans (``hermes.config.plans``) ---
    plans: PlansConfig = Field(default_factory=PlansConfig)
    # --- end plans ---

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _parse_mcp_servers(cls, value: Any) -> Any:
        # A ConfigError naming ``mcp_servers.<server>.<key>`` passes through pydantic (it is
        # not a ValueError); the loader adds the file.
        return parse_mcp_servers(value)

    @field_validator(*_SECTIONS, mode="before")
    @classmethod
    def _empty_section_is_default(cls, value: Any) -> Any:
        # A section whose keys are all commented out parses as null; treat it as "all defaults".
        return {} if value is None else value

    # --- serve: api key roles are rbac roles ---
    @model_validator(mode="after")
    def _check_key_roles(self) -> HermesConfig:
        # DESIGN.md, HTTP "Auth": a key's roles are the rbac section's roles (``admin`` is
        # also the HTTP role that may act for other users).
        for index, entry in enumerate(self.server.api_keys):
            unknown = [r for r in entry.roles if r != "admin" and r not in self.rbac.roles]
            if unknown:
                defined = ", ".join(sorted(self.rbac.roles)) or "none"
                raise ValueError(
                    f"server.api_keys[{index}].roles (user {entry.user!r}): unknown roles "
                    f"{', '.join(unknown)} (rbac.roles defines: {defined}) / API 密钥的角色未定义"
                )
        return self

    # --- end serve ---
