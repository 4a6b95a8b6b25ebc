"""Build an Agent from configuration (``hermes.yaml`` or the embedded defaults)."""

from __future__ import annotations

from pathlib import Path

from hermes.agent.agent import Agent
from hermes.config import LoadedConfig
from hermes.models.base import Model
from hermes.models.brain import RuleBrain
from hermes.observe import configure_logging, get_logger
from hermes.session.open import open_store
from hermes.session.summary import ModelSummarizer
from hermes.tools.audit import AuditLog
from hermes.tools.base import Tool
from hermes.tools.permissions import Authorizer
from hermes.tools.plugins import load_plugins

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
    ac = loaded.config.agent
    tc = loaded.config.tools
    model = build_model(loaded, offline=offline)
    plugin_tools, warnings = _plugins(loaded)
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
    )
    agent.startup_warnings = warnings
    # File tools must never rewrite what configures or extends Hermes (issue 3 review).
    protected = [loaded.source, _plugins_path(loaded)]
    agent.tool_extras["protected_paths"] = [str(p) for p in protected if p is not None]
    return agent


def _plugins_path(loaded: LoadedConfig) -> Path | None:
    directory = loaded.config.tools.plugins_dir
    return None if directory is None else loaded.resolve_path(directory)


def _plugins(loaded: LoadedConfig) -> tuple[list[Tool], list[str]]:
    """The tools of the plugin directory; a broken file is reported and skipped (issue 3 §6)."""
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
    return Authorizer.from_config(rbac, audit=AuditLog(loaded.resolve_path(rbac.audit_log)))
