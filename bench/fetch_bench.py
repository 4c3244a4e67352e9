#!/usr/bin/env python3
"""Fetch benchmark: messages/second and peak memory of a real ``listlib fetch`` from a local Dovecot.

Puts the first 2,000 messages of the real linux-raid archive into the maildir of a
Dovecot of its own (POP3S on 127.0.0.1, see tests/support/dovecot.py), then runs the real
command in a fresh site and measures wall time (login, LIST/UIDL, RETR, filing with
group commits, DELE, and QUIT, where Dovecot removes the files) and the peak RSS of
the process. Also measured: the same with ``keep_on_server`` (no deletions), a second
run with nothing new, and, for scale, the server alone: RETR (and DELE) of every
message with plain poplib (one command at a time), nothing filed, then QUIT. With
deletions, Dovecot's QUIT is expensive: it flags every retrieved message \\Seen
(a rename) and then removes it.

The same over IMAPS (``[imap.<name>]``, ``after = "delete"`` and ``"keep"``), side by
side with plain imaplib fetching the same mailbox (``UID FETCH 1:* BODY.PEEK[]``, then
for delete ``STORE \\Deleted`` and ``EXPUNGE``), nothing filed.

    python3 bench/fetch_bench.py                   # 2,000 messages
    python3 bench/fetch_bench.py --messages 5000   # more
    python3 bench/fetch_bench.py --site-dir /dev/shm   # the store without the disk
    python3 bench/fetch_bench.py --server-dir /dev/shm # the server's files off our disk
    python3 bench/fetch_bench.py --only imap       # one protocol

Needs dovecot-core, dovecot-pop3d and dovecot-imapd (apt-get install) and ../shared/corpora.
"""

from __future__ import annotations

import argparse
import imaplib
import json
import os
import poplib
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from listlib.filers import open_source  # noqa: E402
from tests.support.dovecot import DovecotServer, Mailbox, dovecot_binary  # noqa: E402

CORPORA = Path(os.environ.get("LISTLIB_SHARED", REPO.parent / "shared")) / "corpora"
SITE_TOML = """[site]
title = "bench"
base_url = "https://bench.example.org/"
[lists.linux-raid]
list_ids = ["linux-raid.vger.kernel.org"]
addresses = ["linux-raid@vger.kernel.org"]
"""


def load_messages(count: int) -> list[bytes]:
    messages = []
    for mail in open_source(CORPORA / "mbox" / "linux-raid.mboxrd.gz").iter_mail():
        messages.append(mail.raw)
        if len(messages) == count:
            break
    return messages


def run_fetch(site: Path) -> tuple[float, int, int, dict[str, object]]:
    """Run ``listlib fetch --json``: (seconds, peak RSS bytes, peak PSS bytes, report)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # the checkout's listlib, whatever is installed
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "listlib", "fetch", "--json"],
        cwd=site,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    peak_pss = [0]
    output: dict[str, bytes] = {}

    def sample() -> None:
        while proc.returncode is None:
            try:
                with open(f"/proc/{proc.pid}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith("Pss:"):
                            peak_pss[0] = max(peak_pss[0], int(line.split()[1]) * 1024)
            except (FileNotFoundError, ProcessLookupError):
                return
            time.sleep(0.02)

    def drain() -> None:
        output["out"] = proc.stdout.read()  # type: ignore[union-attr]
        output["err"] = proc.stderr.read()  # type: ignore[union-attr]

    threads = [threading.Thread(target=sample, daemon=True), threading.Thread(target=drain, daemon=True)]
    for thread in threads:
        thread.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.monotonic() - started
    threads[1].join()
    if proc.returncode != 0:
        sys.exit(f"listlib fetch failed:\n{output['err'].decode(errors='replace')}")
    (report,) = json.loads(output["out"])
    return elapsed, usage.ru_maxrss * 1024, peak_pss[0], report


def bench_fetch(server: DovecotServer, messages: list[bytes], site_parent: Path, *, keep: bool, kind: str) -> None:
    mailbox = server.add_user(f"bench-{kind}-{'keep' if keep else 'delete'}")
    mailbox.drop_many(messages)
    megabytes = sum(len(m) for m in messages) / 1e6
    with tempfile.TemporaryDirectory(dir=site_parent) as tmp:
        site = Path(tmp)
        port = server.ssl_port if kind == "pop3" else server.imaps_port
        keeping = (
            f"keep_on_server = {str(keep).lower()}" if kind == "pop3" else f'after = "{"keep" if keep else "delete"}"'
        )
        (site / "listlib.toml").write_text(
            SITE_TOML + f'[{kind}.bench]\nhost = "127.0.0.1"\nport = {port}\nuser = "{mailbox.user}"\n'
            f'password = "{mailbox.password}"\nca_file = "{server.ca_file}"\n{keeping}\n'
        )
        elapsed, rss, pss, report = run_fetch(site)
        filing = report["filing"]
        assert isinstance(filing, dict) and filing["messages"] == len(messages), report
        label = f"{kind} {'keep' if keep else 'delete after filing'}"
        print(
            f"fetch, {label:<25} {len(messages):>6} msgs {megabytes:6.1f} MB  {elapsed:6.2f} s  "
            f"{len(messages) / elapsed:6.0f} msg/s  {megabytes / elapsed:5.1f} MB/s  "
            f"peak RSS {rss / 2**20:4.0f} MB (PSS {pss / 2**20:4.0f} MB)  "
            f"[filed {filing['filed']}, duplicates {filing['duplicates']}, failed {filing['failed']}; "
            f"deleted {report['deleted']}, kept {report['kept']}]"
        )
        again, rss, _, report = run_fetch(site)
        known = f"nothing new ({report['known']} on the server)"
        print(f"fetch again, {kind} {known:<37} {again:6.2f} s  peak RSS {rss / 2**20:4.0f} MB")
    assert mailbox.count() == (len(messages) if keep else 0)


def bench_server_alone(server: DovecotServer, messages: list[bytes], *, delete: bool) -> None:
    """What the server's part costs: RETR everything with plain poplib (one command at a
    time), file nothing, then (when ``delete``) DELE everything and QUIT."""
    mailbox: Mailbox = server.add_user("bench-raw-delete" if delete else "bench-raw-keep")
    mailbox.drop_many(messages)
    context = ssl.create_default_context(cafile=str(server.ca_file))
    started = time.monotonic()
    conn = poplib.POP3_SSL("127.0.0.1", server.ssl_port, context=context)
    conn.user(mailbox.user)
    conn.pass_(mailbox.password)
    count, _ = conn.stat()
    for number in range(1, count + 1):
        conn.retr(number)
    retrieved = time.monotonic()
    if delete:
        for number in range(1, count + 1):
            conn.dele(number)
    quitting = time.monotonic()
    conn.quit()
    done = time.monotonic()
    label = "RETR, DELE, QUIT" if delete else "RETR, QUIT"
    print(
        f"server alone: poplib {label:<16} nothing filed {done - started:6.2f} s  {count / (done - started):6.0f} msg/s"
        f"  (RETR {retrieved - started:.2f} s, QUIT {done - quitting:.2f} s)"
    )


def bench_imap_alone(server: DovecotServer, messages: list[bytes], *, delete: bool) -> None:
    """What the IMAP server's part costs: one ``UID FETCH 1:* (BODY.PEEK[])`` with plain imaplib,
    file nothing, then (when ``delete``) flag everything \\Deleted and EXPUNGE."""
    mailbox: Mailbox = server.add_user("bench-imap-raw-delete" if delete else "bench-imap-raw-keep")
    mailbox.drop_many(messages)
    context = ssl.create_default_context(cafile=str(server.ca_file))
    started = time.monotonic()
    conn = imaplib.IMAP4_SSL("127.0.0.1", server.imaps_port, ssl_context=context)
    conn.login(mailbox.user, mailbox.password)
    conn.select("INBOX")
    _typ, data = conn.uid("FETCH", "1:*", "(BODY.PEEK[])")
    count = sum(1 for item in data if isinstance(item, tuple))
    del data
    retrieved = time.monotonic()
    if delete:
        conn.uid("STORE", "1:*", "+FLAGS.SILENT", r"(\Deleted)")
        conn.expunge()
    conn.logout()
    done = time.monotonic()
    label = "FETCH, STORE, EXPUNGE" if delete else "FETCH"
    print(
        f"server alone: imaplib {label:<21} nothing filed {done - started:6.2f} s  "
        f"{count / (done - started):6.0f} msg/s  (FETCH {retrieved - started:.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--site-dir", type=Path, default=REPO.parent, help="where to create the sites")
    parser.add_argument(
        "--server-dir",
        type=Path,
        help="where the server keeps its maildirs (e.g. /dev/shm: a server with a disk of its own, "
        "as a real one has); default: the system's temporary folder",
    )
    parser.add_argument("--only", choices=["pop3", "imap"], help="benchmark one protocol (default: both)")
    args = parser.parse_args()
    if dovecot_binary() is None:
        sys.exit("dovecot is not installed (apt-get install dovecot-core dovecot-pop3d)")
    if not CORPORA.is_dir():
        sys.exit(f"{CORPORA} not found")
    messages = load_messages(args.messages)
    load = os.getloadavg()[0]
    print(f"listlib fetch of {len(messages)} linux-raid messages over POP3S and IMAPS from Dovecot on 127.0.0.1, "
          f"{os.cpu_count()} cores, load average {load:.1f}")  # fmt: skip
    server_base = Path(tempfile.mkdtemp(prefix="listlib-dovecot-", dir=args.server_dir)) if args.server_dir else None
    print(f"sites in {args.site_dir}, server maildirs in {server_base or tempfile.gettempdir()}")
    with DovecotServer(server_base) as server:
        if args.only in (None, "pop3"):
            bench_fetch(server, messages, args.site_dir, keep=False, kind="pop3")
            bench_fetch(server, messages, args.site_dir, keep=True, kind="pop3")
            bench_server_alone(server, messages, delete=True)
            bench_server_alone(server, messages, delete=False)
        if args.only in (None, "imap"):
            if not server.has_imap:
                sys.exit("dovecot-imapd is not installed (apt-get install dovecot-imapd)")
            bench_fetch(server, messages, args.site_dir, keep=False, kind="imap")
            bench_fetch(server, messages, args.site_dir, keep=True, kind="imap")
            bench_imap_alone(server, messages, delete=True)
            bench_imap_alone(server, messages, delete=False)


if __name__ == "__main__":
    main()
