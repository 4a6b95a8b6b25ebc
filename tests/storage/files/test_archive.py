"""The files backend of the L3 archive (``hermes.storage.files.archive.LocalArchive``): what
it does beyond the ``Archive`` contract (``tests/storage/conformance/test_archive.py``) — its
paths and file modes, a writer killed mid-write, temp-file sweeping, codecs, durability, the
worker thread for large blobs, options."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hermes.memory.archive import (
    ArchiveError,
    ArchiveTooLargeError,
    ArchiveUpkeep,
    InvalidDigestError,
)
from hermes.memory.hashing import canonical_bytes
from hermes.storage.files.archive import LocalArchive

DATA = canonical_bytes(
    {"city": "上海", "forecast": [{"day": i, "temp": 20 + i} for i in range(50)]}
)


@pytest.fixture
def archive(tmp_path: Path) -> LocalArchive:
    return LocalArchive(tmp_path / "archive")


def test_the_local_archive_offers_upkeep(archive: LocalArchive) -> None:
    assert isinstance(archive, ArchiveUpkeep)
    assert repr(archive) == f"LocalArchive({str(archive.root)!r})"


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


async def test_data_over_the_size_limit_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    archive = LocalArchive(tmp_path / "a", max_bytes=100)
    with pytest.raises(ArchiveTooLargeError) as caught:
        await archive.put(b"x" * 101)
    assert (caught.value.size, caught.value.limit) == (101, 100)
    assert not (tmp_path / "a").exists()
    assert await archive.put(b"x" * 100)  # the limit itself is fine


def test_a_writer_killed_mid_write_leaves_nothing_that_is_served(archive: LocalArchive) -> None:
    # The child writes its temp file, then blocks where it would rename it into place; we
    # kill it there — the moment a crash could leave a half-written blob.
    child = textwrap.dedent(
        """
        import os, sys, time
        from hermes.storage.files.archive import LocalArchive

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


async def test_a_bad_name_touches_nothing_on_disk(archive: LocalArchive) -> None:
    for operation in (archive.get, archive.exists, archive.delete):
        with pytest.raises(InvalidDigestError):
            await operation("../../etc/passwd")
    assert not archive.root.exists()


async def test_upkeep_finds_old_blobs_and_sweeps_dead_writers_temp_files(
    archive: LocalArchive,
) -> None:
    digest = await archive.put(DATA)
    old = time.time() - 7200
    os.utime(archive.path_of(digest), (old, old))
    temp = archive.path_of(digest).parent / f".{digest}.abc.tmp"
    temp.write_bytes(b"half a blob")
    os.utime(temp, (old, old))
    assert await archive.digests_before(time.time() - 3600) == [digest]
    assert await archive.sweep_leftovers(older_than=3600) == 1
    assert not temp.exists()
    assert await archive.get(digest) == DATA
