"""The audit log: one JSON line per decision, safe across threads, never raising."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.observe import configure_logging, reset_logging
from hermes.tools.audit import AuditLog, read_audit


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    """Hermes's own JSON log, captured for the test."""
    path = tmp_path / "hermes.log"
    configure_logging(path, "INFO")
    yield path
    reset_logging()


def _events(log_file: Path, name: str) -> list[dict]:
    if not log_file.exists():
        return []
    lines = [json.loads(line) for line in log_file.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line["event"] == name]


def _blocked_path(tmp_path: Path) -> Path:
    """A path whose parent is a file: it can be neither created nor opened."""
    blocker = tmp_path / "blocker"
    blocker.write_text("x", encoding="utf-8")
    return blocker / "audit.log"


def test_nothing_is_created_before_the_first_record(tmp_path):
    AuditLog(tmp_path / "deep" / "audit.log")
    assert not (tmp_path / "deep").exists()


def test_each_record_is_one_json_line_in_a_created_directory(tmp_path):
    path = tmp_path / "deep" / "audit.log"
    with AuditLog(path) as audit:
        assert audit.write({"user": "alice", "tool": "t", "decision": "allow"})
        assert audit.write({"user": "张三", "tool": "t", "decision": "deny"})
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["user"] for line in lines] == ["alice", "张三"]
    assert "张三" in lines[1]  # readable, not \\u-escaped
    assert audit.written == 2


def test_records_are_appended_to_an_existing_file(tmp_path):
    path = tmp_path / "audit.log"
    path.write_text('{"user": "old"}\n', encoding="utf-8")
    with AuditLog(path) as audit:
        audit.write({"user": "new"})
    assert [r["user"] for r in read_audit(path)] == ["old", "new"]


def test_each_line_reaches_the_file_without_close(tmp_path):
    path = tmp_path / "audit.log"
    audit = AuditLog(path)
    audit.write({"n": 1})
    assert read_audit(path) == [{"n": 1}]
    audit.close()


def test_values_that_are_not_json_are_written_as_text(tmp_path):
    with AuditLog(tmp_path / "a.log") as audit:
        assert audit.write({"path": tmp_path, "scopes": ("a", "b")})
    record = read_audit(tmp_path / "a.log")[0]
    assert record == {"path": str(tmp_path), "scopes": ["a", "b"]}


def test_an_unserializable_record_is_lost_not_raised(tmp_path):
    loop: dict = {}
    loop["self"] = loop
    with AuditLog(tmp_path / "a.log") as audit:
        assert audit.write(loop) is False
        assert audit.lost == 1
        assert audit.write({"ok": True})
    assert read_audit(tmp_path / "a.log") == [{"ok": True}]


def test_concurrent_writers_never_interleave_lines(tmp_path):
    path = tmp_path / "audit.log"
    audit = AuditLog(path)
    threads_count, per_thread = 8, 200
    padding = "x" * 500  # long lines make a torn write visible

    def work(worker: int) -> None:
        for index in range(per_thread):
            audit.write({"worker": worker, "index": index, "pad": padding})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    audit.close()
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == threads_count * per_thread
    for worker in range(threads_count):
        indexes = [r["index"] for r in records if r["worker"] == worker]
        assert indexes == list(range(per_thread))  # each thread's own order is kept
    assert audit.written == threads_count * per_thread


def test_two_logs_on_one_file_append_whole_lines(tmp_path):
    path = tmp_path / "audit.log"
    first, second = AuditLog(path), AuditLog(path)
    for index in range(50):
        first.write({"from": 1, "i": index})
        second.write({"from": 2, "i": index})
    first.close()
    second.close()
    assert len(read_audit(path)) == 100


def test_an_unwritable_path_loses_records_with_one_warning(tmp_path, log_file):
    audit = AuditLog(_blocked_path(tmp_path))
    assert audit.write({"n": 1}) is False
    assert audit.write({"n": 2}) is False
    assert audit.lost == 2
    warnings = _events(log_file, "audit_write_failed")
    assert len(warnings) == 1
    assert warnings[0]["path"] == str(audit.path)
    assert warnings[0]["level"] == "warning"


def test_writing_resumes_when_the_path_becomes_writable(tmp_path, log_file):
    path = _blocked_path(tmp_path)
    audit = AuditLog(path)
    audit.write({"n": 1})
    path.parent.unlink()  # the blocking file goes away
    assert audit.write({"n": 2}) is True
    assert read_audit(path) == [{"n": 2}]
    assert audit.lost == 1
    # A new run of failures warns again.
    audit.close()
    path.unlink()
    path.parent.rmdir()
    path.parent.write_text("x", encoding="utf-8")
    audit.write({"n": 3})
    assert len(_events(log_file, "audit_write_failed")) == 2


def test_read_audit_filters_by_user_tool_and_decision(tmp_path):
    path = tmp_path / "a.log"
    with AuditLog(path) as audit:
        audit.write({"user": "alice", "tool": "pay", "decision": "allow"})
        audit.write({"user": "bob", "tool": "pay", "decision": "deny"})
        audit.write({"user": "bob", "tool": "read", "decision": "allow"})
    assert len(read_audit(path)) == 3
    assert [r["tool"] for r in read_audit(path, user="bob")] == ["pay", "read"]
    assert [r["user"] for r in read_audit(path, tool="pay")] == ["alice", "bob"]
    assert read_audit(path, user="bob", decision="deny") == [
        {"user": "bob", "tool": "pay", "decision": "deny"}
    ]


def test_read_audit_of_a_missing_file_is_empty(tmp_path):
    assert read_audit(tmp_path / "none.log") == []


def test_read_audit_skips_torn_and_non_object_lines_with_a_warning(tmp_path, log_file):
    path = tmp_path / "a.log"
    path.write_text('{"n": 1}\n[1, 2]\n\n{"n": 2}\n{"n": 3, "tor', encoding="utf-8")
    assert read_audit(path) == [{"n": 1}, {"n": 2}]
    assert _events(log_file, "audit_lines_malformed")[0]["count"] == 2
