"""Hiding about fifty messages of a real archive by one search query: afterwards no file
under output/ (pages, feeds, sitemaps, downloads and the search index, decompressed)
holds what would identify one of them, no internal link is broken, and the incremental
output equals a clean build's."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from email import message_from_bytes, policy
from pathlib import Path

import pytest

from listlib.build import build_site
from listlib.config import load_config
from listlib.filing import file_sources
from listlib.search.reader import Source, search
from listlib.stewardship import Selector, steward
from listlib.store.core import Store
from listlib.store.index import FILED, HIDDEN, Row

from ..build.test_build import tree
from ..support.helpers import CORPORA
from ..support.linkcheck import check_links
from ..support.traces import files_holding

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

CORPUS = "pipermail/twisted-web"
CANDIDATES = ["nevow", "formless", "athena", "livepage", "woven", "guard", "stan", "resource", "deferred", "cookie"]


@pytest.fixture(scope="module")
def site() -> Iterator[Path]:
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not present")
    shm = Path("/dev/shm")
    folder = Path(tempfile.mkdtemp(prefix="listlib-steward-", dir=shm if shm.is_dir() else None))
    root = folder / "site"
    root.mkdir()
    (root / "listlib.toml").write_text(
        '[site]\ntitle = "Web"\nbase_url = "https://x.example/"\n[lists.web]\naddresses = ["web@example.org"]\n'
    )
    config = load_config(root / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        file_sources(store, config.lists, [CORPORA / CORPUS], forced_list="web")
    build_site(config, workers=2)
    yield root
    shutil.rmtree(folder, ignore_errors=True)


def _query_of_about(output: Path, wanted: int) -> str:
    source = Source(output / "search")
    totals = {word: search(source, word, limit=1).total for word in CANDIDATES}
    return min(totals, key=lambda word: (abs(totals[word] - wanted), word))


def _own_lines(raw: bytes) -> list[str]:
    """Lines a message wrote itself (not quoted), long enough to be distinctive."""
    message = message_from_bytes(raw, policy=policy.default)
    body = message.get_body(preferencelist=("plain",))
    if body is None:
        return []
    try:
        text = body.get_content()
    except (LookupError, ValueError):
        return []
    return [line.strip() for line in text.splitlines() if len(line.strip()) >= 40 and not line.lstrip().startswith(">")]


def _traces(content: Path, hidden: list[Row], visible: list[Row]) -> dict[str, list[bytes]]:
    """For each hidden message, strings that would identify it and that no visible
    message carries: a line it wrote, its sender's address when that sender wrote
    nothing visible, its Message-ID when nothing visible refers to it."""
    others = b"\n".join((content / row.path).read_bytes() for row in visible).lower()
    senders = Counter(row.from_addr.lower() for row in visible)
    found: dict[str, list[bytes]] = {}
    for row in hidden:
        raw = (content / row.path).read_bytes()
        own = (line.encode() for line in _own_lines(raw))
        needles = list(itertools.islice((line for line in own if line.lower() not in others), 2))
        if row.from_addr and not senders[row.from_addr.lower()] and row.from_addr.encode().lower() not in others:
            needles.append(row.from_addr.encode())
        if row.message_id and row.message_id.encode().lower() not in others:
            needles.append(row.message_id.encode())
        if needles:
            found[row.call] = needles
    return found


def _holding(output: Path, needles: dict[str, list[bytes]]) -> list[str]:
    """'path: needle of call' for every trace of a hidden message in output/ (one pass)."""
    owner = {needle: call for call, items in needles.items() for needle in items}
    return [f"{hit} of {owner[needle]}" for hit, needle in files_holding(output, owner, with_needles=True)]


def test_hiding_fifty_messages_by_a_query_leaves_no_trace_of_them(site: Path, tmp_path: Path) -> None:
    config = load_config(site / "listlib.toml")
    word = _query_of_about(site / "output", 50)
    report = steward(config, "hide", Selector(query=word), reason="corpus test", by="test")
    assert 20 <= len(report.messages) <= 120, (word, len(report.messages))
    content = site / "content"
    with Store(content).open() as store:
        hidden = store.index.find_rows((HIDDEN,))
        visible = store.index.find_rows((FILED,))
    assert {row.call for row in hidden} == {row.call for row in report.messages}
    traces = _traces(content, hidden, visible)
    assert len(traces) >= len(hidden) // 2, "the test must be able to see most hidden messages"
    before = _holding(site / "output", traces)
    assert len({line.rsplit(" of ", 1)[1] for line in before}) == len(traces)  # each is visible before the build
    build_site(config, workers=2)
    assert _holding(site / "output", traces) == []
    assert check_links(site / "output") == []
    clean = tmp_path / "clean"
    shutil.copytree(content, clean / "content", ignore=shutil.ignore_patterns(".lock", ".index"))
    shutil.copy(site / "listlib.toml", clean / "listlib.toml")
    build_site(load_config(clean / "listlib.toml"), workers=2)
    assert tree(site / "output") == tree(clean / "output")
