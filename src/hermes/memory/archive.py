"""L3: content-addressed, compressed blobs (seed 000 §2.4) — the concept and its protocol.

A blob is the canonical JSON bytes of a tool output (``hermes.memory.hashing``), stored under
its sha256 — the ``output_hash`` of the L2 index — so identical outputs are stored once and a
blob can always be checked against its name. The tiers read L3 only when L1 and L2 cannot
answer: the index says *which* output, the archive holds *what* it was.

:class:`Archive` is the protocol (:class:`ArchiveUpkeep` the optional upkeep part); the
backend on local disk is ``hermes.storage.files.archive.LocalArchive``, chosen by
``hermes.storage.open`` through the composition root. An S3-compatible archive is planned; the
protocol docstring says what it must do.

The blob format is part of the protocol, so any backend reads any other's blobs
(:func:`encode_blob`, :func:`decode_blob`): ``b"HMA1"`` (magic + format version), one codec
byte (``z`` zlib, ``x`` lzma), then the compressed bytes. Names fan out by the first two pairs
of hex digits — ``ab/cd/abcd…`` (:func:`blob_key`) — so no directory grows past 65,536
entries per level.
"""

from __future__ import annotations

import lzma
import zlib
from typing import Literal, Protocol, runtime_checkable

from hermes.errors import ErrorCode, StoreError
from hermes.memory.hashing import hash_bytes, is_content_hash

__all__ = [
    "CODECS",
    "DEFAULT_MAX_BLOB_BYTES",
    "Archive",
    "ArchiveCorruptError",
    "ArchiveError",
    "ArchiveTooLargeError",
    "ArchiveUpkeep",
    "Codec",
    "InvalidDigestError",
    "blob_key",
    "decode_blob",
    "encode_blob",
]

#: Largest blob (uncompressed bytes) an archive accepts by default; bigger outputs are not
#: archived (the tiers note that in the call's L2 metadata).
DEFAULT_MAX_BLOB_BYTES = 8 * 1024 * 1024

Codec = Literal["zlib", "lzma"]
#: The codecs of the blob format, by name.
CODECS: tuple[Codec, ...] = ("zlib", "lzma")

_MAGIC = b"HMA1"
_CODEC_NAMES: dict[bytes, Codec] = {b"z": "zlib", b"x": "lzma"}
_CODEC_BYTES: dict[Codec, bytes] = {name: tag for tag, name in _CODEC_NAMES.items()}
_HEADER_LENGTH = len(_MAGIC) + 1


class ArchiveError(StoreError):
    """The archive could not read or write a blob (disk full, permissions, network)."""

    code: ErrorCode = "archive_error"


class ArchiveCorruptError(ArchiveError):
    """A stored blob does not decode to bytes with its own hash: never served as data.

    Causes: a torn write after a power cut, a disk error, someone editing the file. The tiers
    treat it as a miss and delete the blob, so the next ``put`` of that content rewrites it.
    """

    code: ErrorCode = "archive_corrupt"

    def __init__(self, digest: str, where: str, reason: str) -> None:
        super().__init__(
            f"the archived blob {digest} at {where} is corrupt ({reason}); it was not used",
            digest=digest,
            where=where,
            reason=reason,
        )
        self.digest = digest
        self.reason = reason


class ArchiveTooLargeError(ArchiveError):
    """A blob is larger than the archive's ``max_bytes``; it was not stored."""

    code: ErrorCode = "archive_too_large"
    status = 413

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"a blob of {size} bytes is larger than the archive limit of {limit} bytes; "
            "it was not archived",
            size=size,
            limit=limit,
        )
        self.size = size
        self.limit = limit


class InvalidDigestError(ArchiveError):
    """A blob name that is not 64 lowercase hex characters (never used as a path)."""

    code: ErrorCode = "invalid_digest"
    status = 400


@runtime_checkable
class Archive(Protocol):
    """Content-addressed blob storage: the L3 tier.

    Contract every implementation keeps (``tests/storage/conformance/test_archive.py`` checks
    it on each backend of ``tests/storage/backends.py``):

    - ``put(data)`` stores ``data`` under ``sha256(data)`` (64 lowercase hex characters) and
      returns that digest. It is idempotent — putting existing content again changes nothing —
      and atomic: a reader sees the whole blob or none, also when the writer dies mid-write.
      Data larger than the archive's limit raises :class:`ArchiveTooLargeError`.
    - ``get(digest)`` returns the original bytes, or ``None`` when there is no such blob. It
      verifies the bytes against ``digest`` (:func:`decode_blob`) and raises
      :class:`ArchiveCorruptError` rather than return anything else.
    - ``exists(digest)`` / ``delete(digest)`` (``True`` if something was deleted; deleting a
      missing blob is not an error).
    - A digest that is not 64 lowercase hex characters raises :class:`InvalidDigestError`
      before any I/O (:func:`blob_key`); other failures raise :class:`ArchiveError` with one
      clear sentence.
    - Blobs are stored in the format of :func:`encode_blob` under :func:`blob_key`, whatever
      the medium: a directory and a bucket can then be synced either way.

    An S3-compatible implementation (planned; e.g. ``aioboto3`` or ``boto3`` in a thread,
    credentials from the environment) maps this directly: object key
    ``<prefix>`` + :func:`blob_key` with the blob format of :func:`encode_blob` (the files
    backend's too); ``put`` as a conditional
    ``PutObject`` with ``If-None-Match: *`` (a 412 means it already exists: success) — an
    S3 PUT is atomic, an object is never half visible; ``get`` maps ``NoSuchKey``/404 to
    ``None`` and still verifies the hash (a wrong object must not become wrong data);
    ``delete`` is ``DeleteObject`` (idempotent). Keep the same ``max_bytes`` cap.
    """

    async def put(self, data: bytes) -> str: ...

    async def get(self, digest: str) -> bytes | None: ...

    async def exists(self, digest: str) -> bool: ...

    async def delete(self, digest: str) -> bool: ...


@runtime_checkable
class ArchiveUpkeep(Protocol):
    """What an archive offers upkeep besides the :class:`Archive` protocol (optional: the
    tool-call tiers sweep an archive that has it, ``ToolMemory.prune``).

    - ``sweep_leftovers(older_than)`` deletes what writers that died mid-write left behind
      (never served as blobs) older than ``older_than`` seconds; returns how many. A backend
      whose writes cannot leave anything (an S3 PUT) returns 0.
    - ``digests_before(cutoff)`` lists the digests of the blobs last written before
      ``cutoff`` (epoch seconds): candidates for deletion when no record names them (S3:
      ``ListObjectsV2`` and ``LastModified``).
    """

    async def sweep_leftovers(self, older_than: float = 3600.0) -> int: ...

    async def digests_before(self, cutoff: float) -> list[str]: ...


# -- the blob format ---------------------------------------------------------------------------


def blob_key(digest: str) -> str:
    """Where the blob ``digest`` lives in any archive: ``ab/cd/<digest>``. Raises
    :class:`InvalidDigestError` for a name that is not 64 lowercase hex characters (so a
    name is never a path like ``../../etc/passwd``)."""
    if not isinstance(digest, str) or not is_content_hash(digest):
        shown = repr(digest)[:80]
        raise InvalidDigestError(
            f"{shown} is not a blob digest (64 lowercase hex characters)", digest=shown
        )
    return f"{digest[:2]}/{digest[2:4]}/{digest}"


def encode_blob(data: bytes, codec: Codec = "zlib", level: int = 1) -> bytes:
    """``data`` in the blob format: the header, then ``data`` compressed with ``codec``."""
    compress = zlib.compress(data, level) if codec == "zlib" else lzma.compress(data, preset=level)
    return _MAGIC + _CODEC_BYTES[codec] + compress


def decode_blob(blob: bytes, digest: str, *, where: str, max_bytes: int) -> bytes:
    """The bytes a stored blob holds, verified against its name ``digest``: raises
    :class:`ArchiveCorruptError` (naming ``where`` it was read) for a bad header, a stream that
    does not decompress, is truncated or has trailing bytes, decompresses past ``max_bytes``
    (a crafted blob cannot exhaust memory), or holds other content than its name says."""
    if len(blob) < _HEADER_LENGTH or not blob.startswith(_MAGIC):
        raise ArchiveCorruptError(digest, where, "it does not start with the blob header")
    codec = _CODEC_NAMES.get(blob[len(_MAGIC) : _HEADER_LENGTH])
    if codec is None:
        raise ArchiveCorruptError(digest, where, "unknown codec byte")
    payload = memoryview(blob)[_HEADER_LENGTH:]
    limit = max_bytes + 1
    try:
        if codec == "zlib":
            inflater = zlib.decompressobj()
            data = inflater.decompress(payload, limit)
            complete, leftover = inflater.eof, inflater.unconsumed_tail or inflater.unused_data
        else:
            unpacker = lzma.LZMADecompressor()
            data = unpacker.decompress(payload, max_length=limit)
            complete, leftover = unpacker.eof, unpacker.unused_data
    except (zlib.error, lzma.LZMAError) as exc:
        raise ArchiveCorruptError(digest, where, f"it does not decompress: {exc}") from exc
    if len(data) > max_bytes:
        raise ArchiveCorruptError(digest, where, "it decompresses past the size limit")
    if not complete or leftover:
        raise ArchiveCorruptError(digest, where, "it is truncated or has trailing bytes")
    if hash_bytes(data) != digest:
        raise ArchiveCorruptError(digest, where, "its content does not match its hash")
    return data
