"""A switch that forbids real model requests (on inside the test suite).

``hermes.testing`` turns it on for tests; code that needs a real request inside a test (the
OpenAI-compatible client against a local fake server) opens ``allow_model_requests()``.
Every model that talks to a network calls :func:`check_model_request` before each request.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from hermes.errors import ModelError


class _Guard:
    blocked: bool = os.environ.get("HERMES_BLOCK_MODEL_REQUESTS", "") not in ("", "0", "false")


def block_model_requests(blocked: bool = True) -> None:
    """Turn the guard on (or off) for this process."""
    _Guard.blocked = blocked


def model_requests_blocked() -> bool:
    return _Guard.blocked


@contextlib.contextmanager
def allow_model_requests() -> Iterator[None]:
    """Allow real model requests inside this block, then restore the previous setting."""
    previous, _Guard.blocked = _Guard.blocked, False
    try:
        yield
    finally:
        _Guard.blocked = previous


def check_model_request(model_name: str) -> None:
    """Raise if real model requests are blocked (inside the test suite)."""
    if _Guard.blocked:
        raise ModelError(
            f"real model request to '{model_name}' blocked: the test suite forbids them "
            "(use hermes.testing.ScriptedModel/FunctionModel, or allow_model_requests())"
        )
