"""Summary lines count in good English: one of a thing is singular ("1 message", "1 file
written", "1 Message-ID collision"), any other number plural, in every command's report."""

from __future__ import annotations

from pathlib import Path

import pytest

from listlib.build import BuildReport
from listlib.delivery.intake import IntakeReport
from listlib.delivery.runner import DeliverReport
from listlib.filing import FilingReport
from listlib.values import plural

from ..support.helpers import make_message, mboxrd, run_listlib


@pytest.mark.parametrize(("count", "text"), [(0, "0 messages"), (1, "1 message"), (2, "2 messages")])
def test_plural_is_singular_only_for_one(count: int, text: str) -> None:
    assert plural(count, "message") == text
    assert plural(count, "entry", "entries") == text.replace("messages", "entries").replace("message", "entry")


def test_report_summaries_say_one_in_the_singular() -> None:
    filing = FilingReport(messages=1, filed=0, duplicates=1, collisions=1, seconds=1.0)
    assert (
        filing.summary() == "1 message in 1.0 s: 0 filed (1 Message-ID collision, 0 to _no_list), 1 duplicate, 0 failed"
    )
    unreadable = FilingReport(messages=2, filed=2, unreadable=[{"path": "a", "reason": "b"}])
    assert unreadable.summary().endswith("0 duplicates, 0 failed; 1 unreadable file")
    build = BuildReport(jobs_run=1, written=["index.html"], seconds=0.5)
    assert build.summary() == "1 file written, 0 unchanged, 0 removed (1 of 1 job run) in 0.50 s"
    deliver = DeliverReport(posts=1, delivered=1, completed=["p"], seconds=1.0)
    assert deliver.summary() == (
        "deliver: 1 post in 1.0 s: 1 recipient delivered, 0 failed, 0 deferred; 1 post done, 0 to failed, 0 to retry"
    )
    intake = IntakeReport(queued=["p"], bounces=1)
    assert intake.summary() == "1 post queued for delivery, 1 bounce recorded"


def test_commands_say_one_in_the_singular(site: Path) -> None:
    mail = site / "mail"
    mail.mkdir()
    (mail / "README").write_text("not mail\n")
    (mail / "one.mbox").write_bytes(mboxrd([make_message(subject="Unusual word zebrafish")]))
    imported = run_listlib("import", "mail", cwd=site, check=True)
    assert imported.stdout.startswith("1 message")
    assert "skipped 1 file that is not mail" in imported.stderr
    assert run_listlib("check", cwd=site, check=True).stdout.startswith("1 message in ")
    run_listlib("build", cwd=site, check=True)
    assert run_listlib("search", "zebrafish", cwd=site, check=True).stdout.endswith("1-1 of 1 message\n")
