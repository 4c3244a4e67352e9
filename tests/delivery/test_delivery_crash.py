"""No recipient lost, none sent twice outside the one unavoidable window: kill -9 a real
``listlib deliver`` (and ``listlib import --deliver``) at many points, re-run, verify.

``LISTLIB_CRASH_AT=POINT:N`` makes the process SIGKILL itself the N-th time it reaches
POINT: ``sending`` (before an SMTP transaction), ``accepted`` (the server accepted
the message, the recipients are not yet marked done: qmail's unavoidable window),
``journal-half`` (half of the mark written), ``marked`` (the mark is durable),
``moved`` (a post renamed to another stage, folders not yet synced),
``sent-logged`` (a finished post's id recorded, its folder not yet deleted), and on
the queueing side the store's ``marked`` (filed, not yet queued), ``queue-written``
and ``queue-renamed``. Some runs are also killed from outside when their journal
reaches a given length.

The runs are chained: each killed run is followed by a run that may itself be
killed further on, so one post's delivery is interrupted at many points. After
every kill: every recipient marked done was accepted by the server, and the
recipients accepted but not marked (they will get a second copy) are at most one
transaction. At the end: every good recipient got the post, the duplicates are
exactly those windows, every permanent failure is in failed/ with its reply, and
nothing is pending. One aiosmtpd server serves every run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from listlib.delivery.queue import STAGES, Outbound

from ..support.delivery_site import NOW, make_site, post, queue_status, subscribers
from ..support.helpers import run_listlib, subprocess_env
from ..support.smtpserver import SmtpServer

pytestmark = pytest.mark.slow

HOUR = 3600.0


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


class Chain:
    """One post's delivery, interrupted again and again; keeps the duplicate ledger."""

    def __init__(self, site: Path, smtp: SmtpServer, recipients: list[str], per_transaction: int) -> None:
        self.site = site
        self.smtp = smtp
        self.recipients = recipients
        self.per_transaction = per_transaction
        self.windows: list[set[str]] = []
        self.kills = 0
        self.now = NOW
        self.baseline = Counter(smtp.handler.received)
        """What the shared server received before this chain (other tests' posts)."""

    def received(self) -> Counter[str]:
        wanted = set(self.recipients)
        return Counter({r: n for r, n in (self.smtp.handler.received - self.baseline).items() if r in wanted})

    def done(self) -> set[str]:
        outbound = Outbound(self.site / "queue")
        posts = [p for stage in STAGES for p in outbound.iter_stage(stage)]
        if not posts:  # the post left the queue: everyone is done
            assert outbound.sent_ids(), "the post vanished without being recorded as sent"
            return {r for r in self.recipients if not r.startswith("perm")}
        return {r for p in posts for r, s in p.state.items() if s == "done"}

    def journal_lines(self) -> int:
        return sum(p.read_bytes().count(b"\n") for p in (self.site / "queue").glob("*/*/journal"))

    def step(self, crash: str | None = None, *, kill_after_lines: int | None = None) -> str:
        before = self.received()
        env = {"LISTLIB_NOW": str(self.now)}
        if crash is not None:
            result = run_listlib("deliver", cwd=self.site, env={**env, "LISTLIB_CRASH_AT": crash})
            if result.returncode == 0 and "waiting to be retried" in result.stdout:
                # A kill from outside (the step before) can land after the pass ended and
                # the post went to retry/ (under load): the next pass is an hour later.
                self.now += HOUR
                env = {"LISTLIB_NOW": str(self.now)}
                result = run_listlib("deliver", cwd=self.site, env={**env, "LISTLIB_CRASH_AT": crash})
            assert result.returncode == -signal.SIGKILL, f"{crash} never reached: {result.stdout}{result.stderr}"
            self.kills += 1
            output = result.stdout
        elif kill_after_lines is not None:
            output = self._kill_from_outside(env, kill_after_lines)
        else:
            result = run_listlib("deliver", cwd=self.site, env=env)
            assert result.returncode == 0, result.stdout + result.stderr
            output = result.stdout
        received = self.received()
        done = self.done()
        assert done <= set(received), "a recipient was marked done that the server never accepted"
        fresh = received - before
        window = {r for r in fresh if r not in done}
        assert len(window) <= self.per_transaction, f"{len(window)} accepted but unmarked: more than one transaction"
        if window:
            self.windows.append(window)
        return output

    def _kill_from_outside(self, env: dict[str, str], lines: int) -> str:
        target = self.journal_lines() + lines
        process = subprocess.Popen(
            [sys.executable, "-m", "listlib", "deliver"],
            cwd=self.site,
            env={**subprocess_env(), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while process.poll() is None and self.journal_lines() < target and time.monotonic() < deadline:
            time.sleep(0.002)
        assert process.poll() is None, "the run ended before the kill"
        os.kill(process.pid, signal.SIGKILL)
        self.kills += 1
        process.communicate(timeout=30)
        # The server may still be taking in the last message the client sent before it died.
        seen = -1
        while seen != self.smtp.handler.transactions:
            seen = self.smtp.handler.transactions
            time.sleep(0.1)
        return ""

    def finish(self) -> None:
        for _ in range(6):
            self.step()
            if not [p for p in queue_status(self.site) if p["stage"] in ("new", "retry")]:
                break
            self.now += HOUR
        good = [r for r in self.recipients if not r.startswith("perm")]
        received = self.received()
        assert set(received) == set(good), "every good recipient got the post; no permanent failure did"
        duplicates = sum(n - 1 for n in received.values())
        assert duplicates == sum(len(w) for w in self.windows), "second copies only from the windows"
        status = queue_status(self.site)
        assert all(p["pending"] == 0 for p in status)
        perm = [r for r in self.recipients if r.startswith("perm")]
        if perm:
            [entry] = status
            assert entry["stage"] == "failed"
            assert entry["failures"] == dict.fromkeys(perm, "550 5.1.1 no such user here")
        else:
            assert status == []


def test_kill_deliver_at_many_points_of_a_500_recipient_post(tmp_path: Path, smtp: SmtpServer) -> None:
    recipients = ["poster@example.org", *(r.replace("@", "-a@") for r in subscribers(499))]
    site = make_site(tmp_path / "site", smtp, recipients, max_recipients=10)
    (site / "post.eml").write_bytes(post(1, sender="poster@example.org"))
    run_listlib("import", "--deliver", site / "post.eml", cwd=site, env={"LISTLIB_NOW": str(NOW)}, check=True)
    chain = Chain(site, smtp, recipients, per_transaction=10)
    smtp.handler.hold_temporary = True
    # The first attempt: 50 transactions of 10 recipients.
    for point in ("sending:2", "accepted:1", "marked:3", "accepted:5", "journal-half:2", "sending:7"):
        chain.step(point)
    chain.step(kill_after_lines=40)
    for point in ("accepted:3", "marked:1", "journal-half:1", "accepted:10", "moved:1"):
        chain.step(point)
    assert [p["stage"] for p in queue_status(site)] == ["retry"]
    smtp.handler.hold_temporary = False
    chain.now += HOUR  # the retries: the temporary failures come through, a few at a time
    for point in ("sending:1", "accepted:1", "marked:2", "moved:1"):  # moved: to failed/, all resolved
        chain.step(point)
    chain.finish()
    smtp.handler.hold_temporary = None
    print(f"500 recipients: {chain.kills} kills, second copies {[len(w) for w in chain.windows]}")
    assert chain.kills == 16
    assert 4 <= len(chain.windows) <= 8, chain.windows


def test_kill_deliver_with_verp_at_many_points(tmp_path: Path, smtp: SmtpServer) -> None:
    recipients = ["poster@example.org", *(f"v{i}@example.com" for i in range(60)), "temp1-v@example.net"]
    site = make_site(tmp_path / "site", smtp, recipients, verp=True)
    (site / "post.eml").write_bytes(post(1, sender="poster@example.org"))
    run_listlib("import", "--deliver", site / "post.eml", cwd=site, env={"LISTLIB_NOW": str(NOW)}, check=True)
    chain = Chain(site, smtp, recipients, per_transaction=1)
    for point in ("accepted:1", "accepted:17", "marked:5", "journal-half:3", "sending:30"):
        chain.step(point)
    # Ten recipients are left here; killing after four more marks leaves room for a kill
    # that lands a few marks late (the 2 ms poll under load) before temp1 is tried.
    chain.step(kill_after_lines=4)
    chain.step("moved:1")
    chain.now += HOUR
    chain.step("sent-logged:1")  # every recipient done: recorded as sent, folder not yet deleted
    assert queue_status(site) == [] or all(p["pending"] == 0 for p in queue_status(site))
    chain.finish()
    print(f"VERP: {chain.kills} kills, second copies {[len(w) for w in chain.windows]}")
    call = next((site / "content" / "dev").rglob("*.eml")).stem
    assert (site / "queue" / "sent.log").read_text().split() == [call]
    assert chain.kills == 8


@pytest.mark.parametrize("point", ["marked:1", "queue-written:1", "queue-renamed:1"])
def test_kill_while_queueing_then_reimport_queues_the_post_once(tmp_path: Path, smtp: SmtpServer, point: str) -> None:
    name = point.split(":")[0]
    recipients = [f"poster-{name}@example.org", *(f"q{i}-{name}@example.com" for i in range(20))]
    site = make_site(tmp_path / "site", smtp, recipients)
    (site / "post.eml").write_bytes(post(1, sender=f"poster-{name}@example.org"))
    env = {"LISTLIB_NOW": str(NOW)}
    crashed = run_listlib("import", "--deliver", site / "post.eml", cwd=site, env={**env, "LISTLIB_CRASH_AT": point})
    assert crashed.returncode == -signal.SIGKILL
    again = run_listlib("import", "--deliver", site / "post.eml", cwd=site, env=env, check=True)
    assert "1 post queued" in again.stdout or len(queue_status(site)) == 1
    run_listlib("import", "--deliver", site / "post.eml", cwd=site, env=env, check=True)
    assert [p["stage"] for p in queue_status(site)] == ["new"]
    run_listlib("deliver", cwd=site, env=env, check=True)
    run_listlib("import", "--deliver", site / "post.eml", cwd=site, env=env, check=True)
    run_listlib("deliver", cwd=site, env=env, check=True)
    assert Counter({r: n for r, n in smtp.handler.received.items() if r in recipients}) == Counter(recipients)
