"""The brain's own dialogue set (``dialogues.yaml``): whole conversations, turn by turn.

Each dialogue runs in a fresh session through the harness (the calculator's own evaluation, a
fixed clock, stand-ins for memory, notes, to-dos, files and the shell). A turn says something
and may check:

- ``reply``: the whole reply, exactly; ``contains`` / ``absent``: pieces of it;
- ``calls``: every tool call of the turn, in order, as ``[name, arguments]`` (``[]``: none);
- ``asks``: the slot the reply asks for (the session then waits for it).

``tools`` is ``default`` (calculator, current_time — what a fresh ``hermes.yaml`` offers),
``all`` (every built-in the brain has intents for) or a list; ``user`` is the user id of the
session (``null``: none). ``covers`` names the parts of the brain a dialogue exercises: the set
must keep covering each of them with at least 200 turns in all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes.models.base import ToolSpec
from hermes.models.brain import RuleBrain

from .harness import CALCULATOR, CURRENT_TIME, Conversation, spec

DIALOGUES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "dialogues.yaml").read_text(encoding="utf-8")
)["dialogues"]
#: Every tool the built-in intents can call, besides the default two.
WORKSPACE_TOOLS = (
    "remember",
    "recall_memories",
    "list_files",
    "read_file",
    "note_add",
    "note_list",
    "todo_add",
    "todo_list",
    "todo_done",
    "shell",
)
AREAS = {"numbers", "compound", "multi", "time", "honesty", "memory"}
BRAIN = RuleBrain()


def _tools(wanted: str | list[str]) -> list[ToolSpec]:
    if wanted == "default":
        return [CALCULATOR, CURRENT_TIME]
    names = ["calculator", "current_time", *WORKSPACE_TOOLS] if wanted == "all" else wanted
    fixed = {"calculator": CALCULATOR, "current_time": CURRENT_TIME}
    return [fixed.get(name) or spec(name) for name in names]


def test_the_set_has_at_least_200_turns_and_covers_every_area() -> None:
    turns = sum(len(d["turns"]) for d in DIALOGUES)
    assert turns >= 200
    covered = {area for d in DIALOGUES for area in d["covers"]}
    assert covered == AREAS
    names = [d["name"] for d in DIALOGUES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("dialogue", DIALOGUES, ids=[d["name"] for d in DIALOGUES])
async def test_dialogue(dialogue: dict[str, Any]) -> None:
    chat = Conversation(
        BRAIN, _tools(dialogue.get("tools", "default")), user_id=dialogue.get("user", "alice")
    )
    for number, turn in enumerate(dialogue["turns"], 1):
        before = len(chat.calls)
        reply = await chat.turn(turn["say"])
        where = f"turn {number} ({turn['say']!r})"
        content = reply.content or ""
        if "reply" in turn:
            assert content == turn["reply"], where
        for piece in turn.get("contains", []):
            assert piece in content, where
        for piece in turn.get("absent", []):
            assert piece not in content, where
        if "calls" in turn:
            made = [[name, arguments] for name, arguments in chat.calls[before:]]
            assert made == turn["calls"], where
        if "asks" in turn:
            assert reply.meta.get("awaiting_slot") == turn["asks"], where
