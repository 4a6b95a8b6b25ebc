"""The error family of ``hermes.errors`` as a whole: every class in it is one Hermes really uses."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import get_args

import hermes.errors as errors_module
from hermes.errors import ErrorCode, HermesError, ToolExecutionError

SRC = Path(errors_module.__file__).parent


def _error_classes() -> list[type[HermesError]]:
    return [
        value
        for value in vars(errors_module).values()
        if inspect.isclass(value)
        and issubclass(value, HermesError)
        and value.__module__ == errors_module.__name__
    ]


def _names_used_outside_errors() -> set[str]:
    """Every name called (``X(...)``) or subclassed (``class Y(X)``) in src outside errors.py."""
    used: set[str] = set()
    for path in SRC.rglob("*.py"):
        if path == Path(errors_module.__file__):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
                used.add(node.func.id if isinstance(node.func, ast.Name) else node.func.attr)
            elif isinstance(node, ast.ClassDef):
                used.update(b.id for b in node.bases if isinstance(b, ast.Name))
    return used


def test_every_error_class_is_raised_or_subclassed_somewhere() -> None:
    """An error class nobody raises promises an ``except`` clause that never fires."""
    used = _names_used_outside_errors()
    bases = {base for cls in _error_classes() for base in cls.__mro__[1:]}
    unused = [
        cls.__name__ for cls in _error_classes() if cls.__name__ not in used and cls not in bases
    ]
    assert unused == []


def _hermes_error_classes_everywhere() -> list[type[HermesError]]:
    """Every HermesError subclass defined in src/hermes (its modules imported to find them)."""
    for info in pkgutil.walk_packages([str(SRC)], prefix="hermes."):
        if not info.name.endswith(("__main__", "_sandbox_child")):
            importlib.import_module(info.name)
    found: list[type[HermesError]] = []
    pending: list[type[HermesError]] = [HermesError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return [cls for cls in found if cls.__module__.startswith("hermes.")]


def test_every_code_of_hermes_is_an_error_code_and_every_error_code_is_used() -> None:
    """``ErrorCode`` is the closed list of Hermes's own codes; a tool's codes (the built-in
    tools' included: ``hermes.tools.builtin``) are strings of the tool's choosing."""
    ours = [
        cls
        for cls in _hermes_error_classes_everywhere()
        if not cls.__module__.startswith("hermes.tools.builtin")
    ]
    codes = {cls.code for cls in ours}
    assert sorted(codes - set(get_args(ErrorCode))) == []
    assert sorted(set(get_args(ErrorCode)) - codes) == []


def test_a_tool_may_still_raise_its_own_code() -> None:
    class QuotaExceeded(ToolExecutionError):
        code = "quota_exceeded"

    assert QuotaExceeded("over quota").to_dict() == {
        "type": "quota_exceeded",
        "message": "over quota",
    }


def test_every_model_failure_but_error_has_its_own_sentence() -> None:
    from hermes.agent import texts
    from hermes.errors import ModelError, ModelFailure

    assert set(texts._MODEL_FAILURES) == set(get_args(texts._FailureText))
    generic = texts.say("model_error", False, trace="t1")
    for kind in get_args(ModelFailure):
        sentence = texts.model_failure(ModelError("boom", kind=kind), False, "t1")
        assert (sentence == generic) == (kind == "error"), kind
