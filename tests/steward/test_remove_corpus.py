"""A take-down in a real archive (linux-raid): one message in the middle of a long
thread is removed and about fifty are hidden by one search query. After the next
(incremental) build no file under output/ holds what would identify any of them, the
removed one's permanent URL and Message-ID page are tombstones, its thread keeps a
placeholder where it was (every answer in its place), no internal link is broken, the
output equals a clean build's, and a re-import of the whole corpus files nothing."""

from __future__ import annotations

import itertools
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from email import message_from_bytes
from pathlib import Path

import pytest

from listlib.build import build_site
from listlib.config import load_config
from listlib.filing import file_sources
from listlib.overrides import threading_overrides
from listlib.search.reader import Source, search
from listlib.stewardship import Selector, redact, steward
from listlib.store.core import Store
from listlib.store.index import FILED, HIDDEN, REMOVED, Row
from listlib.threadset import ThreadSet
from listlib.urls import message_id_path, message_path, raw_path
from listlib.values import Month

from ..build.test_build import tree
from ..support.helpers import CORPORA
from ..support.linkcheck import Page, check_links, parse_site
from ..support.traces import files_holding
from .test_steward_corpus import _own_lines

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

CORPUS = "mbox/linux-raid.mboxrd.gz"
SLUG = "raid"
CANDIDATES = ["zfs", "kasan", "scrub", "grub", "smartctl", "syzbot"]
"""Words whose hits in linux-raid are a few dozen (the closest to fifty is hidden)."""
LONG_THREAD = 10
TOML = (
    '[site]\ntitle = "Raid"\nbase_url = "https://x.example/"\n'
    '[lists.raid]\naddresses = ["linux-raid@vger.kernel.org"]\nlist_ids = ["linux-raid.vger.kernel.org"]\n'
)

Shape = list[tuple[str, str | None, int]]


@dataclass
class TakeDown:
    """The site after the hide and the removal (and their builds), and what the test saw before."""

    site: Path
    removed: Row
    needles: list[bytes]
    """What identifies the removed message (and nothing else in the corpus)."""
    hidden: list[Row]
    traces: dict[str, list[bytes]]
    """Call -> what identifies each hidden message."""
    thread_id: str
    thread_page: Path
    shape: Shape
    """The thread cache's (call, parent, depth) of its thread before the removal."""
    sections: list[tuple[str, str, str | None]]
    """The thread page's (id, indent, parent) of each message section before the removal."""
    seen_before: set[bytes]
    """The needles the build before the removal had published."""
    redacted: Row
    """The message redacted: a line of its own replaced."""
    redacted_line: bytes


def _shape(site: Path, thread_id: str) -> Shape:
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store, ThreadSet(config.site.cache_dir).open() as threads:
        threads.update(store.index, threading_overrides(store.root, store.index, [SLUG]))
        entry = threads.thread(SLUG, thread_id)
        assert entry is not None, thread_id
        return list(entry.messages)


_SECTION = re.compile(r'<article class="message indent-(\d+)" id="([^"]+)"')
_PARENT = re.compile(r'<a href="[^"#]*#([^"]+)">parent<')


def _pages(first: Path) -> list[Path]:
    """A thread's pages: its own, then ``<root>-2.html``, ``<root>-3.html`` … (a long thread)."""
    more = sorted(first.parent.glob(f"{first.stem}-*.html"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    return [first, *more]


def _sections(page: Path) -> list[tuple[str, str, str | None]]:
    """(id, indent, parent) of every message section of a thread, over all its pages, in
    order (a parent link to another page is named by its anchor alone)."""
    found = []
    for one in _pages(page):
        text = one.read_text(encoding="utf-8")
        for start in _SECTION.finditer(text):
            end = text.find("</header>", start.end())
            parent = _PARENT.search(text, start.end(), end)
            found.append((start.group(2), start.group(1), parent.group(1) if parent else None))
    return found


def _query_of_about(output: Path, wanted: int) -> str:
    source = Source(output / "search")
    totals = {word: search(source, word, limit=1).total for word in CANDIDATES}
    return min(totals, key=lambda word: (abs(totals[word] - wanted), word))


def _candidates(site: Path) -> list[tuple[str, str, frozenset[str]]]:
    """(thread id, call, the thread's calls) of messages in the middle of long threads
    with a real root: each answers a message and has answers; the longest threads first."""
    config = load_config(site / "listlib.toml")
    found: list[tuple[int, str, str, frozenset[str]]] = []
    with Store(config.site.content_dir).open() as store, ThreadSet(config.site.cache_dir).open() as threads:
        threads.update(store.index, threading_overrides(store.root, store.index, [SLUG]))
        entries = threads.threads(SLUG, threads.thread_ids(SLUG)).values()
        for entry in entries:
            if len(entry.messages) < LONG_THREAD or entry.missing_root is not None:
                continue
            members = frozenset(call for call, _parent, _depth in entry.messages)
            parents = {parent for _call, parent, _depth in entry.messages}
            for position, (call, parent, _depth) in enumerate(entry.messages):
                if parent is not None and call in parents and 0 < position < len(entry.messages) - 1:
                    found.append((-len(entry.messages), entry.id, call, members))
    found.sort(key=lambda one: one[:3])
    return [(thread_id, call, members) for _size, thread_id, call, members in found]


def _known_text(raw: bytes) -> bytes:
    """A message's bytes and, for parts in quoted-printable or base64, their decoded text
    (a quote in such a reply is not in its bytes), lower-cased."""
    lowered = raw.lower()
    if b"quoted-printable" not in lowered and b"base64" not in lowered:
        return lowered  # no part to decode (most messages: parsing them all took 7 s)
    found = [raw]
    for part in message_from_bytes(raw).walk():
        encoding = str(part.get("Content-Transfer-Encoding", "")).strip().lower()
        if part.get_content_maintype() != "text" or encoding not in ("quoted-printable", "base64"):
            continue
        payload = part.get_payload(decode=True)
        if isinstance(payload, bytes):
            try:
                text = payload.decode(part.get_content_charset() or "utf-8", "replace")
            except LookupError:
                text = payload.decode("utf-8", "replace")
            found.append(text.encode("utf-8"))
    return b"\0".join(found).lower()


class Corpus:
    """The known text of every message, to ask whether a string is only in one of them."""

    def __init__(self, texts: dict[str, bytes]) -> None:
        self.everything = b"\0".join(texts.values())
        self.spans: dict[str, tuple[int, int]] = {}
        start = 0
        for call, text in texts.items():
            self.spans[call] = (start, start + len(text))
            start += len(text) + 1

    def only_in(self, call: str, needle: bytes) -> bool:
        """Whether no message but ``call`` holds ``needle`` (any case)."""
        wanted = needle.lower()
        low, high = self.spans[call]
        at = self.everything.find(wanted)
        while at >= 0:
            if not low <= at < high:
                return False
            at = self.everything.find(wanted, at + 1)
        return True


def _prose(line: str) -> bool:
    """A sentence a reader would recognise (not code, a diff or a log line)."""
    return (
        line[0].isalpha() and sum(word.isalpha() for word in line.split()) >= 6 and not set(line) & set("{}();*/=<>|")
    )


def _choose(
    content: Path, rows: list[Row], corpus: Corpus, candidates: list[tuple[str, str]]
) -> tuple[str, Row, list[bytes]]:
    """The first candidate with a sentence of its own that no other message holds, best
    one whose sender wrote nothing else; its needles (that sentence, its Message-ID when
    no other message names it, its sender's address when no other message holds it)."""
    by_call = {row.call: row for row in rows}
    senders = Counter(row.from_addr.lower() for row in rows)
    fallback: tuple[str, Row, list[bytes]] | None = None
    for thread_id, call in candidates:
        row = by_call[call]
        lone = bool(row.from_addr) and senders[row.from_addr.lower()] == 1
        address = lone and corpus.only_in(call, row.from_addr.encode())
        if fallback is not None and not address:
            continue
        lines = (line.encode() for line in _own_lines((content / row.path).read_bytes()) if _prose(line))
        line = next((line for line in lines if corpus.only_in(call, line)), None)
        if line is None:
            continue
        needles = [line]
        if row.message_id and corpus.only_in(call, row.message_id.encode()):
            needles.append(row.message_id.encode())
        if address:
            return thread_id, row, [*needles, row.from_addr.encode()]
        fallback = fallback or (thread_id, row, needles)
    assert fallback is not None, "no message in a long thread has a sentence of its own"
    return fallback


def _redaction(content: Path, rows: list[Row], corpus: Corpus, skip: str) -> tuple[Row, bytes, bytes]:
    """A message (not ``skip``) with a sentence of its own written plainly in its bytes,
    the sentence, and the message with that sentence replaced."""
    for row in rows:
        if row.call == skip or row.list != SLUG:
            continue
        raw = (content / row.path).read_bytes()
        for text in _own_lines(raw):
            line = text.encode()
            if _prose(text) and raw.count(line) == 1 and corpus.only_in(row.call, line):
                return row, line, raw.replace(line, b"[this line was redacted by the list admins]")
    raise AssertionError("no message has a sentence of its own to redact")


def _traces(content: Path, hidden: list[Row], visible: list[Row], texts: dict[str, bytes]) -> dict[str, list[bytes]]:
    """For each hidden message, strings that would identify it and that no visible
    message carries (in its bytes or its decoded text): up to two lines it wrote, its
    sender's address when that sender wrote nothing visible, its Message-ID when nothing
    visible names it (as tests/steward/test_steward_corpus.py looks for them)."""
    others = b"\0".join(texts[row.call] for row in visible)
    senders = Counter(row.from_addr.lower() for row in visible)
    found: dict[str, list[bytes]] = {}
    for row in hidden:
        own = (line.encode() for line in _own_lines((content / row.path).read_bytes()))
        needles = list(itertools.islice((line for line in own if line.lower() not in others), 2))
        address = row.from_addr.encode()
        if row.from_addr and not senders[row.from_addr.lower()] and address.lower() not in others:
            needles.append(address)
        if row.message_id and row.message_id.encode().lower() not in others:
            needles.append(row.message_id.encode())
        if needles:
            found[row.call] = needles
    return found


@pytest.fixture(scope="module")
def taken_down() -> Iterator[TakeDown]:
    if not (CORPORA / CORPUS).is_file():
        pytest.skip(f"{CORPORA / CORPUS} not present")
    shm = Path("/dev/shm")
    folder = Path(tempfile.mkdtemp(prefix="listlib-remove-", dir=shm if shm.is_dir() else None))
    try:
        site = folder / "site"
        site.mkdir()
        (site / "listlib.toml").write_text(TOML)
        config = load_config(site / "listlib.toml")
        content = config.site.content_dir
        with Store(content).open() as store:
            file_sources(store, config.lists, [CORPORA / CORPUS], forced_list=SLUG)
        build_site(config, workers=2)
        word = _query_of_about(site / "output", 50)
        candidates = _candidates(site)
        # The hide, the removal and the redaction all reach output/ in one build (below);
        # until then output/ is the first build's, which shows every one of them.
        report = steward(config, "hide", Selector(query=word), reason="corpus test", by="test")
        assert 20 <= len(report.messages) <= 120, (word, len(report.messages))
        with Store(content).open() as store:
            hidden = store.index.find_rows((HIDDEN,))
            filed = store.index.find_rows((FILED,))
        texts = {row.call: _known_text((content / row.path).read_bytes()) for row in filed + hidden}
        # A thread with a hidden message is left out: its page as built now is not the one
        # whose sections the removal must keep.
        untouched = [
            (thread_id, call) for thread_id, call, members in candidates if not members & {row.call for row in hidden}
        ]
        thread_id, removed, needles = _choose(content, filed + hidden, Corpus(texts), untouched)
        traces = _traces(content, hidden, [row for row in filed if row.call != removed.call], texts)
        assert len(traces) >= len(hidden) // 2, "the test must be able to see most hidden messages"
        (root,) = [row for row in filed if row.call == thread_id]
        thread_page = site / "output" / message_path(SLUG, Month(root.year, root.month), thread_id)
        redacted, line, edited = _redaction(content, filed[len(filed) // 2 :], Corpus(texts), removed.call)
        seen = {needle for _hit, needle in files_holding(site / "output", [*needles, line], with_needles=True)}
        assert line in seen  # the test can see the line to redact
        seen.discard(line)
        shape, sections = _shape(site, thread_id), _sections(thread_page)
        done = steward(config, "remove", Selector(ids=(removed.call,)), reason="privacy request", by="test")
        assert [row.call for row in done.messages] == [removed.call]
        redact(config, redacted.call, edited, reason="a password", by="test")
        build_site(config, workers=2)
        yield TakeDown(
            site, removed, needles, hidden, traces, thread_id, thread_page, shape, sections, seen, redacted, line
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


MARKER, EDITED = b"[this line was redacted by the list admins]", b"edited by the archive on"


@pytest.fixture(scope="module")
def found(taken_down: TakeDown) -> list[tuple[str, bytes]]:
    """('path: needle', needle) for every file under output/ holding a trace of the
    removed, the hidden or the redacted message, or the marks a redaction leaves: one
    pass over some 600 MB for every test that looks."""
    row = taken_down.removed
    assert row.message_id is not None
    needles = [*(needle for items in taken_down.traces.values() for needle in items), *taken_down.needles]
    needles += [row.message_id.encode(), taken_down.redacted_line, MARKER, EDITED]
    return files_holding(taken_down.site / "output", dict.fromkeys(needles), with_needles=True)


@pytest.fixture(scope="module")
def pages(taken_down: TakeDown) -> dict[Path, Page]:
    return parse_site(taken_down.site / "output")


def test_no_file_holds_a_trace_of_the_removed_or_the_hidden_messages(
    taken_down: TakeDown, found: list[tuple[str, bytes]]
) -> None:
    output = taken_down.site / "output"
    row = taken_down.removed
    assert row.message_id is not None
    assert taken_down.seen_before == set(taken_down.needles)  # the test could see every one of them
    owner = {needle: call for call, needles in taken_down.traces.items() for needle in needles}
    owner.update({needle: row.call for needle in taken_down.needles})
    mid = row.message_id.encode()
    assert [f"{hit} of {owner[needle]}" for hit, needle in found if needle in owner and needle != mid] == []
    # Its Message-ID is left only where its answers name it: their raw copies' References
    # and In-Reply-To (and the downloads holding them).
    holding = {hit.split(":")[0] for hit, needle in found if needle == mid}
    assert all(path.endswith((".eml", ".mbox.gz")) for path in holding), holding
    assert not (output / raw_path(SLUG, Month(row.year, row.month), row.call)).exists()
    assert not (taken_down.site / "content" / row.path).exists()


def test_the_redacted_line_is_gone_and_its_page_says_the_message_was_edited(
    taken_down: TakeDown, found: list[tuple[str, bytes]]
) -> None:
    seen = {needle for _hit, needle in found}
    assert taken_down.redacted_line not in seen
    assert MARKER in seen
    assert EDITED in seen, "its thread page says it was edited"
    row = taken_down.redacted
    stored = (taken_down.site / "content" / row.path).read_bytes()
    assert taken_down.redacted_line not in stored and b"redacted by the list admins" in stored


def test_its_permanent_url_and_message_id_page_are_noindex_tombstones(taken_down: TakeDown) -> None:
    row = taken_down.removed
    output = taken_down.site / "output"
    page = (output / message_path(SLUG, Month(row.year, row.month), row.call)).read_text()
    assert "removed from the archive on" in page and 'name="robots" content="noindex' in page
    assert "privacy request" not in page
    assert row.message_id is not None
    lookup = (output / message_id_path(row.message_id)).read_text()
    assert "removed from the archive on" in lookup and 'name="robots" content="noindex' in lookup
    assert row.message_id.lower() not in lookup.lower()
    with Store(taken_down.site / "content").open() as store:
        (now,) = store.index.rows_by_call([row.call])
    assert now.state == REMOVED and now.message_id is None and now.subject == "" and now.from_addr == ""


def test_its_thread_keeps_a_placeholder_where_it_was(taken_down: TakeDown) -> None:
    assert _shape(taken_down.site, taken_down.thread_id) == taken_down.shape
    sections = _sections(taken_down.thread_page)
    assert sections == taken_down.sections  # every message at its place and depth, the parent links too
    assert any(call == taken_down.removed.call for call, _indent, _parent in sections)
    (text,) = [
        text
        for page in _pages(taken_down.thread_page)
        if f'id="{taken_down.removed.call}"' in (text := page.read_text())
    ]
    start = text.index(f'id="{taken_down.removed.call}"')
    assert '<h2 id="h-' + taken_down.removed.call + '" class="author">Removed</h2>' in text[start : start + 400]


def test_no_internal_link_is_broken(taken_down: TakeDown, pages: dict[Path, Page]) -> None:
    assert check_links(taken_down.site / "output", pages) == []


def test_every_shown_message_is_on_exactly_one_thread_page_and_no_page_carries_active_markup(
    taken_down: TakeDown, pages: dict[Path, Page]
) -> None:
    """The checks of tests/build/test_build_corpora.py for this corpus (which that site
    leaves out, since this one builds it): a filed message, and the removed one's
    placeholder, on exactly one thread page, a hidden one on none; no thread page holds
    markup that could run."""
    output = taken_down.site / "output"
    seen: Counter[str] = Counter()
    dangers: list[str] = []
    for path, page in pages.items():
        parts = path.relative_to(output).parts
        if len(parts) == 4 and parts[0] == SLUG:
            seen.update(page.messages)
            dangers.extend(f"{path.relative_to(output)}: {danger}" for danger in page.dangers)
    with Store(taken_down.site / "content").open() as store:
        shown = {row.call for row in store.index.find_rows((FILED, REMOVED)) if row.list == SLUG}
    assert len(shown) > 19_000
    assert set(seen) == shown
    assert [call for call, count in seen.items() if count != 1] == []
    assert {row.call for row in taken_down.hidden}.isdisjoint(seen)
    assert dangers == []


def test_a_build_with_nothing_new_writes_nothing(taken_down: TakeDown) -> None:
    report = build_site(load_config(taken_down.site / "listlib.toml"), workers=2)
    assert report.written == [] and report.removed == []


def test_the_incremental_output_equals_a_clean_build(taken_down: TakeDown) -> None:
    site = taken_down.site
    clean = site.parent / "clean"
    try:
        shutil.copytree(site / "content", clean / "content", ignore=shutil.ignore_patterns(".lock", ".index"))
        shutil.copy(site / "listlib.toml", clean / "listlib.toml")
        build_site(load_config(clean / "listlib.toml"), workers=2, clean=True)
        assert tree(site / "output") == tree(clean / "output")
    finally:
        shutil.rmtree(clean, ignore_errors=True)


def test_a_reimport_of_the_corpus_refuses_them_and_files_nothing(taken_down: TakeDown) -> None:
    config = load_config(taken_down.site / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        count = store.index.count()
        report = file_sources(store, config.lists, [CORPORA / CORPUS], forced_list=SLUG)
        assert store.index.count() == count
    assert report.filed == 0 and report.failed == 0, report.summary()
    assert report.removed == 1, report.summary()
    assert len(taken_down.hidden) <= report.refused <= len(taken_down.hidden) + 5, report.summary()
    assert "1 refused (removed)" in report.summary() and f"{report.refused} refused (hidden)" in report.summary()
