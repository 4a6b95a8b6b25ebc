"""Find, read, expand and validate ``hermes.yaml`` (DESIGN "Public contracts": configuration).

Search order: the explicit path (``hermes --config FILE``) → ``HERMES_CONFIG`` → ``./hermes.yaml``
→ ``~/.hermes/hermes.yaml`` → embedded defaults. Every failure is one ``ConfigError`` that names
the file and the key as a dotted path; it never carries a traceback or a secret value.

``.env`` files feed ``${VAR}`` placeholders (and ``HERMES_CONFIG``) but never override a variable
already set in the environment, and ``os.environ`` is never modified.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from dotenv import dotenv_values
from pydantic import ValidationError

from hermes.config.checks import problems_text, validation_problems
from hermes.config.placeholders import expand_tree
from hermes.config.schema import HermesConfig
from hermes.errors import ConfigError
from hermes.observe.redaction import REDACTED, is_secret_key

CONFIG_ENV_VAR = "HERMES_CONFIG"
CONFIG_FILE_NAME = "hermes.yaml"
ENV_FILE_NAME = ".env"
_SHORTEST_SCRUBBED_SECRET = 4


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A validated configuration and where it came from.

    ``source`` is the file read, or ``None`` for the embedded defaults. ``base_dir`` is the
    directory Hermes runs in; relative paths in the configuration are relative to it.
    """

    config: HermesConfig
    source: Path | None
    base_dir: Path

    def resolve_path(self, value: str | os.PathLike[str]) -> Path:
        """``value`` as an absolute path: ``~`` expanded, relative paths joined to ``base_dir``."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    @property
    def store_path(self) -> Path:
        """The SQLite file of ``store.path``."""
        return self.resolve_path(self.config.store.path)

    @property
    def log_file(self) -> Path | None:
        """The JSON log file of ``logging.file``, or ``None`` when logging is disabled."""
        file = self.config.logging.file
        return None if file is None else self.resolve_path(file)

    @property
    def workspace(self) -> Path:
        """The directory file tools work in (``tools.workspace``)."""
        return self.resolve_path(self.config.tools.workspace)

    @property
    def intent_files(self) -> list[Path]:
        """The user intent files of ``brain.intents``."""
        return [self.resolve_path(item) for item in self.config.brain.intents]


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> LoadedConfig:
    """Find and load the configuration.

    ``cwd``, ``environ`` and ``home`` default to the process's; tests inject them. Raises
    ``ConfigError`` when an explicit path or ``HERMES_CONFIG`` names a missing file, or when the
    file found is unreadable, not YAML, not a mapping or invalid.
    """
    base_dir = (cwd if cwd is not None else Path.cwd()).absolute()
    env = os.environ if environ is None else environ
    home_dir = home if home is not None else Path.home()
    cwd_dotenv = _read_dotenv(base_dir / ENV_FILE_NAME)

    source = _locate(path, base_dir, env, cwd_dotenv, home_dir)
    if source is None:
        return LoadedConfig(config=HermesConfig(), source=None, base_dir=base_dir)

    data = _read_yaml(source)
    # Precedence: the environment, then ./.env, then a .env beside the config file.
    lookup: dict[str, str] = {}
    if source.parent != base_dir:
        lookup.update(_read_dotenv(source.parent / ENV_FILE_NAME))
    lookup.update(cwd_dotenv)
    lookup.update(env)
    expanded = expand_tree(data, lookup, file=str(source))
    return LoadedConfig(config=_validate(expanded, source), source=source, base_dir=base_dir)


def _locate(
    explicit: str | os.PathLike[str] | None,
    base_dir: Path,
    env: Mapping[str, str],
    cwd_dotenv: Mapping[str, str],
    home: Path,
) -> Path | None:
    if explicit is not None and str(explicit):
        return _must_exist(_resolve(explicit, base_dir, home), "config file does not exist")
    named = env.get(CONFIG_ENV_VAR) or cwd_dotenv.get(CONFIG_ENV_VAR)
    if named:
        return _must_exist(
            _resolve(named, base_dir, home), f"config file named by {CONFIG_ENV_VAR} does not exist"
        )
    for candidate in (base_dir / CONFIG_FILE_NAME, home / ".hermes" / CONFIG_FILE_NAME):
        if candidate.is_file():
            return candidate
    return None


def _resolve(value: str | os.PathLike[str], base_dir: Path, home: Path) -> Path:
    text = os.fspath(value)
    if text == "~" or text.startswith(("~/", "~" + os.sep)):
        return home / text[2:]
    path = Path(text)
    return path if path.is_absolute() else base_dir / path


def _must_exist(path: Path, message: str) -> Path:
    if not path.exists():
        raise ConfigError(message, file=str(path))
    if not path.is_file():
        raise ConfigError("config path is not a file", file=str(path))
    return path


def _read_dotenv(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    # interpolate=False: python-dotenv would resolve ${X} against os.environ, bypassing the
    # injected environment; values from .env are used as written.
    values = dotenv_values(path, interpolate=False, encoding="utf-8")
    return {name: value for name, value in values.items() if value is not None}


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that rejects duplicate keys: the second one would silently win."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Hashable, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, Hashable) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key '{key}'", key_node.start_mark
            )
        seen.add(key)
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _read_yaml(source: Path) -> dict[str, Any]:
    file = str(source)
    try:
        text = source.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError("config file is not UTF-8 text", file=file) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file: {exc.strerror or exc}", file=file) from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "syntax error"
        raise ConfigError(f"invalid YAML{where}: {problem}", file=file) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", file=file) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            "the top level must be a mapping of sections (model, agent, store, logging, brain, "
            f"tools), not a {_yaml_type_name(data)}",
            file=file,
        )
    return data


def _yaml_type_name(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _validate(data: dict[str, Any], source: Path) -> HermesConfig:
    try:
        return HermesConfig.model_validate(data)
    except ConfigError as exc:
        # From the mcp_servers parser (worded like the errors below, with its key): pydantic
        # lets it through, so the file is added here.
        message = _scrub(exc.reason, _secret_values(data))
        raise ConfigError(message, key=exc.key, file=str(source)) from None
    except ValidationError as exc:
        # Keep only locations and messages: pydantic's own text shows the input values.
        problems = validation_problems(exc, HermesConfig)
    message = _scrub(problems_text(problems), _secret_values(data))
    key = problems[0][0] if len(problems) == 1 else None
    raise ConfigError(message, key=key, file=str(source)) from None


def _secret_values(data: Any) -> set[str]:
    """Every string under a secret-looking key, and every header value: scrubbed from messages."""
    found: set[str] = set()

    def walk(node: Any, secret: bool) -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                text = str(name)
                walk(value, secret or text == "extra_headers" or is_secret_key(text))
        elif isinstance(node, list):
            for item in node:
                walk(item, secret)
        elif secret and isinstance(node, str) and len(node) >= _SHORTEST_SCRUBBED_SECRET:
            found.add(node)

    walk(data, False)
    return found


def _scrub(message: str, secrets: set[str]) -> str:
    # Pydantic messages do not echo inputs today; this keeps that true if a future one does.
    for secret in sorted(secrets, key=len, reverse=True):
        message = message.replace(secret, REDACTED)
    return message
