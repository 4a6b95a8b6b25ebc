"""The record of scheduled job runs: the ``JobRuns`` protocol (DESIGN.md, "Public contracts",
Scheduler and Jobs; "Scale-out": a job runs once per (job, due time) however many workers run).

A worker whose timer fires for ``(job, due_at)`` claims it before running anything::

    claim = await runs.claim("daily-report", due_at, trace_id=t, lease=600)
    match claim.outcome:
        case "claimed":  # ours: run it (renew on long runs), then runs.finish(...)
        case "taken":    # another worker has it (or had it): nothing to do
        case "skipped":  # a run of the job is still running: recorded as skipped, not run
        case _: assert_never(claim.outcome)

The contract every backend keeps (SQLite: ``hermes.storage.sqlite.job_runs``; a PostgreSQL
backend: one row per run under ``UNIQUE (job, due_at)``, the claim's reads and its insert in one
transaction serialized per job — a transaction-level advisory lock on the job name, or
``SELECT … FOR UPDATE`` of a row per job — never a session-level lock):

- **Once per (job, due time).** However many workers claim one ``(job, due_at)`` at once,
  exactly one gets ``claimed``; the others get ``taken`` with that run. ``due_at`` is kept to
  the millisecond (:func:`due_key`), so workers that computed it apart agree.
- **No overlap.** With ``on_overlap="skip"`` (the scheduler's rule), a claim while another run
  of the job is ``running`` under a live lease records this due time as ``skipped``
  (``skipped_for`` names the running run) and runs nothing — one decision, in the claim's
  transaction, so two workers never both start. ``on_overlap="run"`` (a manual run) does not
  look.
- **Dead workers.** A ``running`` run whose lease passed without a finish was left by a dead
  worker. A claim of the *same* ``(job, due_at)`` takes it over (``claimed``, ``attempts``
  + 1, the same ``run_id`` — effects stay exactly-once through idempotency keys made from
  it); a claim of another due time of the job records it ``failed`` with
  :data:`ABANDONED` as its error first, so it is never silently "running" forever.
- **Missed runs are recorded.** :meth:`JobRuns.record_missed` stores a ``missed`` run for a due
  time that passed while no worker ran (once, however many workers notice it).
- **Fencing.** ``finish``/``renew`` carry the claim's ``token``; one that is no longer the run's
  (taken over, abandoned, finished) raises ``LeaseLostError`` and writes nothing.
- **Delivery.** ``record_delivery`` stores the outcome of POSTing a finished run to
  ``deliver_to`` (failures included: recorded, never silent).
- Reads see every committed write at once, across workers (``hermes jobs list`` reads
  :meth:`~JobRuns.last_run` and :meth:`~JobRuns.count_runs` with ``status="missed"``).

Times are seconds since the epoch from the backend's clock (``clock=`` of the SQLite backend).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from hermes.errors import InvalidInputError

#: How long a claim holds its run unless renewed.
DEFAULT_LEASE_SECONDS = 600.0
#: The error of a ``running`` run found abandoned (its lease passed without a finish).
ABANDONED = "abandoned: the worker running it stopped before it finished (its lease expired)"
#: Longest job name a backend accepts (characters).
MAX_JOB_NAME_LENGTH = 128

#: ``running`` (claimed), then ``succeeded`` or ``failed``; ``skipped`` (would have overlapped a
#: running one) and ``missed`` (its due time passed unrun) are recorded without running.
JobRunStatus = Literal["running", "succeeded", "failed", "skipped", "missed"]
#: What a claim found (see the module docstring).
JobClaimOutcome = Literal["claimed", "taken", "skipped"]
#: What a claim does while another run of the job is running: ``skip`` it (the scheduler) or
#: ``run`` regardless (a manual ``hermes jobs run``).
OverlapBehavior = Literal["skip", "run"]
#: The outcome of POSTing a run to ``deliver_to``.
DeliveryOutcome = Literal["delivered", "failed"]


@dataclass(frozen=True, slots=True)
class JobRun:
    """One run of a job for one due time.

    ``token`` is the fencing token of the standing claim; ``attempts`` counts its claims (more
    than one: taken over from a dead worker). ``lease_until`` is set while ``running``.
    ``skipped_for`` is the run a ``skipped`` one would have overlapped. ``delivery`` and
    ``delivery_error``/``delivery_attempts`` record the POST to ``deliver_to``, if any.
    """

    run_id: str
    job: str
    due_at: float
    status: JobRunStatus
    trace_id: str | None
    token: int
    attempts: int
    recorded_at: float
    started_at: float | None
    finished_at: float | None
    lease_until: float | None
    error: str | None
    skipped_for: str | None
    delivery: DeliveryOutcome | None
    delivery_error: str | None
    delivery_attempts: int


@dataclass(frozen=True, slots=True)
class JobClaim:
    """The outcome of :meth:`JobRuns.claim` and the run it is about (for ``claimed``, the
    caller's: ``run.token`` is its token; for ``taken``, the other worker's; for ``skipped``,
    the ``skipped`` record just written)."""

    outcome: JobClaimOutcome
    run: JobRun

    @property
    def token(self) -> int:
        return self.run.token


@runtime_checkable
class JobRuns(Protocol):
    """Durable records of job runs (the module docstring is the contract)."""

    async def claim(
        self,
        job: str,
        due_at: float,
        *,
        trace_id: str,
        lease: float = DEFAULT_LEASE_SECONDS,
        on_overlap: OverlapBehavior = "skip",
    ) -> JobClaim:
        """Claim ``(job, due_at)`` atomically: ``claimed`` (yours), ``taken`` or ``skipped``.
        Raises ``InvalidInputError`` for a malformed job name."""
        ...

    async def finish(
        self,
        run_id: str,
        token: int,
        *,
        status: Literal["succeeded", "failed"],
        error: str | None = None,
    ) -> JobRun:
        """Record how the caller's run ended. Raises ``LeaseLostError`` when ``token`` is not
        the run's standing claim or it is not running, ``RunNotFoundError`` for an unknown id."""
        ...

    async def renew(self, run_id: str, token: int, *, lease: float) -> JobRun:
        """Hold the run ``lease`` more seconds from now (errors as ``finish``)."""
        ...

    async def record_missed(self, job: str, due_at: float) -> JobRun:
        """Record ``(job, due_at)`` as ``missed`` unless a run of it exists; the run that
        stands (the new ``missed`` one or the existing one)."""
        ...

    async def record_delivery(
        self, run_id: str, *, outcome: DeliveryOutcome, attempts: int, error: str | None = None
    ) -> JobRun:
        """Record the POST of the run to ``deliver_to`` (``RunNotFoundError`` if unknown)."""
        ...

    async def get(self, run_id: str) -> JobRun | None:
        """The run, ``None`` when unknown."""
        ...

    async def running(self, job: str) -> JobRun | None:
        """A run of ``job`` running under a live lease now, if any (what ``skip`` looks at)."""
        ...

    async def last_run(self, job: str) -> JobRun | None:
        """The run of ``job`` with the latest due time, whatever its status."""
        ...

    async def list_runs(
        self, job: str | None = None, *, limit: int = 50, before: float | None = None
    ) -> list[JobRun]:
        """Runs (of ``job`` if given), latest due time first, due before ``before`` if given
        (the cursor of the next page: the last one's ``due_at``; exact for one job — across
        jobs, runs due in the cursor's very millisecond fall between two pages), at most
        ``limit``."""
        ...

    async def count_runs(
        self, job: str, *, status: JobRunStatus, since: float | None = None
    ) -> int:
        """How many runs of ``job`` have ``status`` (due at or after ``since`` if given)."""
        ...

    async def prune(self, before: float) -> int:
        """Delete the runs due before ``before`` that are not running; the count."""
        ...

    async def close(self) -> None:
        """Release connections and threads."""
        ...


def due_key(due_at: float) -> int:
    """A due time as whole milliseconds since the epoch: the identity of a run's due time in
    every backend (a float computed by two workers may differ in its last bits)."""
    return round(due_at * 1000)


def new_run_id() -> str:
    """A new job run id: ``job-`` and 24 random hex digits."""
    return f"job-{os.urandom(12).hex()}"


def check_job_name(job: str) -> None:
    """Raise ``InvalidInputError`` unless ``job`` is 1 to :data:`MAX_JOB_NAME_LENGTH` printable
    characters (every backend checks with this)."""
    if not isinstance(job, str) or not job or len(job) > MAX_JOB_NAME_LENGTH:
        raise InvalidInputError(f"a job name must be 1 to {MAX_JOB_NAME_LENGTH} characters")
    if not job.isprintable():
        raise InvalidInputError("a job name must not contain control characters")
