"""Routes: chat (see DESIGN.md, HTTP)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
