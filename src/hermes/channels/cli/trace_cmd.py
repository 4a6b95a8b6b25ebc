"""``hermes trace TRACE_ID [--json]``: the chain of one request (DESIGN.md "More CLI").

Seed 002 §4.3: one id finds every step of an exchange, each with its cost.

    hermes trace 9dffc98d7378467180df8f6aa8cb810f
    hermes trace 9dffc98d7378467180df8f6aa8cb810f --json

The steps come from two places: the JSON log lines carrying the trace id (``logging.file`` and
its rotated siblings ``hermes.log.1`` …, read as streams, oldest first — a line without the id
as a substring is never parsed), and the conversation items of the trace's session that carry
it (the session is named by the log lines; its log is read backwards in pages from the newest
item, so a recent trace costs a page or two whatever the session's length). Steps are ordered by
time; ``ms`` is the step's own ``cost_ms`` (``null`` for an item, which is a point in time).

``--json`` prints ``{"trace_id", "steps": [{"module", "event", "at", "ms", "detail"}]}``.
Exit codes: 0 found; 2 an invalid trace id (``invalid_id``), or a trace found nowhere
(``invalid_input``: "no trace …").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from hermes.channels.cli.app import JsonFlag, app, loaded_config, run_async
from hermes.channels.cli.browse import closing, open_existing_store
from hermes.channels.cli.output import fail, note, out, write_json
from hermes.errors import HermesError, InvalidIdError, InvalidInputError
from hermes.observe.trace_ids import is_trace_id
from hermes.session.items import Item
from hermes.session.store import Store

__all__ = ["TraceStep", "collect_steps", "log_files", "read_log_steps", "trace"]

#: Trace ids are the runtime's (32 hex digits) or a caller's (``X-Request-Id``): bounded, printable.
#: Fields of a log line that are the step itself, not its detail.
_OWN_FIELDS = frozenset({"timestamp", "event", "module", "trace_id", "cost_ms", "msg_id"})
_PAGE = 500
#: Items older than the trace's first log line by more than this are not looked at.
_ITEM_SLACK_S = 300.0
_CONTENT_CHARS = 80


@dataclass(slots=True)
class TraceStep:
    module: str
    event: str
    at: str
    ms: float | None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "event": self.event,
            "at": self.at,
            "ms": self.ms,
            "detail": self.detail,
        }


def log_files(path: Path) -> list[Path]:
    """``path`` and its rotated siblings (``hermes.log.1`` is newer than ``hermes.log.2``),
    oldest first; the files that exist."""
    rotated: list[tuple[int, str, Path]] = []
    for sibling in path.parent.glob(path.name + ".*") if path.parent.is_dir() else ():
        suffix = sibling.name[len(path.name) + 1 :]
        number = int(suffix) if suffix.isdigit() else -1
        rotated.append((number, suffix, sibling))
    # Numbered files: a higher number is older; dated ones (``.2025-01-11``) sort by date.
    numbered = sorted((r for r in rotated if r[0] >= 0), key=lambda r: -r[0])
    dated = sorted(r for r in rotated if r[0] < 0)
    found = [r[2] for r in numbered] + [r[2] for r in dated]
    if path.is_file():
        found.append(path)
    return [p for p in found if p.is_file() and not p.name.endswith((".gz", ".lock"))]


def read_log_steps(files: list[Path], trace_id: str) -> tuple[list[TraceStep], set[str]]:
    """The steps of ``trace_id`` in ``files`` and the session ids they name (streamed)."""
    steps: list[TraceStep] = []
    sessions: set[str] = set()
    for line in _matching_lines(files, trace_id):
        try:
            data = json.loads(line)
        except ValueError:
            continue  # a torn last line, or not ours
        if not isinstance(data, dict) or data.get("trace_id") != trace_id:
            continue
        session = data.get("session_id")
        if isinstance(session, str):
            sessions.add(session)
        cost = data.get("cost_ms")
        steps.append(
            TraceStep(
                module=str(data.get("module") or "-"),
                event=str(data.get("event") or "-"),
                at=str(data.get("timestamp") or ""),
                ms=float(cost) if isinstance(cost, int | float) else None,
                detail={
                    k: v
                    for k, v in data.items()
                    if k not in _OWN_FIELDS and not (k == "level" and v == "info")
                },
            )
        )
    return steps, sessions


def _matching_lines(files: list[Path], trace_id: str) -> Iterator[str]:
    for path in files:
        try:
            with path.open("r", encoding="utf-8", errors="replace") as stream:
                for line in stream:
                    if trace_id in line:
                        yield line
        except OSError:
            continue  # rotated away while we read: the other files still count


async def read_item_steps(
    store: Store, session_id: str, trace_id: str, not_before: float | None
) -> list[TraceStep]:
    """The items of ``session_id`` carrying ``trace_id``, newest pages first."""
    record = await store.load_session(session_id)
    if record is None:
        return []
    found: list[Item] = []
    before: int | None = record.last_seq + 1
    while before is not None and before > 1:
        page = await store.read_items(
            session_id, after_seq=max(0, before - 1 - _PAGE), before_seq=before, limit=_PAGE
        )
        if not page:
            break
        found.extend(item for item in page if item.trace_id == trace_id)
        before = page[0].seq
        oldest = page[0].created_at
        if not_before is not None and oldest < not_before - _ITEM_SLACK_S:
            break
        if found and all(item.trace_id != trace_id for item in page):
            break  # a trace's items are contiguous: the block is behind us
    return [_item_step(item) for item in sorted(found, key=lambda i: i.seq)]


def _item_step(item: Item) -> TraceStep:
    detail: dict[str, Any] = {"seq": item.seq, "role": item.role, "kind": item.kind}
    if item.tool_name:
        detail["tool"] = item.tool_name
    content = item.content if isinstance(item.content, str) else json.dumps(item.content)
    detail["content"] = (
        content if len(content) <= _CONTENT_CHARS else content[: _CONTENT_CHARS - 1] + "…"
    )
    return TraceStep("session", f"item_{item.kind}", _iso(item.created_at), None, detail)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _epoch(at: str) -> float | None:
    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


async def collect_steps(
    log_file: Path | None, store: Store | None, trace_id: str
) -> list[TraceStep]:
    """Every step of ``trace_id``, in time order."""
    steps, sessions = read_log_steps(log_files(log_file), trace_id) if log_file else ([], set())
    if store is not None and sessions:
        stamps = [e for e in (_epoch(s.at) for s in steps) if e is not None]
        first = min(stamps) if stamps else None
        for session_id in sorted(sessions):
            steps.extend(await read_item_steps(store, session_id, trace_id, first))
    steps.sort(key=lambda s: s.at)
    return steps


@app.command()
def trace(
    trace_id: Annotated[
        str,
        typer.Argument(
            help="The trace id (printed by `hermes run --json`, header X-Hermes-Trace-Id)."
        ),
    ],
    as_json: JsonFlag = False,
) -> None:
    """Show the chain of one request, each step with its ms. / 显示一次请求的完整链路及各步耗时。

    Reads the JSON logs (logging.file and its rotated files) and the stored items of the
    trace's session. With --json: {"trace_id", "steps": [{"module", "event", "at", "ms",
    "detail"}]}.
    """
    try:
        steps = _trace_steps(trace_id)
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json({"trace_id": trace_id, "steps": [s.to_json() for s in steps]})
        return
    _print_table(trace_id, steps)


def _trace_steps(trace_id: str) -> list[TraceStep]:
    if not is_trace_id(trace_id):
        raise InvalidIdError(
            f"invalid trace id {trace_id[:140]!r}: 8–128 characters of letters, digits, ._:- / "
            f"无效的追踪 ID"
        )
    loaded = loaded_config()
    store = open_existing_store()
    log_file = loaded.log_file
    if store is None:
        steps = run_async(lambda: collect_steps(log_file, None, trace_id))
    else:
        steps = run_async(lambda: closing(store, lambda s: collect_steps(log_file, s, trace_id)))
    if not steps:
        where = f"{log_file}" if log_file is not None else "no log file"
        raise InvalidInputError(
            f"no trace '{trace_id}' in the logs ({where}) or the store / "
            f"日志和存储中都没有追踪 '{trace_id}'"
        )
    return steps


def _print_table(trace_id: str, steps: list[TraceStep]) -> None:
    start = _epoch(steps[0].at)
    sessions = sorted({str(s.detail["session_id"]) for s in steps if "session_id" in s.detail})
    title = f"trace {trace_id}" + (f" · session {', '.join(sessions)}" if sessions else "")
    table = Table(title=Text(title), show_lines=False)
    for column, justify in (("+ms", "right"), ("module", "left"), ("event", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    table.add_column("ms", justify="right")
    table.add_column("detail", overflow="fold")
    for step in steps:
        at = _epoch(step.at)
        offset = "" if at is None or start is None else f"{(at - start) * 1000:.1f}"
        ms = "" if step.ms is None else f"{step.ms:.1f}"
        detail = ", ".join(f"{k}={_short(v)}" for k, v in step.detail.items() if k != "session_id")
        table.add_row(offset, Text(step.module), Text(step.event), ms, Text(detail))
    out.print(table)
    note(_total(steps))


def _total(steps: list[TraceStep]) -> str:
    stamps = [e for e in (_epoch(s.at) for s in steps) if e is not None]
    span_ms = (max(stamps) - min(stamps)) * 1000 if stamps else 0.0
    turn = [s.ms for s in steps if s.event == "turn_finished" and s.ms is not None]
    total = max([span_ms, *turn])
    return (
        f"{len(steps)} steps · total {total:.1f} ms / 共 {len(steps)} 步 · 总耗时 {total:.1f} 毫秒"
    )


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"
