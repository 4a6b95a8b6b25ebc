"""L3: content-addressed, compressed blobs (seed 000 §2.4).

A blob is the canonical JSON bytes of a tool output (``hermes.memory.hashing``), stored under
its sha256 — the ``output_hash`` of the L2 index — so identical outputs are stored once and a
blob can always be checked against its name. The tiers read L3 only when L1 and L2 cannot
answer: the index says *which* output, the archive holds *what* it was.

:class:`Archive` is the protocol; :class:`LocalArchive` keeps blobs on local disk. An
S3-compatible archive is planned; the protocol docstring says what it must do.

On-disk (and in-bucket) format of one blob: ``b"HMA1"`` (magic + format version), one codec
byte (``z`` zlib, ``x`` lzma), then the compressed bytes. Paths fan out by the first two pairs
of hex digits — ``<root>/ab/cd/abcd…`` — so no directory grows past 65,536 entries per level.
"""

from __future__ import annotations

import asyncio
import lzma
import os
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from hermes.errors import ErrorCode, StoreError
from hermes.memory.hashing import hash_bytes, is_content_hash

__all__ = [
    "DEFAULT_MAX_BLOB_BYTES",
    "Archive",
    "ArchiveCorruptError",
    "ArchiveError",
    "ArchiveTooLargeError",
    "InvalidDigestError",
    "LocalArchive",
]

#: Largest blob (uncompressed bytes) an archive accepts by default; bigger outputs are not
#: archived (the tiers note that in the call's L2 metadata).
DEFAULT_MAX_BLOB_BYTES = 8 * 1024 * 1024

_MAGIC = b"HMA1"
_CODECS: dict[bytes, str] = {b"z": "zlib", b"x": "lzma"}
_CODEC_BYTES = {name: tag for tag, name in _CODECS.items()}
_HEADER_LENGTH = len(_MAGIC) + 1
_TEMP_SUFFIX = ".tmp"

Codec = Literal["zlib", "lzma"]
Durability = Literal["os", "fsync"]


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

    Contract every implementation keeps (``tests/memory/test_archive.py`` checks it):

    - ``put(data)`` stores ``data`` under ``sha256(data)`` (64 lowercase hex characters) and
      returns that digest. It is idempotent — putting existing content again changes nothing —
      and atomic: a reader sees the whole blob or none, also when the writer dies mid-write.
      Data larger than the archive's limit raises :class:`ArchiveTooLargeError`.
    - ``get(digest)`` returns the original bytes, or ``None`` when there is no such blob. It
      verifies the bytes against ``digest`` and raises :class:`ArchiveCorruptError` rather than
      return anything else.
    - ``exists(digest)`` / ``delete(digest)`` (``True`` if something was deleted; deleting a
      missing blob is not an error).
    - A digest that is not 64 lowercase hex characters raises :class:`InvalidDigestError`
      before any I/O; other failures raise :class:`ArchiveError` with one clear sentence.

    An S3-compatible implementation (planned; e.g. ``aioboto3`` or ``boto3`` in a thread,
    credentials from the environment) maps this directly: object key
    ``<prefix>ab/cd/<digest>`` with the same blob format as :class:`LocalArchive` (so a
    directory and a bucket can be synced either way); ``put`` as a conditional
    ``PutObject`` with ``If-None-Match: *`` (a 412 means it already exists: success) — an
    S3 PUT is atomic, an object is never half visible; ``get`` maps ``NoSuchKey``/404 to
    ``None`` and still verifies the hash (a wrong object must not become wrong data);
    ``delete`` is ``DeleteObject`` (idempotent). Keep the same ``max_bytes`` cap.
    """

    async def put(self, data: bytes) -> str: ...

    async def get(self, digest: str) -> bytes | None: ...

    async def exists(self, digest: str) -> bool: ...

    async def delete(self, digest: str) -> bool: ...


class LocalArchive:
    """Blobs as files under ``root`` (created on first write).

    ``codec``/``level``: zlib level 1 by default — on 100 KB of JSON it compresses ~4× in
    ~1 ms where level 6 takes ~2.7 ms for ~13% less space, and lzma ~12 ms. ``max_bytes`` caps
    a blob's uncompressed size (also on read: a blob that would decompress to more is corrupt,
    so a crafted file cannot exhaust memory). ``durability="fsync"`` flushes each new blob and
    its directory to the disk before ``put`` returns (survives a power cut; costs a few ms);
    the default ``"os"`` leaves that to the OS — a process crash never tears a blob (temp file
    + ``os.replace``), and a blob torn by a power cut fails verification on read.

    The async methods run on the caller's thread for blobs under ``inline_limit`` bytes (a
    small file write costs less than a hop to a thread) and in a thread above it.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        codec: Codec = "zlib",
        level: int | None = None,
        max_bytes: int = DEFAULT_MAX_BLOB_BYTES,
        durability: Durability = "os",
        inline_limit: int = 64 * 1024,
    ) -> None:
        if codec not in _CODEC_BYTES:
            raise ValueError(f"unknown archive codec {codec!r}; expected 'zlib' or 'lzma'")
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, got {max_bytes}")
        if level is not None and not 0 <= level <= 9:
            raise ValueError(f"compression level must be 0-9, got {level}")
        self.root = Path(root)
        self.codec: Codec = codec
        self.level = 1 if level is None else level
        self.max_bytes = max_bytes
        self.durability: Durability = durability
        self.inline_limit = inline_limit

    def __repr__(self) -> str:
        return f"LocalArchive({str(self.root)!r})"

    # -- Archive protocol ------------------------------------------------------------------
    async def put(self, data: bytes) -> str:
        if len(data) <= self.inline_limit:
            return self.put_sync(data)
        return await asyncio.to_thread(self.put_sync, data)

    async def get(self, digest: str) -> bytes | None:
        path = self.path_of(digest)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._os_error("read", path, exc) from exc
        if size <= self.inline_limit:
            return self.get_sync(digest)
        return await asyncio.to_thread(self.get_sync, digest)

    async def exists(self, digest: str) -> bool:
        return self.exists_sync(digest)

    async def delete(self, digest: str) -> bool:
        return self.delete_sync(digest)

    # -- blocking implementations ------------------------------------------------------------
    def path_of(self, digest: str) -> Path:
        """Where the blob ``digest`` lives (``<root>/ab/cd/<digest>``)."""
        if not is_content_hash(digest):
            shown = repr(digest)[:80]
            raise InvalidDigestError(
                f"{shown} is not a blob digest (64 lowercase hex characters)", digest=shown
            )
        return self.root / digest[:2] / digest[2:4] / digest

    def put_sync(self, data: bytes) -> str:
        """Blocking :meth:`put`."""
        if len(data) > self.max_bytes:
            raise ArchiveTooLargeError(len(data), self.max_bytes)
        digest = hash_bytes(data)
        path = self.path_of(digest)
        if path.exists():
            return digest  # content-addressed: the same name means the same bytes
        blob = self._encode(data)
        try:
            self._write_atomically(path, blob)
        except OSError as exc:
            raise self._os_error("write", path, exc) from exc
        return digest

    def get_sync(self, digest: str) -> bytes | None:
        """Blocking :meth:`get`."""
        path = self.path_of(digest)
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._os_error("read", path, exc) from exc
        data = self._decode(blob, digest, path)
        if hash_bytes(data) != digest:
            raise ArchiveCorruptError(digest, str(path), "its content does not match its hash")
        return data

    def exists_sync(self, digest: str) -> bool:
        return self.path_of(digest).exists()

    def delete_sync(self, digest: str) -> bool:
        path = self.path_of(digest)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise self._os_error("delete", path, exc) from exc
        return True

    def digests(self) -> Iterator[str]:
        """The digests of all stored blobs (for upkeep: finding blobs no record uses)."""
        for first in _subdirs(self.root):
            for second in _subdirs(first):
                with os.scandir(second) as entries:
                    for entry in entries:
                        if is_content_hash(entry.name) and entry.is_file():
                            yield entry.name

    def sweep_temp(self, older_than: float = 3600.0) -> int:
        """Delete temp files older than ``older_than`` seconds, left by writers that died
        mid-write (they are never served: only ``os.replace`` gives a blob its name).
        Returns how many were deleted."""
        cutoff = time.time() - older_than
        removed = 0
        for first in _subdirs(self.root):
            for second in _subdirs(first):
                with os.scandir(second) as entries:
                    for entry in entries:
                        if not _is_temp_name(entry.name):
                            continue
                        try:
                            if entry.stat().st_mtime < cutoff:
                                os.unlink(entry.path)
                                removed += 1
                        except FileNotFoundError:
                            continue  # another sweeper or the writer itself got there first
        return removed

    # -- internals ---------------------------------------------------------------------------
    def _encode(self, data: bytes) -> bytes:
        if self.codec == "zlib":
            payload = zlib.compress(data, self.level)
        else:
            payload = lzma.compress(data, preset=self.level)
        return _MAGIC + _CODEC_BYTES[self.codec] + payload

    def _decode(self, blob: bytes, digest: str, path: Path) -> bytes:
        where = str(path)
        if len(blob) < _HEADER_LENGTH or not blob.startswith(_MAGIC):
            raise ArchiveCorruptError(digest, where, "it does not start with the blob header")
        codec = _CODECS.get(blob[len(_MAGIC) : _HEADER_LENGTH])
        if codec is None:
            raise ArchiveCorruptError(digest, where, "unknown codec byte")
        payload = memoryview(blob)[_HEADER_LENGTH:]
        limit = self.max_bytes + 1
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
        if len(data) > self.max_bytes:
            raise ArchiveCorruptError(digest, where, "it decompresses past the size limit")
        if not complete or leftover:
            raise ArchiveCorruptError(digest, where, "it is truncated or has trailing bytes")
        return data

    def _write_atomically(self, path: Path, blob: bytes) -> None:
        """Write to a private temp file in the blob's directory, then rename it into place."""
        directory = path.parent
        try:
            fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=_TEMP_SUFFIX)
        except FileNotFoundError:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=_TEMP_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(blob)
                if self.durability == "fsync":
                    out.flush()
                    os.fsync(out.fileno())
            os.replace(temp, path)
        except BaseException:  # clean up, then re-raise unchanged
            _remove_quietly(temp)
            raise
        if self.durability == "fsync":
            _fsync_directory(directory)

    def _os_error(self, action: str, path: Path, exc: OSError) -> ArchiveError:
        reason = exc.strerror or str(exc)
        return ArchiveError(
            f"cannot {action} the archived blob {path}: {reason}", path=str(path), action=action
        )


def _subdirs(directory: Path) -> Iterator[Path]:
    try:
        with os.scandir(directory) as entries:
            found = [Path(e.path) for e in entries if len(e.name) == 2 and e.is_dir()]
    except FileNotFoundError:
        return
    yield from found


def _is_temp_name(name: str) -> bool:
    return name.startswith(".") and name.endswith(_TEMP_SUFFIX)


def _remove_quietly(path: str) -> None:
    """Remove a temp file after a failed write, without hiding that failure."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:  # a leftover temp file is harmless: it is never served
        from hermes.observe import get_logger

        get_logger("memory").warning("archive_temp_left", path=path, error=str(exc))


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
