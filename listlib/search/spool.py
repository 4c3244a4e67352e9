"""Search text handed from a build's render pass to its indexing step, through files.

The renderer hands every archived message it displays to a callback; the build makes
that callback a ``DisplayedText``, which turns the display into the indexer's
``SearchText`` and appends one record to its process's own file in the spool folder
(``SpoolWriter``; flushed after every chunk of jobs, since pool workers end without
flushing); once rendering is over, the indexer reads the records' places
(``SpoolReader``; a few flat arrays, ``SpoolPlaces``, which its forked workers share)
and loads the text of each message it indexes from there instead of displaying the
message again. A record carries the raw-bytes hash it was made
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
from array import array
from bisect import bisect_left
from pathlib import Path
from typing import BinaryIO

from ..display import MessageDisplay
from .document import SearchText, search_text

__all__ = ["SPOOL_DIR", "DisplayedText", "SpoolPlaces", "SpoolReader", "SpoolWriter", "clear_spool", "read_places"]

SPOOL_DIR = "search-spool"
_LENGTH = struct.Struct("<I")
_KEY = struct.Struct(">Q")
"""A call number (8 ASCII bytes, ``values``) as a number of the same order: the places
keep only records of calls of this length."""


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


class SpoolPlaces:
    """Where each spooled record is, by call number: flat arrays sorted by call number
    (some 24 bytes a record), looked up by bisection.

    Not a dict of objects: the search step's inverting workers are forked holding the
    reader, and reference counts write to every object a lookup touches, so each worker
    copied the pages of the places it looked up: at 200,000 messages the dict took
    55 MB (288 bytes a record) and each of two workers had 43 MB more private pages
    than with these arrays. Array buffers are only read, and stay shared.

    A call number is an 8-byte key read as a big-endian number (the same order); a
    record of another call length is not kept (its message is displayed again). Of
    records of the same call number, the last read (files in name order) is kept."""

    def __init__(
        self, paths: list[str], keys: array[int], files: array[int], offsets: array[int], sizes: array[int]
    ) -> None:
        """``keys`` and the rest, one entry a record, in the order read."""
        self.paths = paths
        order = sorted(range(len(keys)), key=keys.__getitem__)  # stable: the last read of a key comes last
        last = [at for i, at in enumerate(order) if i + 1 == len(order) or keys[order[i + 1]] != keys[at]]
        del order
        self._keys = array("Q", (keys[at] for at in last))
        self._files = array("I", (files[at] for at in last))
        self._offsets = array("q", (offsets[at] for at in last))
        self._sizes = array("I", (sizes[at] for at in last))

    def __len__(self) -> int:
        return len(self._keys)

    def find(self, call: str) -> tuple[str, int, int] | None:
        """The file, offset and size of ``call``'s record (its head included), or None."""
        data = call.encode()
        if len(data) != _KEY.size:
            return None
        key = _KEY.unpack(data)[0]
        at = bisect_left(self._keys, key)
        if at == len(self._keys) or self._keys[at] != key:
            return None
        return self.paths[self._files[at]], self._offsets[at], self._sizes[at]


class SpoolReader:
    """The spooled records of a folder: ``text`` of a message, when spooled from the same bytes."""

    def __init__(self, folder: Path) -> None:
        self.places = read_places(folder)
        self._fds: dict[str, int] = {}

    def text(self, call: str, raw_hash: str) -> SearchText | None:
        place = self.places.find(call)
        if place is None:
            return None
        path, offset, size = place
        fd = self._fds.get(path)
        if fd is None:
            fd = self._fds[path] = os.open(path, os.O_RDONLY)
        record = os.pread(fd, size, offset)
        at = 5 + record[4]  # past the length and the call
        end = at + 1 + record[at]
        if record[at + 1 : end] != raw_hash.encode():
            return None
        return SearchText(*pickle.loads(memoryview(record)[end:]))

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def read_places(folder: Path) -> SpoolPlaces:
    """Where each spooled message's record is (a torn last record is ignored)."""
    paths: list[str] = []
    keys, files, offsets, sizes = array("Q"), array("I"), array("q"), array("I")
    entries = sorted(folder.iterdir()) if folder.is_dir() else []
    for entry in entries:
        paths.append(str(entry))
        with open(entry, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            at = 0
            while True:
                head = handle.read(5)
                if len(head) < 5:
                    break
                call_size = head[4]
                call = handle.read(call_size + 1)  # and the hash's length
                if len(call) <= call_size:
                    break
                end = at + 6 + call_size + call[call_size] + _LENGTH.unpack_from(head)[0]
                if end > size:
                    break
                if call_size == _KEY.size:
                    keys.append(_KEY.unpack_from(call)[0])
                    files.append(len(paths) - 1)
                    offsets.append(at)
                    sizes.append(end - at)
                at = end
                handle.seek(at)
    return SpoolPlaces(paths, keys, files, offsets, sizes)


def clear_spool(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
