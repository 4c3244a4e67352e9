"""Nothing lost, nothing twice: kill -9 a real ``listlib fetch`` (or the POP3 server) mid-session, re-run, verify.

``LISTLIB_CRASH_AT=POINT:N`` makes ``listlib fetch`` SIGKILL itself the N-th time it
reaches POINT: the fetch points (``receiving``: a partial chunk of a message read,
``retrieved``: a message read, not yet filed, ``filed``: a batch durable in the store,
not yet deleted or recorded, ``deleted``: DELE sent for the batches filed so far,
``recorded``: a batch's UIDLs recorded, ``quitting``: just before QUIT) and the
store's batch points. After every
kill, each message is either still on the server or in the store (never neither),
and one more run leaves each message filed exactly once and ``listlib check`` clean.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from ..support.dovecot import DovecotServer, Mailbox
from ..support.helpers import (
    add_pop3_account,
    make_message,
    run_listlib,
    stored_files,
    subprocess_env,
    wait_until_stopped,
)

pytestmark = [pytest.mark.pop3, pytest.mark.slow]

BIG_BODY = ("x" * 76 + "\n") * 40_000  # about 3 MB: read in hundreds of chunks


def crash_mailbox(mailbox: Mailbox) -> list[bytes]:
    """600 messages (3 batches), the first about 3 MB; return them."""
    messages = [make_message("big one", body=BIG_BODY, message_id="<big@x>")]
    messages += [make_message(f"message {i}", body=f"line {i}\n" * 40, message_id=f"<{i}@x>") for i in range(599)]
    mailbox.drop_many(messages)
    return messages


def on_server(mailbox: Mailbox) -> Counter[bytes]:
    return Counter(mailbox.contents())


def in_store(site: Path) -> Counter[bytes]:
    return Counter(stored_files(site / "content").values())


def assert_nothing_lost(site: Path, mailbox: Mailbox, messages: list[bytes]) -> None:
    present = set(on_server(mailbox)) | set(in_store(site))
    missing = [m[:80] for m in messages if m not in present]
    assert not missing, f"{len(missing)} messages are neither on the server nor in the store"
    assert max(in_store(site).values(), default=1) == 1, "a message was filed twice"


def assert_complete(site: Path, mailbox: Mailbox, messages: list[bytes], *, kept: bool = False) -> None:
    rerun = run_listlib("fetch", cwd=site, check=True)
    assert "failed" not in rerun.stderr
    assert in_store(site) == Counter(messages), "a message was lost or filed twice"
    assert mailbox.count() == (len(messages) if kept else 0)
    check = run_listlib("check", cwd=site)
    assert check.returncode == 0 and check.stdout.endswith("clean\n"), check.stdout + check.stderr
    if kept:
        assert "no new mail" in run_listlib("fetch", cwd=site, check=True).stdout


def crash_at(site: Path, point: str) -> None:
    crashed = run_listlib("fetch", cwd=site, env={"LISTLIB_CRASH_AT": point})
    assert crashed.returncode == -signal.SIGKILL, f"{point} was never reached: {crashed.stdout}{crashed.stderr}"


@pytest.mark.parametrize(
    "point",
    [
        "receiving:40",  # mid-transfer of the 3 MB message
        "receiving:300",
        "retrieved:1",  # after RETR, before filing
        "retrieved:300",
        "temp-synced:1",
        "pending-committed:2",
        "renamed:100",
        "folders-synced:1",
        "marked:2",
        "filed:1",  # after filing, before DELE
        "filed:3",
        "deleted:1",  # after the first DELEs
        "quitting:1",  # after the last DELE, before QUIT
    ],
)
def test_kill_at_a_point_then_rerun_files_each_message_once(point: str, site: Path, mailbox: Mailbox) -> None:
    messages = crash_mailbox(mailbox)
    add_pop3_account(site, mailbox)
    crash_at(site, point)
    assert_nothing_lost(site, mailbox, messages)
    if point.startswith(("retrieved:1", "receiving")):
        assert in_store(site) == Counter() and mailbox.count() == len(messages)
    if point.startswith(("deleted", "quitting")):
        assert mailbox.count() == len(messages), "deletions without QUIT must not happen"
    assert_complete(site, mailbox, messages)


@pytest.mark.parametrize("point", ["retrieved:10", "filed:1", "recorded:1", "recorded:3", "marked:1", "quitting:1"])
def test_keep_on_server_kill_at_a_point_then_rerun_files_each_message_once(
    point: str, site: Path, mailbox: Mailbox
) -> None:
    messages = crash_mailbox(mailbox)
    add_pop3_account(site, mailbox, keep_on_server=True)
    crash_at(site, point)
    assert mailbox.count() == len(messages)
    assert_nothing_lost(site, mailbox, messages)
    assert_complete(site, mailbox, messages, kept=True)


def start_fetch(site: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "listlib", "fetch"],
        cwd=site,
        env={**subprocess_env(), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_external_kills_at_moments_then_one_complete_run(site: Path, mailbox: Mailbox) -> None:
    messages = crash_mailbox(mailbox)
    add_pop3_account(site, mailbox)
    for delay in (0.3, 0.6, 0.45, 0.8, 0.5):
        run = start_fetch(site)
        time.sleep(delay)
        run.send_signal(signal.SIGKILL)
        run.communicate()
        assert_nothing_lost(site, mailbox, messages)
    assert_complete(site, mailbox, messages)


@pytest.mark.parametrize(
    "point",
    [
        "receiving:40",  # mid-transfer of the 3 MB message
        "retrieved:300",  # mid-batch: what was retrieved is filed, the rest stays on the server
        "filed:1",  # filed, not yet deleted
        "quitting:1",  # all deleted, not yet QUIT: the server must forget the deletions
    ],
)
def test_server_killed_mid_session_then_restarted_loses_nothing(
    point: str, site: Path, private_dovecot: DovecotServer
) -> None:
    mailbox = private_dovecot.add_user("ann")
    messages = crash_mailbox(mailbox)
    add_pop3_account(site, mailbox)
    # The fetch stops itself at the point; the server is killed and restarted while
    # it is stopped; then it goes on, on a connection that is gone.
    run = start_fetch(site, {"LISTLIB_STOP_AT": point})
    wait_until_stopped(run.pid)
    private_dovecot.kill()
    private_dovecot.start()
    run.send_signal(signal.SIGCONT)
    _out, err = run.communicate(timeout=120)
    assert run.returncode == 1, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("Error: pop3 account 'archive': the connection to 127.0.0.1:"), err
    assert "broke off while" in err
    assert_nothing_lost(site, mailbox, messages)
    assert mailbox.count() == len(messages)
    if point == "retrieved:300":
        assert 300 <= len(stored_files(site / "content")) < len(messages)  # + answers already in flight
    assert_complete(site, mailbox, messages)
