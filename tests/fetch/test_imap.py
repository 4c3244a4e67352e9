"""``listlib fetch`` from a real Dovecot IMAP server: delete, keep and move, several
folders, STARTTLS, UIDVALIDITY changes, servers without IDLE, MOVE or UIDPLUS, and
``--watch`` (IDLE delivery, polling, SIGTERM)."""

from __future__ import annotations

import imaplib
import json
import signal
import ssl
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support.dovecot import DovecotServer, Mailbox, free_port
from ..support.helpers import (
    add_imap_account,
    add_pop3_account,
    make_message,
    new_imap_dovecot,
    run_listlib,
    stored_files,
    subprocess_env,
    threads_taking,
    wait_until_stopped,
)

pytestmark = [pytest.mark.imap]

#: What Dovecot 2.3 announces after login, less IDLE, MOVE and UIDPLUS.
BARE_CAPABILITIES = "IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE LITERAL+ NAMESPACE CHILDREN"


def assert_clean_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr
    assert len([line for line in result.stderr.splitlines() if line.startswith("Error:")]) == 1


def messages(count: int, tag: str = "m") -> list[bytes]:
    return [make_message(f"{tag} {i}", body=f"line {i}\n" * 5, message_id=f"<{tag}{i}@x>") for i in range(count)]


def in_store(site: Path) -> Counter[bytes]:
    return Counter(stored_files(site / "content").values())


def fetch_json(site: Path, *args: str) -> dict[str, object]:
    (report,) = json.loads(run_listlib("fetch", "--json", *args, cwd=site, check=True).stdout)
    return report  # type: ignore[no-any-return]


def client(mailbox: Mailbox) -> imaplib.IMAP4_SSL:
    """Another IMAP client of the same mailbox (the test's own hands)."""
    context = ssl.create_default_context(cafile=str(mailbox.server.ca_file))
    conn = imaplib.IMAP4_SSL("127.0.0.1", mailbox.server.imaps_port, ssl_context=context, timeout=30)
    conn.login(mailbox.user, mailbox.password)
    return conn


def append(mailbox: Mailbox, raw: bytes, folder: str = "INBOX") -> None:
    conn = client(mailbox)
    try:
        typ, data = conn.append(f'"{folder}"', "", imaplib.Time2Internaldate(time.time()), raw)
        assert typ == "OK", data
    finally:
        conn.logout()


@pytest.mark.parametrize("security", ["ssl", "starttls", "none"])
def test_delete_mode_files_everything_then_deletes_it_on_the_server(
    security: str, site: Path, imap_mailbox: Mailbox
) -> None:
    sent = messages(5)
    imap_mailbox.drop_many(sent)
    add_imap_account(
        site, imap_mailbox, security=security, ca_file=None if security == "none" else imap_mailbox.server.ca_file
    )
    report = fetch_json(site)
    assert (report["on_server"], report["retrieved"], report["deleted"], report["error"]) == (5, 5, 5, None)
    assert in_store(site) == Counter(sent)  # CRLF became LF: the bytes of the maildir files
    assert imap_mailbox.count() == 0
    again = run_listlib("fetch", cwd=site, check=True)
    assert "no new mail" in again.stdout
    assert in_store(site) == Counter(sent)


def test_keep_mode_leaves_mail_unread_and_fetches_each_message_once(site: Path, imap_mailbox: Mailbox) -> None:
    first = messages(4)
    imap_mailbox.drop_many(first)
    add_imap_account(site, imap_mailbox, after="keep")
    report = fetch_json(site)
    assert (report["retrieved"], report["kept"], report["deleted"]) == (4, 4, 0)
    assert imap_mailbox.count() == 4 and imap_mailbox.seen() == 0  # BODY.PEEK[]: nothing marked read
    assert "no new mail (4 kept on the server)" in run_listlib("fetch", cwd=site, check=True).stdout
    later = messages(2, "later")
    imap_mailbox.drop_many(later)
    report = fetch_json(site)
    assert (report["known"], report["retrieved"]) == (4, 2)
    assert in_store(site) == Counter(first + later)
    assert (site / "content" / ".imap" / "archive.uids").is_file()


def test_seen_mode_marks_filed_mail_read_and_fetches_each_message_once(site: Path, imap_mailbox: Mailbox) -> None:
    first = messages(3)
    imap_mailbox.drop_many(first)
    add_imap_account(site, imap_mailbox, after="seen")
    report = fetch_json(site)
    assert (report["retrieved"], report["kept"], report["deleted"]) == (3, 3, 0)
    assert imap_mailbox.count() == 3 and imap_mailbox.seen() == 3
    imap_mailbox.drop(make_message("later", message_id="<later@x>"))
    assert imap_mailbox.seen() == 3  # the new one is unread ...
    report = fetch_json(site)
    assert (report["known"], report["retrieved"]) == (3, 1)
    assert imap_mailbox.seen() == 4  # ... until it is filed
    assert len(stored_files(site / "content")) == 4


def test_move_mode_moves_filed_mail_to_the_folder_it_creates(site: Path, imap_mailbox: Mailbox) -> None:
    sent = messages(6)
    imap_mailbox.drop_many(sent)
    add_imap_account(site, imap_mailbox, after="move", move_to="Filed")
    report = fetch_json(site)
    assert (report["retrieved"], report["moved"], report["deleted"]) == (6, 6, 0)
    assert imap_mailbox.count() == 0
    assert Counter(imap_mailbox.contents("Filed")) == Counter(sent)
    assert "no new mail" in run_listlib("fetch", cwd=site, check=True).stdout


def test_every_folder_of_an_account_is_fetched(site: Path, imap_mailbox: Mailbox) -> None:
    inbox, lists = messages(3, "inbox"), messages(3, "lists")
    imap_mailbox.drop_many(inbox)
    imap_mailbox.drop_many(lists, "Lists")
    add_imap_account(site, imap_mailbox, folders=["INBOX", "Lists"])
    report = fetch_json(site)
    assert report["retrieved"] == 6
    assert in_store(site) == Counter(inbox + lists)
    assert imap_mailbox.count() == 0 and imap_mailbox.count("Lists") == 0


def test_fetch_runs_pop3_and_imap_accounts_together(site: Path, imap_mailbox: Mailbox, mailbox: Mailbox) -> None:
    by_imap, by_pop3 = messages(2, "imap"), messages(2, "pop")
    imap_mailbox.drop_many(by_imap)
    mailbox.drop_many(by_pop3)
    add_pop3_account(site, mailbox, name="old")
    add_imap_account(site, imap_mailbox, name="new")
    result = run_listlib("fetch", cwd=site, check=True)
    assert "old (" in result.stdout and "new (" in result.stdout
    assert in_store(site) == Counter(by_imap + by_pop3)
    only = run_listlib("fetch", "nope", cwd=site)
    assert only.returncode == 2 and "no POP3 or IMAP account 'nope' (configured: old, new)" in only.stderr


def test_a_changed_uidvalidity_refetches_and_the_store_recognises_what_it_has(
    site: Path, imap_mailbox: Mailbox
) -> None:
    old = messages(3)
    imap_mailbox.drop_many(old, "Archive")
    add_imap_account(site, imap_mailbox, folders=["Archive"], after="keep")
    assert fetch_json(site)["retrieved"] == 3
    conn = client(imap_mailbox)
    try:
        conn.select('"Archive"', readonly=True)
        before = conn.response("UIDVALIDITY")[1][-1]
        conn.close()
        # Recreate the folder, with the same messages (and one more) under new UIDs.
        time.sleep(1.1)  # Dovecot derives a new folder's UIDVALIDITY from the clock's seconds
        assert conn.delete('"Archive"')[0] == "OK"
        assert conn.create('"Archive"')[0] == "OK"
        new = messages(1, "new")
        for raw in old + new:
            conn.append('"Archive"', "", imaplib.Time2Internaldate(time.time()), raw)
        conn.select('"Archive"', readonly=True)
        after = conn.response("UIDVALIDITY")[1][-1]
    finally:
        conn.logout()
    assert before != after
    report = fetch_json(site)
    assert report["retrieved"] == 4  # the old UIDs mean nothing now: everything again
    filing = report["filing"]
    assert isinstance(filing, dict) and (filing["filed"], filing["duplicates"]) == (1, 3)
    assert in_store(site) == Counter(old + new)


def test_wrong_password_is_a_clear_error(site: Path, private_imap_dovecot: DovecotServer) -> None:
    # A server of its own: after a failed login Dovecot slows down every login from 127.0.0.1.
    mailbox = private_imap_dovecot.add_user("ann")
    add_imap_account(site, mailbox, password="wrong")
    mailbox.drop(make_message())
    result = run_listlib("fetch", cwd=site)
    assert_clean_error(result, "imap account 'archive': login as 'ann' refused by 127.0.0.1:", "AUTHENTICATIONFAILED")
    assert mailbox.count() == 1


@pytest.mark.parametrize("security", ["ssl", "starttls"])
def test_untrusted_certificate_is_a_clear_error(site: Path, imap_mailbox: Mailbox, security: str) -> None:
    add_imap_account(site, imap_mailbox, security=security, ca_file=None)
    imap_mailbox.drop(make_message())
    result = run_listlib("fetch", cwd=site)
    assert_clean_error(result, "imap account 'archive': the TLS certificate of 127.0.0.1:", "is not trusted")
    assert imap_mailbox.count() == 1


def test_closed_port_and_a_missing_folder_are_clear_errors(site: Path, imap_mailbox: Mailbox) -> None:
    add_imap_account(site, imap_mailbox, "closed", port=free_port())
    assert_clean_error(run_listlib("fetch", "closed", cwd=site), "cannot connect to 127.0.0.1:", "connection refused")
    add_imap_account(site, imap_mailbox, "nofolder", folders=["Nowhere"])
    assert_clean_error(run_listlib("fetch", "nofolder", cwd=site), "refused selecting folder 'Nowhere'")


@pytest.fixture
def bare_dovecot() -> Iterator[DovecotServer]:
    """A Dovecot that announces neither IDLE, MOVE nor UIDPLUS."""
    with new_imap_dovecot(BARE_CAPABILITIES) as server:
        yield server


def test_without_move_and_uidplus_mail_is_copied_flagged_and_expunged(site: Path, bare_dovecot: DovecotServer) -> None:
    mailbox = bare_dovecot.add_user("ann")
    sent = messages(4)
    mailbox.drop_many(sent)
    add_imap_account(site, mailbox, after="move", move_to="Filed")
    report = fetch_json(site)
    assert (report["retrieved"], report["moved"], report["warnings"]) == (4, 4, [])
    assert mailbox.count() == 0 and Counter(mailbox.contents("Filed")) == Counter(sent)


def test_without_uidplus_a_folder_with_foreign_deletions_is_not_expunged(
    site: Path, bare_dovecot: DovecotServer
) -> None:
    mailbox = bare_dovecot.add_user("ann")
    sent = messages(3)
    theirs = make_message("someone else's", message_id="<theirs@x>")
    mailbox.drop_many([*sent, theirs])
    conn = client(mailbox)
    try:
        conn.select("INBOX")
        assert conn.store("4", "+FLAGS", r"(\Deleted)")[0] == "OK"  # flagged by another client
    finally:
        conn.logout()
    add_imap_account(site, mailbox, max_messages=3)  # this run does not file the 4th
    result = run_listlib("fetch", cwd=site, check=True)
    assert "has no UIDPLUS" in result.stderr and "flagged \\Deleted" in result.stderr
    assert in_store(site) == Counter(sent)
    assert mailbox.count() == 4 and mailbox.flagged_deleted() == 4  # a plain EXPUNGE would lose the 4th
    (site / "listlib.toml").write_text((site / "listlib.toml").read_text().replace("max_messages = 3", ""))
    result = run_listlib("fetch", cwd=site, check=True)  # now every flagged message is filed: expunged
    assert in_store(site) == Counter([*sent, theirs]) and mailbox.count() == 0


def start_watch(site: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "listlib", "fetch", "--watch", *args],
        cwd=site,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_store(site: Path, count: int, timeout: float) -> float:
    """Seconds until the store holds ``count`` messages (fails after ``timeout``)."""
    started = time.monotonic()
    while len(stored_files(site / "content")) < count:
        assert time.monotonic() - started < timeout, f"only {len(stored_files(site / 'content'))} of {count} filed"
        time.sleep(0.05)
    return time.monotonic() - started


def stop_watch(run: subprocess.Popen[str]) -> tuple[str, str]:
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert "Traceback" not in err and out.rstrip().endswith("Stopped."), out + err
    return out, err


def test_watch_files_and_builds_mail_appended_by_another_client_as_it_arrives(
    site: Path, imap_mailbox: Mailbox
) -> None:
    imap_mailbox.drop_many(messages(2, "early"))
    add_imap_account(site, imap_mailbox)
    run = start_watch(site, "--build", "--interval", "3600")  # no polling: only IDLE brings the next one in time
    try:
        wait_for_store(site, 2, timeout=60)
        time.sleep(1.0)  # let the watcher enter IDLE (it rings again on connect anyway)
        arrivals = []
        for number in range(2):
            append(imap_mailbox, make_message(f"live {number}", message_id=f"<live{number}@x>"))
            arrivals.append(wait_for_store(site, 3 + number, timeout=30))
    finally:
        _out, err = stop_watch(run)
    assert len(stored_files(site / "content")) == 4 and imap_mailbox.count() == 0
    print(f"IDLE delivery: {', '.join(f'{s:.2f} s' for s in arrivals)}")  # the target is 2 s, on a quiet machine
    assert "Traceback" not in err
    pages = b"".join(p.read_bytes() for p in (site / "output" / "dev").rglob("*.html"))
    assert b"live 0" in pages and b"live 1" in pages, "each arrival is built into the site"


def test_watch_polls_a_server_without_idle(site: Path, bare_dovecot: DovecotServer) -> None:
    mailbox = bare_dovecot.add_user("ann")
    add_imap_account(site, mailbox)
    run = start_watch(site, "--interval", "1")
    try:
        time.sleep(1.0)
        mailbox.drop(make_message("polled", message_id="<polled@x>"))
        wait_for_store(site, 1, timeout=60)
    finally:
        _out, err = stop_watch(run)
    assert "does not offer IDLE" in err


def test_watch_reconnects_after_the_server_was_killed(site: Path, private_imap_dovecot: DovecotServer) -> None:
    mailbox = private_imap_dovecot.add_user("ann")
    add_imap_account(site, mailbox)
    run = start_watch(site, "--interval", "3600")
    try:
        time.sleep(1.5)
        private_imap_dovecot.kill()
        time.sleep(1.0)
        mailbox.drop(make_message("while down", message_id="<down@x>"))
        private_imap_dovecot.start()
        wait_for_store(site, 1, timeout=90)  # the watcher's reconnect (with backoff) rings a fetch
    finally:
        _out, err = stop_watch(run)
    assert "reconnecting in" in err and "reconnected to" in err


def test_sigterm_during_a_fetch_finishes_the_batch_settles_it_and_exits(site: Path, imap_mailbox: Mailbox) -> None:
    sent = messages(1100)  # five batches; the reader is at most two batches ahead of the filing
    imap_mailbox.drop_many(sent)
    add_imap_account(site, imap_mailbox)
    run = subprocess.Popen(
        [sys.executable, "-m", "listlib", "fetch", "--watch"],
        cwd=site,
        env={**subprocess_env(), "LISTLIB_STOP_AT": "filed:1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until_stopped(run.pid)  # the first batch is filed, not yet settled
    # Only the main thread takes the signal, so it runs the handler (halt) before it
    # takes the next batch; a reader thread taking it would let the main thread run
    # ahead, and the reader start a batch after the signal.
    assert threads_taking(run.pid, signal.SIGTERM) == threads_taking(run.pid, signal.SIGINT) == [run.pid]
    run.send_signal(signal.SIGTERM)  # pending until it goes on
    run.send_signal(signal.SIGCONT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0 and "Traceback" not in err, err
    assert out.rstrip().endswith("Stopped.")
    filed = len(stored_files(site / "content"))
    assert 256 <= filed <= 3 * 256  # no batch was started after the signal ...
    assert imap_mailbox.count() == 1100 - filed  # ... and everything filed was settled
    assert "left for the next run" in out
    run_listlib("fetch", cwd=site, check=True)
    assert in_store(site) == Counter(sent) and imap_mailbox.count() == 0
