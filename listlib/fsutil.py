"""Durable file-system primitives: the qmail way of writing files.

Write to a temporary file, flush, fsync, rename into place, fsync the folder.
For batches, ``sync_files`` uses one ``syncfs(2)`` for the whole file system
(a group commit) where Linux offers it, and falls back to fsync per file.
Nothing here knows about mail.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import LockTimeoutError

__all__ = [
    "acquire_lock",
    "fsync_dir",
    "fsync_file",
    "make_dirs",
    "named",
    "naming",
    "read_file",
    "release_lock",
    "same_file_system",
    "sync_files",
    "write_all",
    "write_file",
]

_GROUP_SYNC_THRESHOLD = 8


def _load_syncfs() -> object | None:
    try:
        # The process's own symbols include the C library's: no library search (find_library
        # runs a subprocess on some systems) on every command's start.
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syncfs
    except (OSError, AttributeError):
        return None


_SYNCFS = _load_syncfs()


def named(exc: OSError, path: Path | str) -> OSError:
    """``exc``, or when it names no file (a full disk fails a ``write``, an ``fsync``, a
    ``close``) the same error naming ``path``, so the user learns where."""
    if exc.filename is None and exc.errno is not None:
        return OSError(exc.errno, exc.strerror, str(path))
    return exc


@contextmanager
def naming(path: Path | str) -> Iterator[None]:
    """Raise every ``OSError`` of the block through ``named`` (``path``: what it writes)."""
    try:
        yield
    except OSError as exc:
        error = named(exc, path)
        if error is exc:
            raise
        raise error from exc


def write_file(path: Path | str, data: bytes, *, sync: bool) -> None:
    """Create ``path`` (which must not exist) with ``data``; fsync it when ``sync``."""
    with naming(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            write_all(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to an open file descriptor."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_file(path: Path | str) -> bytes:
    """A whole file's bytes. For the many small files a build reads (messages), this is
    a quarter of the cost of ``Path.read_bytes`` (no buffered reader, no path object)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make a folder's entries (new names, renames) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_files(paths: Iterable[Path | str], anchor: Path) -> bool:
    """Make the contents of already written files durable, as one group commit when possible.

    Returns True when that was one ``syncfs`` of ``anchor``'s whole file system:
    then every file written there before the call is durable too.
    """
    paths = list(paths)
    if not paths:
        return False
    if _SYNCFS is not None and len(paths) >= _GROUP_SYNC_THRESHOLD:
        fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if _SYNCFS(fd) == 0:  # type: ignore[operator]
                return True
        finally:
            os.close(fd)
    for path in paths:
        fsync_file(path)
    return False


def fsync_file(path: Path | str) -> None:
    """Make a file's written contents durable (any descriptor of the file will do)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def same_file_system(a: Path, b: Path) -> bool:
    return os.stat(a).st_dev == os.stat(b).st_dev


def make_dirs(path: Path) -> None:
    """Create a folder and its missing parents, each made durable in its parent."""
    missing = []
    probe = path
    while not probe.is_dir():
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        fsync_dir(folder.parent)


def acquire_lock(path: Path, timeout: float, busy: str) -> int:
    """Take an exclusive flock on ``path`` (created when missing), waiting up to
    ``timeout`` seconds; raise LockTimeoutError with the sentence ``busy`` after that.
    The lock dies with the process, so a killed holder never blocks anyone."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
            if time.monotonic() > deadline:
                os.close(fd)
                raise LockTimeoutError(busy) from None
            time.sleep(0.01)


def release_lock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
