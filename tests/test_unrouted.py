"""Mail that matched no list (``_no_list``): the hint after filing, the ``listlib unrouted``
report, re-filing it once its list is configured, and publishing it on request."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import add_pop3_account, make_message, mboxrd, run_listlib
from .dovecot import Mailbox

HINT = "matched no list (kept in _no_list, not published): see 'listlib unrouted'"


def unrouted_messages() -> list[bytes]:
    """Three messages of an unconfigured list 'users' (by List-Id), one sent only to an
    unconfigured address, and one for the configured list 'dev'."""
    users = {"List-Id": "Users <users.lists.example.org>"}
    return [
        make_message("Welcome", message_id="<u1@x>", to="users@lists.example.org", extra=users),
        make_message("Re: Welcome", message_id="<u2@x>", to="users@lists.example.org", extra=users),
        make_message(
            "Later",
            message_id="<u3@x>",
            to="users@lists.example.org",
            extra=users,
            date="Mon, 3 Jun 2024 08:00:00 +0000",
        ),
        make_message("Private", message_id="<p1@x>", to="Bob <bob@example.net>"),
        make_message("For dev", message_id="<d1@x>"),
    ]


def test_import_says_what_to_do_about_mail_that_matched_no_list(site: Path) -> None:
    (site / "a.mbox").write_bytes(mboxrd(unrouted_messages()))
    result = run_listlib("import", "a.mbox", cwd=site, check=True)
    assert f"4 messages {HINT}" in result.stderr
    assert result.stdout.strip().endswith("5 filed (0 Message-ID collisions, 4 to _no_list), 0 duplicates, 0 failed")
    again = run_listlib("import", "a.mbox", cwd=site, check=True)
    assert "unrouted" not in again.stderr  # nothing new went to _no_list
    quiet = run_listlib("-q", "import", "--dry-run", "a.mbox", cwd=site, check=True)
    assert "unrouted" not in quiet.stderr
    (site / "b.mbox").write_bytes(mboxrd([make_message("One more", message_id="<u4@x>", to="x@example.net")]))
    dry = run_listlib("import", "--dry-run", "b.mbox", cwd=site, check=True)
    assert "1 message would match no list" in dry.stderr
    as_json = run_listlib("import", "--json", "b.mbox", cwd=site, check=True)
    assert "unrouted" not in as_json.stderr and '"no_list": 1' in as_json.stdout


@pytest.mark.pop3
def test_fetch_says_what_to_do_about_mail_that_matched_no_list(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox)
    mailbox.drop_many(unrouted_messages())
    result = run_listlib("fetch", cwd=site, check=True)
    assert f"4 messages {HINT}" in result.stderr
    mailbox.drop_many([make_message("Again", message_id="<u9@x>", to="nobody@example.net")])
    quiet = run_listlib("fetch", "--quiet", cwd=site, check=True)
    assert "unrouted" not in quiet.stderr
