"""Filers: turn import sources into a stream of raw messages.

``open_source(path)`` recognises what a path is and returns a Source whose
``iter_mail()`` yields RawMail items in source order:

- an mbox file (mboxo, mboxrd, mboxcl/cl2; Pipermail ``.txt``), possibly
  compressed with gzip, bzip2 or xz (recognised by content, not by name);
- a single message file (``.eml``, a maildir entry, anything mail-like);
- a public-inbox v2 inbox (a folder holding ``git/0.git``, ``git/1.git``, ...) or
  one of its epochs (a bare git repository): see ``filers.publicinbox``;
- a folder: a maildir (``cur``/``new``, nested folders), a Pipermail archive
  folder (months in date order) or any folder of message and mbox files,
  walked recursively. Dot-files, maildir ``tmp/`` folders and obvious
  non-mail files (licences, READMEs, archives) are skipped and reported.

A file that cannot be read (no permission, an I/O error, a dangling link, a
damaged compressed stream) does not stop the others: ``iter_mail`` reports it
through its ``on_error`` callback, with what was read of it before the break
already yielded, and goes on with the next file.

Filers only read: a source is never modified (maildir messages are not moved
from ``new`` to ``cur``).
"""

from __future__ import annotations

import errno
import lzma
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, Protocol

from isal import isal_zlib

from ..errors import SourceError
from .compressed import kind_of, open_compressed
from .mbox import MboxFormat, is_separator, iter_mbox

if TYPE_CHECKING:
    from ..inboxlog import PendingDeletion

__all__ = ["Mark", "OnError", "RawMail", "Source", "Tracker", "open_source"]

OnError = Callable[[Path, str], None]
"""Told of a file that cannot be read: its path and the reason."""

_MONTHS = {
    name: index
    for index, name in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
_PIPERMAIL_RE = re.compile(r"(\d{4})-([A-Za-z]+)\.txt(?:\.gz)?\Z")
_NOT_MAIL_NAME_RE = re.compile(
    r"(?:licen[cs]e|copying|readme|notice|authors|changelog|changes)(?:\.\w+)?\Z"
    r"|.*\.(?:zip|tar|tgz|7z|rar|md|rst|html?|json|toml|ya?ml|py|sh|pdf|png|jpe?g|gif|svg|sqlite)\Z",
    re.I,
)
_DECOMPRESS_ERRORS = (OSError, EOFError, isal_zlib.error, lzma.LZMAError, ValueError)


class Tracker(Protocol):
    """A source that remembers how far it was read (a public-inbox epoch)."""

    def settle(self, mark: Mark) -> None:
        """Record that the message at ``mark``, and everything before it, is durable."""


class Mark(NamedTuple):
    """Where a message stands in a source that remembers how far it was read."""

    tracker: Tracker
    position: int
    """The message's place in its source (its commit's number, for an epoch)."""
    key: str
    """What the tracker records for it (a commit id)."""


class RawMail(NamedTuple):
    """One message as read from a source, before filing (a named tuple: imports send
    thousands a second between processes)."""

    raw: bytes
    """Stored bytes: for mbox input the separator is removed and mboxrd quoting undone."""
    origin: str
    """Where it came from, for reports: a path, plus ``#n`` for the n-th message of an mbox."""
    separator: bytes | None
    """The mbox ``From `` line, when there was one (filing reads its date only when
    the message's own dates are unusable: see ``filing.prepare_message``)."""
    done: int
    """Bytes of the source read so far (compressed bytes for compressed files), for progress."""
    mark: Mark | None = None
    """For sources that remember how far they were read: settled once the message is durable."""


def _open_file(path: Path | BinaryIO) -> tuple[BinaryIO, BinaryIO]:
    """Open a possibly compressed file: (decompressed stream, underlying file)."""
    raw = path.open("rb") if isinstance(path, Path) else path
    magic = raw.read(6)
    raw.seek(0)
    kind = kind_of(magic)
    return (raw if kind is None else open_compressed(raw, kind)), raw


def _pipermail_key(name: str) -> tuple[int, int, str]:
    match = _PIPERMAIL_RE.match(name)
    if match and match.group(2).lower() in _MONTHS:
        return (int(match.group(1)), _MONTHS[match.group(2).lower()], name)
    return (0, 0, name)


@dataclass
class Source:
    """A file or folder to import from; ``skipped`` lists files passed over as not mail,
    ``unreadable`` the files found unreadable while listing (path, reason)."""

    path: Path
    files: list[Path]
    mbox_format: MboxFormat = "auto"
    skipped: list[Path] = field(default_factory=list)
    unreadable: list[tuple[Path, str]] = field(default_factory=list)
    total_bytes: int = 0
    spool: BinaryIO | None = None
    """Standard input, copied to a seekable spool, when the source is ``-``."""
    warnings: list[str] = field(default_factory=list)
    """Things the import summary should mention (a rewritten public-inbox epoch)."""

    def finish(self) -> None:
        """Called once every message read is durable (and not on a dry run): a source
        that remembers how far it was read records its end."""

    def close(self) -> None:
        """Release what the source holds (locks); called whatever happened."""

    def pending_deletions(self) -> list[tuple[str, str, PendingDeletion]]:
        """(epoch path, epoch root commit, deletion) for each deletion the source recorded
        (a public-inbox ``d`` commit) that the import has yet to deal with."""
        return []

    def iter_mail(self, on_error: OnError | None = None) -> Iterator[RawMail]:
        """Yield every message of the source, in order.

        A file that cannot be read raises ``SourceError`` naming it, or, with
        ``on_error``, is reported there (after what was read of it) and skipped."""
        done = 0
        for path, reason in self.unreadable:
            if on_error is None:
                raise SourceError(f"{path}: {reason}")
            on_error(path, reason)
        for path in self.files:
            try:
                size = self.total_bytes if self.spool else path.stat().st_size
                yield from self._iter_file(path, done)
            except SourceError as exc:
                if on_error is None:
                    raise
                on_error(path, str(exc).removeprefix(f"{path}: "))
                size = 0 if self.spool else _size(path)
            except _DECOMPRESS_ERRORS as exc:
                reason = f"cannot be read: {_reason(exc)}"
                if on_error is None:
                    raise SourceError(f"{path}: {reason}") from exc
                on_error(path, reason)
                size = 0 if self.spool else _size(path)
            done += size

    def _iter_file(self, path: Path, done: int) -> Iterator[RawMail]:
        stream, raw = _open_file(self.spool if self.spool else path)
        with raw, stream:
            first = stream.readline()
            second = stream.readline() if first.startswith(b"From ") else b""
            # The second line only matters for RFC 2822-dated separators (early Pipermail),
            # which count only when a header field follows.
            following = second.rstrip(b"\r\n") if second else None
            rest_is_mbox = first.startswith(b"From ") and is_separator(first.rstrip(b"\r\n"), following)
            if not rest_is_mbox:
                data = first + second + stream.read()
                yield RawMail(data, str(path), None, done + raw.tell())
                return
            stream.seek(0)
            for number, part in enumerate(iter_mbox(stream, self.mbox_format), start=1):
                yield RawMail(
                    part.raw,
                    f"{path}#{number}",
                    part.separator,
                    done + raw.tell(),
                )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _reason(exc: BaseException) -> str:
    """Why a file could not be read, in words (an OSError's own text names the path again)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower() if exc.errno == errno.EACCES else exc.strerror
    return str(exc) or type(exc).__name__


def _walk(folder: Path, files: list[Path], skipped: list[Path], unreadable: list[tuple[Path, str]]) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError as exc:
        raise SourceError(f"{folder}: cannot list folder: {exc.strerror}") from exc
    names = {entry.name for entry in entries}
    is_maildir = {"cur", "new"} <= names
    for entry in sorted(entries, key=lambda e: _pipermail_key(e.name)):
        if entry.name.startswith("."):
            # Maildir++ sub-folders are dot-folders holding cur/new; dot-files are not mail.
            if entry.is_dir() and (Path(entry.path) / "cur").is_dir():
                _walk(Path(entry.path), files, skipped, unreadable)
            continue
        if entry.is_dir():
            if is_maildir and entry.name == "tmp":
                continue
            _walk(Path(entry.path), files, skipped, unreadable)
        elif entry.is_file():
            if _NOT_MAIL_NAME_RE.match(entry.name):
                skipped.append(Path(entry.path))
            elif not os.access(entry.path, os.R_OK):
                unreadable.append((Path(entry.path), "permission denied"))
            else:
                files.append(Path(entry.path))
        elif entry.is_symlink():
            # A link to nothing: the message it stood for is missing, which must not pass unnoticed.
            unreadable.append((Path(entry.path), f"a link to {os.readlink(entry.path)!r}, which does not exist"))


def open_source(
    path: Path,
    mbox_format: MboxFormat = "auto",
    stdin: BinaryIO | None = None,
    *,
    state: Path | None = None,
    dry_run: bool = False,
    fault: Callable[[str], None] | None = None,
) -> Source:
    """Recognise an import source; raise SourceError naming the path when unusable.

    The path ``-`` reads one message or an mbox from ``stdin`` (for delivery
    from an MTA alias: ``| listlib import -``). ``state`` is the folder where
    public-inbox epochs record how far they were read (none: every epoch is read
    whole and nothing is recorded); with ``dry_run`` nothing is recorded either.
    """
    if str(path) == "-":
        if stdin is None:
            raise SourceError("-: standard input is not available")
        spool = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115 - closed with the stream
        shutil.copyfileobj(stdin, spool)
        size = spool.tell()
        spool.seek(0)
        label = Path("<stdin>")
        return Source(path=label, files=[label], mbox_format=mbox_format, total_bytes=size, spool=spool)
    if not path.exists():
        raise SourceError(f"{path}: no such file or folder")
    if path.is_dir():
        # Imported here: only an import of a public-inbox needs git.
        from .publicinbox import find_epochs, open_inbox

        epochs = find_epochs(path)
        if epochs is not None:
            return open_inbox(path, epochs, state=state, dry_run=dry_run, fault=fault)
    unreadable: list[tuple[Path, str]] = []
    if path.is_dir():
        files: list[Path] = []
        skipped: list[Path] = []
        _walk(path, files, skipped, unreadable)
        if not files and not unreadable:
            raise SourceError(
                f"{path}: no mail found (not a maildir, Pipermail archive, or folder of mbox or message files)"
            )
    elif path.is_file():
        files, skipped = [path], []
        if not os.access(path, os.R_OK):
            files, unreadable = [], [(path, "permission denied")]
    else:
        raise SourceError(f"{path}: not a regular file or folder")
    total = sum(_size(file) for file in files)
    return Source(
        path=path, files=files, mbox_format=mbox_format, skipped=skipped, unreadable=unreadable, total_bytes=total
    )
