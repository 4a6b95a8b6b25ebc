"""``hermes trace``: see DESIGN.md ("More CLI")."""

from __future__ import annotations
