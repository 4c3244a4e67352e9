"""Looking for traces of a message in a built site: every file under output/, gzip
files decompressed, compared without case and with HTML's escapes of ``& < > " '``
taken out (a page shows ``O'Brien`` as ``O&#39;Brien``)."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

_ESCAPES = re.compile(rb"&(amp|lt|gt|quot|#39|#x27);")


def site_files(output: Path) -> Iterator[tuple[str, bytes]]:
    """(path under output/, its bytes lower-cased, decompressed when gzipped) of every file."""
    for path in sorted(output.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".gz":
                data = gzip.decompress(data)
            yield path.relative_to(output).as_posix(), data.lower()


def files_holding(output: Path, needles: Iterable[bytes], *, with_needles: bool = False) -> list[Any]:
    """'path: needle' for every file under ``output`` holding one of ``needles`` (with
    ``with_needles``: ('path: needle', needle) pairs)."""
    wanted = [(needle, needle.lower()) for needle in needles]
    found: list[Any] = []
    for rel, data in site_files(output):
        plain = _ESCAPES.sub(b"", data)
        for needle, lowered in wanted:
            if lowered in data or lowered in plain:
                hit = f"{rel}: {needle[:60]!r}"
                found.append((hit, needle) if with_needles else hit)
    return found
