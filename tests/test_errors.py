"""The error family of ``hermes.errors`` as a whole: every class in it is one Hermes really uses."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import hermes.errors as errors_module
from hermes.errors import HermesError

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
