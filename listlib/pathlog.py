"""A list of output paths that moves to an unnamed temporary file past a few thousand:
what a build reports it wrote (``build.BuildReport.written``), which for a full build
is every file of the site (two million paths at a million messages). Keeps their
order; never holds more than ``IN_MEMORY`` of them in memory until it is read whole.
Never names, keeps or shares its file: it is gone with the object.
"""

from __future__ import annotations

import tempfile
import weakref
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, overload

__all__ = ["IN_MEMORY", "PathLog"]

IN_MEMORY = 4096
"""Paths kept in memory; past them, they go to the file."""
_SEP = b"\0"
"""Between paths in the file (no path holds a NUL)."""
_READ = 1 << 20


class PathLog(Sequence[str]):
    """Paths in the order they were added; compares equal to a list of the same paths."""

    def __init__(self, paths: Iterable[str] = (), *, in_memory: int = IN_MEMORY) -> None:
        self._tail: list[str] = []
        """The paths added since the last spill, in memory."""
        self._file: IO[bytes] | None = None
        self._spilled = 0
        self._in_memory = in_memory
        self.extend(paths)

    def append(self, path: str) -> None:
        self._tail.append(path)
        if len(self._tail) >= self._in_memory:
            self._spill()

    def extend(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.append(path)

    def _spill(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="listlib-paths-")  # noqa: SIM115 (lives with the object)
            weakref.finalize(self, self._file.close)
        self._file.seek(0, 2)
        self._file.write(b"".join(path.encode("utf-8", "surrogatepass") + _SEP for path in self._tail))
        self._spilled += len(self._tail)
        self._tail = []

    def __len__(self) -> int:
        return self._spilled + len(self._tail)

    def __iter__(self) -> Iterator[str]:
        if self._file is not None:
            self._file.seek(0)
            rest = b""
            while block := self._file.read(_READ):
                *whole, rest = (rest + block).split(_SEP)
                yield from (path.decode("utf-8", "surrogatepass") for path in whole)
        yield from list(self._tail)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, int) and self._spilled <= index < len(self):
            return self._tail[index - self._spilled]
        return list(self)[index]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PathLog | list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = list(self) if len(self) <= 10 else [*self[:10], "..."]
        return f"PathLog({shown!r}, {len(self)} paths)"
