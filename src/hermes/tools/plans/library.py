"""Named plan templates: ``plans/*.yaml`` (DESIGN.md, "Multi-call plans"; seed 003 §4.3:
"禁止在生产环境允许用户自定义DAG" — the API and models start templates, with declared params).

A template is a plan file in the templates directory (``plans.dir``, default ``./plans``):
``book-meeting.yaml`` is the template ``book-meeting`` (``.yml`` and ``.json`` too). Its
``name`` defaults to the file's stem. Files are read when asked for, so a template edited on
disk is what the next run starts.
"""

from __future__ import annotations

import re
from pathlib import Path

from hermes.errors import PlanInvalidError, PlanTemplateNotFoundError
from hermes.tools.plans.spec import PlanSpec, load_plan

__all__ = ["TEMPLATE_NAME", "PlanLibrary"]

#: A template's name: what ``hermes plan run NAME`` and ``POST /v1/plans`` take.
TEMPLATE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_SUFFIXES = (".yaml", ".yml", ".json")
_MAX_TEMPLATES = 1000


class PlanLibrary:
    """The templates of ``directory`` (it need not exist: then there are none)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def names(self) -> list[str]:
        """The templates' names, sorted (at most 1,000)."""
        try:
            files = sorted(p for p in self.directory.iterdir() if p.suffix in _SUFFIXES)
        except OSError:
            return []
        names = dict.fromkeys(
            p.stem for p in files if p.is_file() and TEMPLATE_NAME.fullmatch(p.stem)
        )
        return list(names)[:_MAX_TEMPLATES]

    def path(self, name: str) -> Path:
        """The file of template ``name``; ``PlanTemplateNotFoundError`` when there is none."""
        if not isinstance(name, str) or not TEMPLATE_NAME.fullmatch(name):
            raise PlanTemplateNotFoundError(
                f"invalid plan template name {str(name)[:60]!r}: use 1-128 of A-Z a-z 0-9 _ . - "
                "/ 计划模板名称不合法"
            )
        for suffix in _SUFFIXES:
            candidate = self.directory / f"{name}{suffix}"
            if candidate.is_file():
                return candidate
        known = ", ".join(self.names()[:20]) or "none"
        raise PlanTemplateNotFoundError(
            f"no plan template {name!r} in {self.directory} (templates: {known}) / 没有这个计划模板"
        )

    def load(self, name: str) -> PlanSpec:
        """Template ``name`` as a plan (``PlanInvalidError`` naming the file and the nodes)."""
        spec = load_plan(self.path(name))
        if "name" not in spec.model_fields_set:
            spec = spec.model_copy(update={"name": name})
        return spec

    def describe(self) -> list[tuple[str, PlanSpec]]:
        """Every readable template with its plan (unreadable ones are left out)."""
        found: list[tuple[str, PlanSpec]] = []
        for name in self.names():
            try:
                found.append((name, self.load(name)))
            except (PlanInvalidError, PlanTemplateNotFoundError):
                continue
        return found
