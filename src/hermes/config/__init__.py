"""Configuration: ``hermes.yaml`` schema, search order, ``.env`` and ``${VAR}`` placeholders."""

from hermes.config.example import EXAMPLE_CONFIG
from hermes.config.loader import CONFIG_ENV_VAR, LoadedConfig, load_config
from hermes.config.schema import (
    AgentConfig,
    BrainConfig,
    HermesConfig,
    LoggingConfig,
    MemoryConfig,
    ModelConfig,
    StoreConfig,
    ToolsConfig,
)

__all__ = [
    "CONFIG_ENV_VAR",
    "EXAMPLE_CONFIG",
    "AgentConfig",
    "BrainConfig",
    "HermesConfig",
    "LoadedConfig",
    "LoggingConfig",
    "MemoryConfig",
    "ModelConfig",
    "StoreConfig",
    "ToolsConfig",
    "load_config",
]
