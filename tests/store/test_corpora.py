"""Every file of the shared real-mail corpora imports without a crash, and adds up.

For each source: filed + duplicates + failed == messages read; every stored
file holds exactly the bytes read for it; and the mbox splitter is lossless
(separators + re-quoted messages + blank lines rebuild the decompressed file
byte for byte), so no message can hide between two others.
"""

from __future__ import annotations

import gzip
import hashlib
import io
from collections import Counter
from pathlib import Path

import pytest

from listlib.config import ListConfig
from listlib.filers import _open_file, open_source
from listlib.filers.mbox import is_separator, iter_mbox, quote_mboxrd
from listlib.filing import FilingReport, file_sources
from listlib.store.core import Store
from listlib.verify import check_store

from ..support.helpers import CORPORA

pytestmark = [pytest.mark.corpus]

LISTS = (
    ListConfig("linux-raid", "linux-raid", "", ("linux-raid@vger.kernel.org",), ("linux-raid.vger.kernel.org",)),
    ListConfig("twisted", "Twisted", "", ("twisted-python@twistedmatrix.com",), ()),
)

# Counts from corpora/README.md, corrected where the stdlib splits at body lines
# such as "From what do I see, ..." (3 in twisted-web, 1 in imagej-devel).
KNOWN_COUNTS = {
    "mbox/linux-raid.mboxrd.gz": 19_526,
    "pipermail/twisted-web": 5_374,
    "pipermail/imagej-devel": 2_718,
    "maildir/notmuch-lkml": 210,
    "maildir/notmuch-default": 53,
    "eml/spamassassin-easy-ham-1": 2_500,
}


def big_sources() -> list[str]:
    return ["mbox/linux-raid.mboxrd.gz", "pipermail/twisted-python", *list(KNOWN_COUNTS)[1:]]


def edge_files() -> list[str]:
    if not CORPORA.is_dir():
        return []
    return sorted(str(p.relative_to(CORPORA)) for p in (CORPORA / "edge").rglob("*") if p.is_file())


def import_and_verify(source: Path, content: Path, digests: dict[str, str] | None = None) -> FilingReport:
    """Import ``source`` into the store at ``content`` (empty, or filled before): it adds
    up, the index rows already there are unchanged and their files untouched (same size,
    inode and modification time: their bytes were checked when they were filed), every
    row it adds holds exactly the bytes read for it, and the store checks. With
    ``digests`` (origin -> SHA-256, ``source_digests``), the source is not read for them."""
    if digests is None:
        digests = source_digests(source)
    with Store(content).open() as store:
        old = list(store.index.iter_rows())
        files = {row.path: _signature(content / row.path) for row in old}
        report = file_sources(store, LISTS, [source])
        assert report.messages == len(digests)
        assert report.filed + report.duplicates + report.failed == report.messages
        rows = list(store.index.iter_rows())
        assert len(rows) - len(old) == report.filed + report.failed
        calls = {row.call for row in old}
        assert [row for row in rows if row.call in calls] == old
        assert {row.path: _signature(content / row.path) for row in old} == files
        for row in rows:
            if row.call not in calls:
                stored = hashlib.sha256((content / row.path).read_bytes()).hexdigest()
                assert stored == digests[row.origin], f"{row.path} differs from {row.origin}"
        assert check_store(store).ok
    return report


def source_digests(source: Path) -> dict[str, str]:
    return {m.origin: hashlib.sha256(m.raw).hexdigest() for m in open_source(source).iter_mail()}


def _signature(path: Path) -> tuple[int, int, int]:
    found = path.stat()
    return found.st_size, found.st_ino, found.st_mtime_ns


def assert_split_is_lossless(path: Path) -> None:
    stream, raw = _open_file(path)
    with raw, stream:
        data = stream.read()
    first = data.split(b"\n", 1)[0].rstrip(b"\r")
    if not is_separator(first):
        return
    rd = first.startswith(b"From mboxrd@z ")
    start = 0
    for part in iter_mbox(io.BytesIO(data)):
        eol = b"\r\n" if data[start + len(part.separator) : start + len(part.separator) + 1] == b"\r" else b"\n"
        body = quote_mboxrd(part.raw) if rd else part.raw
        assert data[start : part.end] == part.separator + eol + body + part.trailer, f"{path} at byte {start}"
        start = part.end
    assert start == len(data)


@pytest.fixture(scope="module")
def corpora_dir() -> Path:
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not present")
    return CORPORA


@pytest.mark.slow
@pytest.mark.parametrize("name", big_sources())
def test_real_archive_imports_exactly(name: str, corpora_dir: Path, tmp_path: Path) -> None:
    source = corpora_dir / name
    digests = source_digests(source)
    report = import_and_verify(source, tmp_path / "content", digests)
    if name in KNOWN_COUNTS:
        assert report.messages == KNOWN_COUNTS[name]
    if name == "pipermail/twisted-python":
        assert_each_doubled_message_filed_once(report, tmp_path / "content")
    for path in [source] if source.is_file() else sorted(source.rglob("*.gz")):
        assert_split_is_lossless(path)
    again = import_and_verify(source, tmp_path / "content", digests)
    assert (again.filed, again.duplicates) == (0, report.messages - report.failed)


def assert_each_doubled_message_filed_once(report: FilingReport, content: Path) -> None:
    """twisted-python's Pipermail months hold many posts twice (re-archived cross-posts):
    each distinct post is filed once; the only repeats are genuine collisions (a different
    subject on a re-archived cross-post, a spam-elided copy), reported as such."""
    assert report.messages == 65_706
    with Store(content).open() as store:
        ids = Counter(row.message_id for row in store.index.iter_rows())
    repeats = {mid: n for mid, n in ids.items() if n > 1 and mid is not None}
    assert len(repeats) == report.collisions <= 3
    assert report.filed == len(ids) + sum(n - 1 for n in repeats.values()) + ids[None] - (1 if None in ids else 0)
    assert 33_000 <= report.filed <= 33_400


@pytest.mark.parametrize("name", edge_files())
def test_edge_case_file_imports_and_adds_up(name: str, corpora_dir: Path, tmp_path: Path) -> None:
    source = corpora_dir / name
    skipped = open_source(source).skipped if source.is_dir() else []
    if source.name.lower().startswith(("license", "copying")) or source.suffix == ".zip":
        pytest.skip("not mail")
    import_and_verify(source, tmp_path / "content")
    assert not skipped
    assert_split_is_lossless(source)


def test_8bit_separator_files_that_crash_the_stdlib_import(corpora_dir: Path, tmp_path: Path) -> None:
    for name in ("mbox_iso8859_encoding.mbox", "mbox_unixfrom_encoding.mbox"):
        source = corpora_dir / "edge" / "perceval" / "mbox" / name
        report = import_and_verify(source, tmp_path / name)
        assert report.messages > 0 and report.failed == 0


def test_gzip_helper_reads_pipermail(corpora_dir: Path) -> None:
    with gzip.open(corpora_dir / "pipermail" / "twisted-web" / "2005-August.txt.gz") as f:
        assert f.read(5) == b"From "
