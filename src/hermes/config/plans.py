"""``plans``: multi-call plans (DESIGN.md, "Multi-call plans"; seed 003 §4.3).

``dir`` holds the named templates (``plans/*.yaml``) that ``hermes plan run NAME``, the
``run_plan`` tool, the rule brain, jobs and ``POST /v1/plans`` start. Seed 003 §4.3:
"禁止在生产环境允许用户自定义DAG" — by default the API and models may start only templates
(``allow_freeform: false``); the CLI runs files either way.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PlansConfig(BaseModel):
    """Where templates live and how runs go."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The directory of named templates (relative to where Hermes runs).
    dir: str = Field(default="plans", min_length=1)
    #: Whether the HTTP API and models may start a plan given as data, not only a template.
    allow_freeform: bool = False
    #: Nodes of one run calling their tools at once.
    concurrency: int = Field(default=8, ge=1, le=256)
    #: Seconds a runner that died keeps others from resuming its run (renewed while it runs).
    lease_seconds: float = Field(default=30.0, gt=0, le=3600)
