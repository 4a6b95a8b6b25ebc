"""The error family of Hermes.

Inside the runtime, failures are typed exceptions carrying structured fields. At the edges they
become data: a ``ToolResult(ok=False, error=...)`` for the model, a JSON error for an API client,
one clear sentence for a person. ``code`` is the stable machine-readable name of each failure:
one of :data:`ErrorCode` for every error class Hermes defines, any string for a tool's own
:class:`ToolError` subclass (docs/tools.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

#: The ``code`` of every error class Hermes itself defines (here and in its packages). A tool's
#: own :class:`ToolError` subclass may use any string as its code: ``HermesError.code``,
#: ``ToolError.code`` and the codes of the ToolError classes a tool raises or subclasses
#: (``ToolArgumentError``, ``ToolTimeoutError``, ``ToolExecutionError``) are ``str``; every
#: other class of Hermes's narrows it to this type.
ErrorCode = Literal[
    "hermes_error",
    "config_error",
    "invalid_id",
    "invalid_input",
    "session_not_found",
    "session_busy",
    "session_forbidden",
    "store_error",
    "model_error",
    "tool_error",
    "invalid_arguments",
    "timeout",
    "execution_error",
    "permission_denied",
    "invalid_transition",  # hermes.session.fsm; plan nodes (hermes.tools.plan_runs)
    "sandbox_error",  # hermes.tools.sandbox, hermes.tools.executor
    "sandbox_timeout",
    "sandbox_memory",
    "sandbox_crash",
    "sandbox_output",
    "mcp_serve_error",  # hermes.mcp
    "mcp_connection_error",
    "memory_not_found",  # hermes.memory
    "not_json_safe",
    "invalid_record",
    "archive_error",
    "archive_corrupt",
    "archive_too_large",
    "invalid_digest",
    "lease_lost",  # event dedupe, job runs, plan runs
    "run_not_found",
    "invalid_plan",  # hermes.tools.plans
    "template_not_found",
    "plan_busy",
    "plan_failed",  # hermes.agent.plan_tool: the run_plan tool's plan ran and failed
    "plan_result_lost",  # hermes.tools.plan_runs: a node's archived result cannot be read
]


class HermesError(Exception):
    """Base of every error Hermes raises on purpose."""

    #: ``str`` here so that a tool's :class:`ToolError` may carry its own code; every class of
    #: Hermes's narrows it to :data:`ErrorCode`.
    code: str = "hermes_error"
    #: HTTP-style status an edge (CLI, HTTP API) reports for this failure.
    status: int = 500

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        """The error as JSON-ready data (never includes secrets or whole argument values)."""
        return {"type": self.code, "message": self.message}


class ConfigError(HermesError):
    """A configuration file or value is wrong; names the key and the file."""

    code: ErrorCode = "config_error"
    status = 400

    def __init__(self, message: str, *, key: str | None = None, file: str | None = None) -> None:
        where = ", ".join(
            part for part in (file and f"file {file}", key and f"key '{key}'") if part
        )
        super().__init__(f"{message} ({where})" if where else message, key=key, file=file)
        #: The message without the file and key (to re-raise it with more context).
        self.reason = message
        self.key = key
        self.file = file


class InvalidIdError(HermesError):
    """A session or user id is empty, too short, too long or has characters outside the charset."""

    code: ErrorCode = "invalid_id"
    status = 400


class InvalidInputError(HermesError):
    """A user message cannot be accepted (empty, too large, not text)."""

    code: ErrorCode = "invalid_input"
    status = 400


class SessionNotFoundError(InvalidInputError):
    """A session id that no stored session has."""

    code: ErrorCode = "session_not_found"
    status = 404


class SessionBusyError(HermesError):
    """Another turn of the same session is running and the caller asked not to wait."""

    code: ErrorCode = "session_busy"
    status = 409


class ClaimLostError(SessionBusyError):
    """A turn's write was refused because a newer claim on its session has written since (its
    fencing token is stale): the turn stops without touching the newer turn's work."""


class StoreError(HermesError):
    """The store could not read or write (disk full, locked past the busy timeout, corrupt file)."""

    code: ErrorCode = "store_error"
    status = 503


class LeaseLostError(HermesError):
    """A write of a claimed delivery, job run or plan run was refused: the caller's claim is no
    longer the one that stands (its lease expired and another worker took over, or it was
    finished or released already), so nothing was written (``hermes.channels.dedupe``,
    ``hermes.scheduler.runs``, ``hermes.tools.plan_runs``)."""

    code: ErrorCode = "lease_lost"
    status = 409


class RunNotFoundError(HermesError):
    """No job run or plan run has this id (``run_id`` names it)."""

    code: ErrorCode = "run_not_found"
    status = 404


class NodeTransitionError(HermesError):
    """A plan node was asked to move to a status its current one does not lead to (a bug in
    the plan runner, not a user error; ``hermes.tools.plan_runs.NODE_TRANSITIONS``)."""

    code: ErrorCode = "invalid_transition"
    status = 409


class PlanInvalidError(InvalidInputError):
    """A multi-call plan (or its params) was refused before anything ran; ``problems`` holds
    ``(node ids, message)`` pairs, each naming the nodes it is about (``hermes.tools.plans``)."""

    code: ErrorCode = "invalid_plan"
    status = 400

    def __init__(
        self, message: str, *, problems: list[tuple[list[str], str]] | None = None
    ) -> None:
        super().__init__(message)
        self.problems = problems or []


class PlanTemplateNotFoundError(InvalidInputError):
    """No plan template of that name in ``plans.dir`` (``hermes.tools.plans.library``)."""

    code: ErrorCode = "template_not_found"
    status = 404


class PlanBusyError(HermesError):
    """A plan run is held by another live runner (its lease has not passed), or this runner
    lost its claim to a newer one: nothing was run (``hermes.tools.plans``)."""

    code: ErrorCode = "plan_busy"
    status = 409


#: What went wrong with a model call; ``error`` when nothing more precise is known.
ModelFailure = Literal[
    "unreachable",  # nothing answers at the URL (refused, no such host)
    "authentication",  # HTTP 401/403: the key is wrong or lacks access
    "rate_limited",  # HTTP 429 (``retry_after`` when the server said)
    "timeout",  # no answer in time
    "server_error",  # HTTP 5xx or a dropped connection: an outage, transient
    "request_rejected",  # the server refused this request (4xx, a validation 500)
    "context_overflow",  # the request is larger than the server's context window
    "not_found",  # HTTP 404: no such model or endpoint
    "malformed",  # an answer that is not a chat completion
    "error",
]


class ModelError(HermesError):
    """The model server failed: unreachable, timed out, answered 4xx/5xx or garbage.

    ``kind`` says which (see :data:`ModelFailure`); ``server`` is the URL as it may be shown
    (no credentials); ``retry_after`` the seconds a rate-limiting server asked for.
    """

    code: ErrorCode = "model_error"
    status = 502

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status_code: int | None = None,
        kind: ModelFailure = "error",
        server: str | None = None,
        retry_after: float | None = None,
    ):
        super().__init__(message, retryable=retryable, status_code=status_code, kind=kind)
        self.retryable = retryable
        self.status_code = status_code
        self.kind: ModelFailure = kind
        self.server = server
        self.retry_after = retry_after

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if self.kind != "error":
            data = {"type": data["type"], "kind": self.kind, "message": data["message"]}
        return data


class ToolError(HermesError):
    """Base of failures of one tool call; ``code`` becomes ``ToolResult.error.type``."""

    #: A tool's own subclass may set any string (docs/tools.md): ``str``, not :data:`ErrorCode`.
    code: str = "tool_error"
    status = 400


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One offending field of a tool call: its JSON path (``a.b[0]``) and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.message}"


class ToolArgumentError(ToolError):
    """Arguments do not match the tool's JSON Schema; the message names every offending field."""

    code: str = "invalid_arguments"  # a tool's subclass may set its own (see ToolError)

    def __init__(self, problems: list[FieldProblem], *, tool: str | None = None) -> None:
        self.problems = problems
        self.tool = tool
        prefix = f"invalid arguments for tool '{tool}'" if tool else "invalid arguments"
        super().__init__(f"{prefix}: " + "; ".join(str(p) for p in problems))


class ToolTimeoutError(ToolError):
    """The tool did not finish within its timeout."""

    code: str = "timeout"  # a tool's subclass may set its own (see ToolError)
    status = 504


class ToolExecutionError(ToolError):
    """The tool raised; the message is the exception's type and text."""

    code: str = "execution_error"  # a tool's subclass may set its own (see ToolError)
    status = 500


class SessionAccessError(HermesError):
    """A session exists but belongs to another user."""

    code: ErrorCode = "session_forbidden"
    status = 403


class PermissionDeniedError(ToolError):
    """The calling user lacks a scope the tool requires (seed 003 §2.2: RBAC gateway).

    The message names the tool and only the missing scopes, never the user's whole scope list.
    """

    code: ErrorCode = "permission_denied"
    status = 403

    def __init__(
        self,
        message: str,
        *,
        tool: str | None = None,
        missing: tuple[str, ...] = (),
        user_id: str | None = None,
    ) -> None:
        super().__init__(message, tool=tool, missing=missing, user_id=user_id)
        self.tool = tool
        self.missing = missing
        self.user_id = user_id
