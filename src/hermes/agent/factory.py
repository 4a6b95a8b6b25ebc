"""Build an Agent from configuration (``hermes.yaml`` or the embedded defaults)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hermes.agent.agent import Agent
from hermes.agent.compose import check_store_backend, open_store
from hermes.agent.plan_tool import offer_run_plan
from hermes.agent.plans import PlanSetup, configure_plans
from hermes.config import LoadedConfig
from hermes.config.schema import RbacConfig
from hermes.models.base import Model
from hermes.models.brain import RuleBrain
from hermes.observe import configure_logging, get_logger
from hermes.session.summary import ModelSummarizer
from hermes.tools.audit import AuditLog
from hermes.tools.base import Tool
from hermes.tools.builtin.clock import DEFAULT_TIMEZONE_KEY
from hermes.tools.permissions import Authorizer
from hermes.tools.plugins import load_plugins

if TYPE_CHECKING:
    from hermes.memory.extract import Extractor
    from hermes.memory.facade import Memory

log = get_logger("agent")

#: The system prompt used with a configured model when ``agent.instructions`` is not set
#: (seed 002 §5: constraint over freedom; seed 004 §3.3: ask tools, never invent).
DEFAULT_INSTRUCTIONS = (
    "You are Hermes, a precise assistant that acts through tools. Use a tool whenever the "
    "answer depends on data or an action you do not have; never invent tool results, numbers "
    "or facts. If no tool can do what is asked, say so plainly. If a tool returns an error, "
    "fix the arguments or explain the failure. Answer in the user's language, briefly."
)


def build_model(loaded: LoadedConfig, *, offline: bool = False) -> Model:
    """The configured model, or the offline rule brain when none is configured."""
    mc = loaded.config.model
    if mc is None or offline:
        return RuleBrain(loaded.intent_files)
    # Imported here: the openai SDK costs ~0.35 s of start-up, which the offline brain skips.
    from hermes.models.openai_compat import OpenAICompatModel

    return OpenAICompatModel(
        base_url=mc.base_url,
        api_key=mc.api_key,
        model=mc.model,
        temperature=mc.temperature,
        max_tokens=mc.max_tokens,
        timeout=mc.timeout,
        connect_timeout=mc.connect_timeout,
        max_retries=mc.max_retries,
        tool_mode=mc.tool_mode,
        stream=mc.stream,
        extra_headers=dict(mc.extra_headers) or None,
    )


def build_agent(
    loaded: LoadedConfig,
    *,
    offline: bool = False,
    store: str | Path | None = None,
    log_to_file: bool = True,
) -> Agent:
    """An Agent for a loaded configuration.

    ``offline`` forces the rule brain (``hermes demo``); ``store`` overrides the store path.
    """
    if log_to_file and loaded.log_file is not None:
        configure_logging(loaded.log_file, loaded.config.logging.level)
    check_store_backend(
        store if store is not None else loaded.config.store.path,
        file=None if loaded.source is None else str(loaded.source),
    )
    model = build_model(loaded, offline=offline)
    plugin_tools, warnings = _plugins(loaded)
    memory = build_memory(loaded, model, offline=offline, store=store)
    try:
        agent = _agent(
            loaded, model, plugin_tools=plugin_tools, store=store, memory=memory, offline=offline
        )
    except BaseException:  # clean up, then re-raise unchanged
        if memory is not None:
            memory.close_sync()
        raise
    agent.startup_warnings = warnings
    # File tools must never rewrite what configures or extends Hermes.
    protected = [loaded.source, _plugins_path(loaded)]
    agent.tool_extras["protected_paths"] = [str(p) for p in protected if p is not None]
    if loaded.config.agent.timezone is not None:  # the clock's zone when a message names none
        agent.tool_extras[DEFAULT_TIMEZONE_KEY] = loaded.config.agent.timezone
    plans = PlanSetup.from_config(loaded.config.plans, loaded.base_dir)
    configure_plans(agent, plans)
    offer_run_plan(agent, plans)  # when plans.dir holds templates
    return agent


def _agent(
    loaded: LoadedConfig,
    model: Model,
    *,
    plugin_tools: list[Tool],
    store: str | Path | None,
    memory: Memory | None,
    offline: bool,
) -> Agent:
    ac = loaded.config.agent
    tc = loaded.config.tools
    instructions = ac.instructions
    if instructions is None and loaded.config.model is not None and not offline:
        instructions = DEFAULT_INSTRUCTIONS
    agent = Agent(
        model=model,
        tools=[*tc.builtins, *plugin_tools],
        # The raw value, so ":memory:" and URLs keep their meaning (not made into a path).
        store=store
        if store is not None
        else open_store(loaded.config.store.path, base_dir=loaded.base_dir),
        instructions=instructions,
        max_iterations=ac.max_iterations,
        turn_timeout=ac.turn_timeout,
        context_rounds=ac.context_rounds,
        context_budget_tokens=ac.context_budget_tokens,
        max_message_chars=ac.max_message_chars,
        max_unknown_tools=ac.max_unknown_tools,
        summary_min_backlog=ac.summary_min_backlog,
        workspace=loaded.workspace,
        # With a real model configured, the model writes the rolling summary (seed 001 §2.2),
        # falling back to the extractive one when it fails.
        summarizer=None if isinstance(model, RuleBrain) else ModelSummarizer(model),
        authorizer=_authorizer(loaded),
        toolset_limit=tc.toolset_limit,
        http_allow=tc.http_allow,
        mcp_servers=loaded.config.mcp_servers,
        memory=memory,
    )
    agent._owns_memory = memory is not None  # built here for this agent: closed by its aclose
    return agent


def build_memory(
    loaded: LoadedConfig,
    model: Model,
    *,
    offline: bool = False,
    store: str | Path | None = None,
) -> Memory | None:
    """The agent's memory from the ``memory:`` section, or None when it is disabled or the
    session store is in memory (``:memory:``: nothing is written beside it).

    ``store`` overrides ``store.path`` as in :func:`build_agent` (the memory files then live
    beside that database, unless ``memory.dir`` is set). Raises ``ConfigError``/``StoreError``.
    """
    mc = loaded.config.memory
    if not mc.enabled:
        return None
    # Imported here: the memory package loads only for agents that have a memory.
    from hermes.memory.facade import Memory
    from hermes.memory.open import memory_dir
    from hermes.memory.recall import RecallPolicy
    from hermes.memory.upkeep import UpkeepPolicy

    directory = memory_dir(loaded, store=store)
    if directory is None:
        return None
    hours = mc.upkeep_interval_hours
    return Memory.open(
        directory,
        semantic=mc.semantic != "off",
        cross_language=mc.cross_language != "off",
        tool_index=mc.tool_index,
        extractor=_extractor(mc.extraction, mc.threshold, model, loaded, offline=offline),
        policy=RecallPolicy(
            min_score=mc.recall_min_score,
            max_items=mc.recall_max_items,
            recency_days=mc.recency_days,
        ),
        fill_arguments=mc.fill_arguments,
        habits=mc.habits,
        threshold=mc.threshold,
        upkeep_interval=None if hours is None else hours * 3600.0,
        upkeep_policy=UpkeepPolicy.from_config(mc),
        # The offline rule brain calls remember / recall_memories from its own intents.
    )


def _extractor(
    mode: str, threshold: float, model: Model, loaded: LoadedConfig, *, offline: bool
) -> Extractor | None:
    """``auto``: the configured model with a fixed JSON output (rules when the model is the
    offline rule brain, which does not follow free-form instructions); ``rules``; ``model``;
    ``off``."""
    from hermes.memory.extract import ModelExtractor, RuleExtractor

    if mode == "off":
        return None
    real_model = (
        loaded.config.model is not None and not offline and not isinstance(model, RuleBrain)
    )
    if mode == "model" or (mode == "auto" and real_model):
        if not real_model:
            log.warning("memory_extraction_rules", reason="no model configured (offline)")
            return RuleExtractor(threshold=threshold)
        return ModelExtractor(model, threshold=threshold)
    return RuleExtractor(threshold=threshold)


def _plugins_path(loaded: LoadedConfig) -> Path | None:
    directory = loaded.config.tools.plugins_dir
    return None if directory is None else loaded.resolve_path(directory)


def _plugins(loaded: LoadedConfig) -> tuple[list[Tool], list[str]]:
    """The tools of the plugin directory; a broken file is reported and skipped (seed 000 §3.3)."""
    directory = loaded.config.tools.plugins_dir
    if directory is None:
        return [], []
    report = load_plugins(
        loaded.resolve_path(directory), reserved_names=loaded.config.tools.builtins
    )
    warnings = []
    for error in report.errors:
        log.warning("plugin_skipped", path=str(error.path), reason=error.message)
        warnings.append(f"plugin skipped / 插件已跳过: {error.path}: {error.message}")
    return list(report.tools), warnings


def _authorizer(loaded: LoadedConfig) -> Authorizer | None:
    rbac = loaded.config.rbac
    if not rbac.enabled:
        return None
    return build_authorizer(rbac, audit=AuditLog(loaded.resolve_path(rbac.audit_log)))


def build_authorizer(rbac: RbacConfig, *, audit: AuditLog | None = None) -> Authorizer:
    """The authorizer of an ``rbac:`` section: :meth:`Authorizer.allow_all` when it is off,
    else its roles (inheritance resolved) and users as plain mappings. ``audit`` receives one
    record per decision on a permission-protected tool."""
    if not rbac.enabled:
        return Authorizer.allow_all()
    return Authorizer.from_roles(
        rbac.role_scopes(), users=rbac.user_roles(), default_role=rbac.default_role, audit=audit
    )
