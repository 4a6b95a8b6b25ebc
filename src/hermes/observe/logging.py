"""Structured JSON logs: one line per event, linked by msg_id / trace_id / session_id.

Seed 002 §4.3: every module logs one structured line per step, each carrying the ``msg_id``, so a
whole exchange is found with one search. A line looks like::

    {"timestamp": "2025-01-11T15:59:00.123456Z", "level": "info", "event": "tool_call",
     "module": "tools", "msg_id": "…", "trace_id": "…", "session_id": "…", "cost_ms": 3.2, …}

Usage::

    log = get_logger("tools")                  # once, at module level
    with log_context(msg_id=m, trace_id=t, session_id=s):
        with timed(log, "tool_call", tool="add") as span:
            ...
            span.add(ok=True)

Design, for a turn that logs about five lines at well under a millisecond of overhead:

- Level filtering is one integer comparison in the caller's frame, before any dict is built.
  Disabled logging (``file=None``, the default until ``configure_logging`` is called) costs the
  same comparison and nothing else.
- A ``HermesLogger`` wraps one structlog filtering bound logger built once per module, with a
  pre-built processor chain (structlog's ``cache_logger_on_first_use``, done by hand). Unlike
  structlog's cache, reconfiguring later still takes effect: loggers write to one process-wide
  sink whose file and level ``configure_logging`` swaps.
- The sink is a plain line-buffered file append under a lock; no stdlib ``logging`` round trip.
  Nothing is ever written to stdout, which belongs to the user and to ``--json`` output.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import Enum
from pathlib import Path
from types import MappingProxyType
from typing import IO, TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

from hermes.errors import ConfigError, HermesError
from hermes.observe.redaction import redact

LevelName = Literal["DEBUG", "INFO", "WARNING", "ERROR"]

DEBUG, INFO, WARNING, ERROR, CRITICAL = 10, 20, 30, 40, 50
_OFF = 100  # above every level: nothing passes
_LEVELS: dict[str, int] = {"DEBUG": DEBUG, "INFO": INFO, "WARNING": WARNING, "ERROR": ERROR}
_METHOD_LEVEL_NAME = {"warn": "warning", "exception": "error", "fatal": "critical", "msg": "info"}


class _Settings:
    """What configure_logging decided; ``min_level`` is read by every logging call."""

    __slots__ = ("applied", "min_level")

    def __init__(self) -> None:
        self.min_level = _OFF
        #: (file, level) of the last configure_logging call; None until the first one.
        self.applied: tuple[Path | None, int] | None = None


_SETTINGS = _Settings()

_EMPTY: Mapping[str, Any] = MappingProxyType({})
# One immutable dict per context: binding copies, so an asyncio task or thread that inherited
# the context never sees later changes made by another.
_CONTEXT: ContextVar[Mapping[str, Any]] = ContextVar("hermes_log_context", default=_EMPTY)


class _Sink:
    """Where rendered lines go: the current log file, or nowhere.

    structlog calls the method named after the level (``info``, ``error`` …); all of them append
    one line. A write that fails (disk full) is reported once on stderr and counted, because a
    log line must never break the turn it describes.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self.path: Path | None = None
        self.failed_writes = 0

    def write_line(self, line: str) -> None:
        with self._lock:
            if self._file is None:
                return
            try:
                self._file.write(line + "\n")
            except (OSError, ValueError) as exc:
                self.failed_writes += 1
                if self.failed_writes == 1:
                    sys.stderr.write(f"hermes: cannot write log file {self.path}: {exc}\n")

    debug = info = warning = warn = error = critical = fatal = msg = log = write_line

    def swap(self, file: IO[str] | None, path: Path | None) -> None:
        """Point at ``file`` (already open) and close the previous one."""
        with self._lock:
            old, self._file, self.path = self._file, file, path
            self.failed_writes = 0
        if old is not None:
            old.close()


_SINK = _Sink()


# A one-entry cache of (second, formatted second); the tuple is replaced whole, so threads never
# see a second paired with another second's text.
_SECOND_STAMP: list[tuple[int, str]] = [(-1, "")]


def _now_iso() -> str:
    """UTC now as ``2025-01-11T15:59:00.123456Z``; the date part is formatted once a second."""
    now = time.time()
    second = int(now)
    cached_second, prefix = _SECOND_STAMP[0]
    if second != cached_second:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _SECOND_STAMP[0] = (second, prefix)
    return f"{prefix}.{int((now - second) * 1_000_000):06d}Z"


def _shape(_logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> Any:
    """Lay the line out: timestamp, level, event, module, turn context, then the fields."""
    line: dict[str, Any] = {
        "timestamp": _now_iso(),
        "level": _METHOD_LEVEL_NAME.get(method_name, method_name),
        "event": event_dict.pop("event", None),
        "module": event_dict.pop("module", None),
    }
    context = _CONTEXT.get()
    if context:
        line.update(context)
    line.update(event_dict)  # a field given on the call wins over the bound context
    return line


def _redact(_logger: Any, _method_name: str, event_dict: MutableMapping[str, Any]) -> Any:
    return redact(event_dict)


def _json_default(value: Any) -> Any:
    """JSON for values json.dumps does not know; anything else becomes its repr."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return repr(value)


@functools.cache
def _chain() -> tuple[tuple[Any, ...], Any]:
    """The processor chain and the bound-logger class, built on the first line actually written.

    structlog is imported here, not at the top: importing it costs ~120 ms (it pulls in rich),
    and a process that never writes a line — a sandboxed tool's child, ``hermes --help`` —
    should not pay for it.
    """
    import structlog

    processors: tuple[Any, ...] = (
        _shape,
        _redact,
        structlog.processors.format_exc_info,
        structlog.processors.JSONRenderer(
            ensure_ascii=False, separators=(",", ":"), default=_json_default
        ),
    )
    # Level filtering happens in HermesLogger before structlog is called; this lets all through.
    return processors, structlog.make_filtering_bound_logger(DEBUG)


class HermesLogger:
    """A module's logger: ``debug``/``info``/``warning``/``error``/``exception`` take an event
    name and keyword fields. Get one with ``get_logger``; ``bind`` adds fixed fields."""

    __slots__ = ("_built", "_fields")

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields
        self._built: FilteringBoundLogger | None = None

    @property
    def _bound(self) -> FilteringBoundLogger:
        built = self._built
        if built is None:
            processors, bound_class = _chain()
            built = self._built = bound_class(_SINK, processors, dict(self._fields))
        return built

    def bind(self, **fields: Any) -> HermesLogger:
        """A logger that adds ``fields`` to every line."""
        return HermesLogger({**self._fields, **fields})

    def is_enabled(self, level: LevelName) -> bool:
        """Whether a line at ``level`` would be written; check before computing costly fields."""
        return _LEVELS[level] >= _SETTINGS.min_level

    def debug(self, event: str, /, **fields: Any) -> None:
        if _SETTINGS.min_level <= DEBUG:
            self._bound.debug(event, **fields)

    def info(self, event: str, /, **fields: Any) -> None:
        if _SETTINGS.min_level <= INFO:
            self._bound.info(event, **fields)

    def warning(self, event: str, /, **fields: Any) -> None:
        if _SETTINGS.min_level <= WARNING:
            self._bound.warning(event, **fields)

    def error(self, event: str, /, **fields: Any) -> None:
        if _SETTINGS.min_level <= ERROR:
            self._bound.error(event, **fields)

    def exception(self, event: str, /, **fields: Any) -> None:
        """An error line with the traceback of the exception being handled."""
        if _SETTINGS.min_level <= ERROR:
            self._bound.exception(event, **fields)


_LOGGERS: dict[str, HermesLogger] = {}
_CONFIG_LOCK = threading.Lock()


def get_logger(module: str) -> HermesLogger:
    """The logger of ``module`` (a short name such as ``"agent"`` or ``"tools"``); cached."""
    logger = _LOGGERS.get(module)
    if logger is None:
        logger = _LOGGERS.setdefault(module, HermesLogger({"module": module}))
    return logger


def configure_logging(file: str | Path | None, level: str = "INFO") -> None:
    """Send JSON lines at ``level`` and above to ``file``, or drop them all when ``file`` is None.

    Idempotent: the same file and level again changes nothing; another file or level takes
    effect for every logger, including ones already in use. Parent directories are created.
    Also routes plain ``structlog.get_logger()`` calls to the same file, so no library line
    reaches stdout. Raises ``ConfigError`` (key ``logging.file`` / ``logging.level``) for an
    unknown level or a file that cannot be opened.
    """
    wanted = _LEVELS.get(level.upper())
    if wanted is None:
        raise ConfigError(
            f"unknown log level {level!r}; expected one of {', '.join(_LEVELS)}",
            key="logging.level",
        )
    path = None if file is None else Path(file).expanduser().absolute()
    with _CONFIG_LOCK:
        if _SETTINGS.applied == (path, wanted):
            return
        if path != _SINK.path:
            _SINK.swap(None if path is None else _open_log_file(path), path)
        _SETTINGS.min_level = _OFF if path is None else wanted
        _SETTINGS.applied = (path, wanted)
        import structlog

        processors, _ = _chain()
        structlog.configure(
            processors=list(processors),
            wrapper_class=structlog.make_filtering_bound_logger(
                CRITICAL if path is None else wanted
            ),
            context_class=dict,
            logger_factory=lambda *_args: _SINK,
            cache_logger_on_first_use=False,  # so a later configure_logging still applies
        )


def reset_logging() -> None:
    """Close the log file, drop every line and restore structlog's defaults (for tests)."""
    with _CONFIG_LOCK:
        _SINK.swap(None, None)
        _SETTINGS.min_level = _OFF
        _SETTINGS.applied = None
        structlog = sys.modules.get("structlog")
        if structlog is not None:  # never imported: nothing to reset
            structlog.reset_defaults()


def _open_log_file(path: Path) -> IO[str]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Line buffering: each line reaches the file (and `tail -f`) as soon as it is logged.
        return path.open("a", encoding="utf-8", buffering=1)
    except OSError as exc:
        raise ConfigError(
            f"cannot open log file: {exc.strerror or exc}", key="logging.file", file=str(path)
        ) from None


def bind_context(**fields: Any) -> None:
    """Add ``fields`` to every line logged from the current context (task or thread) onwards.

    ``None`` values are skipped. Prefer ``log_context``, which also undoes the binding.
    """
    _CONTEXT.set({**_CONTEXT.get(), **_present(fields)})


def clear_context() -> None:
    """Remove every field bound in the current context."""
    _CONTEXT.set(_EMPTY)


def get_context() -> Mapping[str, Any]:
    """The fields currently bound (read-only); e.g. to pass the trace id on to a subprocess."""
    return MappingProxyType(dict(_CONTEXT.get()))


@contextmanager
def log_context(
    *,
    msg_id: str | None = None,
    trace_id: str | None = None,
    session_id: str | None = None,
    **extra: Any,
) -> Iterator[None]:
    """Within the block, every line carries these fields (``None`` values are skipped).

    Nested blocks add to the outer fields; leaving a block restores them. Built on contextvars,
    so concurrent turns in one event loop never mix their ids.
    """
    fields = _present({"msg_id": msg_id, "trace_id": trace_id, "session_id": session_id, **extra})
    token = _CONTEXT.set({**_CONTEXT.get(), **fields})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def _present(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


@dataclass(slots=True)
class Span:
    """The fields of a ``timed`` block; ``cost_ms`` is set when the block ends."""

    fields: dict[str, Any] = field(default_factory=dict)
    cost_ms: float | None = None

    def add(self, **fields: Any) -> None:
        """Add fields to the line logged when the block ends (e.g. ``ok=result.ok``)."""
        self.fields.update(fields)


@contextmanager
def timed(
    logger: HermesLogger,
    event: str,
    *,
    level: Literal["debug", "info"] = "info",
    **fields: Any,
) -> Iterator[Span]:
    """Log ``event`` with ``cost_ms`` (milliseconds, 3 decimals) when the block ends.

    A block that raises is logged at error level with ``error_type`` (and, for a ``HermesError``,
    its message, which is written to be safe to show) and the exception propagates unchanged.
    A cancellation or interrupt is logged at warning level.
    """
    span = Span(dict(fields))
    start = time.perf_counter()
    try:
        yield span
    except BaseException as exc:
        span.cost_ms = round((time.perf_counter() - start) * 1000, 3)
        failure = {**span.fields, "cost_ms": span.cost_ms, "error_type": type(exc).__name__}
        if isinstance(exc, HermesError):
            failure["error"] = exc.message
        if isinstance(exc, Exception):
            logger.error(event, **failure)
        else:
            logger.warning(event, **failure)
        raise
    span.cost_ms = round((time.perf_counter() - start) * 1000, 3)
    done = {**span.fields, "cost_ms": span.cost_ms}
    if level == "debug":
        logger.debug(event, **done)
    else:
        logger.info(event, **done)
