"""Session claims as OS file locks beside a SQLite database: the ``SessionLocks`` of a SQLite
file (``hermes.session.locks`` defines the protocol and the in-process locks; DESIGN.md,
"Scale-out": "an OS file lock beside a SQLite store").

The kernel drops the lock the moment its process dies (``kill -9`` included), so a claim never
outlives its owner: a session found in a working state under a fresh claim was left by a dead
turn and is repaired at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import struct
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from hermes.session.locks import ClaimTokens, LocalQueue, SessionClaim, busy_error

#: Seconds between two tries of a file lock another process holds (first try, then doubling).
_POLL_FIRST_S = 0.005
_POLL_MAX_S = 0.05
#: Bytes of the token written in a lock file (decimal, padded: always the same length).
_TOKEN_WIDTH = 20


#: Linux's open-file-description record locks (``F_OFD_SETLK``, Linux >= 3.15): byte-range locks
#: that belong to the open file, like ``flock``, not to the process, like POSIX ``fcntl`` locks.
_OFD_SETLK: int | None = getattr(fcntl, "F_OFD_SETLK", None) if sys.platform == "linux" else None
#: ``struct flock`` (short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid) in
#: the platform's native layout, padded: the kernel reads its own size of it.
_FLOCK = struct.Struct("@hhqqi")
_FLOCK_PAD = b"\0" * 8


class FileSessionLocks:
    """Claims as OS file locks beside a SQLite database ``db_path``.

    On Linux: one byte of ``<db>.lock`` per session (its offset a 62-bit hash of the id), locked
    with ``F_OFD_SETLK``. Elsewhere (or ``ranges=False``): ``flock`` on one file per session,
    ``<db>.locks/<session_id>.lock``. Both kinds belong to the *open file*, so two ``Agent``s of
    one process exclude each other as two processes do (POSIX ``fcntl`` record locks belong to
    the process, and a process silently loses them all when it closes any descriptor of the
    file: not used). Both die with their process, ``kill -9`` included. Why byte ranges where
    they exist: a session's first turn would otherwise create a file (~0.1–0.25 ms on ext4, more
    than the rest of the claim), and a directory of one file per session ever seen grows
    without bound. Two session ids hashing onto one byte would wait for each other (about one
    chance in 10^18 per pair; nothing ever runs unlocked).

    Inside one process a claim first takes the session's asyncio lock (waiters in order, and no
    event-loop time spent polling a lock the same process holds), then the OS lock, tried
    without blocking (never a thread stuck in the kernel after the wait ended) every 5–50 ms.
    Tokens: wall-clock nanoseconds, rising within the process; with per-session files also above
    the last token written in the file. (With byte ranges, two processes' turns are ordered by
    the clock: a clock stepped back between two turns in different processes makes the later
    one refused as busy, never interleaved, until the clock has caught up.)
    """

    cross_process = True

    def __init__(self, db_path: str | os.PathLike[str], *, ranges: bool | None = None) -> None:
        base = os.fspath(db_path)
        self.ranges = _OFD_SETLK is not None if ranges is None else ranges
        if self.ranges and _OFD_SETLK is None:
            raise ValueError("byte-range session locks need Linux (F_OFD_SETLK)")
        #: The lock file (byte ranges) or the directory of per-session lock files.
        self.path = Path(base + (".lock" if self.ranges else ".locks"))
        self._queue = LocalQueue()
        self._fd: int | None = None  # the one descriptor of the byte-range lock file

    @contextlib.asynccontextmanager
    async def claim(self, session_id: str, *, wait: float) -> AsyncIterator[SessionClaim]:
        started = time.monotonic()
        async with self._queue.hold(session_id, wait):
            deadline = started + wait if wait > 0 else started
            if self.ranges:
                offset = _offset(session_id)
                fd = self._range_file()
                await _poll(lambda: _lock_range(fd, offset), session_id, deadline, wait)
                try:
                    yield SessionClaim(session_id, _TOKENS.next(), True)
                finally:
                    _unlock_range(fd, offset)
            else:
                fd = self._session_file(session_id)
                try:
                    await _poll(lambda: _flock(fd), session_id, deadline, wait)
                    token = _TOKENS.next(_read_token(fd) + 1)
                    os.pwrite(fd, str(token).rjust(_TOKEN_WIDTH).encode("ascii"), 0)
                    yield SessionClaim(session_id, token, True)
                finally:
                    os.close(fd)  # releases the flock (as does the process's death)

    def _range_file(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_CLOEXEC: a program a tool runs must not inherit (and so keep) the locks.
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        return self._fd

    def _session_file(self, session_id: str) -> int:
        path = self.path / f"{session_id}.lock"
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except FileNotFoundError:
            # First claim: the directory may not exist yet (it sits beside the database).
            self.path.mkdir(parents=True, exist_ok=True)
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)

    def busy(self, session_id: str) -> bool:
        return self._queue.busy(session_id)

    def close(self) -> None:
        """Close the lock file (no claim may be held: closing it would release them)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __len__(self) -> int:
        return len(self._queue)


#: One token source per process, shared by every lock object (two Agents on one file too).
_TOKENS = ClaimTokens()


def _offset(session_id: str) -> int:
    """The byte of the range lock file that stands for ``session_id`` (below 2**62)."""
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 2


def _lock_range(fd: int, offset: int) -> bool:
    """Try to lock one byte for writing; False if another open file holds it."""
    assert _OFD_SETLK is not None
    try:
        fcntl.fcntl(
            fd, _OFD_SETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0) + _FLOCK_PAD
        )
    except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: held elsewhere
        return False
    return True


def _unlock_range(fd: int, offset: int) -> None:
    assert _OFD_SETLK is not None
    fcntl.fcntl(fd, _OFD_SETLK, _FLOCK.pack(fcntl.F_UNLCK, os.SEEK_SET, offset, 1, 0) + _FLOCK_PAD)


def _flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


async def _poll(attempt: Callable[[], bool], session_id: str, deadline: float, wait: float) -> None:
    """Try ``attempt`` until it succeeds; ``SessionBusyError`` once ``deadline`` has passed."""
    pause = _POLL_FIRST_S
    while not attempt():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise busy_error(session_id, wait, elsewhere=True)
        await asyncio.sleep(min(pause, remaining))
        pause = min(pause * 2, _POLL_MAX_S)


def _read_token(fd: int) -> int:
    """The last token written in a lock file (0 for a new one, or one holding no number)."""
    text = os.pread(fd, _TOKEN_WIDTH + 1, 0).decode("ascii", errors="replace").strip()
    return int(text) if text.isdigit() else 0
