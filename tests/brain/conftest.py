"""Fixtures for the offline brain's tests (the harness itself is in ``harness.py``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hermes.models.base import ToolSpec
from hermes.models.brain import RuleBrain

from .harness import ALL_TOOLS, Conversation


@pytest.fixture(scope="session")
def brain() -> RuleBrain:
    return RuleBrain()


@pytest.fixture
def chat(brain: RuleBrain) -> Conversation:
    return Conversation(brain, ALL_TOOLS)


@pytest.fixture
def make_chat(brain: RuleBrain) -> Callable[..., Conversation]:
    def make(tools: list[ToolSpec] | None = None, model: RuleBrain | None = None) -> Conversation:
        return Conversation(model or brain, ALL_TOOLS if tools is None else tools)

    return make
