"""Checks and error wording shared by the configuration models and the loader.

:func:`check_scopes` is the RBAC scope syntax (``rbac.roles.<role>.scopes`` and
``mcp_servers.<server>.permissions``): ``segment(:segment)*``, optionally ending in ``:*``, or
``*`` alone. :func:`validation_problems` words a pydantic ``ValidationError`` for a person — a
dotted key and a message per problem, never the input values — the same way for every section.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

__all__ = ["check_scopes", "dotted", "problems_text", "validation_problems"]

# A scope is ``segment(:segment)*``, optionally ending in ``:*``; ``*`` alone grants everything.
_SCOPE = re.compile(r"\*|[A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+)*(?::\*)?")


def check_scopes(scopes: Iterable[str]) -> None:
    """``ValueError`` naming the first scope that does not follow the scope syntax."""
    for scope in scopes:
        if not _SCOPE.fullmatch(scope):
            raise ValueError(
                f"invalid scope {scope!r:.80}: use segments of A-Z a-z 0-9 _ . - joined by ':', "
                "optionally ending in ':*' (or '*' alone for every scope)"
            )


def validation_problems(
    exc: ValidationError, root: type[BaseModel], *, prefix: tuple[int | str, ...] = ()
) -> list[tuple[str, str]]:
    """``(dotted key, message)`` for each error of ``exc``, raised while validating ``root``.

    ``prefix`` is where ``root`` sits in ``hermes.yaml`` (``("mcp_servers", "files")``); an
    unknown key gets the closest known one of its model as a suggestion.
    """
    return [
        (dotted((*prefix, *err["loc"])), _describe(err, root))
        for err in exc.errors(include_input=False, include_url=False)
    ]


def problems_text(problems: Iterable[tuple[str, str]]) -> str:
    """``invalid configuration: <key>: <message>; …``: the message of a ``ConfigError``."""
    return "invalid configuration: " + "; ".join(f"{key}: {text}" for key, text in problems)


def dotted(loc: tuple[int | str, ...]) -> str:
    """``("a", "b", 0, "c")`` as ``a.b[0].c``; ``<root>`` for the empty location."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path or "<root>"


def _describe(err: ErrorDetails, root: type[BaseModel]) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return _unknown_key_message(err["loc"], root)
    if kind == "missing":
        return "required key is missing"
    return err["msg"].removeprefix("Value error, ")


def _unknown_key_message(loc: tuple[int | str, ...], root: type[BaseModel]) -> str:
    allowed = _allowed_keys(loc[:-1], root)
    if not allowed:
        return "unknown key"
    typed = str(loc[-1])
    close = difflib.get_close_matches(typed, allowed, n=1, cutoff=0.6)
    if close:
        return f"unknown key; did you mean '{close[0]}'?"
    return "unknown key (expected one of: " + ", ".join(allowed) + ")"


def _allowed_keys(parent: tuple[int | str, ...], root: type[BaseModel]) -> list[str]:
    model: type[BaseModel] | None = root
    for part in parent:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return []
        model = _model_in(model.model_fields[part].annotation)
    return list(model.model_fields) if model is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None
