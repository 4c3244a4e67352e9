"""Compressed sources read as their content (gzip, bzip2, xz; concatenated members and
streams too) without losing what comes before damage: ``open_compressed`` returns a
buffered stream that hands over everything inflated before a file breaks off, and only
then raises (``EOFError`` for a truncated file, the decompressor's error for a damaged
one), so an import files every complete message that precedes the damage.

The standard library's file objects raise for the whole read that meets the break,
which drops up to a buffer's worth of messages (a megabyte) before it. Here input goes
to the decompressor in small blocks, so a damaged block costs at most what that block
held, and a truncation costs nothing that was complete.
"""

from __future__ import annotations

import bz2
import io
import lzma
from collections.abc import Callable
from typing import BinaryIO, Protocol

from isal import isal_zlib

__all__ = ["BLOCK", "kind_of", "open_compressed"]

BLOCK = 16 * 1024
"""Compressed bytes given to the decompressor at a time."""

_MAGIC = {"gzip": b"\x1f\x8b", "bzip2": b"BZh", "xz": b"\xfd7zXZ\x00"}


class _Decompressor(Protocol):
    eof: bool
    unused_data: bytes

    def decompress(self, data: bytes) -> bytes: ...


_NEW: dict[str, Callable[[], _Decompressor]] = {
    # ISA-L inflates about three times as fast as zlib.
    "gzip": lambda: isal_zlib.decompressobj(31),  # type: ignore[dict-item]
    "bzip2": bz2.BZ2Decompressor,
    "xz": lzma.LZMADecompressor,
}


def kind_of(magic: bytes) -> str | None:
    """The compression a file's first bytes announce, or None."""
    return next((kind for kind, start in _MAGIC.items() if magic.startswith(start)), None)


def open_compressed(raw: BinaryIO, kind: str) -> BinaryIO:
    """``raw`` (at its start) inflated: ``read``, ``readline``; ``seek(0)`` starts over."""
    return _Inflated(raw, kind)  # type: ignore[return-value]


class _Inflated:
    """The inflated content of a compressed file. A read that meets the break returns
    what came before it; the next read raises."""

    def __init__(self, raw: BinaryIO, kind: str) -> None:
        self.raw = raw
        self.kind = kind
        self._start()

    def _start(self) -> None:
        self.decompressor = _NEW[self.kind]()
        self.output = b""
        self.at = 0
        self.failure: BaseException | None = None

    def __enter__(self) -> _Inflated:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.output = b""

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if (offset, whence) != (0, io.SEEK_SET):
            raise io.UnsupportedOperation("a compressed source can only start over")
        self.raw.seek(0)
        self._start()
        return 0

    def read(self, size: int = -1) -> bytes:
        parts: list[bytes] = []
        got = 0
        while size < 0 or got < size:
            if not self._ready(bool(parts)):
                break
            end = len(self.output) if size < 0 else min(len(self.output), self.at + size - got)
            parts.append(self.output[self.at : end])
            got += end - self.at
            self.at = end
        return b"".join(parts)

    def readline(self) -> bytes:
        parts: list[bytes] = []
        while self._ready(bool(parts)):
            newline = self.output.find(b"\n", self.at)
            end = len(self.output) if newline < 0 else newline + 1
            parts.append(self.output[self.at : end])
            self.at = end
            if newline >= 0:
                break
        return b"".join(parts)

    def _ready(self, holding: bool) -> bool:
        """Whether inflated bytes are waiting (inflating more when not); False at the end
        of the file, or at a break when the caller holds bytes to hand over first."""
        while self.at >= len(self.output):
            if self.failure is not None:
                if holding:
                    return False
                raise self.failure
            if not self._inflate():
                return False
        return True

    def _inflate(self) -> bool:
        """Inflate the next block into ``output``; False at the clean end of the file."""
        self.output, self.at = b"", 0
        if self.decompressor.eof:
            rest = self.decompressor.unused_data or self.raw.read(BLOCK)
            while rest and not rest.strip(b"\0"):  # padding after the last member
                rest = self.raw.read(BLOCK)
            if not rest:
                return False
            if not rest.startswith(_MAGIC[self.kind][: len(rest)]):
                self.failure = ValueError(f"data after the end of the {self.kind} stream")
                return True
            self.decompressor = _NEW[self.kind]()
        else:
            rest = self.raw.read(BLOCK)
            if not rest:
                self.failure = EOFError("Compressed file ended before the end-of-stream marker was reached")
                return True
        try:
            self.output = self.decompressor.decompress(rest)
        except (OSError, EOFError, ValueError, isal_zlib.error, lzma.LZMAError) as exc:
            self.failure = exc
        return True
