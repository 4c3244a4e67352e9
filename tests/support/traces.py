"""Looking for traces of a message in a built site: every file under output/, gzip
files decompressed, compared without case, as it is, with HTML's escapes of
``& < > " '`` read as their characters (a page shows ``O'Brien`` as ``O&#39;Brien``)
and with them taken out.

A corpus site's output is hundreds of MB, and Python's ``in`` reads it once per needle
(about a second a needle for linux-raid), so ``files_holding`` first streams everything
through one ``grep -F`` (Aho-Corasick over all the needles at once) and then checks
exactly, in Python, only the files grep named: grep only narrows, the answer is Python's."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

_ESCAPES = re.compile(rb"&(amp|lt|gt|quot|#39|#x27);")
_CHARACTERS = (
    (b"&lt;", b"<"),
    (b"&gt;", b">"),
    (b"&quot;", b'"'),
    (b"&#39;", b"'"),
    (b"&#x27;", b"'"),
    (b"&amp;", b"&"),
)


def readings(data: bytes) -> list[bytes]:
    """The ways a needle can be in ``data``: as it is, with its escapes read, without them."""
    read = data
    if b"&" in data:
        for escape, character in _CHARACTERS:  # &amp; last: "&amp;lt;" reads "&lt;"
            read = read.replace(escape, character)
    return [data, read, _ESCAPES.sub(b"", data)]


def site_files(output: Path) -> Iterator[tuple[str, bytes]]:
    """(path under output/, its bytes lower-cased, decompressed when gzipped) of every file."""
    for path in sorted(output.rglob("*")):
        if path.is_file():
            yield path.relative_to(output).as_posix(), _read(path)


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.lower()


def files_holding(output: Path, needles: Iterable[bytes], *, with_needles: bool = False) -> list[Any]:
    """'path: needle' for every file under ``output`` holding one of ``needles`` (with
    ``with_needles``: ('path: needle', needle) pairs)."""
    wanted = [(needle, needle.lower()) for needle in needles]
    found: list[Any] = []
    for rel, data in _candidates(output, [lowered for _needle, lowered in wanted]):
        texts = readings(data)
        for needle, lowered in wanted:
            if any(lowered in text for text in texts):
                hit = f"{rel}: {needle[:60]!r}"
                found.append((hit, needle) if with_needles else hit)
    return found


def _candidates(output: Path, needles: list[bytes]) -> Iterator[tuple[str, bytes]]:
    """The files of ``site_files`` that may hold one of ``needles``: all of them without
    grep (or for an empty needle), else those where ``grep -F`` finds one in one of the
    file's ``readings``, each flattened to one line (a newline read as a
    space, in the needles too: a flattened match that is not a real one is dropped by
    the exact check)."""
    grep = shutil.which("grep")
    if grep is None or not needles or not all(needles):
        yield from site_files(output)
        return
    paths = [path for path in sorted(output.rglob("*")) if path.is_file()]
    with tempfile.TemporaryFile() as patterns, tempfile.TemporaryFile() as hits:
        patterns.write(b"".join(needle.replace(b"\n", b" ") + b"\n" for needle in needles))
        patterns.seek(0)
        with subprocess.Popen(
            [grep, "-F", "-a", "-n", "-o", "-f", f"/dev/fd/{patterns.fileno()}"],
            stdin=subprocess.PIPE,
            stdout=hits,
            pass_fds=(patterns.fileno(),),
            env={"LC_ALL": "C"},
        ) as process:
            assert process.stdin is not None
            for path in paths:
                data = _read(path)
                for text in readings(data):
                    process.stdin.write(text.replace(b"\n", b" ") + b"\n")
            process.stdin.close()
        assert process.returncode in (0, 1), f"grep exited {process.returncode}"
        hits.seek(0)
        lines = {int(line.split(b":", 1)[0]) for line in hits if line.strip()}
    for index in sorted({(line - 1) // 3 for line in lines}):
        yield paths[index].relative_to(output).as_posix(), _read(paths[index])
