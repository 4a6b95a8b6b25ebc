"""The Archive contract (``hermes.memory.archive.Archive``, the L3 tier of seed 000 §2.4):
content-addressed blobs — put and get back under the sha256, stored once, a missing blob is
``None``, a damaged one a corruption error and never wrong data, names checked before any I/O,
the size cap, deletion — and the optional upkeep part (``ArchiveUpkeep``). Every backend
(``tests.storage.backends.ARCHIVE_BACKENDS``) must pass every test here; what only the files
backend does (its paths, modes, codecs, a writer killed mid-write) is in
``tests/storage/files/test_archive.py``."""

from __future__ import annotations

import hashlib
import time
import zlib

import pytest

from hermes.memory.archive import (
    Archive,
    ArchiveCorruptError,
    ArchiveTooLargeError,
    ArchiveUpkeep,
    InvalidDigestError,
    encode_blob,
)
from hermes.memory.hashing import canonical_bytes, content_hash
from tests.storage.backends import ArchiveBackend

OUTPUT = {"city": "上海", "forecast": [{"day": i, "temp": 20 + i} for i in range(50)]}
DATA = canonical_bytes(OUTPUT)


def test_the_backend_is_an_archive(archive: Archive) -> None:
    assert isinstance(archive, Archive)


async def test_a_blob_comes_back_byte_for_byte_under_its_sha256(archive: Archive) -> None:
    digest = await archive.put(DATA)
    assert digest == hashlib.sha256(DATA).hexdigest()
    assert digest == content_hash(OUTPUT)  # the L2 output_hash of that output
    assert await archive.get(digest) == DATA
    assert await archive.exists(digest)


async def test_the_same_content_is_stored_once(
    archive: Archive, archive_backend: ArchiveBackend
) -> None:
    digest = await archive.put(DATA)
    stored = archive_backend.read_raw(digest)
    assert await archive.put(DATA) == digest
    assert archive_backend.read_raw(digest) == stored
    if isinstance(archive, ArchiveUpkeep):
        assert await archive.digests_before(time.time() + 60) == [digest]


async def test_blobs_are_stored_in_the_shared_format(
    archive: Archive, archive_backend: ArchiveBackend
) -> None:
    digest = await archive.put(DATA)
    stored = archive_backend.read_raw(digest)
    assert stored is not None
    assert stored.startswith(b"HMA1")
    assert len(stored) < len(DATA)  # compressed
    # Another backend's blob (here: lzma, level 9) reads on this one.
    other = canonical_bytes({"other": "output"})
    archive_backend.write_raw(content_hash({"other": "output"}), encode_blob(other, "lzma", 9))
    assert await archive.get(content_hash({"other": "output"})) == other


async def test_empty_content_is_a_blob_too(archive: Archive) -> None:
    digest = await archive.put(b"")
    assert await archive.get(digest) == b""


async def test_another_archive_on_the_same_storage_sees_the_blob(
    archive: Archive, archive_backend: ArchiveBackend
) -> None:
    digest = await archive.put(DATA)
    assert await archive_backend.open().get(digest) == DATA


async def test_a_missing_blob_is_none_and_deleting_it_is_not_an_error(archive: Archive) -> None:
    digest = "ab" * 32
    assert await archive.get(digest) is None
    assert not await archive.exists(digest)
    assert await archive.delete(digest) is False


async def test_delete_removes_a_blob(archive: Archive) -> None:
    digest = await archive.put(DATA)
    assert await archive.delete(digest) is True
    assert await archive.get(digest) is None
    assert not await archive.exists(digest)
    assert await archive.put(DATA) == digest  # and it can be written again
    assert await archive.get(digest) == DATA


# -- damage ------------------------------------------------------------------------------------


async def test_a_flipped_byte_is_a_corruption_error_not_wrong_data(
    archive: Archive, archive_backend: ArchiveBackend
) -> None:
    digest = await archive.put(DATA)
    blob = bytearray(archive_backend.read_raw(digest) or b"")
    blob[len(blob) // 2] ^= 0xFF
    archive_backend.write_raw(digest, bytes(blob))
    with pytest.raises(ArchiveCorruptError) as caught:
        await archive.get(digest)
    assert caught.value.digest == digest
    assert caught.value.code == "archive_corrupt"


async def test_a_truncated_blob_is_a_corruption_error(
    archive: Archive, archive_backend: ArchiveBackend
) -> None:
    digest = await archive.put(DATA)
    archive_backend.write_raw(digest, (archive_backend.read_raw(digest) or b"")[:-10])
    with pytest.raises(ArchiveCorruptError, match=r"truncated|decompress"):
        await archive.get(digest)


async def test_a_valid_blob_of_other_content_under_a_name_fails_the_hash_check(
    archive: Archive, archive_backend: ArchiveBackend
) -> None:
    digest = await archive.put(DATA)
    archive_backend.write_raw(digest, b"HMA1z" + zlib.compress(b'{"other":"content"}'))
    with pytest.raises(ArchiveCorruptError, match="does not match its hash"):
        await archive.get(digest)


@pytest.mark.parametrize("content", [b"", b"HMA", b"garbage-without-header", b"HMA1?abc"])
async def test_an_object_without_a_valid_header_is_corrupt(
    archive: Archive, archive_backend: ArchiveBackend, content: bytes
) -> None:
    digest = await archive.put(DATA)
    archive_backend.write_raw(digest, content)
    with pytest.raises(ArchiveCorruptError):
        await archive.get(digest)


async def test_trailing_bytes_after_the_compressed_stream_are_corrupt(
    archive: Archive, archive_backend: ArchiveBackend
) -> None:
    digest = await archive.put(DATA)
    archive_backend.write_raw(digest, (archive_backend.read_raw(digest) or b"") + b"extra")
    with pytest.raises(ArchiveCorruptError, match="trailing"):
        await archive.get(digest)


async def test_a_blob_that_would_decompress_past_the_limit_is_refused(
    archive_backend: ArchiveBackend,
) -> None:
    archive = archive_backend.open(max_bytes=1000)
    digest = await archive.put(b"x" * 1000)
    bomb = b"y" * 1_000_000  # ~1 KB compressed, 1 MB expanded
    archive_backend.write_raw(digest, b"HMA1z" + zlib.compress(bomb, 9))
    with pytest.raises(ArchiveCorruptError, match="size limit"):
        await archive.get(digest)


# -- what is refused ---------------------------------------------------------------------------


async def test_data_over_the_size_limit_is_refused_and_nothing_is_written(
    archive_backend: ArchiveBackend,
) -> None:
    archive = archive_backend.open(max_bytes=100)
    with pytest.raises(ArchiveTooLargeError) as caught:
        await archive.put(b"x" * 101)
    assert (caught.value.size, caught.value.limit) == (101, 100)
    assert not await archive.exists(hashlib.sha256(b"x" * 101).hexdigest())
    assert await archive.put(b"x" * 100)  # the limit itself is fine


@pytest.mark.parametrize(
    "digest", ["../../etc/passwd", "AB" * 32, "ab" * 31, "", "ab" * 31 + "/x", "zz" * 32]
)
async def test_a_digest_that_is_not_64_lowercase_hex_is_refused(
    archive: Archive, digest: str
) -> None:
    for operation in (archive.get, archive.exists, archive.delete):
        with pytest.raises(InvalidDigestError):
            await operation(digest)


# -- upkeep (ArchiveUpkeep, when the backend has it) -------------------------------------------


async def test_upkeep_lists_the_blobs_written_before_a_time(archive: Archive) -> None:
    if not isinstance(archive, ArchiveUpkeep):
        pytest.skip("this archive offers no upkeep")
    before = time.time() - 60
    digest = await archive.put(DATA)
    assert await archive.digests_before(before) == []
    assert await archive.digests_before(time.time() + 60) == [digest]
    await archive.delete(digest)
    assert await archive.digests_before(time.time() + 60) == []


async def test_upkeep_with_nothing_left_behind_sweeps_nothing(archive: Archive) -> None:
    if not isinstance(archive, ArchiveUpkeep):
        pytest.skip("this archive offers no upkeep")
    await archive.put(DATA)
    assert await archive.sweep_leftovers(older_than=0) == 0
    assert await archive.get(content_hash(OUTPUT)) == DATA
