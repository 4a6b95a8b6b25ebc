"""The conversation state machine, defined in YAML and driven by ``transitions``.

One :class:`StateMachineSpec` (and one ``transitions.Machine``) is built per Agent; each turn
wraps the session's persisted state in a light :class:`ConversationState`. ``transitions``
parses and checks the graph (sources, ``*`` expansion, conditions); firing then reads the
machine's own transition table directly, because ``Event.trigger`` costs ~20 µs per call
(event data, callback resolution, its queue) — with four transitions a turn, a tenth of the
whole turn's budget — while a table lookup costs well under one.
The state and the time it was entered are saved with the session, so a restarted process
resumes where the last one stopped, and a state held past its timeout falls back (seed 000 §4.1).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from transitions import Machine

from hermes.errors import ConfigError, ErrorCode, HermesError

StateListener = Callable[[str, str, str], None]


class InvalidTransitionError(HermesError):
    """A trigger was fired in a state that does not allow it (a bug in a loop, not user error)."""

    code: ErrorCode = "invalid_transition"


class _StateDef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    description: str = ""
    timeout: float | None = Field(default=None, gt=0)
    on_timeout: str | None = None


class _TransitionDef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trigger: str = Field(min_length=1)
    source: str | list[str]
    dest: str
    conditions: list[str] = Field(default_factory=list)


class _MachineDef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    initial: str
    states: list[_StateDef] = Field(min_length=1)
    transitions: list[_TransitionDef] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class StateSpec:
    name: str
    description: str
    timeout: float | None
    on_timeout: str | None


class ConversationState:
    """The FSM model object of one turn: the session's state plus its condition functions."""

    def __init__(self, spec: StateMachineSpec, state: str, entered_at: float) -> None:
        self.spec = spec
        self.state = state
        self.entered_at = entered_at
        self.listeners: list[StateListener] = []

    # -- conditions (named in states.yaml); each receives the trigger's keyword arguments ------
    def is_valid_input(self, kwargs: dict[str, Any]) -> bool:
        text = kwargs.get("text")
        return isinstance(text, str) and bool(text.strip())

    # -- driving --------------------------------------------------------------------------------
    def fire(self, trigger: str, **kwargs: Any) -> bool:
        """Fire ``trigger``; True if a transition ran, False if its conditions refused it."""
        options = self.spec.table.get((trigger, self.state))
        if options is None:
            if trigger not in self.spec.triggers:
                raise InvalidTransitionError(f"unknown trigger '{trigger}'")
            raise InvalidTransitionError(
                f"trigger '{trigger}' is not allowed in state '{self.state}'"
            )
        for dest, conditions in options:
            if all(bool(getattr(self, name)(kwargs)) is want for name, want in conditions):
                source = self.state
                if source != dest:
                    self.state = dest
                    self.entered_at = time.time()
                    for listener in self.listeners:
                        listener(source, dest, trigger)
                return True
        return False

    def expire(self) -> str:
        """Leave a state held past its timeout for the state's ``on_timeout`` (else the initial
        state); listeners see the trigger ``expire``. Returns the new state."""
        source = self.state
        dest = self.spec.states[source].on_timeout or self.spec.initial
        if dest != source:
            self.state = dest
            self.entered_at = time.time()
            for listener in self.listeners:
                listener(source, dest, "expire")
        return dest

    def expired(self, now: float | None = None) -> bool:
        """Whether the session has stayed in its state longer than the state's timeout."""
        timeout = self.spec.states[self.state].timeout
        if timeout is None or not self.entered_at:
            return False
        return (now if now is not None else time.time()) - self.entered_at > timeout


class StateMachineSpec:
    """A conversation state machine loaded from YAML (default: the packaged ``states.yaml``)."""

    def __init__(self, path: str | Path | None = None) -> None:
        source = str(path) if path else "hermes/session/states.yaml"
        definition = self._load(path, source)
        self.source = source
        self.initial = definition.initial
        self.states = {
            s.name: StateSpec(s.name, s.description, s.timeout, s.on_timeout)
            for s in definition.states
        }
        self._check(definition, source)
        self.machine = Machine(
            model=None,
            states=list(self.states),
            transitions=[t.model_dump() for t in definition.transitions],
            initial=self.initial,
            auto_transitions=False,
        )
        # (trigger, source) → [(dest, ((condition, wanted result), ...)), ...] in YAML order.
        self.table: dict[tuple[str, str], list[tuple[str, tuple[tuple[str, bool], ...]]]] = {
            (name, source): [
                (str(t.dest), tuple((str(c.func), bool(c.target)) for c in t.conditions))
                for t in options
            ]
            for name, event in self.machine.events.items()
            for source, options in event.transitions.items()
        }
        self.triggers = frozenset(self.machine.events)

    @staticmethod
    def _load(path: str | Path | None, source: str) -> _MachineDef:
        try:
            if path is None:
                text = resources.files("hermes.session").joinpath("states.yaml").read_text("utf-8")
            else:
                text = Path(path).read_text(encoding="utf-8")
            raw = yaml.safe_load(text)
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read the state machine: {exc}", file=source) from exc
        try:
            return _MachineDef.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(str(p) for p in first["loc"])
            raise ConfigError(
                f"invalid state machine: {first['msg']}", key=key, file=source
            ) from exc

    def _check(self, definition: _MachineDef, source: str) -> None:
        names = set(self.states)
        if definition.initial not in names:
            raise ConfigError("initial state is not defined", key="initial", file=source)
        for i, st in enumerate(definition.states):
            if st.on_timeout is not None and st.on_timeout not in names:
                raise ConfigError(
                    f"unknown state '{st.on_timeout}'", key=f"states[{i}].on_timeout", file=source
                )
        for i, tr in enumerate(definition.transitions):
            sources = [tr.source] if isinstance(tr.source, str) else tr.source
            for name in [*sources, tr.dest]:
                if name != "*" and name not in names:
                    raise ConfigError(
                        f"unknown state '{name}'", key=f"transitions[{i}]", file=source
                    )
            for cond in tr.conditions:
                if not callable(getattr(ConversationState, cond, None)):
                    raise ConfigError(
                        f"unknown condition '{cond}'",
                        key=f"transitions[{i}].conditions",
                        file=source,
                    )

    def attach(self, state: str, entered_at: float = 0.0) -> ConversationState:
        """Wrap a persisted state for one turn (an unknown state falls back to the initial)."""
        if state not in self.states:
            state, entered_at = self.initial, 0.0
        return ConversationState(self, state, entered_at)
