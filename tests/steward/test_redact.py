"""``listlib redact``: a message replaced by an edited copy. The copy keeps the call
number, the URL and the place in its thread; the original's bytes leave the store and
every page; its page says it was edited; a later copy of the original is a duplicate."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from listlib.store.core import REDACTING, Store
from listlib.store.index import FILED, HIDDEN
from listlib.store.ledger import LEDGER_NAME, read_ledger

from ..build.test_build import add, build, call_of, post, tree
from ..support.dovecot import Mailbox
from ..support.helpers import add_pop3_account, make_message, mboxrd, run_listlib, subprocess_env
from ..support.linkcheck import check_links
from ..support.traces import files_holding
from .test_remove import post_date

LEAK = "The staging password is hunter2-velvet-anchor."


def _leaky(n: int) -> bytes:
    return make_message(
        "Re: Release plans",
        f"Try it on staging.\n{LEAK}\nThanks.\n",
        message_id=f"<m{n}@example.org>",
        sender="Eve Ops <eve@example.org>",
        date=post_date(n),
        extra={"In-Reply-To": "<m1@example.org>"},
    )


def _site(site: Path) -> tuple[str, bytes, list[bytes]]:
    messages = [post(1, "Release plans"), _leaky(2), post(3, "Re: Release plans", reply_to=2, refs=(1, 2))]
    add(site, *messages)
    build(site)
    call, path = call_of(site, 2)
    return call, (site / "content" / path).read_bytes(), messages


def _edited(original: bytes) -> bytes:
    return original.replace(LEAK.encode(), b"[password removed by the list admins]")


def _clean_build_of(site: Path, tmp_path: Path) -> dict[str, bytes]:
    clean = tmp_path / "clean"
    shutil.copytree(site / "content", clean / "content", ignore=shutil.ignore_patterns(".lock", ".index"))
    shutil.copy(site / "listlib.toml", clean / "listlib.toml")
    build(clean, clean=True)
    return tree(clean / "output")


def test_a_redacted_message_keeps_its_url_and_place_and_the_original_is_gone(site: Path, tmp_path: Path) -> None:
    call, original, messages = _site(site)
    _call, path = call_of(site, 2)
    page = site / "output" / path.replace(".eml", ".html")
    assert files_holding(site / "output", [LEAK.encode()])
    copy = tmp_path / "copy.eml"
    copy.write_bytes(_edited(original))
    result = run_listlib("redact", call, "--from-file", copy, "--reason", "leaked password", cwd=site, check=True)
    assert f"message {call} replaced by its edited copy (1 line out, 1 line in); ledger entry 1" in result.stdout
    assert (site / "content" / path).read_bytes() == _edited(original)
    assert read_ledger(site / "content")[0][0].by == f"listlib redact {call}"
    assert call_of(site, 2) == (call, path)  # same call number, same place in the store
    build(site)
    assert files_holding(site / "output", [LEAK.encode()]) == []
    assert b"password removed by the list admins" in (site / "output" / path).read_bytes()  # the raw copy
    thread_page = (site / "output" / call_of(site, 1)[1].replace(".eml", ".html")).read_text()
    assert "edited by the archive on" in thread_page and "leaked password" not in thread_page
    assert "redirect" in page.read_text() or "refresh" in page.read_text()  # still a permalink into the thread
    assert check_links(site / "output") == []
    assert tree(site / "output") == _clean_build_of(site, tmp_path)
    # A later copy of the original, as it was or through another relay, is the edited message's duplicate.
    again = tmp_path / "again.mbox"
    relayed = b"Received: from relay.example by mx.example; Tue, 2 Apr 2024 10:00:00 +0000\n" + _leaky(2)
    again.write_bytes(mboxrd([*messages, relayed]))
    imported = run_listlib("import", again, cwd=site, check=True)
    assert "0 filed" in imported.stdout and "4 duplicates" in imported.stdout
    # A rebuilt index still knows both.
    shutil.rmtree(site / "content" / ".index")
    assert "4 duplicates" in run_listlib("import", again, cwd=site, check=True).stdout
    with Store(site / "content").open() as store:
        (row,) = store.index.rows_by_call([call])
        assert row.edited_at is not None and row.state == FILED
    build(site)
    assert files_holding(site / "output", [LEAK.encode()]) == []
    assert run_listlib("check", cwd=site).returncode == 0


def test_redact_in_an_editor_and_the_reason_shown_escaped(site: Path) -> None:
    call, _original, _messages = _site(site)
    toml = site / "listlib.toml"
    toml.write_text(toml.read_text().replace("[site]\n", "[site]\nshow_removal_reasons = true\n", 1))
    env = {**subprocess_env(), "EDITOR": "sed -i s/hunter2-velvet-anchor/XXXX/"}
    result = subprocess.run(
        [sys.executable, "-m", "listlib", "redact", call, "--edit", "--reason", "<i>password</i>", "--build"],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert files_holding(site / "output", [b"hunter2"]) == []
    thread_page = (site / "output" / call_of(site, 1)[1].replace(".eml", ".html")).read_text()
    assert "&lt;i&gt;password&lt;/i&gt;" in thread_page and "<i>password" not in thread_page
    assert not list(Path("/tmp").glob(f"listlib-redact-*/{call}.eml"))  # the private copy is gone


def test_redact_refuses_copies_that_move_the_message_and_changes_nothing(site: Path, tmp_path: Path) -> None:
    call, original, _messages = _site(site)
    copy = tmp_path / "copy.eml"
    cases = {
        original.replace(b"<m2@example.org>", b"<other@example.org>"): "must keep the Message-ID",
        original.replace(b"Date: ", b"Date: Sun, 1 Jan 2023 00:00:00 +0000\nX-Old-Date: "): "must keep the Date",
        original: "is the same as the message",
    }
    for copy_bytes, error in cases.items():
        copy.write_bytes(copy_bytes)
        result = run_listlib("redact", call, "--from-file", copy, "--reason", "x", cwd=site)
        assert result.returncode == 1 and error in result.stderr, result.stderr
    assert run_listlib("redact", "<nobody@x>", "--from-file", copy, "--reason", "x", cwd=site).returncode == 1
    assert run_listlib("redact", call, "--from-file", tmp_path / "missing.eml", "--reason", "x", cwd=site).returncode
    assert run_listlib("redact", call, "--reason", "x", cwd=site).returncode == 2  # --edit or --from-file
    copy.write_bytes(_edited(original))
    assert run_listlib("redact", call, "--from-file", copy, cwd=site).returncode == 2  # no reason
    dry = run_listlib("redact", call, "--from-file", copy, "--reason", "x", "--dry-run", "--json", cwd=site, check=True)
    assert json.loads(dry.stdout)["lines_removed"] == 1
    assert not (site / "content" / LEDGER_NAME).exists()
    assert (site / "content" / call_of(site, 2)[1]).read_bytes() == original


def test_a_hidden_message_can_be_redacted_and_stays_hidden(site: Path, tmp_path: Path) -> None:
    call, original, _messages = _site(site)
    run_listlib("hide", call, "--reason", "review", cwd=site, check=True)
    copy = tmp_path / "copy.eml"
    copy.write_bytes(_edited(original))
    run_listlib("redact", call, "--from-file", copy, "--reason", "password", cwd=site, check=True)
    with Store(site / "content").open() as store:
        assert [row.state for row in store.index.rows_by_call([call])] == [HIDDEN]
    run_listlib("unhide", call, cwd=site, check=True)
    build(site)
    assert files_holding(site / "output", [LEAK.encode()]) == []
    assert files_holding(site / "output", [b"password removed by the list admins"])


@pytest.mark.parametrize("point", ["redaction-staged", "ledger-appended", "redaction-in-place", "ledger-applied"])
def test_a_kill_during_redact_leaves_the_old_message_or_the_edited_one(site: Path, tmp_path: Path, point: str) -> None:
    call, original, _messages = _site(site)
    copy = tmp_path / "copy.eml"
    copy.write_bytes(_edited(original))
    killed = subprocess.run(
        [sys.executable, "-m", "listlib", "redact", call, "--from-file", str(copy), "--reason", "password"],
        cwd=site,
        env={**subprocess_env(), "LISTLIB_CRASH_AT": f"{point}:1"},
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr
    entries, _size = read_ledger(site / "content")
    build(site)  # the next holder of the store lock finishes (or forgets) the redaction
    stored = (site / "content" / call_of(site, 2)[1]).read_bytes()
    if entries:  # recorded: the edited copy is in place and published, the original nowhere
        assert stored == _edited(original)
        assert files_holding(site / "output", [LEAK.encode()]) == []
    else:  # killed before its entry: nothing happened
        assert point == "redaction-staged" and stored == original
    assert not any((site / "content" / REDACTING).glob("*"))
    assert run_listlib("check", cwd=site).returncode == 0


@pytest.mark.pop3
def test_the_original_of_a_redacted_message_fetched_again_over_pop3_is_a_duplicate(
    site: Path, mailbox: Mailbox, tmp_path: Path
) -> None:
    add_pop3_account(site, mailbox)
    leaky = _leaky(2)
    mailbox.drop_many([post(1, "Release plans"), leaky])
    run_listlib("fetch", cwd=site, check=True)
    call, path = call_of(site, 2)
    copy = tmp_path / "copy.eml"
    copy.write_bytes(_edited((site / "content" / path).read_bytes()))
    run_listlib("redact", call, "--from-file", copy, "--reason", "password", cwd=site, check=True)
    mailbox.drop_many([leaky])  # the original, delivered to the archive's mailbox again
    again = run_listlib("fetch", cwd=site, check=True)
    assert "0 filed" in again.stdout and "1 duplicate" in again.stdout
    assert mailbox.count() == 0
    assert (site / "content" / path).read_bytes() == copy.read_bytes()


def test_a_redaction_that_changes_a_thread_s_page_count_rewrites_its_root_month_s_sitemap(
    site: Path, tmp_path: Path
) -> None:
    # The root in one month, a long log in the next: three thread pages (the log alone
    # outweighs a page, and the reply after it opens the third). The redacted log is
    # short, so the thread fits one page, and the root month's sitemap lists one page.
    log = "kernel: md0: resync step ok\n" * 6000  # some 170 KB, more than a page holds
    messages = [
        post(1, "Resync stalls"),
        post(40, "Re: Resync stalls", reply_to=1, refs=(1,), body=f"Full log:\n{log}"),
        post(41, "Re: Resync stalls", reply_to=40, refs=(1, 40)),
    ]
    add(site, *messages)
    build(site)
    call, path = call_of(site, 40)
    root_page = call_of(site, 1)[1].replace(".eml", ".html")
    assert (site / "output" / root_page.replace(".html", "-3.html")).is_file()
    copy = tmp_path / "short.eml"
    copy.write_bytes((site / "content" / path).read_bytes().replace(log.encode(), b"[log removed]\n"))
    run_listlib("redact", call, "--from-file", copy, "--reason", "too long", cwd=site, check=True)
    build(site)
    assert not (site / "output" / root_page.replace(".html", "-2.html")).exists()
    assert check_links(site / "output") == []
    assert tree(site / "output") == _clean_build_of(site, tmp_path)
