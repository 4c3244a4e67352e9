"""Threading every real corpus: each message in exactly one thread, answers under
what they answer, the same threads whatever order the mail was imported in, and
adding one message to linux-raid rethreads only what it touches.

Sites live in /dev/shm when the machine has it (the imports are the slow part).
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from listlib.config import ListConfig
from listlib.filers import open_source
from listlib.filers.mbox import quote_mboxrd
from listlib.filing import file_sources
from listlib.store.core import Store
from listlib.store.index import Row
from listlib.threadset import ThreadSet
from listlib.values import Month

from ..support.helpers import CORPORA, make_message

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

LIST = ListConfig("l", "l", "", ("l@example.org",), ())
SOURCES = [
    "mbox/linux-raid.mboxrd.gz",
    "pipermail/twisted-python",
    "pipermail/twisted-web",
    "pipermail/imagej-devel",
    "maildir/notmuch-lkml",
    "maildir/notmuch-default",
    "eml/spamassassin-easy-ham-1",
]


@pytest.fixture
def scratch() -> Iterator[Path]:
    shm = Path("/dev/shm")
    folder = Path(tempfile.mkdtemp(prefix="listlib-threads-", dir=shm if shm.is_dir() else None))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def mbox_entry(raw: bytes, separator: bytes | None) -> bytes:
    """One message as an mboxrd file holds it: its separator line, its quoted bytes, a blank line."""
    quoted = quote_mboxrd(raw)
    return (
        (separator or b"From mboxrd@z Thu Jan  1 00:00:00 1970")
        + b"\n"
        + quoted
        + (b"" if quoted.endswith(b"\n") else b"\n")
        + b"\n"
    )


def write_mbox(path: Path, entries: list[bytes]) -> None:
    """An mboxrd file of ``entries`` (``mbox_entry``'s), in their order."""
    with path.open("wb") as out:
        out.writelines(entries)


def thread_site(mbox: Path, site: Path) -> tuple[dict[str, Row], ThreadSet, Store]:
    store = Store(site / "content").open()
    file_sources(store, [LIST], [mbox], forced_list="l")
    threadset = ThreadSet(site / "cache").open()
    threadset.update(store.index)
    rows = {row.call: row for row in store.index.iter_rows() if row.list == "l"}
    return rows, threadset, store


def structure(rows: dict[str, Row], threadset: ThreadSet) -> set[frozenset[tuple[str | None, str | None]]]:
    """Threads as sets of (message, parent), naming messages by what they are, not by
    call number: by Message-ID when it is unique in the list, else with the content
    hash. Of two copies of one post with one Message-ID (a resend, a cross-post with
    other headers) dedup keeps whichever came first: the same message with other
    bytes and perhaps another date, which may change its place among its siblings
    but never its parent. Messages without a Message-ID are named by sender,
    subject and body, as dedup sees them."""
    counts = Counter(row.message_id for row in rows.values())

    def name(call: str | None) -> str | None:
        if call is None:
            return None
        row = rows[call]
        if not row.message_id:
            return "vitals:" + row.vitals  # what dedup compares copies without a Message-ID by
        return row.message_id if counts[row.message_id] == 1 else f"{row.message_id}|{row.raw_hash}"

    entries = threadset.threads("l", threadset.thread_ids("l")).values()
    return {frozenset((name(c), name(p)) for c, p, _ in entry.messages) for entry in entries}


def check_invariants(rows: dict[str, Row], threadset: ThreadSet) -> None:
    entries = threadset.threads("l", threadset.thread_ids("l")).values()
    placed = [call for entry in entries for call, _, _ in entry.messages]
    assert len(placed) == len(set(placed)), "a message sits in two threads"
    assert set(placed) == set(rows), "a message is in no thread"
    parent_of = {call: parent for entry in entries for call, parent, _ in entry.messages}
    owner: dict[str, str] = {}
    for row in sorted(rows.values(), key=lambda r: (r.date, r.message_id or "", r.raw_hash)):
        if row.message_id:
            owner.setdefault(row.message_id, row.call)
    misplaced = []
    for row in rows.values():
        target = owner.get(row.in_reply_to or "")
        if target is None or target == row.call or parent_of[row.call] == target:
            continue
        ancestors, node = set(), target
        while node is not None:
            ancestors.add(node)
            node = parent_of[node]
        if row.call not in ancestors:  # only a loop may keep a message from its In-Reply-To
            misplaced.append(row.call)
    assert not misplaced


@pytest.mark.parametrize("source", SOURCES)
def test_corpus_threads_the_same_whatever_the_import_order(source: str, scratch: Path) -> None:
    path = CORPORA / source
    if not path.exists():
        pytest.skip(f"{path} not present")
    mails = [mbox_entry(mail.raw, mail.separator) for mail in open_source(path).iter_mail()]  # quoted once
    orders = {"original": mails, "reversed": mails[::-1], "shuffled": random.Random(7).sample(mails, len(mails))}
    shapes = {}
    for label, ordered_mails in orders.items():
        mbox = scratch / f"{label}.mbox"
        write_mbox(mbox, ordered_mails)
        rows, threadset, store = thread_site(mbox, scratch / label)
        try:
            if label == "original":
                check_invariants(rows, threadset)
            shapes[label] = structure(rows, threadset)
        finally:
            threadset.close()
            store.close()
        shutil.rmtree(scratch / label)
        mbox.unlink()
    assert shapes["reversed"] == shapes["original"]
    assert shapes["shuffled"] == shapes["original"]


def test_adding_one_message_to_linux_raid_rethreads_only_what_it_touches(scratch: Path) -> None:
    path = CORPORA / "mbox" / "linux-raid.mboxrd.gz"
    if not path.exists():
        pytest.skip(f"{path} not present")
    rows, threadset, store = thread_site(path, scratch / "site")
    try:
        # Answer a message in the middle of a long thread that spans months.
        entries = threadset.threads("l", threadset.thread_ids("l"))
        spanning = max(entries.values(), key=lambda e: (len(e.months), e.count))
        target = rows[spanning.messages[len(spanning.messages) // 2][0]]
        reply = make_message(
            "Re: " + target.subject,
            message_id="<one-more-reply@example.org>",
            to="l@example.org",
            date=time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime(target.date + 3600)),
            extra={"In-Reply-To": f"<{target.message_id}>", "References": f"<{target.message_id}>"},
        )
        single = scratch / "reply.eml"
        single.write_bytes(reply)
        file_sources(store, [LIST], [single], forced_list="l")
        started = time.perf_counter()
        changes = threadset.update(store.index)
        elapsed = time.perf_counter() - started
        new_call = store.index.rows_by_message_id("l", "one-more-reply@example.org")[0].call
        assert threadset.thread_of("l", new_call) == spanning.id
        assert changes.threads == {("l", spanning.id)}
        assert not changes.gone
        assert changes.months == {("l", Month(y, m)) for y, m, _ in spanning.months}
        assert changes.rethreaded < 1000, "rethreaded far more than the reply's cluster"
        print(f"added one reply: rethreaded {changes.rethreaded} messages in {elapsed * 1000:.0f} ms")
    finally:
        threadset.close()
        store.close()
