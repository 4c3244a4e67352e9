"""Search text handed from a build's render pass to its indexing step, through files.

The renderer hands every archived message it displays to a callback; the build makes
that callback a ``DisplayedText``, which turns the display into the indexer's
``SearchText`` and appends one record to its process's own file in the spool folder
(``SpoolWriter``; flushed after every chunk of jobs, since pool workers end without
flushing); once rendering is over, the indexer reads the records' places
(``SpoolReader``) and loads the text of each message it indexes from there instead
of displaying the message again. A record carries the raw-bytes hash it was made
from, and the indexer uses it only when that matches the store's, so a stale or
missing record just means displaying the message. The folder lives for one build
(``clear_spool`` before and after); nothing else reads it.

Record: ``u32 length``, ``u8 call length``, call, ``u8 hash length``, raw hash,
then ``length`` bytes of the pickled ``SearchText``.
"""

from __future__ import annotations

import os
import pickle
import shutil
import socket
import struct
from pathlib import Path
from typing import BinaryIO, NamedTuple

from ..display import MessageDisplay
from .document import SearchText, search_text

__all__ = ["SPOOL_DIR", "DisplayedText", "SpoolReader", "SpoolWriter", "Spooled", "clear_spool"]

SPOOL_DIR = "search-spool"
_LENGTH = struct.Struct("<I")


class Spooled(NamedTuple):
    path: str
    offset: int
    length: int
    raw_hash: str


class SpoolWriter:
    """One writer's spool file, opened on first use; named so that no other writer
    shares it (the workers of a cluster build on several machines may share pids, and a
    Dask worker may render on several threads)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._file: BinaryIO | None = None

    def add(self, call: str, raw_hash: str, text: SearchText) -> None:
        if self._file is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._file = open(self.folder / f"{socket.gethostname()}-{os.getpid()}-{id(self):x}.bin", "ab")  # noqa: SIM115 (kept open across jobs)
        payload = pickle.dumps(tuple(text), protocol=pickle.HIGHEST_PROTOCOL)
        key = call.encode()
        digest = raw_hash.encode()
        head = _LENGTH.pack(len(payload)) + bytes([len(key)]) + key + bytes([len(digest)]) + digest
        self._file.write(head + payload)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class DisplayedText:
    """The render pass's display callback (``render.pages.OnDisplay``) of one process:
    spools each displayed message's search text."""

    def __init__(self, folder: Path, obfuscate: bool) -> None:
        """``obfuscate``: the site obfuscates addresses (the indexed text shows them so)."""
        self.writer = SpoolWriter(folder)
        self.obfuscate = obfuscate

    def __call__(self, call: str, raw_hash: str, display: MessageDisplay) -> None:
        self.writer.add(call, raw_hash, search_text(display, self.obfuscate))

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class SpoolReader:
    """The spooled records of a folder: ``text`` of a message, when spooled from the same bytes."""

    def __init__(self, folder: Path) -> None:
        self.places: dict[str, Spooled] = _read_places(folder)
        self._fds: dict[str, int] = {}

    def text(self, call: str, raw_hash: str) -> SearchText | None:
        place = self.places.get(call)
        if place is None or place.raw_hash != raw_hash:
            return None
        fd = self._fds.get(place.path)
        if fd is None:
            fd = self._fds[place.path] = os.open(place.path, os.O_RDONLY)
        return SearchText(*pickle.loads(os.pread(fd, place.length, place.offset)))

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def _read_places(folder: Path) -> dict[str, Spooled]:
    """Where each spooled message's text is (a torn last record is ignored)."""
    found: dict[str, Spooled] = {}
    if not folder.is_dir():
        return found
    for entry in sorted(folder.iterdir()):
        path = str(entry)
        with open(entry, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            at = 0
            while True:
                head = handle.read(5)
                if len(head) < 5:
                    break
                (length,) = _LENGTH.unpack_from(head)
                call = handle.read(head[4])
                digest_size = handle.read(1)
                if len(call) < head[4] or not digest_size:
                    break
                digest = handle.read(digest_size[0])
                at += 5 + len(call) + 1 + len(digest)
                if len(digest) < digest_size[0] or at + length > size:
                    break
                found[call.decode()] = Spooled(path, at, length, digest.decode())
                at += length
                handle.seek(at)
    return found


def clear_spool(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
