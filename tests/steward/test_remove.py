"""``listlib remove``: a take-down. The message's bytes leave the store, the ledger keeps
only digests, every page forgets it, its permanent URL and Message-ID page become
tombstones, its replies keep their place, and no copy of it is ever filed again."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from listlib.config import load_config
from listlib.stewardship import Selector, steward
from listlib.store.core import Store
from listlib.store.index import FILED, REMOVED, split_pins
from listlib.store.ledger import LEDGER_NAME, read_ledger
from listlib.threader import digest
from listlib.threadset import ThreadSet
from listlib.urls import message_id_path

from ..build.test_build import add, build, call_of, post, tree
from ..support.dovecot import Mailbox
from ..support.helpers import add_pop3_account, make_message, mboxrd, run_listlib, subprocess_env
from ..support.linkcheck import check_links
from ..support.traces import files_holding

SECRET = "Her phone number is 555-0199 and she lives at 12 Quince Lane."
SENDER = "dana.private@leak.example"


def _secret(n: int, reply_to: int) -> bytes:
    return make_message(
        "Re: Release plans",
        f"{SECRET}\n",
        message_id=f"<m{n}@example.org>",
        sender=f"Dana Private <{SENDER}>",
        date=post_date(n),
        extra={
            "In-Reply-To": f"<m{reply_to}@example.org>",
            "References": f"<m1@example.org> <m{reply_to}@example.org>",
        },
    )


def post_date(n: int):  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from ..build.test_build import T0

    return T0 + timedelta(days=n)


def _thread_site(site: Path) -> tuple[str, bytes]:
    """A thread 1 <- 2 <- 3 (the secret) <- 4 <- 5, and 3 <- 6; and a message alone."""
    messages = [
        post(1, "Release plans"),
        post(2, "Re: Release plans", reply_to=1, refs=(1,)),
        _secret(3, 2),
        post(4, "Re: Release plans", reply_to=3, refs=(1, 2, 3)),
        post(5, "Re: Release plans", reply_to=4, refs=(1, 2, 3, 4)),
        post(6, "Re: Release plans", reply_to=3, refs=(1, 2, 3)),
        post(9, "Other topic"),
    ]
    add(site, *messages)
    build(site)
    call, _path = call_of(site, 3)
    return call, mboxrd(messages)


def _shape(site: Path, root_call: str) -> list[tuple[str, str | None, int]]:
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store, ThreadSet(config.site.cache_dir).open() as threads:
        from listlib.overrides import threading_overrides

        threads.update(store.index, threading_overrides(store.root, store.index, ["dev", "announce"]))
        root = threads.thread_of("dev", root_call)
        assert root is not None
        entry = threads.thread("dev", root)
        assert entry is not None
        return list(entry.messages)


def _remove(site: Path, *ids: str, reason: str = "privacy request") -> object:
    config = load_config(site / "listlib.toml")
    return steward(config, "remove", Selector(ids=ids), reason=reason, by="test")


def _clean_build_of(site: Path, tmp_path: Path) -> dict[str, bytes]:
    clean = tmp_path / "clean"
    shutil.copytree(site / "content", clean / "content", ignore=shutil.ignore_patterns(".lock", ".index"))
    shutil.copy(site / "listlib.toml", clean / "listlib.toml")
    build(clean, clean=True)
    return tree(clean / "output")


def test_a_removed_message_leaves_the_store_and_every_page_and_its_replies_keep_their_place(
    site: Path, tmp_path: Path
) -> None:
    call, _mbox = _thread_site(site)
    needles = [SECRET.encode(), SENDER.encode(), b"Dana Private"]
    assert files_holding(site / "output", needles)
    root = call_of(site, 1)[0]
    shape = _shape(site, root)
    stored = site / "content" / call_of(site, 3)[1]
    page = site / "output" / call_of(site, 3)[1].replace(".eml", ".html")
    root_page = site / "output" / call_of(site, 1)[1].replace(".eml", ".html")
    assert stored.exists()

    result = run_listlib("remove", call, "--reason", "privacy request", cwd=site, check=True)
    assert "1 message removed; ledger entry 1" in result.stdout
    assert not stored.exists()
    assert _shape(site, root) == shape  # the same thread: every reply where it was
    build(site)
    assert files_holding(site / "output", needles) == []
    # Only the replies' References and In-Reply-To still name its Message-ID (as the README says).
    holding = {hit.split(":")[0] for hit in files_holding(site / "output", [b"m3@example.org"])}
    assert holding and all(path.endswith((".eml", ".mbox.gz")) for path in holding), holding
    # Its permanent URL and its Message-ID page are tombstones.
    tomb = page.read_text()
    assert "removed from the archive on" in tomb and 'name="robots" content="noindex' in tomb
    assert "privacy request" not in tomb  # reasons are not shown unless the site says so
    mid_page = (site / "output" / message_id_path("<m3@example.org>")).read_text()
    assert "removed from the archive on" in mid_page and "m3@example.org" not in mid_page
    # The thread page holds a placeholder in its place.
    thread_page = root_page.read_text()
    assert f'id="{call}"' in thread_page and "Removed" in thread_page
    assert check_links(site / "output") == []
    assert tree(site / "output") == _clean_build_of(site, tmp_path)


def test_a_removed_message_is_refused_by_a_reimport_and_a_rebuilt_index(site: Path, tmp_path: Path) -> None:
    call, mbox = _thread_site(site)
    _remove(site, call)
    source = tmp_path / "again.mbox"
    source.write_bytes(mbox)
    result = run_listlib("import", source, cwd=site, check=True)
    assert "6 duplicates, 1 refused (removed)" in result.stdout
    # The same mail with other bytes (another relay's Received line): refused by its Message-ID.
    relayed = b"Received: from relay.example by mx.example; Mon, 1 Apr 2024 10:00:00 +0000\n" + _secret(3, 2)
    source.write_bytes(mboxrd([relayed]))
    assert "1 refused (removed)" in run_listlib("import", source, cwd=site, check=True).stdout
    # And without a Message-ID: refused by its sender, subject and text.
    headless = _secret(3, 2).replace(b"Message-ID: <m3@example.org>\n", b"")
    source.write_bytes(mboxrd([headless]))
    assert "1 refused (removed)" in run_listlib("import", source, cwd=site, check=True).stdout
    shutil.rmtree(site / "content" / ".index")
    with Store(site / "content").open() as store:
        (row,) = store.index.rows_by_call([call])
        assert row.state == REMOVED and row.message_id is None and row.subject == "" and row.from_addr == ""
    build(site)
    assert files_holding(site / "output", [SECRET.encode()]) == []


def test_the_ledger_keeps_digests_not_the_message(site: Path) -> None:
    call, _mbox = _thread_site(site)
    # Named as an operator would, by what identifies it: the command line is not kept.
    run_listlib("remove", "<m3@example.org>", "--sender", SENDER, "--reason", "privacy", cwd=site, check=True)
    text = (site / "content" / LEDGER_NAME).read_text()
    for needle in (SECRET, SENDER, "Dana", "m3@example.org", "555-0199"):
        assert needle not in text
    (entry,) = read_ledger(site / "content")[0]
    (message,) = entry.messages
    assert entry.action == "remove" and message.call == call and message.removal is not None
    assert entry.by == f"listlib remove {call}"
    assert len(message.removal.mid_hash or "") == 64
    calls, digests = split_pins(message.removal.pins or "")
    assert calls == " ".join([call_of(site, 2)[0], call_of(site, 4)[0], call_of(site, 6)[0]])
    # Its threading headers as digests: its Message-ID, In-Reply-To, subject, References.
    mid, irt, subject, *refs = (digests or "").split()
    assert mid == message.removal.mid_hash == digest("m3@example.org") and irt == digest("m2@example.org")
    assert subject[0] == "r" and len(subject) == 65 and refs and all(len(ref) == 64 for ref in refs)


def test_the_reason_is_shown_only_when_the_site_says_so_and_escaped(site: Path) -> None:
    call, _mbox = _thread_site(site)
    page = site / "output" / call_of(site, 3)[1].replace(".eml", ".html")
    toml = site / "listlib.toml"
    toml.write_text(toml.read_text().replace("[site]\n", "[site]\nshow_removal_reasons = true\n", 1))
    run_listlib("remove", call, "--reason", "<script>alert(1)</script> GDPR", cwd=site, check=True)
    build(site)
    tomb = page.read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; GDPR" in tomb and "<script>alert" not in tomb


def test_removing_a_root_keeps_the_thread_at_its_url(site: Path, tmp_path: Path) -> None:
    _thread_site(site)
    root_call, root_path = call_of(site, 1)
    shape = _shape(site, root_call)
    _remove(site, root_call)
    build(site)
    assert _shape(site, root_call) == shape
    page = (site / "output" / root_path.replace(".eml", ".html")).read_text()
    assert "Removed" in page and "Message number 2." in page
    assert tree(site / "output") == _clean_build_of(site, tmp_path)


def test_a_lone_removed_message_leaves_a_tombstone_and_no_thread(site: Path, tmp_path: Path) -> None:
    _thread_site(site)
    call, path = call_of(site, 9)
    _remove(site, call)
    build(site)
    page = (site / "output" / path.replace(".eml", ".html")).read_text()
    assert "removed from the archive on" in page
    assert files_holding(site / "output", [b"Other topic", b"Message number 9."]) == []
    assert check_links(site / "output") == []
    assert tree(site / "output") == _clean_build_of(site, tmp_path)


def test_unknown_ids_change_nothing_and_a_reason_is_required(site: Path) -> None:
    call, _mbox = _thread_site(site)
    result = run_listlib("remove", call, "<nobody@nowhere.example>", "--reason", "x", cwd=site)
    assert result.returncode == 1 and "nothing was changed" in result.stderr
    assert not (site / "content" / LEDGER_NAME).exists()
    result = run_listlib("remove", call, cwd=site)
    assert result.returncode == 2 and "--reason is required" in result.stderr
    dry = run_listlib("remove", call, "--reason", "x", "--dry-run", "--json", cwd=site, check=True)
    assert json.loads(dry.stdout)["messages"][0]["call"] == call
    with Store(site / "content").open() as store:
        assert [row.state for row in store.index.rows_by_call([call])] == [FILED]
    _remove(site, call)
    again = run_listlib("remove", "<m3@example.org>", "--reason", "x", cwd=site, check=True)
    assert "0 messages removed (1 already removed)" in again.stdout


def test_show_quotes_lists_the_replies_that_quote_it(site: Path) -> None:
    quoting = make_message(
        "Re: Release plans",
        f"Dana wrote:\n> {SECRET}\n\nPlease do not post that here.\n",
        message_id="<m7@example.org>",
        date=post_date(7),
        extra={"In-Reply-To": "<m3@example.org>"},
    )
    call, _mbox = _thread_site(site)
    add(site, quoting)
    result = run_listlib("remove", call, "--show-quotes", cwd=site, check=True)
    assert call_of(site, 7)[0] in result.stdout and "1 message quotes" in result.stdout
    assert call_of(site, 4)[0] not in result.stdout
    assert not (site / "content" / LEDGER_NAME).exists()  # it only lists


def test_check_finds_a_removed_message_restored_from_a_backup_and_repair_deletes_it(site: Path) -> None:
    call, _mbox = _thread_site(site)
    with Store(site / "content").open() as store:
        (row,) = store.index.rows_by_call([call])
    stored = site / "content" / row.path
    backup = stored.read_bytes()
    _remove(site, call)
    build(site)
    assert run_listlib("check", cwd=site).returncode == 0
    stored.write_bytes(backup)
    result = run_listlib("check", cwd=site)
    assert result.returncode == 1 and "removed by the ledger, but its file is in the store" in result.stderr
    run_listlib("check", "--repair", cwd=site, check=True)
    assert not stored.exists()
    assert run_listlib("check", cwd=site).returncode == 0


@pytest.mark.parametrize("point", ["ledger-appended", "files-removed", "ledger-applied"])
def test_a_kill_during_remove_leaves_the_old_state_or_the_new_one(site: Path, point: str) -> None:
    call, _mbox = _thread_site(site)
    env = {**subprocess_env(), "LISTLIB_CRASH_AT": f"{point}:1"}
    killed = subprocess.run(
        [sys.executable, "-m", "listlib", "remove", call, "--reason", "privacy"],
        cwd=site,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr
    entries, _size = read_ledger(site / "content")
    assert [e.action for e in entries] == ["remove"]  # the entry is there before any byte goes
    build(site)  # the next holder of the store lock finishes the removal
    with Store(site / "content").open() as store:
        (row,) = store.index.rows_by_call([call])
        assert row.state == REMOVED and not (site / "content" / row.path).exists()
    assert files_holding(site / "output", [SECRET.encode(), SENDER.encode()]) == []
    assert run_listlib("check", cwd=site).returncode == 0


@pytest.mark.pop3
def test_a_removed_message_fetched_again_over_pop3_is_refused(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox)
    secret = _secret(3, 1)
    mailbox.drop_many([post(1, "Release plans"), secret])
    run_listlib("fetch", cwd=site, check=True)
    call, _path = call_of(site, 3)
    run_listlib("remove", call, "--reason", "privacy", cwd=site, check=True)
    mailbox.drop_many([secret])
    again = run_listlib("fetch", cwd=site, check=True)
    assert "0 filed" in again.stdout and "1 refused (removed)" in again.stdout
    assert mailbox.count() == 0
    with Store(site / "content").open() as store:
        assert [row.state for row in store.index.find_rows((FILED, REMOVED), slug="dev")] == [FILED, REMOVED]


def test_the_tombstone_of_a_month_s_only_message_is_built_by_a_clean_build_too(site: Path, tmp_path: Path) -> None:
    # m9 is the only message of May: once removed, the month has no filed message left.
    add(site, post(1, "Release plans"), post(9, "Lonely topic", at=timedelta(days=40)))
    build(site)
    call, path = call_of(site, 9)
    _remove(site, call)
    build(site)
    page = site / "output" / path.replace(".eml", ".html")
    assert "removed from the archive on" in page.read_text()
    assert tree(site / "output") == _clean_build_of(site, tmp_path)


def test_a_removal_keeps_the_corner_cases_of_threading_and_a_late_reply_finds_its_place(
    site: Path, tmp_path: Path
) -> None:
    # 2 and 3 answer 1 in the same second; 4 joins by its subject alone; 5 answers 3.
    same = timedelta(days=2)
    add(
        site,
        post(1, "Plans"),
        post(2, "Re: Plans", reply_to=1, refs=(1,), at=same),
        post(3, "Re: Plans", reply_to=1, refs=(1,), at=same),
        post(4, "Re: Plans", at=timedelta(days=5)),
        post(5, "Re: Plans", reply_to=3, refs=(1, 3), at=timedelta(days=6)),
    )
    build(site)
    root_call, removed = call_of(site, 1)[0], call_of(site, 3)[0]
    shape = _shape(site, root_call)
    _remove(site, removed)
    build(site)
    assert _shape(site, root_call) == shape
    assert tree(site / "output") == _clean_build_of(site, tmp_path / "one")
    # A reply to the removed message that arrives later goes under its tombstone.
    add(site, post(7, "Re: Plans", reply_to=3, refs=(1, 3), at=timedelta(days=7)))
    build(site)
    placed = {call: (parent, depth) for call, parent, depth in _shape(site, root_call)}
    assert placed[call_of(site, 7)[0]] == (removed, 2)
    assert tree(site / "output") == _clean_build_of(site, tmp_path / "two")
