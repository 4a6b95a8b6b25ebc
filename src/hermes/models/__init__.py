"""Models: the Model protocol and its implementations (OpenAI-compatible, offline brain)."""

from hermes.models.base import Model, ModelRequest, ModelResponse, ToolCall, ToolSpec, Usage

__all__ = ["Model", "ModelRequest", "ModelResponse", "ToolCall", "ToolSpec", "Usage"]
