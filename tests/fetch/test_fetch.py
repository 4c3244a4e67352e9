"""``listlib fetch`` against a real Dovecot: filing, deleting, keeping, security, errors, locking, output."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from listlib.config import load_config
from listlib.fetch import fetch_account
from listlib.fsutil import acquire_lock, release_lock
from listlib.store.core import Store

from ..support.dovecot import DovecotServer, Mailbox, free_port
from ..support.helpers import add_pop3_account, make_message, run_listlib, stored_files, subprocess_env
from ..support.pop3proxy import pop3_proxy

pytestmark = pytest.mark.pop3


def assert_clean_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr
    assert len([line for line in result.stderr.splitlines() if line.startswith("Error:")]) == 1


def stored_bytes(site: Path) -> Counter[bytes]:
    return Counter(stored_files(site / "content").values())


ANNOUNCE = "Announcements <announce.lists.example.org>"


def three_messages() -> list[bytes]:
    return [
        make_message("To the list", message_id="<a@x>"),
        make_message("Announcement", message_id="<b@x>", to="x@example.org", extra={"List-Id": ANNOUNCE}),
        make_message("Lost", message_id="<c@x>", to="nobody@example.org"),
    ]


def test_fetch_files_each_message_and_deletes_it_on_the_server(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox)
    mailbox.drop_many(three_messages())
    result = run_listlib("fetch", cwd=site, check=True)
    assert result.stdout.startswith("archive (127.0.0.1:")
    assert "3 retrieved in" in result.stdout
    assert "3 filed (0 Message-ID collisions, 1 to _no_list), 0 duplicates, 0 failed; 3 deleted on the server" in (
        result.stdout
    )
    assert mailbox.count() == 0
    files = stored_files(site / "content")
    assert sorted(path.split("/")[0] for path in files) == ["_no_list", "announce", "dev"]
    assert stored_bytes(site) == Counter(three_messages())
    again = run_listlib("fetch", cwd=site, check=True)
    assert again.stdout.strip().endswith(": no new mail")
    assert stored_files(site / "content") == files
    assert run_listlib("check", cwd=site, check=True).stdout.endswith("clean\n")


def test_stored_bytes_are_the_bytes_of_the_servers_maildir_file(site: Path, mailbox: Mailbox) -> None:
    messages = [
        make_message("dots", body=".\n..\n. leading dot\n...\n.\n"),
        make_message("8-bit", body="Grüße, ½ € \u2603\n").replace(b"Subject: 8-bit", b"Subject: \xe9t\xe9 8-bit"),
        b"From: a@example.org\nSubject: nul and bare cr\n\nx\x00y\rz\n",
        make_message("long line", body="x" * 70_000 + "\n"),
        b"From: a@example.org\nX-Long: " + b"y" * 210_000 + b"\nSubject: long header\n\nbody\n",
        b".starts with a dot: x\nFrom: a@example.org\n\nbody\n",
        make_message("no body", body=""),
    ]
    add_pop3_account(site, mailbox)
    mailbox.drop_many(messages)
    run_listlib("fetch", cwd=site, check=True)
    assert stored_bytes(site) == Counter(messages)


def test_wire_line_ends_become_unix_line_ends(site: Path, mailbox: Mailbox) -> None:
    # POP3 always sends CRLF; the server's file may have had either. The store keeps
    # mail with Unix line ends, as every other filer does, so a message fetched and
    # the same message imported from an mbox are one message.
    add_pop3_account(site, mailbox)
    mailbox.drop(b"From: a@example.org\r\nSubject: crlf\r\n\r\nbody\r\n")
    mailbox.drop(b"From: a@example.org\nSubject: no final newline\n\nbody")
    run_listlib("fetch", cwd=site, check=True)
    assert stored_bytes(site) == Counter(
        [b"From: a@example.org\nSubject: crlf\n\nbody\n", b"From: a@example.org\nSubject: no final newline\n\nbody\n"]
    )


def test_a_message_fetched_and_imported_is_filed_once(site: Path, mailbox: Mailbox) -> None:
    raw = make_message("both ways")
    (site / "one.eml").write_bytes(raw)
    run_listlib("import", "one.eml", cwd=site, check=True)
    add_pop3_account(site, mailbox)
    mailbox.drop(raw)
    result = run_listlib("fetch", cwd=site, check=True)
    assert "0 filed (0 Message-ID collisions, 0 to _no_list), 1 duplicate" in result.stdout
    assert stored_bytes(site) == Counter([raw])
    assert mailbox.count() == 0


@pytest.mark.parametrize("security", ["ssl", "starttls", "none"])
def test_pop3s_stls_and_plain_all_work(site: Path, mailbox: Mailbox, security: str) -> None:
    add_pop3_account(site, mailbox, security=security, ca_file=None if security == "none" else mailbox.server.ca_file)
    mailbox.drop(make_message())
    result = run_listlib("fetch", cwd=site, check=True)
    assert "1 retrieved" in result.stdout
    assert mailbox.count() == 0


def test_wrong_password_is_a_clear_error(site: Path, private_dovecot: DovecotServer) -> None:
    # A server of its own: after a failed login Dovecot slows down every login from 127.0.0.1.
    mailbox = private_dovecot.add_user("ann")
    add_pop3_account(site, mailbox, password="wrong")
    mailbox.drop(make_message())
    result = run_listlib("fetch", cwd=site)
    assert_clean_error(result, f"pop3 account 'archive': login as '{mailbox.user}' refused by 127.0.0.1:", "[AUTH]")
    assert mailbox.count() == 1


@pytest.mark.parametrize("security", ["ssl", "starttls"])
def test_untrusted_certificate_is_a_clear_error(site: Path, mailbox: Mailbox, security: str) -> None:
    add_pop3_account(site, mailbox, security=security, ca_file=None)
    mailbox.drop(make_message())
    result = run_listlib("fetch", cwd=site)
    assert_clean_error(result, "the TLS certificate of 127.0.0.1:", "is not trusted", "set ca_file")
    assert mailbox.count() == 1


def test_certificate_for_another_host_name_is_a_clear_error(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox, host="localhost")
    result = run_listlib("fetch", cwd=site)
    assert_clean_error(result, "the TLS certificate of localhost:", "not valid for 'localhost'")


def test_unreadable_ca_file_is_a_clear_error(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox, ca_file="missing-ca.pem")
    assert_clean_error(run_listlib("fetch", cwd=site), "ca_file", "missing-ca.pem cannot be used")


def test_closed_port_is_a_clear_error(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox, port=free_port())
    assert_clean_error(run_listlib("fetch", cwd=site), "cannot connect to 127.0.0.1:", "connection refused")


def test_unresolvable_host_is_a_clear_error(site: Path, mailbox: Mailbox) -> None:
    # A name the resolver rejects without asking a DNS server (tests stay on loopback).
    add_pop3_account(site, mailbox, host="-no-such-host-")
    assert_clean_error(run_listlib("fetch", cwd=site), "cannot resolve host '-no-such-host-'")


def test_a_server_that_never_answers_times_out_with_a_clear_error(site: Path, mailbox: Mailbox) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        add_pop3_account(site, mailbox, security="none", port=silent.getsockname()[1], timeout=0.5)
        assert_clean_error(run_listlib("fetch", cwd=site), "127.0.0.1:", "did not answer within 0.5 s")


def test_a_failing_account_does_not_stop_the_others(site: Path, private_dovecot: DovecotServer) -> None:
    good, bad = private_dovecot.add_user("good-one"), private_dovecot.add_user("bad-one")
    add_pop3_account(site, good, "good")  # first: after a failed login, Dovecot slows logins down
    add_pop3_account(site, bad, "bad", password="wrong")
    good.drop(make_message())
    result = run_listlib("fetch", cwd=site)
    assert_clean_error(result, "pop3 account 'bad'")
    assert "good (127.0.0.1:" in result.stdout and "1 retrieved" in result.stdout
    assert good.count() == 0


def test_keep_on_server_fetches_each_message_once(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox, keep_on_server=True)
    mailbox.drop_many(three_messages())
    first = run_listlib("fetch", cwd=site, check=True)
    assert "3 retrieved" in first.stdout and "3 kept on the server" in first.stdout
    assert mailbox.count() == 3
    second = run_listlib("fetch", cwd=site, check=True)
    assert second.stdout.strip().endswith("no new mail (3 kept on the server)")
    mailbox.drop(make_message("new", message_id="<new@x>"))
    third = run_listlib("fetch", cwd=site, check=True)
    assert "1 retrieved" in third.stdout and "1 filed" in third.stdout
    assert stored_bytes(site) == Counter([*three_messages(), make_message("new", message_id="<new@x>")])
    record = (site / "content" / ".pop3" / "archive.uidls").read_text().splitlines()
    assert record[0] == f"listlib-uidls 1 {mailbox.user}@127.0.0.1" and len(record) == 5


def test_keep_on_server_forgets_uidls_of_messages_deleted_on_the_server(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox, keep_on_server=True)
    mailbox.drop_many([make_message(message_id=f"<{i}@x>") for i in range(80)])
    run_listlib("fetch", cwd=site, check=True)
    for path in mailbox.messages()[:70]:
        path.unlink()
    assert "no new mail (10 kept" in run_listlib("fetch", cwd=site, check=True).stdout
    assert len((site / "content" / ".pop3" / "archive.uidls").read_text().splitlines()) == 11


def test_without_uidl_keep_on_server_deletes_instead_and_says_so(site: Path, mailbox: Mailbox) -> None:
    # Dovecot always offers UIDL; a proxy hides it (everything else is Dovecot's answer).
    with pop3_proxy(mailbox.server.port, hide=frozenset({"UIDL"})) as port:
        add_pop3_account(site, mailbox, security="none", ca_file=None, port=port, keep_on_server=True)
        mailbox.drop_many(three_messages())
        result = run_listlib("fetch", "--quiet", cwd=site, check=True)
        assert "does not support UIDL" in result.stderr and "deleted once filed" in result.stderr
        assert "3 deleted on the server" in result.stdout
        assert mailbox.count() == 0
        mailbox.drop(three_messages()[0])  # the same message once more: a duplicate
        again = run_listlib("fetch", cwd=site, check=True)
        assert "1 duplicate" in again.stdout
    assert stored_bytes(site) == Counter(three_messages())


def test_a_server_without_pipelining_is_read_one_command_at_a_time(site: Path, mailbox: Mailbox) -> None:
    messages = [make_message(message_id=f"<{i}@x>", body=f"{i}\n.\n") for i in range(300)]
    with pop3_proxy(mailbox.server.port, hide=frozenset({"PIPELINING"})) as port:
        add_pop3_account(site, mailbox, security="none", ca_file=None, port=port)
        mailbox.drop_many(messages)
        result = run_listlib("fetch", cwd=site, check=True)
    assert "300 retrieved" in result.stdout and "300 deleted on the server" in result.stdout
    assert mailbox.count() == 0 and stored_bytes(site) == Counter(messages)


def test_a_message_the_server_cannot_send_stays_there_and_is_reported(site: Path, mailbox: Mailbox) -> None:
    with pop3_proxy(mailbox.server.port, refuse_retr=frozenset({2})) as port:
        add_pop3_account(site, mailbox, security="none", ca_file=None, port=port)
        mailbox.drop_many(three_messages())
        result = run_listlib("fetch", cwd=site, check=True)
    assert "message 2 (" in result.stderr and "stays on the server" in result.stderr
    assert "2 retrieved" in result.stdout and "2 deleted on the server" in result.stdout
    assert mailbox.count() == 1 and len(stored_files(site / "content")) == 2


def test_max_messages_leaves_the_rest_for_the_next_run(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox, max_messages=2)
    messages = [make_message(message_id=f"<{i}@x>") for i in range(5)]
    mailbox.drop_many(messages)
    first = run_listlib("fetch", cwd=site, check=True)
    assert "2 retrieved" in first.stdout and "3 left for the next run" in first.stdout
    assert mailbox.count() == 3
    run_listlib("fetch", cwd=site, check=True)
    run_listlib("fetch", cwd=site, check=True)
    assert mailbox.count() == 0 and stored_bytes(site) == Counter(messages)


def test_list_files_everything_under_one_list(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox, list="announce")
    mailbox.drop_many(three_messages())
    run_listlib("fetch", cwd=site, check=True)
    assert {path.split("/")[0] for path in stored_files(site / "content")} == {"announce"}


def test_password_from_a_file_or_the_environment(site: Path, dovecot: DovecotServer) -> None:
    by_file, by_env = dovecot.add_user("by-file", "file-pw"), dovecot.add_user("by-env", "env-pw")
    (site / "pop3-password").write_text("file-pw\n")
    add_pop3_account(site, by_file, "by-file", password=None, password_file="pop3-password")
    add_pop3_account(site, by_env, "by-env", password=None, password_env="LISTLIB_TEST_PW")
    by_file.drop(make_message(message_id="<f@x>"))
    by_env.drop(make_message(message_id="<e@x>"))
    missing = run_listlib("fetch", cwd=site)
    assert_clean_error(missing, "pop3 account 'by-env': the environment variable LISTLIB_TEST_PW")
    assert by_file.count() == 0 and by_env.count() == 1
    run_listlib("fetch", "by-env", cwd=site, env={"LISTLIB_TEST_PW": "env-pw"}, check=True)
    assert by_env.count() == 0
    (site / "pop3-password").unlink()
    assert_clean_error(run_listlib("fetch", "by-file", cwd=site), "password_file", "cannot be read")


def test_quiet_prints_nothing_unless_mail_came(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox)
    silent = run_listlib("fetch", "--quiet", cwd=site, check=True)
    assert (silent.stdout, silent.stderr) == ("", "")
    assert run_listlib("--quiet", "fetch", cwd=site, check=True).stdout == ""
    assert run_listlib("fetch", cwd=site, check=True).stdout.strip().endswith("no new mail")
    mailbox.drop(make_message())
    loud = run_listlib("fetch", "--quiet", cwd=site, check=True)
    assert len(loud.stdout.splitlines()) == 1 and "1 retrieved" in loud.stdout and loud.stderr == ""


def test_a_second_run_waits_briefly_then_skips_with_a_notice(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox)
    mailbox.drop(make_message())
    run_listlib("fetch", cwd=site, check=True)  # creates content/.pop3/
    mailbox.drop(make_message("second", message_id="<second@x>"))
    held = acquire_lock(site / "content" / ".pop3" / "archive.lock", 1, "busy")
    try:
        result = run_listlib("fetch", "--quiet", "--wait", "0.3", cwd=site)
    finally:
        release_lock(held)
    assert result.returncode == 0 and result.stderr == ""
    port = mailbox.server.ssl_port
    assert result.stdout.splitlines() == [
        f"archive (127.0.0.1:{port}): another 'listlib fetch' of this account is still running; skipped"
    ]
    assert mailbox.count() == 1


def test_two_runs_at_once_file_each_message_once(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox)
    messages = [make_message(f"m{i}", body=f"{i}\n" * 5000, message_id=f"<{i}@x>") for i in range(300)]
    mailbox.drop_many(messages)
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "listlib", "fetch", "--wait", "60"],
            cwd=site,
            env=subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert sorted("300 retrieved" in out for out, _ in outputs) == [False, True]
    assert mailbox.count() == 0 and stored_bytes(site) == Counter(messages)


def test_json_report_counts_everything(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox)
    mailbox.drop_many([*three_messages(), b""])
    (report,) = json.loads(run_listlib("fetch", "--json", cwd=site, check=True).stdout)
    assert (report["account"], report["on_server"], report["retrieved"], report["deleted"]) == ("archive", 4, 4, 4)
    filing = report["filing"]
    assert (filing["messages"], filing["filed"], filing["no_list"], filing["failed"]) == (4, 3, 1, 1)
    assert filing["failures"][0]["reason"] == "empty"


def test_unknown_account_is_a_usage_error_and_no_accounts_an_error(site: Path, mailbox: Mailbox) -> None:
    result = run_listlib("fetch", cwd=site)
    assert_clean_error(result, "no POP3 accounts to fetch")
    add_pop3_account(site, mailbox)
    unknown = run_listlib("fetch", "nope", cwd=site)
    assert unknown.returncode == 2 and "no POP3 account 'nope' (configured: archive)" in unknown.stderr


def test_progress_reaches_the_total_for_a_large_mailbox(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox)
    mailbox.drop_many([make_message(message_id=f"<{i}@x>", body="x\n" * 20_000) for i in range(600)])
    config = load_config(site / "listlib.toml")
    calls: list[tuple[int, int, int]] = []
    with Store(config.site.content_dir).open() as store:
        report = fetch_account(
            store, config.lists, config.pop3[0], mailbox.password, progress=lambda *a: calls.append(a)
        )
    assert report.retrieved == 600 and report.deleted == 600
    assert len(calls) >= 3  # one per batch at least
    done, total, messages = calls[-1]
    assert done == total > 600 * 40_000 and messages == 600
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)


def test_a_filing_failure_stops_the_fetch_at_once_and_deletes_nothing(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox)
    messages = [make_message(message_id=f"<{i}@x>", body="x\n" * 3000) for i in range(900)]
    mailbox.drop_many(messages)
    config = load_config(site / "listlib.toml")
    batches = [0]

    def disk_full_at_the_second_batch(point: str) -> None:
        if point == "temp-written":
            batches[0] += 1
            if batches[0] == 2:
                raise OSError(28, "No space left on device")

    started = time.monotonic()
    store = Store(config.site.content_dir, fault=disk_full_at_the_second_batch).open()
    with store, pytest.raises(OSError, match="No space left"):
        fetch_account(store, config.lists, config.pop3[0], mailbox.password)
    assert time.monotonic() - started < 20  # the reader thread was stopped, not waited out
    assert mailbox.count() == 900 and len(stored_files(site / "content")) == 256
    run_listlib("fetch", cwd=site, check=True)
    assert mailbox.count() == 0 and stored_bytes(site) == Counter(messages)


def test_fetch_with_build_publishes_what_came_even_when_an_account_fails(
    site: Path, private_dovecot: DovecotServer
) -> None:
    good, bad = private_dovecot.add_user("good-build"), private_dovecot.add_user("bad-build")
    add_pop3_account(site, good, "good")
    add_pop3_account(site, bad, "bad", password="wrong")
    good.drop(make_message("Fetched and published", message_id="<fetched@x>"))
    result = run_listlib("fetch", "--build", "--json", cwd=site)
    assert result.returncode == 1 and "pop3 account 'bad'" in result.stderr
    data = json.loads(result.stdout)
    assert [r["account"] for r in data["accounts"]] == ["good"] and data["build"]["written"] > 0
    assert any(b"Fetched and published" in p.read_bytes() for p in (site / "output" / "dev").rglob("*.html"))
    quiet = run_listlib("fetch", "--build", "--quiet", "good", cwd=site, check=True)
    assert quiet.stdout == ""  # nothing came, nothing written: silent for cron
