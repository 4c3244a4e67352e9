"""End to end: a post lands in a real POP3 mailbox (Dovecot), 'listlib fetch' archives and
queues it, 'listlib deliver' sends it through a real SMTP server (aiosmtpd), and the
Archived-At header names the page 'listlib build' writes."""

from __future__ import annotations

import re
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support.delivery_site import NOW, make_site, post, queue_status
from ..support.dovecot import Mailbox
from ..support.helpers import add_pop3_account, run_listlib
from ..support.smtpserver import SmtpServer

pytestmark = pytest.mark.pop3

SUBSCRIBERS = ["ok-poster@example.org", "ann@example.com", "bob@example.net", "perm@example.net"]


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


def test_a_post_fetched_by_pop3_is_archived_delivered_and_its_archived_at_page_is_built(
    tmp_path: Path, smtp: SmtpServer, mailbox: Mailbox
) -> None:
    site = make_site(tmp_path / "site", smtp, SUBSCRIBERS)
    add_pop3_account(site, mailbox)
    raw = post(7, subject="Release plan", body="Let's ship on Friday.\n")
    mailbox.drop(raw)
    env = {"LISTLIB_NOW": str(NOW)}
    fetched = run_listlib("fetch", cwd=site, env=env, check=True)
    assert "1 filed" in fetched.stdout and "1 post queued for delivery" in fetched.stdout
    assert mailbox.count() == 0
    delivered = run_listlib("deliver", cwd=site, env=env, check=True)
    assert "3 recipients delivered, 1 failed" in delivered.stdout
    assert smtp.handler.received == Counter({"ok-poster@example.org": 1, "ann@example.com": 1, "bob@example.net": 1})
    [message] = smtp.handler.messages
    assert message.data.endswith(raw.partition(b"\n\n")[2].replace(b"\n", b"\r\n"))
    match = re.search(rb"^Archived-At: <https://lists\.example\.org/archive/([^>]+)>\r$", message.data, re.M)
    assert match, message.data[:600]
    page = match.group(1).decode()
    run_listlib("build", "-j", "1", cwd=site, check=True)
    built = (site / "output" / page).read_text()
    assert "Release plan" in built and "ship on Friday" in built
    [entry] = queue_status(site)
    assert entry["stage"] == "failed" and entry["failures"] == {"perm@example.net": "550 5.1.1 no such user here"}


def test_fetch_killed_between_filing_and_queueing_still_delivers_the_post_once(
    tmp_path: Path, smtp: SmtpServer, mailbox: Mailbox
) -> None:
    site = make_site(tmp_path / "site", smtp, SUBSCRIBERS[:3])
    add_pop3_account(site, mailbox)
    mailbox.drop_many([post(1), post(2)])
    env = {"LISTLIB_NOW": str(NOW)}
    # 'marked': the batch is durable in the store, not yet queued nor deleted on the server.
    crashed = run_listlib("fetch", cwd=site, env={**env, "LISTLIB_CRASH_AT": "marked:1"})
    assert crashed.returncode == -signal.SIGKILL
    assert queue_status(site) == [] and mailbox.count() == 2
    again = run_listlib("fetch", cwd=site, env=env, check=True)
    assert "2 duplicates" in again.stdout and "2 posts queued for delivery" in again.stdout
    run_listlib("deliver", cwd=site, env=env, check=True)
    mailbox.drop_many([post(1), post(2)])  # the same posts arriving again are archived and sent once
    run_listlib("fetch", cwd=site, env=env, check=True)
    run_listlib("deliver", cwd=site, env=env, check=True)
    assert smtp.handler.received == Counter({address: 2 for address in SUBSCRIBERS[:3]})
    assert queue_status(site) == []
