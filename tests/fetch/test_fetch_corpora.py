"""A mailbox of 1,000 real messages fetched from a real Dovecot: every one accounted for.

The mailbox holds every message of ../shared/corpora/edge (malformed MIME, bounces,
8-bit headers, a 3 MB endlessly nested message, a 210 KB header ...), the notmuch
LKML maildir, and from linux-raid its two messages over 1 MB and 8-bit mail up to
1,000 in all. Skipped when the corpora are absent; nothing is copied into the repository.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from listlib.filers import open_source

from ..support.dovecot import Mailbox
from ..support.helpers import add_pop3_account, mboxrd, run_listlib, stored_files

pytestmark = [pytest.mark.pop3, pytest.mark.corpus, pytest.mark.slow]

LINUX_RAID = '\n[lists.linux-raid]\nlist_ids = ["linux-raid.vger.kernel.org"]\n'


def corpus_messages(corpora: Path, count: int = 1000) -> list[bytes]:
    """The raw bytes ``listlib import`` would store for each selected corpus message."""
    messages = [mail.raw for sub in ("edge", "maildir/notmuch-lkml") for mail in open_source(corpora / sub).iter_mail()]
    big, eight_bit = [], []
    for mail in open_source(corpora / "mbox" / "linux-raid.mboxrd.gz").iter_mail():
        if len(mail.raw) > 1_000_000:
            big.append(mail.raw)
        elif not mail.raw.isascii():
            eight_bit.append(mail.raw)
    messages += big
    messages += eight_bit[: count - len(messages)]
    assert len(messages) == count and len(big) == 2
    return messages


def as_stored_from_pop3(raw: bytes) -> bytes:
    """POP3 carries CRLF line ends and always ends a message with one: stored as LF."""
    raw = raw.replace(b"\r\n", b"\n")
    return raw if raw.endswith(b"\n") or not raw else raw + b"\n"


def test_a_mailbox_of_1000_real_messages_is_all_accounted_for(site: Path, mailbox: Mailbox, corpora: Path) -> None:
    messages = corpus_messages(corpora)
    with (site / "listlib.toml").open("a") as f:
        f.write(LINUX_RAID)
    add_pop3_account(site, mailbox)
    mailbox.drop_many(messages)

    (report,) = json.loads(run_listlib("fetch", "--json", cwd=site, check=True).stdout)
    filing = report["filing"]
    assert report["retrieved"] == report["deleted"] == filing["messages"] == 1000
    assert filing["filed"] + filing["duplicates"] + filing["failed"] == 1000
    assert report["not_retrieved"] == [] and report["error"] is None
    assert mailbox.count() == 0

    # Byte for byte: every stored file is a message as the server held it, and
    # each message is stored or recognised as a duplicate of one that is.
    expected = Counter(as_stored_from_pop3(raw) for raw in messages)
    stored = Counter(stored_files(site / "content").values())
    assert stored - expected == Counter(), "a stored message differs from what the server held"
    assert stored.total() == filing["filed"] + filing["failed"]
    assert (expected - stored).total() == filing["duplicates"]
    assert filing["by_list"]["linux-raid"] >= 140  # routed by List-Id, like an import
    assert run_listlib("check", cwd=site, check=True).stdout.endswith("clean\n")

    # The same bytes imported from an mbox are filed exactly alike.
    imported = site.parent / "imported"
    imported.mkdir()
    (imported / "listlib.toml").write_text((site / "listlib.toml").read_text())
    (imported / "all.mbox").write_bytes(mboxrd([as_stored_from_pop3(raw) for raw in messages]))
    by_import = json.loads(run_listlib("import", "--json", "all.mbox", cwd=imported, check=True).stdout)
    for key in ("messages", "filed", "duplicates", "failed", "no_list", "collisions", "by_list"):
        assert by_import[key] == filing[key], key
    assert Counter(stored_files(imported / "content").values()) == stored
