"""The results of plan nodes in the L3 archive (the ``PlanRuns`` contract, "Results by archive
hash", of ``hermes.tools.plan_runs``; the archive: ``hermes.memory.archive``).

A succeeded node's result larger than ``inline_max`` bytes of JSON becomes one blob, written
before the commit that names its hash:

    {"run_id":"plan-…","node_id":"n1","token":1796…,"result":<the result's JSON text>}

The result's JSON text is the one the record used to hold inline (compact, object keys in the
order the tool gave them), so a read gives back exactly what was written. The blob names its
run, node and the claim that wrote it, which makes every blob one node's own: deleting a run's
blobs (a user erased, a write that failed after its blob was put) can never take a blob that
another record names, as a content-only name shared by equal results could — and a read checks
that the blob it got is this node's.

Why ``plan-results/`` beside ``plans.db``, not the tool-call tiers' ``archive/``: the tiers'
upkeep (``ToolMemory.prune``) deletes every blob of its directory that no L2 record names,
which would take a plan's results an hour after they were written. Same protocol, same
backend, same blob format; a directory of its own, kept by ``plans.db``'s records.

Why results up to ``inline_max`` stay in the record (``storage/open.py`` sets 1,000 bytes;
``0`` archives every result): a blob is a file, and creating one costs 0.1–0.4 ms on the
development machines' disks (directories included: a young archive creates one per blob) —
on a chain of no-op nodes that more than doubles the runner's overhead (BENCHMARKS.md,
"Multi-call plans", "Results by archive hash"), while a result that small sits in its row's
b-tree cell anyway (SQLite keeps up to ~1,000 bytes of a ``WITHOUT ROWID`` row on a 4 KiB
page before spilling to overflow pages). What the archive is for — results that would bloat
``plans.db`` and every read of a run — is what goes there.

Blobs read or written are kept in a bounded in-process cache (by bytes; a blob never changes
under its name), so the reads a runner makes while it holds a run — each ``renew`` returns the
whole run — cost what reading inline results cost, not an archive read per node.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from hermes.errors import InvalidInputError, StoreError
from hermes.observe import get_logger
from hermes.storage.sqlite.leases import dump_json
from hermes.tools.plan_runs import NodeRun, PlanResultLostError, PlanRun

if TYPE_CHECKING:  # the memory package loads only where an archive is opened (storage/open.py)
    from hermes.memory.archive import Archive

__all__ = ["PlanResults", "StoredResult"]

log = get_logger("tools")

#: Blob bytes the in-process cache keeps at most, and the largest blob it keeps.
DEFAULT_CACHE_BYTES = 16 * 1024 * 1024
MAX_CACHED_BLOB = 1024 * 1024


class StoredResult(NamedTuple):
    """How a result goes into its node's record: ``digest`` of its archived blob, or
    ``inline`` JSON text when the backend keeps results in the record (no archive)."""

    inline: str | None
    digest: str | None


NO_RESULT = StoredResult(None, None)


class PlanResults:
    """The node results of one ``PlanRuns`` backend: those over ``inline_max`` bytes of JSON
    in ``archive``, the others in the records (all of them there when ``archive`` is
    ``None``: a ``:memory:`` database with no directory beside it)."""

    def __init__(
        self,
        archive: Archive | None,
        *,
        inline_max: int = 0,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        if inline_max < 0:
            raise ValueError(f"inline_max must be >= 0, got {inline_max}")
        self.archive = archive
        self.inline_max = inline_max
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cached_bytes = 0
        self._cache_limit = cache_bytes

    async def store(self, run_id: str, token: int, node_id: str, result: Any) -> StoredResult:
        """Put ``result`` where its record will name it (before that record is committed).
        ``InvalidInputError`` for a result that is not JSON or too large for the archive;
        ``StoreError`` when the archive cannot write."""
        if result is None:
            return NO_RESULT
        text = dump_json(result, f"the result of node {node_id!r}")
        data = text.encode("utf-8", "surrogatepass")
        if self.archive is None or len(data) <= self.inline_max:
            return StoredResult(text, None)
        blob = _envelope(run_id, node_id, token, data)
        try:
            digest = await self.archive.put(blob)
        except StoreError as exc:
            if exc.code == "archive_too_large":
                raise InvalidInputError(
                    f"the result of node {node_id!r} is too large to keep: {exc.message}"
                ) from exc
            raise
        self._remember(digest, blob)
        return StoredResult(None, digest)

    async def resolve(self, run: PlanRun) -> PlanRun:
        """``run`` with each archived result read back (``PlanResultLostError`` naming the
        first node whose blob cannot be read)."""
        if not any(node.result_hash is not None for node in run.nodes.values()):
            return run
        nodes = {}
        for node_id, node in run.nodes.items():
            nodes[node_id] = await self.resolve_node(run.run_id, node)
        return replace(run, nodes=nodes)

    async def resolve_node(self, run_id: str, node: NodeRun) -> NodeRun:
        """``node`` with its archived result read back (as it is when it has none)."""
        if node.result_hash is None:
            return node
        return replace(node, result=await self.load(run_id, node.node_id, node.result_hash))

    async def load(self, run_id: str, node_id: str, digest: str) -> Any:
        """The result archived as ``digest`` for node ``node_id`` of ``run_id``."""
        blob = self._cache.get(digest)
        if blob is None:
            blob = await self._read(run_id, node_id, digest)
            self._remember(digest, blob)
        else:
            self._cache.move_to_end(digest)
        try:
            data = json.loads(blob.decode("utf-8", "surrogatepass"))
        except ValueError as exc:
            raise PlanResultLostError(
                run_id, node_id, digest, "corrupt", f"is not a node result ({exc})"
            ) from exc
        if not isinstance(data, dict) or (data.get("run_id"), data.get("node_id")) != (
            run_id,
            node_id,
        ):
            raise PlanResultLostError(
                run_id, node_id, digest, "not_this_node", "holds another node's result"
            )
        return data.get("result")

    async def discard(self, digests: Iterable[str]) -> int:
        """Delete these blobs (a user's runs erased, a write refused after its blobs were
        put); how many were there. A failure is logged, not raised: a blob left behind is
        named by no record and served to nobody."""
        deleted = 0
        for digest in dict.fromkeys(digests):
            self._forget(digest)
            if self.archive is None:
                continue
            try:
                deleted += bool(await self.archive.delete(digest))
            except StoreError as exc:
                log.error("plan_result_delete_failed", digest=digest, error=exc.message)
        return deleted

    async def _read(self, run_id: str, node_id: str, digest: str) -> bytes:
        if self.archive is None:
            raise PlanResultLostError(
                run_id, node_id, digest, "missing", "cannot be read: this store has no archive"
            )
        try:
            blob = await self.archive.get(digest)
        except StoreError as exc:
            reason = "unreadable" if exc.code == "archive_error" else "corrupt"
            raise PlanResultLostError(run_id, node_id, digest, reason, f"({exc.message})") from exc
        if blob is None:
            raise PlanResultLostError(
                run_id, node_id, digest, "missing", "is missing from the archive"
            )
        return blob

    def _remember(self, digest: str, blob: bytes) -> None:
        if len(blob) > MAX_CACHED_BLOB or digest in self._cache:
            return
        self._cache[digest] = blob
        self._cached_bytes += len(blob)
        while self._cached_bytes > self._cache_limit:
            _, dropped = self._cache.popitem(last=False)
            self._cached_bytes -= len(dropped)

    def _forget(self, digest: str) -> None:
        dropped = self._cache.pop(digest, None)
        if dropped is not None:
            self._cached_bytes -= len(dropped)


def _envelope(run_id: str, node_id: str, token: int, data: bytes) -> bytes:
    """The blob of one node's result (the module docstring); ``data`` is already JSON."""
    owner = json.dumps(run_id, ensure_ascii=False), json.dumps(node_id, ensure_ascii=False)
    head = f'{{"run_id":{owner[0]},"node_id":{owner[1]},"token":{token:d},"result":'
    return head.encode("utf-8", "surrogatepass") + data + b"}"
