"""The ``hermes`` Typer application and what its commands share: configuration and agents.

Commands live in their own modules (``run``, ``chat``, ``browse``) and register themselves on
``app`` when imported; ``hermes.channels.cli`` imports them all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from hermes.channels.cli.output import report_warning
from hermes.config import LoadedConfig, load_config
from hermes.errors import ConfigError

if TYPE_CHECKING:
    from hermes.agent.agent import Agent

T = TypeVar("T")

app = typer.Typer(
    name="hermes",
    help="Hermes — a strict, fast, message-driven agent runtime. / 消息驱动的智能体运行时。",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
sessions_app = typer.Typer(
    help="Inspect, export and delete stored sessions. / 查看、导出和删除已保存的会话。",
    no_args_is_help=True,
)
tools_app = typer.Typer(help="Inspect available tools. / 查看可用工具。", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")
app.add_typer(tools_app, name="tools")

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="Config file (else $HERMES_CONFIG, ./hermes.yaml, "
        "~/.hermes/hermes.yaml, embedded defaults).",
    ),
]
SessionOption = Annotated[str | None, typer.Option("--session", "-s", help="Session id.")]
UserOption = Annotated[
    str | None,
    typer.Option(
        "--user", "-u", help="User id (default: agent.default_user, the OS account name)."
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]


class _CliState:
    """What the root callback parsed (``--config``) for the command that runs after it."""

    config_path: Path | None = None


STATE = _CliState()


def _print_version(value: bool) -> None:
    if value:
        from hermes import __version__

        typer.echo(f"hermes {__version__}")
        raise typer.Exit()


VersionFlag = Annotated[
    bool,
    typer.Option(
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the version and exit. / 显示版本。",
    ),
]


@app.callback()
def _root(config: ConfigOption = None, version: VersionFlag = False) -> None:
    STATE.config_path = config


def loaded_config() -> LoadedConfig:
    """The configuration: ``--config``, else ``HERMES_CONFIG``, ./hermes.yaml, ~/.hermes, defaults.

    Raises ``ConfigError`` (naming the file and the key) when it is missing or invalid.
    """
    return load_config(STATE.config_path)


def open_agent(
    loaded: LoadedConfig | None = None,
    *,
    offline: bool = False,
    store: str | Path | None = None,
    log_to_file: bool = True,
) -> Agent:
    """An Agent built from ``loaded`` (default: :func:`loaded_config`).

    Every configuration problem is a ``ConfigError`` naming the file.
    """
    # Imported here, not at the top: the factory pulls in the OpenAI client (a third of the
    # start-up time), which `--help` and refused commands never need.
    from hermes.agent.factory import build_agent

    if loaded is None:
        loaded = loaded_config()
    try:
        agent = build_agent(loaded, offline=offline, store=store, log_to_file=log_to_file)
    except ValueError as exc:
        # The values passed to Agent come from the validated configuration, so a ValueError
        # here is a configuration the schema let through (e.g. an unknown name in
        # tools.builtins): report it as such, with the file, instead of a traceback.
        source = None if loaded.source is None else str(loaded.source)
        raise ConfigError(f"invalid configuration: {exc}", file=source) from exc
    for warning in agent.startup_warnings:
        report_warning(warning)
    return agent


def run_async(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine from a synchronous command."""

    async def main() -> T:
        return await factory()

    return asyncio.run(main())


async def with_agent(agent: Agent, fn: Callable[[Agent], Awaitable[T]]) -> T:
    """``fn(agent)``, then close the agent whatever happened.

    MCP servers start connecting at once, in the background, so they are usually ready by the
    time a person has typed the first message.
    """
    try:
        if agent.mcp is not None:
            agent.mcp.start()
        return await fn(agent)
    finally:
        await agent.aclose()
