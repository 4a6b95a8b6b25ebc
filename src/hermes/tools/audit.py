"""The audit log of permission decisions: one JSON line per decision (seed 003 §2.2).

Seed 003 §2.2 asks that a refused call be "recorded in an rbac_denied audit log"; each record says
who, what tool, when and the decision. :class:`AuditLog` appends one JSON object per line::

    {"time": "2025-01-11T15:59:00.123456Z", "user": "alice", "tool": "get_salary",
     "decision": "deny", "required": ["hr:salary:read"], "missing": ["hr:salary:read"],
     "session_id": "…", "trace_id": "…"}

Writing never raises into the caller. When the file cannot be opened or written (read-only
directory, disk full) the record is lost: the log emits ONE warning ``audit_write_failed`` per
run of failures (again after a later success) and counts the loss in :attr:`AuditLog.lost`,
which a metrics endpoint can expose. A failed audit write does NOT turn an "allow" into a
"deny": the authorization decision is made from configuration alone, so a full disk degrades
auditing without taking every protected tool down with it. Deployments that must fail closed
can check ``lost`` and alert.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from hermes.observe import get_logger

__all__ = ["AuditLog", "read_audit"]

logger = get_logger("tools")


class AuditLog:
    """Append-only JSON-lines file, safe to share between threads.

    The file (and its parent directories) is created at the first write, not at construction,
    so an Agent that never meets a protected tool leaves no file behind. Each record is written
    with one ``write`` of a whole line on a line-buffered file opened in append mode, so lines
    from several threads — or several processes appending to the same file — never interleave.
    """

    __slots__ = ("_failing", "_file", "_lock", "lost", "path", "written")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        #: Records that could not be written (unwritable file, disk full, unserializable value).
        self.lost = 0
        #: Records written since this object was created.
        self.written = 0
        self._file: IO[str] | None = None
        self._failing = False
        self._lock = threading.Lock()

    def write(self, record: Mapping[str, Any]) -> bool:
        """Append ``record`` as one JSON line; ``True`` when written, ``False`` when lost.

        Never raises: values that are not JSON types are written with ``str()``.
        """
        try:
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
        except (TypeError, ValueError) as exc:  # e.g. a circular structure or a non-str key
            return self._lose(f"record is not serializable: {exc}")
        with self._lock:
            try:
                if self._file is None:
                    self._file = self._open()
                self._file.write(line + "\n")
            except OSError as exc:
                self._close_quietly()
                return self._lose_locked(exc.strerror or str(exc))
            self.written += 1
            self._failing = False
        return True

    def close(self) -> None:
        """Close the file; a later :meth:`write` opens it again."""
        with self._lock:
            self._close_quietly()

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AuditLog({str(self.path)!r}, written={self.written}, lost={self.lost})"

    def _open(self) -> IO[str]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # buffering=1: line-buffered, so each record reaches the OS as it is written and a
        # crash loses at most the line being written.
        return self.path.open("a", encoding="utf-8", buffering=1)

    def _close_quietly(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError as exc:  # flushing a buffered tail failed: that tail is lost
                logger.warning("audit_close_failed", path=str(self.path), error=str(exc))

    def _lose(self, reason: str) -> bool:
        with self._lock:
            return self._lose_locked(reason)

    def _lose_locked(self, reason: str) -> bool:
        self.lost += 1
        if not self._failing:  # one warning per run of failures, not one per record
            self._failing = True
            logger.warning(
                "audit_write_failed",
                path=str(self.path),
                error=reason,
                note="audit records are being lost; permission decisions are unaffected",
            )
        return False


def read_audit(
    path: str | os.PathLike[str],
    *,
    user: str | None = None,
    tool: str | None = None,
    decision: str | None = None,
) -> list[dict[str, Any]]:
    """The records of an audit file, oldest first, filtered by user, tool and/or decision.

    A missing file has no records. Lines that are not JSON objects (a line torn by a crash)
    are skipped with one warning that counts them.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    records: list[dict[str, Any]] = []
    malformed = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            malformed += 1
            continue
        if not isinstance(record, dict):
            malformed += 1
            continue
        if (
            (user is None or record.get("user") == user)
            and (tool is None or record.get("tool") == tool)
            and (decision is None or record.get("decision") == decision)
        ):
            records.append(record)
    if malformed:
        logger.warning("audit_lines_malformed", path=str(file), count=malformed)
    return records
