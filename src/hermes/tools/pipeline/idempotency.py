"""Idempotency (``idempotency_key=``): the same key gets the same stored result, durably —
a retried request never pays twice. Keys are per user (``idempotency_key``); a claim is held
for the worst-case length of the call; a call cancelled or timed out while running is stored
as ``outcome_unknown`` (its effect may have happened: the key is not simply run again).

Where the claims and results live is the step's ``IdempotencyRecords``, handed in when it is
built (the protocol, and what a backend must do, in ``idempotency_records.py`` beside it)."""

from __future__ import annotations

import json

from hermes.errors import StoreError
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolResult
from hermes.tools.pipeline.call import Call, Next
from hermes.tools.pipeline.idempotency_records import IdempotencyRecords, RecordsPerWorkspace
from hermes.tools.pipeline.results import refused, reused
from hermes.tools.pipeline.run import SANDBOX_GRACE_S
from hermes.tools.policies import KeyLocks, canonical_json, idempotency_key, new_owner

__all__ = ["IdempotencyStep"]

logger = get_logger("tools")

#: Extra life of an idempotency claim beyond the worst-case length of the call.
_LEASE_MARGIN_S = 5.0
#: Stored for a key whose call timed out or was cancelled while running: its effect is unknown.
_UNKNOWN_OUTCOME = json.dumps({"outcome_unknown": True})
_UNKNOWN_ERRORS = frozenset({"timeout", "sandbox_timeout"})


class IdempotencyStep:
    """Claims the key (per-key lock in this process, a claim in the records across
    processes), replays a stored result, or runs the rest of the chain and stores what it
    returned.

    ``records``: where the keys live — one set of records for every call, or
    :class:`RecordsPerWorkspace` (chosen by each call's workspace). ``key_locks``: the
    per-key locks of this process (shared by the executors of one ``PolicyState``).
    """

    name = "idempotency"

    def __init__(
        self, records: IdempotencyRecords | RecordsPerWorkspace, key_locks: KeyLocks
    ) -> None:
        self.records = records
        self.key_locks = key_locks

    def applies(self, tool: Tool) -> bool:
        return tool.idempotency_key is not None

    def records_for(self, call: Call) -> IdempotencyRecords:
        """The records of ``call``'s key."""
        records = self.records
        if isinstance(records, RecordsPerWorkspace):
            return records.open(str(call.context.workspace_path()))
        return records

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        tool = call.tool
        assert tool.idempotency_key is not None
        fields = tool.idempotency_key
        material = (
            canonical_json({f: call.arguments.get(f) for f in fields})
            if fields
            else call.arguments_json()
        )
        return await self.run_keyed(call, next, idempotency_key(call.context.user_id, material))

    async def run_keyed(
        self, call: Call, next: Next, key: str, *, run_if_new: bool = True
    ) -> ToolResult:
        """The claim, replay or run of ``call`` under ``key``. ``run_if_new=False``: only
        replay — a key with no stored result is released and the call refused with
        ``outcome_unknown`` (a plan node cut off mid-call, ``hermes.tools.plans``)."""
        tool = call.tool
        store = self.records_for(call)
        async with self.key_locks.hold((tool.name, key)):
            owner = new_owner()
            try:
                stored = await store.claim(tool.name, key, owner=owner, lease=_lease(tool))
            except StoreError as exc:
                message = f"tool {tool.name!r} was not run: its idempotency record is unavailable"
                return refused(exc.code, f"{message} ({exc.message})", call.start)
            except BaseException:  # cancelled: the claim may still land on the worker; undo it
                store.release_soon(tool.name, key, owner=owner)
                raise
            call.mark("idempotency")
            if stored is not None:
                return _replayed(tool, stored, call.start)
            if not run_if_new:
                await store.release(tool.name, key, owner=owner)
                return refused("outcome_unknown", _cut_off(tool), call.start)
            try:
                result = await next(call)
            except BaseException:  # record "unknown", then re-raise unchanged
                # Cancelled while the tool may be running or may have had its effect: whether
                # it happened is unknown, so the key must not simply run again (it could pay
                # twice).
                store.complete_soon(
                    tool.name,
                    key,
                    owner=owner,
                    result_json=_UNKNOWN_OUTCOME,
                    ttl=tool.idempotency_ttl,
                )
                raise
            await _settle(store, tool, key, owner, result)
            call.mark("idempotency_store")
            return result


async def _settle(
    store: IdempotencyRecords, tool: Tool, key: str, owner: str, result: ToolResult
) -> None:
    try:
        if result.ok or _outcome_unknown(result):
            payload = (
                json.dumps(
                    {"output": result.output, "summary": result.summary},
                    ensure_ascii=False,
                    default=str,
                )
                if result.ok
                else _UNKNOWN_OUTCOME
            )
            kept = await store.complete(
                tool.name, key, owner=owner, result_json=payload, ttl=tool.idempotency_ttl
            )
            if not kept:
                logger.warning("idempotency_claim_lost", tool=tool.name)
        else:
            # It failed before doing anything (it raised, or was refused): the next call with
            # this key may try again.
            await store.release(tool.name, key, owner=owner)
    except StoreError as exc:
        # The call did run: its real result still goes back (the model must know what
        # happened); only the record of it is missing.
        logger.error("idempotency_record_failed", tool=tool.name, error=exc.message)


def _cut_off(tool: Tool) -> str:
    return (
        f"the call of {tool.name!r} was cut off while running and left no result, so whether it "
        "took effect is unknown; it is not run again — check its effect first"
    )


def _lease(tool: Tool) -> float:
    """How long a claim must survive: every attempt timing out, plus every backoff wait."""
    retry = tool.retry
    attempts = retry.max_attempts if retry is not None else 1
    waits = retry.worst_case_wait() if retry is not None else 0.0
    per_attempt = tool.timeout + (SANDBOX_GRACE_S if tool.sandbox == "process" else 0.0)
    return attempts * per_attempt + waits + _LEASE_MARGIN_S


def _outcome_unknown(result: ToolResult) -> bool:
    return result.error is not None and result.error.type in _UNKNOWN_ERRORS and result.attempts > 0


def _replayed(tool: Tool, stored: str, start: float) -> ToolResult:
    try:
        data = json.loads(stored)
        if data.get("outcome_unknown"):
            message = (
                f"an earlier call of {tool.name!r} with the same idempotency key timed out or was "
                "interrupted while running, so whether it took effect is unknown; it is not run "
                "again — check its effect first"
            )
            return refused("outcome_unknown", message, start)
        output, summary = data["output"], data.get("summary")
    except (ValueError, KeyError, TypeError):
        message = f"the stored result of tool {tool.name!r} for this idempotency key is unreadable"
        return refused("store_error", message, start)
    return reused(output, summary, start)
