"""Nothing lost, nothing twice over IMAP: kill -9 a real ``listlib fetch`` (or the Dovecot
IMAP server) mid-session, re-run, verify.

The fetch points (``LISTLIB_CRASH_AT=POINT:N``, see cli/hooks.py): ``receiving`` (a
chunk of a message body read, mid-FETCH), ``retrieved`` (a message read, not filed),
``filed`` (a batch durable in the store, not yet settled), ``flagged`` (its messages
flagged \\Deleted, not expunged), ``expunging`` (just before the UID EXPUNGE, or the
plain EXPUNGE of a server without UIDPLUS), ``expunged``, ``moving`` (just before UID
MOVE), ``copied`` (UID COPY done, source not yet flagged: a server without MOVE),
``deleted`` (a batch settled), ``recorded`` (a batch's UIDs recorded, ``after =
"keep"``), ``quitting`` (before the end of the session). After every kill each
message is on the server or in the store (never neither), and one more run leaves
each message filed exactly once and ``listlib check`` clean.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support.dovecot import DovecotServer, Mailbox
from ..support.helpers import (
    add_imap_account,
    make_message,
    new_imap_dovecot,
    run_listlib,
    stored_files,
    subprocess_env,
    wait_until_stopped,
)
from .test_imap import BARE_CAPABILITIES

pytestmark = [pytest.mark.imap, pytest.mark.slow]

BIG_BODY = ("x" * 76 + "\n") * 40_000  # about 3 MB: read in dozens of chunks


def crash_mailbox(mailbox: Mailbox) -> list[bytes]:
    """600 messages (3 batches), the first about 3 MB; return them."""
    messages = [make_message("big one", body=BIG_BODY, message_id="<big@x>")]
    messages += [make_message(f"message {i}", body=f"line {i}\n" * 40, message_id=f"<{i}@x>") for i in range(599)]
    mailbox.drop_many(messages)
    return messages


def on_server(mailbox: Mailbox) -> Counter[bytes]:
    return Counter(mailbox.contents()) + Counter(mailbox.contents("Filed"))


def in_store(site: Path) -> Counter[bytes]:
    return Counter(stored_files(site / "content").values())


def assert_nothing_lost(site: Path, mailbox: Mailbox, messages: list[bytes]) -> None:
    present = set(on_server(mailbox)) | set(in_store(site))
    missing = [m[:80] for m in messages if m not in present]
    assert not missing, f"{len(missing)} messages are neither on the server nor in the store"
    assert max(in_store(site).values(), default=1) == 1, "a message was filed twice"


def assert_complete(site: Path, mailbox: Mailbox, messages: list[bytes], *, after: str = "delete") -> None:
    rerun = run_listlib("fetch", cwd=site, check=True)
    assert "failed" not in rerun.stderr
    assert in_store(site) == Counter(messages), "a message was lost or filed twice"
    assert mailbox.count() == (len(messages) if after in ("keep", "seen") else 0)
    if after in ("keep", "seen"):
        assert mailbox.seen() == (0 if after == "keep" else len(messages))
    if after == "move":
        assert set(mailbox.contents("Filed")) == set(messages)
    check = run_listlib("check", cwd=site)
    assert check.returncode == 0 and check.stdout.endswith("clean\n"), check.stdout + check.stderr
    assert "no new mail" in run_listlib("fetch", cwd=site, check=True).stdout


def crash_at(site: Path, point: str) -> None:
    crashed = run_listlib("fetch", cwd=site, env={"LISTLIB_CRASH_AT": point})
    assert crashed.returncode == -signal.SIGKILL, f"{point} was never reached: {crashed.stdout}{crashed.stderr}"


@pytest.mark.parametrize(
    "point",
    [
        "receiving:20",  # mid-FETCH of the 3 MB message
        "retrieved:1",
        "retrieved:300",  # mid-batch
        "renamed:100",  # inside the store's group commit
        "filed:1",  # filed, not yet flagged
        "filed:3",
        "flagged:1",  # flagged \Deleted, not expunged
        "expunging:1",  # before a UID EXPUNGE
        "expunged:1",
        "deleted:1",
        "quitting:1",
    ],
)
def test_delete_mode_kill_at_a_point_then_rerun_files_each_message_once(
    point: str, site: Path, imap_mailbox: Mailbox
) -> None:
    messages = crash_mailbox(imap_mailbox)
    add_imap_account(site, imap_mailbox)
    crash_at(site, point)
    assert_nothing_lost(site, imap_mailbox, messages)
    if point.startswith(("retrieved:1", "receiving")):
        assert in_store(site) == Counter() and imap_mailbox.count() == len(messages)
    if point.startswith(("filed", "retrieved", "receiving")):
        assert imap_mailbox.flagged_deleted() == 0
    assert_complete(site, imap_mailbox, messages)


@pytest.mark.parametrize("point", ["retrieved:10", "filed:1", "recorded:1", "recorded:3", "quitting:1"])
def test_keep_mode_kill_at_a_point_then_rerun_files_each_message_once(
    point: str, site: Path, imap_mailbox: Mailbox
) -> None:
    messages = crash_mailbox(imap_mailbox)
    add_imap_account(site, imap_mailbox, after="keep")
    crash_at(site, point)
    assert imap_mailbox.count() == len(messages) and imap_mailbox.seen() == 0
    assert_nothing_lost(site, imap_mailbox, messages)
    assert_complete(site, imap_mailbox, messages, after="keep")


@pytest.mark.parametrize("point", ["recorded:1", "deleted:1"])
def test_seen_mode_kill_at_a_point_then_rerun_files_each_message_once(
    point: str, site: Path, imap_mailbox: Mailbox
) -> None:
    messages = crash_mailbox(imap_mailbox)
    add_imap_account(site, imap_mailbox, after="seen")
    crash_at(site, point)
    assert imap_mailbox.count() == len(messages)
    assert_nothing_lost(site, imap_mailbox, messages)
    assert_complete(site, imap_mailbox, messages, after="seen")


@pytest.mark.parametrize("point", ["filed:2", "moving:1", "deleted:1"])
def test_move_mode_kill_at_a_point_then_rerun_files_each_message_once(
    point: str, site: Path, imap_mailbox: Mailbox
) -> None:
    messages = crash_mailbox(imap_mailbox)
    add_imap_account(site, imap_mailbox, after="move", move_to="Filed")
    crash_at(site, point)
    assert_nothing_lost(site, imap_mailbox, messages)
    assert_complete(site, imap_mailbox, messages, after="move")


@pytest.fixture
def bare_dovecot() -> Iterator[DovecotServer]:
    """A Dovecot that announces neither IDLE, MOVE nor UIDPLUS."""
    with new_imap_dovecot(BARE_CAPABILITIES) as server:
        yield server


@pytest.mark.parametrize(("after", "point"), [("delete", "expunging:1"), ("delete", "flagged:1"), ("move", "copied:1")])
def test_without_move_and_uidplus_kill_at_a_point_then_rerun_files_each_message_once(
    after: str, point: str, site: Path, bare_dovecot: DovecotServer
) -> None:
    mailbox = bare_dovecot.add_user("ann")
    messages = crash_mailbox(mailbox)
    add_imap_account(site, mailbox, after=after, move_to="Filed" if after == "move" else None)
    crash_at(site, point)
    assert_nothing_lost(site, mailbox, messages)
    if point == "expunging:1":  # the one EXPUNGE comes at the end: everything flagged, nothing gone
        assert mailbox.count() == len(messages) and mailbox.flagged_deleted() == len(messages)
    assert_complete(site, mailbox, messages, after=after)


def start_fetch(site: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "listlib", "fetch"],
        cwd=site,
        env={**subprocess_env(), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_external_kills_at_moments_then_one_complete_run(site: Path, imap_mailbox: Mailbox) -> None:
    messages = crash_mailbox(imap_mailbox)
    add_imap_account(site, imap_mailbox)
    for delay in (0.3, 0.6, 0.45, 0.8, 0.5):
        run = start_fetch(site)
        time.sleep(delay)
        run.send_signal(signal.SIGKILL)
        run.communicate()
        assert_nothing_lost(site, imap_mailbox, messages)
    assert_complete(site, imap_mailbox, messages)


@pytest.mark.parametrize("point", ["receiving:20", "retrieved:300", "filed:1", "flagged:1", "expunging:1"])
def test_server_killed_mid_session_then_restarted_loses_nothing(
    point: str, site: Path, private_imap_dovecot: DovecotServer
) -> None:
    mailbox = private_imap_dovecot.add_user("ann")
    messages = crash_mailbox(mailbox)
    add_imap_account(site, mailbox)
    # The fetch stops itself at the point; the server is killed and restarted while
    # it is stopped; then it goes on, on a connection that is gone.
    run = start_fetch(site, {"LISTLIB_STOP_AT": point})
    wait_until_stopped(run.pid)
    private_imap_dovecot.kill()
    private_imap_dovecot.start()
    run.send_signal(signal.SIGCONT)
    _out, err = run.communicate(timeout=120)
    assert run.returncode == 1, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("Error: imap account 'archive': the connection to 127.0.0.1:"), err
    assert "broke off while" in err
    assert_nothing_lost(site, mailbox, messages)
    assert_complete(site, mailbox, messages)
