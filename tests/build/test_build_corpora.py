"""Building every real corpus: no crash, every filed message on exactly one thread page,
no broken internal link, nothing outside output/, and the pages of hostile mail carry
nothing that could run.

One site holds every corpus, each in a list of its own (the site is built once, on
both cores). It lives in /dev/shm when the machine has it. linux-raid is left out:
tests/steward/test_remove_corpus.py builds it anyway and makes the same checks there
(a third of this site's messages, some 70 s of the suite on a loaded machine).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from listlib.build import build_site
from listlib.config import load_config
from listlib.filing import file_sources
from listlib.store.core import Store

from ..support.helpers import CORPORA
from ..support.linkcheck import Page, check_links, parse_site

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

SOURCES = {
    "twisted": ["pipermail/twisted-python"],
    "twisted-web": ["pipermail/twisted-web"],
    "imagej": ["pipermail/imagej-devel"],
    "lkml": ["maildir/notmuch-lkml"],
    "notmuch": ["maildir/notmuch-default"],
    "ham": ["eml/spamassassin-easy-ham-1"],
    "edge": ["edge"],
}


@pytest.fixture(scope="module")
def corpus_site() -> Iterator[Path]:
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not present")
    shm = Path("/dev/shm")
    folder = Path(tempfile.mkdtemp(prefix="listlib-build-", dir=shm if shm.is_dir() else None))
    site = folder / "site"
    site.mkdir()
    lists = "".join(f'[lists.{slug}]\naddresses = ["{slug}@example.org"]\n' for slug in SOURCES)
    (site / "listlib.toml").write_text(f'[site]\ntitle = "Corpora"\nbase_url = "https://x.example/"\n{lists}')
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        for slug, sources in SOURCES.items():
            file_sources(store, config.lists, [CORPORA / s for s in sources], forced_list=slug)
    build_site(config, workers=2)
    yield site
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def pages(corpus_site: Path) -> dict[Path, Page]:
    return parse_site(corpus_site / "output")


def test_every_filed_message_is_on_exactly_one_thread_page(corpus_site: Path, pages: dict[Path, Page]) -> None:
    output = corpus_site / "output"
    seen: Counter[str] = Counter()
    dangers: list[str] = []
    for path, page in pages.items():
        parts = path.relative_to(output).parts
        if len(parts) != 4 or parts[0] not in SOURCES:
            continue
        seen.update(f"{parts[0]}:{call}" for call in page.messages)
        dangers.extend(f"{path.relative_to(output)}: {d}" for d in page.dangers)
    with Store(corpus_site / "content").open() as store:
        filed = Counter(f"{row.list}:{row.call}" for row in store.index.iter_rows() if row.list in SOURCES)
    assert len(filed) > 19_000
    assert set(seen) == set(filed)
    assert [key for key, count in seen.items() if count != 1] == []
    assert dangers == []


def test_no_internal_link_is_broken(corpus_site: Path, pages: dict[Path, Page]) -> None:
    assert check_links(corpus_site / "output", pages) == []


def test_nothing_is_written_outside_output(corpus_site: Path) -> None:
    """No symbolic link under output/ (so every path under it stays in it: the walk
    sees no ``..``), and nothing next to it but the site's own folders."""
    folders = [(corpus_site / "output").resolve()]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                assert not entry.is_symlink(), entry.path
                if entry.is_dir():
                    folders.append(Path(entry.path))
    assert sorted(p.name for p in corpus_site.iterdir()) == [".cache", "content", "listlib.toml", "output"]


def test_a_second_build_writes_nothing(corpus_site: Path) -> None:
    report = build_site(load_config(corpus_site / "listlib.toml"), workers=2)
    assert report.written == [] and report.removed == []
