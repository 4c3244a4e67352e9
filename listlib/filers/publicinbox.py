"""Public-inbox v2 inboxes as an import source: the messages of each epoch's history.

A v2 inbox (public-inbox-v2-format(5)) is a folder with one bare git repository per
"epoch", ``git/0.git``, ``git/1.git``, ...: each message is one commit whose tree
holds a single blob ``m`` (the message's bytes); a deletion is a commit whose tree
holds only ``d`` (the deleted message). ``listlib import`` accepts the inbox folder,
its ``all.git``, or one epoch, and reads every commit oldest first, with git's own
plumbing (``filers.inboxgit``): one ``rev-list`` per epoch lists the commits to read,
all epochs at once, and one ``cat-file --batch`` per epoch streams their blobs ahead
of the import (no process per message). Message bytes are yielded exactly as in the
blob.

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

import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LockTimeoutError, SourceError
from ..fsutil import release_lock
from ..inboxlog import EpochRecord, PendingDeletion, hold_epoch, load_records, save_record
from ..message import parse_message, raw_hash
from . import Mark, OnError, RawMail, Source
from .inboxgit import BlobReader, Listing, git_command, list_commits, stderr_text

__all__ = ["InboxSource", "find_epochs", "open_inbox"]

Fault = Callable[[str], None]

_EPOCH_RE = re.compile(r"(\d+)\.git\Z")
_ESTIMATE = 8 << 10
"""Bytes counted per commit for progress and for choosing the parsing pool (an
average list message; the real sizes are known only once read)."""


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


def _run_git(repo: Path, *args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[bytes]:
    try:
        result = subprocess.run(git_command(repo, *args), capture_output=True, check=False)
    except FileNotFoundError:
        raise SourceError(f"{repo}: reading a public-inbox needs git, which is not installed") from None
    if result.returncode not in ok:
        raise SourceError(f"{repo}: git {args[0]} failed: {stderr_text(result.stderr)}")
    return result


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


@dataclass
class _Epoch:
    """One epoch of an inbox being read: where it starts and ends, and its record."""

    path: Path
    head: str
    record: EpochRecord
    since: str | None
    """The commit read up to by earlier runs (None: read from the start)."""
    commits: int
    listed: Listing = field(default_factory=Listing)
    """The commits to read, oldest first."""
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
    reader: BlobReader | None = None
    """Reading the epochs' blobs ahead of ``iter_mail``, once it started."""

    def iter_mail(self, on_error: OnError | None = None) -> Iterator[RawMail]:
        # Started here, not when the source is opened: an import forks its parsing
        # workers in between, and a fork copies no thread but every lock one holds.
        self.close_reader()
        reader = self.reader = BlobReader([(epoch.path, epoch.listed) for epoch in self.epochs])
        reader.start()
        done = 0
        try:
            for number, epoch in enumerate(self.epochs):
                try:
                    yield from self._iter_epoch(reader, number, epoch, done)
                except SourceError as exc:
                    if on_error is None:
                        raise
                    on_error(epoch.path, str(exc).removeprefix(f"{epoch.path}: "))
                done += epoch.commits * _ESTIMATE
        finally:
            self.close_reader()

    def _iter_epoch(self, reader: BlobReader, number: int, epoch: _Epoch, done: int) -> Iterator[RawMail]:
        position = 0
        for commit, kind, raw in reader.iter_epoch(number):
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

    def close_reader(self) -> None:
        if self.reader is not None:
            self.reader.stop()
            self.reader = None

    def close(self) -> None:
        self.close_reader()
        for epoch in self.epochs:
            epoch.listed.close()
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
    """Open the epochs of an inbox: lock each, find its record and what is new, and list
    the commits to read."""
    source = InboxSource(path=path, files=[])
    records = load_records(state) if state is not None else {}
    listed: list[Listing] = []
    try:
        if state is not None:
            for repo in epochs:
                try:
                    source.locks.append(hold_epoch(state, repo))
                except LockTimeoutError as exc:
                    raise SourceError(str(exc)) from None
        found = [(repo, head) for repo, head in zip(epochs, _heads(epochs), strict=True) if head is not None]
        starts = [_open_epoch(repo, head, records, source.warnings) for repo, head in found]
        spans = [(repo, since, head) for (repo, head), (_record, since) in zip(found, starts, strict=True)]
        listed = list_commits([span for span in spans if span[1] != span[2]])
        listings = iter(listed)
        for (repo, since, head), (record, _since) in zip(spans, starts, strict=True):
            # Nothing new (most cron runs): no git beyond rev-parse.
            listing = next(listings) if since != head else Listing()
            if record is None:  # nothing recorded anywhere: the root comes from the listing
                if not listing.roots:
                    raise SourceError(f"{repo}: git rev-list listed no root commit")
                record = EpochRecord(min(listing.roots), str(repo.resolve()), None, [])
            epoch = _Epoch(repo, head, record, since, listing.count, listing)
            epoch.state, epoch.dry_run, epoch.fault = state, dry_run, fault
            source.epochs.append(epoch)
    except BaseException:
        for listing in listed:
            listing.close()
        source.close()
        raise
    source.total_bytes = sum(epoch.commits for epoch in source.epochs) * _ESTIMATE
    return source


def _heads(epochs: list[Path]) -> list[str | None]:
    """Each epoch's HEAD commit (None: no commits yet), asked of all epochs at once."""
    try:
        processes = [
            subprocess.Popen(
                git_command(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}"),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for repo in epochs
        ]
    except FileNotFoundError:
        raise SourceError("reading a public-inbox needs git, which is not installed") from None
    heads: list[str | None] = []
    for repo, process in zip(epochs, processes, strict=True):
        out, err = process.communicate()
        if process.returncode not in (0, 1, 128):
            raise SourceError(f"{repo}: git rev-parse failed: {stderr_text(err)}")
        heads.append(out.decode().strip() if process.returncode == 0 else None)
    return heads


def _open_epoch(
    repo: Path, head: str, records: dict[str, EpochRecord], warnings: list[str]
) -> tuple[EpochRecord | None, str | None]:
    """Where to start reading an epoch: after its recorded commit, when that is still in
    its history; else from the start (with a warning when the history was rewritten).
    Its record and the commit to read after; no record when none is kept at all (a
    first import: the epoch's root commit is then found in its listing)."""
    here = str(repo.resolve())
    # Cheap first: the record last written for this path, when its commit is still an
    # ancestor of HEAD (finding the root commit walks the whole history).
    for record in records.values():
        if record.path == here and record.last and _is_ancestor(repo, record.last, head):
            return record, record.last
    if not records:
        return None, None
    root = _root(repo, head)
    record = records.get(root)
    if record is not None and record.last and _is_ancestor(repo, record.last, head):
        return record, record.last
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
    return EpochRecord(root, here, None, record.pending if record is not None else []), None
