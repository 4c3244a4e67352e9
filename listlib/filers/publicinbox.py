"""Public-inbox v2 inboxes as an import source: the messages of each epoch's history.

A v2 inbox (public-inbox-v2-format(5)) is a folder with one bare git repository per
"epoch", ``git/0.git``, ``git/1.git``, ...: each message is one commit whose tree
holds a single blob ``m`` (the message's bytes); a deletion is a commit whose tree
holds only ``d`` (the deleted message). ``listlib import`` accepts the inbox folder,
its ``all.git``, or one epoch, and reads every commit oldest first, with git's own
plumbing: ``rev-list --reverse`` piped into ``diff-tree --stdin`` names each commit's
blob, and one ``cat-file --batch`` per epoch streams the blobs (three processes per
epoch, none per message). Message bytes are yielded exactly as in the blob.

Each epoch remembers how far it was read (``inboxlog``), by its root commit: the
record names the last commit whose message is durable in the store, so a cron
``git fetch`` + ``listlib import`` reads only the new commits. A record is written
only when filing settles a message's ``Mark`` (after the store said it is durable)
and, once every message is durable, at the epoch's last commit (``finish``). When
the recorded commit is no longer in the history (the epoch was rewritten, as
``public-inbox-purge`` does), the epoch is read again from the start: the store
counts what it already has as duplicates. Deletions are collected with the
message's exact-bytes hash and kept in the record until the import deals with them.

Never writes to the repositories; never parses pack files.
"""

from __future__ import annotations

import contextlib
import fcntl
import queue
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..errors import LockTimeoutError, SourceError
from ..fsutil import release_lock
from ..inboxlog import EpochRecord, PendingDeletion, hold_epoch, load_records, save_record
from ..message import parse_message, raw_hash
from . import Mark, OnError, RawMail, Source

__all__ = ["InboxSource", "find_epochs", "iter_commits", "open_inbox"]

Fault = Callable[[str], None]

_EPOCH_RE = re.compile(r"(\d+)\.git\Z")
_ESTIMATE = 8 << 10
"""Bytes counted per commit for progress and for choosing the parsing pool (an
average list message; the real sizes are known only once read)."""
_GROUP = 128
"""Blob requests written to ``cat-file`` at a time."""
_QUEUE = 4096
"""Commits named to ``cat-file`` ahead of the reader, at most."""
_STDERR_SHOWN = 300
_PIPE_BYTES = 1 << 20


def _is_bare_repository(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


def find_epochs(path: Path) -> list[Path] | None:
    """The epochs to read at ``path``, oldest first: those of an inbox folder (``git/N.git``),
    of an inbox's ``all.git``, or the one bare repository ``path`` is; None when ``path`` is
    none of these."""
    if path.name == "all.git" and (path.parent / "git").is_dir():
        return find_epochs(path.parent)
    folder = path / "git"
    if folder.is_dir():
        numbered = []
        for entry in folder.iterdir():
            match = _EPOCH_RE.match(entry.name)
            if match and _is_bare_repository(entry):
                numbered.append((int(match.group(1)), entry))
        if numbered:
            return [entry for _number, entry in sorted(numbered)]
    if _is_bare_repository(path):
        return [path]
    return None


def _git_command(repo: Path, *args: str) -> list[str]:
    return ["git", f"--git-dir={repo}", *args]


def _run_git(repo: Path, *args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[bytes]:
    try:
        result = subprocess.run(_git_command(repo, *args), capture_output=True, check=False)
    except FileNotFoundError:
        raise SourceError(f"{repo}: reading a public-inbox needs git, which is not installed") from None
    if result.returncode not in ok:
        raise SourceError(f"{repo}: git {args[0]} failed: {_stderr_text(result.stderr)}")
    return result


def _stderr_text(data: bytes) -> str:
    text = " ".join(data.decode("utf-8", "replace").split())
    return text[:_STDERR_SHOWN] or "no message"


def _head(repo: Path) -> str | None:
    result = _run_git(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}", ok=(0, 1, 128))
    return result.stdout.decode().strip() if result.returncode == 0 else None


def _root(repo: Path, head: str) -> str:
    roots = _run_git(repo, "rev-list", "--max-parents=0", head).stdout.decode().split()
    return min(roots)


def _is_ancestor(repo: Path, commit: str, head: str) -> bool:
    if commit == head:
        return True
    return _run_git(repo, "merge-base", "--is-ancestor", commit, head, ok=(0, 1, 128)).returncode == 0


def _count(repo: Path, since: str | None, head: str) -> int:
    if since == head:
        return 0
    span = f"{since}..{head}" if since else head
    return int(_run_git(repo, "rev-list", "--count", span).stdout)


def _tree_files(repo: Path, commit: str) -> dict[str, str]:
    """The files at the top of a commit's tree: name -> blob id."""
    files = {}
    for line in _run_git(repo, "ls-tree", "-z", commit).stdout.split(b"\0"):
        if line:
            meta, _, name = line.partition(b"\t")
            files[name.decode("utf-8", "replace")] = meta.split()[2].decode()
    return files


@dataclass
class _Epoch:
    """One epoch of an inbox being read: where it starts and ends, and its record."""

    path: Path
    head: str
    record: EpochRecord
    since: str | None
    """The commit read up to by earlier runs (None: read from the start)."""
    commits: int
    deletions: list[tuple[int, PendingDeletion]] = field(default_factory=list)
    """``d`` commits read by this run, with their place."""
    complete: bool = False
    """Every commit up to ``head`` was read."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    state: Path | None = None
    dry_run: bool = False
    fault: Fault | None = None
    saved: tuple[str | None, list[PendingDeletion]] | None = None
    """What the record on disk says now (last commit, pending deletions)."""

    def settle(self, mark: Mark) -> None:
        """Every message up to ``mark`` is durable: record its commit, with the
        deletions read before it (so that they are dealt with even after a kill)."""
        with self.lock:
            before = [item for position, item in self.deletions if position < mark.position]
        self._save(mark.key, before)

    def finish(self) -> None:
        if self.complete:
            with self.lock:
                everything = [item for _position, item in self.deletions]
            self._save(self.head, everything)

    def all_pending(self) -> list[PendingDeletion]:
        """The deletions to deal with: those recorded by earlier runs, then this run's."""
        with self.lock:
            return _merged(self.record.pending, [item for _position, item in self.deletions])

    def _save(self, last: str, deletions: list[PendingDeletion]) -> None:
        if self.state is None or self.dry_run:
            return
        pending = _merged(self.record.pending, deletions)
        if self.saved is None:
            self.saved = (self.record.last, self.record.pending)
        if (last, pending) == self.saved:
            return
        save_record(self.state, EpochRecord(self.record.root, str(self.path.resolve()), last, pending))
        self.saved = (last, pending)
        if self.fault is not None:
            self.fault("inbox-recorded")


def _merged(earlier: list[PendingDeletion], later: list[PendingDeletion]) -> list[PendingDeletion]:
    seen = {item.commit for item in earlier}
    return [*earlier, *(item for item in later if item.commit not in seen)]


@dataclass
class InboxSource(Source):
    """A public-inbox (or one epoch): its epochs, each read from where the last run stopped."""

    epochs: list[_Epoch] = field(default_factory=list)
    locks: list[int] = field(default_factory=list)

    def iter_mail(self, on_error: OnError | None = None) -> Iterator[RawMail]:
        done = 0
        for epoch in self.epochs:
            try:
                yield from self._iter_epoch(epoch, done)
            except SourceError as exc:
                if on_error is None:
                    raise
                on_error(epoch.path, str(exc).removeprefix(f"{epoch.path}: "))
            done += epoch.commits * _ESTIMATE

    def _iter_epoch(self, epoch: _Epoch, done: int) -> Iterator[RawMail]:
        position = 0
        if epoch.since == epoch.head:  # nothing new (most cron runs): start no git at all
            epoch.complete = True
            return
        for commit, kind, raw in iter_commits(epoch.path, epoch.since, epoch.head):
            position += 1
            if kind == "m":
                yield RawMail(
                    raw, f"{epoch.path}#{commit}", None, done + position * _ESTIMATE, Mark(epoch, position, commit)
                )
                continue
            facts = parse_message(raw)
            deletion = PendingDeletion(commit, raw_hash(raw), facts.message_id, facts.subject)
            with epoch.lock:
                epoch.deletions.append((position, deletion))
        epoch.complete = True

    def finish(self) -> None:
        for epoch in self.epochs:
            epoch.finish()

    def pending_deletions(self) -> list[tuple[str, str, PendingDeletion]]:
        """(epoch path, epoch root commit, deletion) for every deletion to deal with, in order."""
        return [(str(e.path), e.record.root, item) for e in self.epochs for item in e.all_pending()]

    def close(self) -> None:
        while self.locks:
            release_lock(self.locks.pop())


def open_inbox(
    path: Path,
    epochs: list[Path],
    *,
    state: Path | None,
    dry_run: bool = False,
    fault: Fault | None = None,
) -> InboxSource:
    """Open the epochs of an inbox: lock each, find its record and what is new."""
    source = InboxSource(path=path, files=[])
    records = load_records(state) if state is not None else {}
    try:
        for repo in epochs:
            if state is not None:
                try:
                    source.locks.append(hold_epoch(state, repo))
                except LockTimeoutError as exc:
                    raise SourceError(str(exc)) from None
            head = _head(repo)
            if head is None:
                continue  # an epoch without commits yet
            epoch = _open_epoch(repo, head, records, source.warnings)
            epoch.state, epoch.dry_run, epoch.fault = state, dry_run, fault
            source.epochs.append(epoch)
    except BaseException:
        source.close()
        raise
    source.total_bytes = sum(epoch.commits for epoch in source.epochs) * _ESTIMATE
    return source


def _open_epoch(repo: Path, head: str, records: dict[str, EpochRecord], warnings: list[str]) -> _Epoch:
    """Where to start reading an epoch: after its recorded commit, when that is still in
    its history; else from the start (with a warning when the history was rewritten)."""
    here = str(repo.resolve())
    # Cheap first: the record last written for this path, when its commit is still an
    # ancestor of HEAD (finding the root commit walks the whole history).
    for record in records.values():
        if record.path == here and record.last and _is_ancestor(repo, record.last, head):
            return _Epoch(repo, head, record, record.last, _count(repo, record.last, head))
    root = _root(repo, head)
    record = records.get(root)
    if record is not None and record.last and _is_ancestor(repo, record.last, head):
        return _Epoch(repo, head, record, record.last, _count(repo, record.last, head))
    if record is not None and record.last:
        warnings.append(
            f"{repo}: the commit imported last ({record.last[:12]}) is no longer in the epoch's history "
            "(rewritten, e.g. by public-inbox-purge): reading it again from the start; "
            "messages already filed count as duplicates"
        )
    elif any(other.path == here for other in records.values()):
        warnings.append(
            f"{repo}: this epoch's history no longer starts where it did (replaced or rewritten): "
            "reading it from the start; messages already filed count as duplicates"
        )
    fresh = EpochRecord(root, here, None, record.pending if record is not None else [])
    return _Epoch(repo, head, fresh, None, _count(repo, None, head))


def iter_commits(repo: Path, since: str | None, head: str) -> Iterator[tuple[str, str, bytes]]:
    """(commit, ``m`` or ``d``, blob bytes) for every commit after ``since`` up to ``head``,
    oldest first. Raises SourceError when a commit is not public-inbox's (no ``m`` or ``d``)."""
    files = _tree_files(repo, since) if since else {}
    span = [f"{since}..{head}"] if since else [head]
    errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    processes: list[subprocess.Popen[bytes]] = []
    try:
        try:
            revs = subprocess.Popen(
                _git_command(repo, "rev-list", "--reverse", "--topo-order", *span),
                stdout=subprocess.PIPE,
                stderr=errors,
            )
            processes.append(revs)
            diffs = subprocess.Popen(
                _git_command(repo, "diff-tree", "--stdin", "-r", "--root", "--always", "--no-renames", "--no-abbrev"),
                stdin=revs.stdout,
                stdout=subprocess.PIPE,
                stderr=errors,
            )
            processes.append(diffs)
            blobs = subprocess.Popen(
                _git_command(repo, "cat-file", "--batch"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors
            )
            processes.append(blobs)
            assert blobs.stdout is not None
            _widen_pipe(blobs.stdout.fileno())
        except FileNotFoundError:
            raise SourceError(f"{repo}: reading a public-inbox needs git, which is not installed") from None
        assert revs.stdout is not None and diffs.stdout is not None
        assert blobs.stdin is not None and blobs.stdout is not None
        revs.stdout.close()  # diff-tree has it
        named = _Namer(repo, files, diffs.stdout, blobs.stdin)
        named.start()
        finished = False
        try:
            yield from _read_blobs(repo, named, blobs.stdout)
            finished = True
        finally:
            if not finished:
                _kill(processes)  # unblocks the namer, wherever it waits on git
            named.stop()
        for process in processes:
            if process.wait() != 0:
                errors.seek(0)
                raise SourceError(f"{repo}: git failed: {_stderr_text(errors.read())}")
    finally:
        _kill(processes)
        for process in processes:
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError, ValueError):
                        stream.close()
        errors.close()


def _widen_pipe(fd: int) -> None:
    """Let ``cat-file`` run ahead by a megabyte instead of 64 KB (Linux; elsewhere a no-op):
    it and this process then take turns a few times per hundred messages, not per message."""
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def _kill(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait()


def _read_blobs(repo: Path, named: _Namer, out: IO[bytes]) -> Iterator[tuple[str, str, bytes]]:
    """Read ``cat-file``'s answers a group at a time (asked newest first, see ``_Namer``)
    and yield them oldest first."""
    while (group := named.next_group()) is not None:
        raws = [_read_blob(repo, out, item) for item in reversed(group)]
        raws.reverse()
        for (commit, kind, _blob), raw in zip(group, raws, strict=True):
            yield commit, kind, raw


def _read_blob(repo: Path, out: IO[bytes], item: tuple[str, str, str]) -> bytes:
    commit, kind, blob = item
    header = out.readline()
    parts = header.split()
    if len(parts) != 3 or parts[1] != b"blob":
        raise SourceError(f"{repo}: commit {commit}: cannot read its {kind!r} ({blob}): {_stderr_text(header)}")
    size = int(parts[2])
    raw = out.read(size)
    if len(raw) != size or out.read(1) != b"\n":
        raise SourceError(f"{repo}: git cat-file ended early")
    return raw


class _Namer(threading.Thread):
    """Reads ``diff-tree``'s output, asks ``cat-file`` for each commit's blob, a group at a
    time, and hands the groups of (commit, kind, blob) over in order; only what it has
    asked for (flushed) is handed over, so the reader never waits for an answer to a
    question not yet asked."""

    def __init__(self, repo: Path, files: dict[str, str], diffs: IO[bytes], requests: IO[bytes]) -> None:
        super().__init__(name="listlib-public-inbox", daemon=True)
        self.repo = repo
        self.files = dict(files)
        self.diffs = diffs
        self.requests = requests
        self.handoff: queue.Queue[list[tuple[str, str, str]] | BaseException | None] = queue.Queue(
            maxsize=max(1, _QUEUE // _GROUP)
        )
        self.halt = threading.Event()

    def run(self) -> None:
        try:
            group: list[tuple[str, str, str]] = []
            commit: str | None = None
            for line in self.diffs:
                if line.startswith(b":"):
                    self._apply(commit, line)
                    continue
                if commit is not None:
                    group.append(self._named(commit))
                    if len(group) >= _GROUP:
                        if not self._ask(group):
                            return
                        group = []
                commit = line.strip().decode()
            if commit is not None:
                group.append(self._named(commit))
            if group and not self._ask(group):
                return
            self.requests.close()  # cat-file answers what it was asked, then ends
            self._put(None)
        except BaseException as exc:  # handed to the reading thread, which raises it
            self._put(exc)

    def _apply(self, commit: str | None, line: bytes) -> None:
        meta, _, name = line.rstrip(b"\n").partition(b"\t")
        fields = meta.split()
        path = name.decode("utf-8", "replace")
        if commit is None or len(fields) != 5 or path not in ("m", "d"):
            raise SourceError(
                f"{self.repo}: not a public-inbox v2 epoch: commit {commit} changes {path!r} "
                "(v2 commits hold one file, 'm' or 'd')"
            )
        if fields[4].startswith(b"D"):
            self.files.pop(path, None)
        else:
            self.files[path] = fields[3].decode()

    def _named(self, commit: str) -> tuple[str, str, str]:
        for kind in ("m", "d"):
            if kind in self.files:
                return commit, kind, self.files[kind]
        raise SourceError(f"{self.repo}: not a public-inbox v2 epoch: commit {commit} holds neither 'm' nor 'd'")

    def _ask(self, group: list[tuple[str, str, str]]) -> bool:
        try:
            # Newest first: git stores older messages as deltas of newer ones, and reading
            # a group in that order lets cat-file's delta base cache serve the chains
            # (half the CPU of reading oldest first, on linux-raid repacked by git).
            self.requests.write(b"".join(f"{blob}\n".encode() for _c, _k, blob in reversed(group)))
            self.requests.flush()
        except (OSError, ValueError):
            return False  # cat-file is gone: the reader is stopping, or reports git's error
        return self._put(list(group))

    def _put(self, item: list[tuple[str, str, str]] | BaseException | None) -> bool:
        while not self.halt.is_set():
            try:
                self.handoff.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def next_group(self) -> list[tuple[str, str, str]] | None:
        """The next group of (commit, kind, blob) asked for, oldest first, or None at the end."""
        item = self.handoff.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def stop(self) -> None:
        self.halt.set()
        self.join()
