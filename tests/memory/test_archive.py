"""L3: content-addressed compressed blobs on local disk (seed 000 §2.4)."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from hermes.memory.archive import (
    Archive,
    ArchiveCorruptError,
    ArchiveError,
    ArchiveTooLargeError,
    InvalidDigestError,
    LocalArchive,
)
from hermes.memory.hashing import canonical_bytes, content_hash

DATA = canonical_bytes(
    {"city": "上海", "forecast": [{"day": i, "temp": 20 + i} for i in range(50)]}
)


@pytest.fixture
def archive(tmp_path: Path) -> LocalArchive:
    return LocalArchive(tmp_path / "archive")


def blob_path(archive: LocalArchive, data: bytes) -> Path:
    return archive.path_of(hashlib.sha256(data).hexdigest())


def test_the_local_archive_implements_the_protocol(archive: LocalArchive) -> None:
    assert isinstance(archive, Archive)


async def test_a_blob_comes_back_byte_for_byte_under_its_sha256(archive: LocalArchive) -> None:
    digest = await archive.put(DATA)
    assert digest == hashlib.sha256(DATA).hexdigest()
    assert digest == content_hash(
        {"city": "上海", "forecast": [{"day": i, "temp": 20 + i} for i in range(50)]}
    )
    assert await archive.get(digest) == DATA
    assert await archive.exists(digest)


async def test_blobs_fan_out_by_the_first_two_hex_pairs_and_are_compressed(
    archive: LocalArchive,
) -> None:
    digest = await archive.put(DATA)
    path = archive.root / digest[:2] / digest[2:4] / digest
    assert path.is_file()
    assert path.stat().st_size < len(DATA)
    assert path.read_bytes().startswith(b"HMA1z")


async def test_blob_files_are_private_to_their_owner(archive: LocalArchive) -> None:
    digest = await archive.put(DATA)
    assert stat.S_IMODE(archive.path_of(digest).stat().st_mode) == 0o600


async def test_putting_the_same_content_again_changes_nothing(archive: LocalArchive) -> None:
    digest = await archive.put(DATA)
    before = archive.path_of(digest).stat()
    assert await archive.put(DATA) == digest
    after = archive.path_of(digest).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert list(archive.digests()) == [digest]


async def test_a_missing_blob_is_none_and_deleting_it_is_not_an_error(
    archive: LocalArchive,
) -> None:
    digest = "ab" * 32
    assert await archive.get(digest) is None
    assert not await archive.exists(digest)
    assert await archive.delete(digest) is False


async def test_delete_removes_a_blob(archive: LocalArchive) -> None:
    digest = await archive.put(DATA)
    assert await archive.delete(digest) is True
    assert await archive.get(digest) is None


async def test_a_flipped_byte_is_a_corruption_error_not_wrong_data(archive: LocalArchive) -> None:
    digest = await archive.put(DATA)
    path = archive.path_of(digest)
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(ArchiveCorruptError) as caught:
        await archive.get(digest)
    assert caught.value.digest == digest
    assert caught.value.code == "archive_corrupt"


async def test_a_truncated_blob_is_a_corruption_error(archive: LocalArchive) -> None:
    digest = await archive.put(DATA)
    path = archive.path_of(digest)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ArchiveCorruptError, match=r"truncated|decompress"):
        await archive.get(digest)


async def test_valid_blob_of_other_content_under_a_name_fails_the_hash_check(
    archive: LocalArchive,
) -> None:
    digest = await archive.put(DATA)
    archive.path_of(digest).write_bytes(b"HMA1z" + zlib.compress(b'{"other":"content"}'))
    with pytest.raises(ArchiveCorruptError, match="does not match its hash"):
        await archive.get(digest)


@pytest.mark.parametrize("content", [b"", b"HMA", b"garbage-without-header", b"HMA1?abc"])
async def test_a_file_without_a_valid_header_is_corrupt(
    archive: LocalArchive, content: bytes
) -> None:
    digest = await archive.put(DATA)
    archive.path_of(digest).write_bytes(content)
    with pytest.raises(ArchiveCorruptError):
        await archive.get(digest)


async def test_trailing_bytes_after_the_compressed_stream_are_corrupt(
    archive: LocalArchive,
) -> None:
    digest = await archive.put(DATA)
    path = archive.path_of(digest)
    path.write_bytes(path.read_bytes() + b"extra")
    with pytest.raises(ArchiveCorruptError, match="trailing"):
        await archive.get(digest)


async def test_a_blob_that_would_decompress_past_the_limit_is_refused(tmp_path: Path) -> None:
    archive = LocalArchive(tmp_path / "a", max_bytes=1000)
    digest = await archive.put(b"x" * 1000)
    bomb = b"y" * 1_000_000  # ~1 KB compressed, 1 MB expanded
    archive.path_of(digest).write_bytes(b"HMA1z" + zlib.compress(bomb, 9))
    with pytest.raises(ArchiveCorruptError, match="size limit"):
        await archive.get(digest)


async def test_data_over_the_size_limit_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    archive = LocalArchive(tmp_path / "a", max_bytes=100)
    with pytest.raises(ArchiveTooLargeError) as caught:
        await archive.put(b"x" * 101)
    assert (caught.value.size, caught.value.limit) == (101, 100)
    assert not (tmp_path / "a").exists()
    assert await archive.put(b"x" * 100)  # the limit itself is fine


@pytest.mark.parametrize(
    "digest", ["../../etc/passwd", "AB" * 32, "ab" * 31, "", "ab" * 31 + "/x", "zz" * 32]
)
async def test_a_digest_that_is_not_64_lowercase_hex_is_refused_before_any_io(
    archive: LocalArchive, digest: str
) -> None:
    for operation in (archive.get, archive.exists, archive.delete):
        with pytest.raises(InvalidDigestError):
            await operation(digest)
    assert not archive.root.exists()


def test_a_writer_killed_mid_write_leaves_nothing_that_is_served(archive: LocalArchive) -> None:
    # The child writes its temp file, then blocks where it would rename it into place; we
    # kill it there — the moment a crash could leave a half-written blob.
    child = textwrap.dedent(
        """
        import os, sys, time
        from hermes.memory.archive import LocalArchive

        def stuck(src, dst):
            print("temp written", flush=True)
            time.sleep(120)

        os.replace = stuck
        LocalArchive(sys.argv[1]).put_sync(sys.stdin.buffer.read())
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", child, str(archive.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(DATA)
        process.stdin.close()
        assert process.stdout.readline() == b"temp written\n"
    finally:
        process.kill()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()
    digest = hashlib.sha256(DATA).hexdigest()
    leftovers = [p for p in archive.path_of(digest).parent.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1
    assert archive.get_sync(digest) is None
    assert not archive.exists_sync(digest)
    assert list(archive.digests()) == []
    # The next put writes the blob; upkeep removes the dead writer's temp file.
    assert archive.put_sync(DATA) == digest
    assert archive.get_sync(digest) == DATA
    assert archive.sweep_temp(older_than=3600) == 0  # still young: a live writer's, maybe
    assert archive.sweep_temp(older_than=0) == 1
    assert not leftovers[0].exists()


async def test_large_blobs_round_trip_through_the_worker_thread(tmp_path: Path) -> None:
    archive = LocalArchive(tmp_path / "a", inline_limit=1024)
    data = os.urandom(300_000)  # incompressible: the compressed file is over the limit too
    digest = await archive.put(data)
    assert await archive.get(digest) == data


async def test_lzma_blobs_are_readable_by_any_archive_on_the_same_root(tmp_path: Path) -> None:
    writer = LocalArchive(tmp_path / "a", codec="lzma")
    digest = await writer.put(DATA)
    assert writer.path_of(digest).read_bytes().startswith(b"HMA1x")
    assert await LocalArchive(tmp_path / "a").get(digest) == DATA


async def test_fsync_durability_writes_the_same_blob(tmp_path: Path) -> None:
    archive = LocalArchive(tmp_path / "a", durability="fsync")
    digest = await archive.put(DATA)
    assert await archive.get(digest) == DATA


async def test_an_unusable_root_is_a_clear_archive_error(tmp_path: Path) -> None:
    root = tmp_path / "not-a-directory"
    root.write_text("a file where the archive should be")
    archive = LocalArchive(root)
    with pytest.raises(ArchiveError, match="cannot write the archived blob"):
        await archive.put(DATA)


@pytest.mark.parametrize(
    "options",
    [{"codec": "gzip"}, {"max_bytes": 0}, {"level": 10}, {"level": -1}],
)
def test_bad_options_are_refused(tmp_path: Path, options: dict[str, object]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each option has its own message
        LocalArchive(tmp_path, **options)  # type: ignore[arg-type]
