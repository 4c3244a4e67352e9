"""Git's side of reading a public-inbox: which commits an epoch holds (``list_commits``)
and their message blobs, streamed ahead of the import (``BlobReader``).

An epoch's commits are listed once, by one ``rev-list --reverse --topo-order``
(oldest first, each with its tree and parents: the listing also gives their number
and the history's root commits, so nothing else walks the history). Each epoch's
blobs are then read by one ``cat-file --batch`` whose requests (``<tree>:m``: no
commit is read twice) come from a file written up front: git never waits for this
process to ask, and this process never waits for an answer to a question not yet
asked. A thread reads the answers into a bounded buffer (``_AHEAD_BYTES``), so git
keeps working while the import is busy elsewhere (parsing, filing), and starts the
next epoch's ``cat-file`` as soon as the last answer of the previous one is in. A
tree without ``m`` is asked for its ``d`` (a deletion) by a second ``cat-file``,
started only then.

Never writes to the repositories; never parses pack files; never decides what a
commit means for the store (``filers.publicinbox`` does).
"""

from __future__ import annotations

import contextlib
import fcntl
import subprocess
import tempfile
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..errors import SourceError
from ..signals import leave_stop_signals_to_main_thread

__all__ = ["BlobReader", "Listing", "git_command", "list_commits", "stderr_text"]

_GROUP = 128
"""Blobs asked for newest first at a time (see ``_requests``)."""
_AHEAD_BYTES = 32 << 20
"""Message bytes read from git ahead of the import, at most (plus one group)."""
_STDERR_SHOWN = 300
_PIPE_BYTES = 1 << 20

Blob = tuple[str, str, bytes]
"""(commit, ``m`` or ``d``, the blob's bytes)."""


def git_command(repo: Path, *args: str) -> list[str]:
    return ["git", f"--git-dir={repo}", *args]


def stderr_text(data: bytes) -> str:
    text = " ".join(data.decode("utf-8", "replace").split())
    return text[:_STDERR_SHOWN] or "no message"


def _popen(repo: Path, *args: str, **kwargs: object) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(git_command(repo, *args), **kwargs)  # type: ignore[call-overload, no-any-return]
    except FileNotFoundError:
        raise SourceError(f"{repo}: reading a public-inbox needs git, which is not installed") from None


@dataclass
class Listing:
    """The commits of an epoch to read: how many, the roots among them, and a file of
    ``<commit> <tree>`` lines, oldest first (a file: a first import of a big inbox lists
    millions of commits)."""

    count: int = 0
    roots: list[str] = field(default_factory=list)
    file: IO[bytes] | None = None

    def groups(self) -> Iterator[list[tuple[str, str]]]:
        """(commit, tree) of the commits, oldest first, ``_GROUP`` at a time."""
        if self.file is None:
            return
        self.file.seek(0)
        group: list[tuple[str, str]] = []
        for line in self.file:
            commit, tree = line.decode("ascii").split()
            group.append((commit, tree))
            if len(group) >= _GROUP:
                yield group
                group = []
        if group:
            yield group

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def list_commits(spans: list[tuple[Path, str | None, str]]) -> list[Listing]:
    """For each (epoch, since, head): the commits after ``since`` up to ``head``, oldest
    first. The epochs' ``rev-list``s run at the same time."""
    processes: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
    listings: list[Listing] = []
    try:
        for repo, since, head in spans:
            span = f"{since}..{head}" if since else head
            # Each commit as "commit <id>" then "<id> <tree> <parents>" (without
            # --no-commit-header, which git before 2.33 does not know).
            command = ("rev-list", "--reverse", "--topo-order", "--format=%H %T %P", span)
            errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
            processes.append((_popen(repo, *command, stdout=subprocess.PIPE, stderr=errors), errors))
        for (repo, _since, _head), (process, errors) in zip(spans, processes, strict=True):
            listing = Listing(file=tempfile.TemporaryFile())  # noqa: SIM115 - closed by the caller
            listings.append(listing)
            assert process.stdout is not None and listing.file is not None
            for line in process.stdout:
                ids = line.split()
                if ids[0] == b"commit":
                    continue
                listing.file.write(b"%s %s\n" % (ids[0], ids[1]))
                listing.count += 1
                if len(ids) == 2:
                    listing.roots.append(ids[0].decode("ascii"))
            if process.wait() != 0:
                errors.seek(0)
                raise SourceError(f"{repo}: git rev-list failed: {stderr_text(errors.read())}")
        return listings
    except BaseException:
        for listing in listings:
            listing.close()
        raise
    finally:
        for process, errors in processes:
            _kill(process)
            _close(process)
            errors.close()


def _requests(listing: Listing) -> IO[bytes]:
    """``cat-file``'s requests, as a file.

    Newest first within each group: git stores older messages as deltas of newer ones,
    and asking in that order lets cat-file's delta base cache serve the chains."""
    requests = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the reader
    for group in listing.groups():
        requests.write("".join(f"{tree}:m\n" for _commit, tree in reversed(group)).encode())
    requests.seek(0)
    return requests


@dataclass
class _Buffer:
    """What the reading thread has read ahead: items and their bytes, bounded."""

    items: deque[tuple[int, list[Blob] | BaseException | None]] = field(default_factory=deque)
    size: int = 0
    halted: bool = False
    changed: threading.Condition = field(default_factory=threading.Condition)

    def put(self, epoch: int, item: list[Blob] | BaseException | None) -> bool:
        size = sum(len(raw) for _c, _k, raw in item) if isinstance(item, list) else 0
        with self.changed:
            while self.size >= _AHEAD_BYTES and not self.halted:
                self.changed.wait()
            if self.halted:
                return False
            self.items.append((epoch, item))
            self.size += size
            self.changed.notify_all()
            return True

    def get(self) -> tuple[int, list[Blob] | BaseException | None]:
        with self.changed:
            while not self.items:
                self.changed.wait()
            epoch, item = self.items.popleft()
            if isinstance(item, list):
                self.size -= sum(len(raw) for _c, _k, raw in item)
            self.changed.notify_all()
            return epoch, item

    def halt(self) -> None:
        with self.changed:
            self.halted = True
            self.items.clear()
            self.changed.notify_all()


class BlobReader(threading.Thread):
    """Reads the blobs of each epoch's listed commits, one epoch after the other, ahead
    of ``iter_epoch``; started by the caller (``start``), stopped by ``stop``."""

    def __init__(self, jobs: list[tuple[Path, Listing]]) -> None:
        super().__init__(name="listlib-public-inbox", daemon=True)
        self.jobs = jobs
        self.buffer = _Buffer()
        self.lock = threading.Lock()
        self.processes: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
        """The git processes of the epoch being read, each with its standard error."""
        self.next_epoch = 0

    def run(self) -> None:
        leave_stop_signals_to_main_thread()
        for number, (repo, listing) in enumerate(self.jobs):
            if not listing.count:
                continue
            try:
                for group in self._read_epoch(repo, listing):
                    if not self.buffer.put(number, group):
                        return
            except SourceError as exc:  # handed to the import, which reports the epoch
                if not self.buffer.put(number, exc):
                    return
                continue
            except BaseException as exc:  # handed to the import, which raises it
                self.buffer.put(number, exc)
                return
            if not self.buffer.put(number, None):
                return

    def iter_epoch(self, number: int) -> Iterator[Blob]:
        """The blobs of the ``number``-th job, oldest first; raises its SourceError.
        Jobs are taken in order, each once."""
        assert number >= self.next_epoch
        if not self.jobs[number][1].count:
            self.next_epoch = number + 1
            return
        while True:
            epoch, item = self.buffer.get()
            if epoch < number:
                continue  # what remains of an epoch the import gave up on
            if item is None:
                break
            if isinstance(item, BaseException):
                self.next_epoch = number + 1
                raise item
            yield from item
        self.next_epoch = number + 1

    def stop(self) -> None:
        """Stop reading (git processes killed, so no read waits for them) and wait."""
        self.buffer.halt()
        with self.lock:
            for process, _errors in self.processes:
                _kill(process)
        if self.is_alive():
            self.join()

    def _cat_file(self, repo: Path, stdin: IO[bytes] | int) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
        with self.lock:
            if self.buffer.halted:
                raise SourceError(f"{repo}: the import stopped")
            errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed with the process
            try:
                process = _popen(repo, "cat-file", "--batch", stdin=stdin, stdout=subprocess.PIPE, stderr=errors)
            except BaseException:
                errors.close()
                raise
            self.processes.append((process, errors))
            return process, errors

    def _read_epoch(self, repo: Path, listing: Listing) -> Iterator[list[Blob]]:
        requests = _requests(listing)
        deletions: _Deletions | None = None
        try:
            blobs, errors = self._cat_file(repo, requests)
            assert blobs.stdout is not None
            _widen_pipe(blobs.stdout.fileno())
            for group in listing.groups():
                answers: list[Blob] = []
                for commit, tree in reversed(group):
                    raw = _read_answer(repo, blobs.stdout, commit, f"{tree}:m")
                    if raw is None:
                        deletions = deletions or _Deletions(repo, *self._cat_file(repo, subprocess.PIPE))
                        raw = deletions.read(commit, tree)
                        answers.append((commit, "d", raw))
                    else:
                        answers.append((commit, "m", raw))
                answers.reverse()
                yield answers
            _check_exit(repo, blobs, errors)
            if deletions is not None:
                deletions.close()
        finally:
            requests.close()
            with self.lock:
                for process, process_errors in self.processes:
                    _kill(process)
                    _close(process)
                    process_errors.close()
                self.processes.clear()


class _Deletions:
    """A second ``cat-file --batch`` for the ``d`` of the commits without ``m``."""

    def __init__(self, repo: Path, process: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
        self.repo = repo
        self.process = process
        self.errors = errors

    def read(self, commit: str, tree: str) -> bytes:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(f"{tree}:d\n".encode())
            stdin.flush()
        except (OSError, ValueError):
            raise SourceError(f"{self.repo}: git cat-file ended early") from None
        raw = _read_answer(self.repo, stdout, commit, f"{tree}:d")
        if raw is None:
            raise SourceError(f"{self.repo}: not a public-inbox v2 epoch: commit {commit} holds neither 'm' nor 'd'")
        return raw

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        _check_exit(self.repo, self.process, self.errors)


def _read_answer(repo: Path, out: IO[bytes], commit: str, name: str) -> bytes | None:
    """The blob answered for ``name`` (``<tree>:m``, say); None when the tree has no such file."""
    header = out.readline()
    parts = header.split()
    if len(parts) == 2 and parts[1] == b"missing" and parts[0] == name.encode():
        return None
    if len(parts) != 3 or parts[1] != b"blob":
        if not header:
            raise SourceError(f"{repo}: git cat-file ended early")
        kind = name.rpartition(":")[2]
        raise SourceError(f"{repo}: commit {commit}: cannot read its {kind!r}: {stderr_text(header)}")
    size = int(parts[2])
    raw = out.read(size)
    if len(raw) != size or out.read(1) != b"\n":
        raise SourceError(f"{repo}: git cat-file ended early")
    return raw


def _check_exit(repo: Path, process: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
    """After the last answer: ``cat-file`` ends, and successfully."""
    assert process.stdout is not None
    if process.stdout.read(1):
        raise SourceError(f"{repo}: git cat-file answered more than it was asked")
    if process.wait() != 0:
        errors.seek(0)
        raise SourceError(f"{repo}: git failed: {stderr_text(errors.read())}")


def _widen_pipe(fd: int) -> None:
    """Let ``cat-file`` run ahead by a megabyte instead of 64 KB (Linux; elsewhere a no-op)."""
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()


def _close(process: subprocess.Popen[bytes]) -> None:
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.close()
