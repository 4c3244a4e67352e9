"""Hiding and unhiding messages (``listlib hide`` / ``unhide``) and the ledger: hidden mail
leaves every output file, stays hidden through re-imports, index rebuilds and kills,
and comes back byte for byte."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from listlib.build import plan_site
from listlib.config import load_config
from listlib.stewardship import Selector, steward
from listlib.store.core import Store
from listlib.store.index import FILED, HIDDEN
from listlib.store.ledger import LEDGER_NAME, read_ledger

from ..build.test_build import T0, add, build, call_of, post, tree
from ..support.dovecot import Mailbox
from ..support.helpers import add_pop3_account, make_message, mboxrd, run_listlib, subprocess_env
from ..support.traces import files_holding

SECRET_BODY = "The zebra password is quartz-lantern-42."
SECRET_SENDER = "mallory.spam@casino.example"


def _spam(n: int) -> bytes:
    return make_message(
        "Cheap casino chips",
        f"{SECRET_BODY}\nVisit now.\n",
        message_id=f"<m{n}@example.org>",
        sender=f"Mallory <{SECRET_SENDER}>",
        date=T0 + timedelta(days=n),
        extra={"In-Reply-To": "<m1@example.org>"},
    )


def _site_with_spam(site: Path) -> tuple[str, bytes]:
    messages = [post(1, "Release plans"), post(2, "Re: Release plans", reply_to=1), _spam(3), post(4, "Other topic")]
    add(site, *messages)
    build(site)
    call, _path = call_of(site, 3)
    return call, mboxrd(messages)


def _hide(site: Path, *ids: str, **options: object) -> object:
    config = load_config(site / "listlib.toml")
    return steward(config, "hide", Selector(ids=ids, **options), reason="spam", by="test")  # type: ignore[arg-type]


def test_hidden_message_leaves_every_page_and_unhide_restores_the_site(site: Path) -> None:
    call, _mbox = _site_with_spam(site)
    before = tree(site / "output")
    needles = [SECRET_BODY.encode(), SECRET_SENDER.encode(), b"m3@example.org", b"casino chips"]
    assert files_holding(site / "output", needles)  # the test can see the message
    result = run_listlib("hide", call, "--reason", "spam", cwd=site, check=True)
    assert "1 message hidden; ledger entry 1" in result.stdout
    build(site)
    # The thread page's reply and every index: no page holds its body, sender or Message-ID
    # (the search index's files included), nor even its call number.
    assert files_holding(site / "output", needles) == []
    assert files_holding(site / "output", [call.encode()]) == []
    run_listlib("unhide", call, cwd=site, check=True)
    build(site)
    assert tree(site / "output") == before


def test_incremental_build_after_hiding_equals_a_clean_build(site: Path, tmp_path: Path) -> None:
    call, _mbox = _site_with_spam(site)
    _hide(site, call)
    build(site)
    clean = tmp_path / "clean"
    shutil.copytree(site / "content", clean / "content", ignore=shutil.ignore_patterns(".lock", ".index"))
    shutil.copy(site / "listlib.toml", clean / "listlib.toml")
    build(clean, clean=True)
    assert tree(site / "output") == tree(clean / "output")


def _clean_build(site: Path, into: Path) -> dict[str, bytes]:
    """The output a clean build of the site's store and configuration makes."""
    shutil.copytree(site / "content", into / "content", ignore=shutil.ignore_patterns(".lock", ".index"))
    shutil.copy(site / "listlib.toml", into / "listlib.toml")
    build(into, clean=True)
    return tree(into / "output")


def test_a_bulk_hide_makes_only_its_threads_copies_again_and_equals_a_clean_build(site: Path, tmp_path: Path) -> None:
    """A month's raw copies and redirects are a job per thread: hiding messages by a query
    runs those of their threads, not every message's of their months; the output is a
    clean build's after the hide, and after unhide the site from before."""
    hour = timedelta(hours=1)
    add(
        site,
        post(1, "Plans", at=hour),
        post(2, "Re: Plans", reply_to=1, refs=(1,), at=2 * hour, body="A quokka appears.\n"),
        post(3, "Re: Plans", reply_to=2, refs=(1, 2), at=3 * hour),
        post(4, "Other", at=4 * hour),
        post(5, "Re: Other", reply_to=4, refs=(4,), at=5 * hour),
        post(6, "Third", at=6 * hour, body="Another quokka here.\n"),
        post(7, "Re: Third", reply_to=6, refs=(6,), at=7 * hour),
        post(8, "Later", at=40 * 24 * hour),
        post(9, "Re: Later", reply_to=8, refs=(8,), at=41 * 24 * hour, body="Quokka again.\n"),
    )
    build(site)
    before = tree(site / "output")
    call = {n: call_of(site, n)[0] for n in range(1, 10)}
    hidden = _hide(site, query="quokka")
    calls = [row.call for row in hidden.messages]  # type: ignore[attr-defined]
    assert sorted(calls) == sorted(call[n] for n in (2, 6, 9))
    config = load_config(site / "listlib.toml")
    copies = [item["job"] for item in plan_site(config).planned if item["job"].startswith("messages:")]
    # Those of the threads of m2 (rooted at m1), m6 (m7's now) and m9 (rooted at m8): not m4's.
    threads = {call[n] for n in (1, 6, 7, 8)}
    assert copies and {job.rsplit(":", 1)[1] for job in copies} <= threads, copies
    build(site)
    assert tree(site / "output") == _clean_build(site, tmp_path / "hidden")
    steward(config, "unhide", Selector(ids=tuple(calls)), reason="", by="test")
    build(site)
    assert tree(site / "output") == before
    assert before == _clean_build(site, tmp_path / "shown")


def test_reimport_and_rebuilt_index_keep_hidden_mail_hidden(site: Path, tmp_path: Path) -> None:
    call, mbox = _site_with_spam(site)
    _hide(site, call)
    source = tmp_path / "again.mbox"
    source.write_bytes(mbox)
    result = run_listlib("import", source, cwd=site, check=True)
    assert "3 duplicates, 1 refused (hidden)" in result.stdout
    shutil.rmtree(site / "content" / ".index")
    with Store(site / "content").open() as store:
        (row,) = store.index.rows_by_call([call])
        assert row.state == HIDDEN
        assert store.index.count() == 4


def test_unknown_id_changes_nothing_and_says_so(site: Path) -> None:
    call, _mbox = _site_with_spam(site)
    result = run_listlib("hide", call, "<nobody@nowhere.example>", "--reason", "x", cwd=site)
    assert result.returncode == 1
    assert "no message in the store has the call number or Message-ID <nobody@nowhere.example>" in result.stderr
    assert "nothing was changed" in result.stderr
    assert not (site / "content" / LEDGER_NAME).exists()
    with Store(site / "content").open() as store:
        assert [row.state for row in store.index.rows_by_call([call])] == [FILED]


def test_dry_run_lists_what_a_sender_selection_would_hide(site: Path) -> None:
    call, _mbox = _site_with_spam(site)
    result = run_listlib("hide", "--sender", "@CASINO.example", "--reason", "spam", "--dry-run", cwd=site, check=True)
    assert call in result.stdout
    assert "1 message would be hidden" in result.stdout
    assert not (site / "content" / LEDGER_NAME).exists()


def test_hide_by_query_and_month_with_json(site: Path) -> None:
    call, _mbox = _site_with_spam(site)
    result = run_listlib(
        "hide", "--query", "casino", "--month", "2024-03", "--reason", "spam", "--json", cwd=site, check=True
    )
    data = json.loads(result.stdout)
    assert [m["call"] for m in data["messages"]] == [call]
    assert data["ledger_entry"] == 1
    again = run_listlib("hide", call, "--reason", "spam", "--json", cwd=site, check=True)
    assert json.loads(again.stdout)["skipped"][0]["call"] == call


def test_ledger_shows_entries_with_hostile_reasons_escaped(site: Path) -> None:
    call, _mbox = _site_with_spam(site)
    reason = "<script>alert(1)</script>\x1b[31m red"
    run_listlib("hide", call, "--reason", reason, cwd=site, check=True)
    run_listlib("unhide", call, cwd=site, check=True)
    shown = run_listlib("ledger", cwd=site, check=True).stdout
    assert "\x1b" not in shown
    assert "hide 1: <script>alert(1)</script>" in shown
    assert "2 entries" in shown
    data = json.loads(run_listlib("ledger", "--json", cwd=site, check=True).stdout)
    assert [(e["seq"], e["action"]) for e in data["entries"]] == [(1, "hide"), (2, "unhide")]
    assert data["entries"][0]["reason"] == reason
    assert data["entries"][0]["messages"] == [{"call": call, "list": "dev"}]


def test_hiding_nothing_is_an_error(site: Path) -> None:
    _site_with_spam(site)
    assert run_listlib("hide", "--reason", "x", cwd=site).returncode == 1
    result = run_listlib("hide", "--list", "announce", "--reason", "x", cwd=site)
    assert result.returncode == 1
    assert "matches no message" in result.stderr


@pytest.mark.parametrize("point", ["ledger-appended", "ledger-applied"])
def test_a_kill_after_the_ledger_entry_still_hides_the_message(site: Path, point: str) -> None:
    call, _mbox = _site_with_spam(site)
    env = {**subprocess_env(), "LISTLIB_CRASH_AT": f"{point}:1"}
    killed = subprocess.run(
        [sys.executable, "-m", "listlib", "hide", call, "--reason", "spam"],
        cwd=site,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == -9
    entries, _size = read_ledger(site / "content")
    assert [e.action for e in entries] == ["hide"]
    build(site)  # the next holder of the store lock applies the entry
    with Store(site / "content").open() as store:
        assert [row.state for row in store.index.rows_by_call([call])] == [HIDDEN]
    assert files_holding(site / "output", [SECRET_BODY.encode()]) == []


def test_a_torn_ledger_line_is_an_action_that_never_happened(site: Path) -> None:
    call, _mbox = _site_with_spam(site)
    _hide(site, call)
    ledger = site / "content" / LEDGER_NAME
    complete = ledger.read_bytes()
    with open(ledger, "ab") as file:
        file.write(b'{"seq": 2, "at": "2026-01-01T00:00:00Z", "action": "unhi')
    with Store(site / "content").open() as store, store.locked():
        assert [row.state for row in store.index.rows_by_call([call])] == [HIDDEN]
    assert ledger.read_bytes() == complete


def test_check_reports_hidden_mail_still_published_until_the_build(site: Path) -> None:
    call, _mbox = _site_with_spam(site)
    _hide(site, call)
    result = run_listlib("check", cwd=site)
    assert result.returncode == 1
    assert f"hidden message {call} is still published; run 'listlib build'" in result.stderr
    build(site)
    assert run_listlib("check", cwd=site).returncode == 0


def test_check_reports_an_index_that_disagrees_with_the_ledger(site: Path) -> None:
    call, _mbox = _site_with_spam(site)
    _hide(site, call)
    build(site)
    with Store(site / "content").open() as store:
        store.index.begin()
        store.index.set_state([call], FILED, was=HIDDEN)
        store.index.commit()
        (row,) = store.index.rows_by_call([call])
    result = run_listlib("check", cwd=site)
    assert result.returncode == 1
    assert f"ledger: {row.path} is hidden by the ledger but not in the index" in result.stderr
    run_listlib("check", "--repair", cwd=site, check=True)
    with Store(site / "content").open() as store:
        assert [r.state for r in store.index.rows_by_call([call])] == [HIDDEN]


@pytest.mark.pop3
def test_a_hidden_message_fetched_again_over_pop3_is_refused(site: Path, mailbox: Mailbox) -> None:
    add_pop3_account(site, mailbox)
    spam = _spam(3)
    mailbox.drop_many([post(1, "Release plans"), spam])
    run_listlib("fetch", cwd=site, check=True)
    call, _path = call_of(site, 3)
    run_listlib("hide", call, "--reason", "spam", cwd=site, check=True)
    mailbox.drop_many([spam])  # the same mail, delivered to the archive's mailbox again
    again = run_listlib("fetch", cwd=site, check=True)
    assert "1 retrieved" in again.stdout
    assert "0 filed" in again.stdout and "1 refused (hidden)" in again.stdout
    assert mailbox.count() == 0  # settled: nothing left to fetch again and again
    with Store(site / "content").open() as store:
        assert [row.state for row in store.index.find_rows((FILED, HIDDEN), slug="dev")] == [FILED, HIDDEN]


def test_a_damaged_ledger_line_is_named_by_its_number(site: Path) -> None:
    call, _mbox = _site_with_spam(site)
    _hide(site, call)
    with open(site / "content" / LEDGER_NAME, "ab") as file:
        file.write(b'{"seq": 2, "not": "an entry"}\n')
    result = run_listlib("build", cwd=site)
    assert result.returncode == 1
    assert "ledger.jsonl, line 2: not a ledger entry" in result.stderr
    assert "Traceback" not in result.stderr
