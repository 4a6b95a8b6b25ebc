"""The conversation state machine: YAML-defined, persisted, with timeouts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hermes.errors import ConfigError
from hermes.session.fsm import InvalidTransitionError, StateMachineSpec


def test_a_turn_with_a_tool_call_walks_the_documented_states() -> None:
    fsm = StateMachineSpec().attach("idle")
    seen: list[tuple[str, str, str]] = []
    fsm.listeners.append(lambda s, d, t: seen.append((s, d, t)))
    for trigger in ("receive_input", "call_tools", "tools_done", "reply"):
        assert fsm.fire(trigger, text="hi")
    assert fsm.state == "awaiting_feedback"
    assert [d for _, d, _ in seen] == [
        "parsing_intent",
        "executing_tool",
        "parsing_intent",
        "awaiting_feedback",
    ]


def test_a_condition_refuses_blank_input_without_changing_state() -> None:
    fsm = StateMachineSpec().attach("idle")
    assert fsm.fire("receive_input", text="   ") is False
    assert fsm.state == "idle"


def test_a_trigger_not_allowed_in_the_state_is_an_error() -> None:
    fsm = StateMachineSpec().attach("idle")
    with pytest.raises(InvalidTransitionError, match="not allowed in state 'idle'"):
        fsm.fire("tools_done")
    with pytest.raises(InvalidTransitionError, match="unknown trigger"):
        fsm.fire("teleport")


def test_fail_reaches_idle_from_every_state() -> None:
    spec = StateMachineSpec()
    for state in spec.states:
        fsm = spec.attach(state)
        assert fsm.fire("fail")
        assert fsm.state == "idle"


def test_expire_follows_the_states_on_timeout(tmp_path: Path) -> None:
    path = tmp_path / "states.yaml"
    path.write_text(
        "initial: idle\n"
        "states: [{name: idle}, {name: asking, timeout: 5, on_timeout: gave_up}, "
        "{name: gave_up}]\n"
        "transitions: [{trigger: ask, source: idle, dest: asking}]\n",
        encoding="utf-8",
    )
    fsm = StateMachineSpec(path).attach("asking", entered_at=time.time() - 60)
    seen: list[tuple[str, str, str]] = []
    fsm.listeners.append(lambda s, d, t: seen.append((s, d, t)))
    assert fsm.expired()
    assert fsm.expire() == "gave_up"
    assert seen == [("asking", "gave_up", "expire")]


def test_a_state_expires_after_its_timeout() -> None:
    spec = StateMachineSpec()
    fsm = spec.attach("collecting_parameters", entered_at=time.time() - 3600)
    assert fsm.expired()
    assert not spec.attach("collecting_parameters", entered_at=time.time()).expired()
    assert not spec.attach("idle", entered_at=1.0).expired()  # idle has no timeout


def test_an_unknown_persisted_state_falls_back_to_the_initial_one() -> None:
    assert StateMachineSpec().attach("dancing").state == "idle"


_ONE_STATE = "initial: {initial}\nstates: [{{name: idle{extra}}}]\n"
_TRANSITION = "transitions: [{{trigger: t, source: idle, dest: {dest}{conditions}}}]"


def _machine(
    initial: str = "idle", extra: str = "", dest: str = "idle", conditions: str = ""
) -> str:
    return _ONE_STATE.format(initial=initial, extra=extra) + _TRANSITION.format(
        dest=dest, conditions=conditions
    )


@pytest.mark.parametrize(
    ("yaml_text", "key"),
    [
        (_machine(initial="nowhere"), "initial"),
        (_machine(dest="mars"), "transitions[0]"),
        (_machine(conditions=", conditions: [is_magic]"), "transitions[0].conditions"),
        (_machine(extra=", colour: red"), "states.0.colour"),
    ],
)
def test_a_bad_state_machine_file_names_the_key(tmp_path: Path, yaml_text: str, key: str) -> None:
    path = tmp_path / "states.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        StateMachineSpec(path)
    assert info.value.key == key
    assert str(path) in str(info.value)
