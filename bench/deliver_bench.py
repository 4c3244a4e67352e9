#!/usr/bin/env python3
"""Delivery benchmark: recipients/second of a real ``listlib deliver`` through a local aiosmtpd.

Queues one post (a 3 KB plain-text message) to N subscribers (default 5,000) with
``listlib import --deliver`` in a fresh site, then times the real ``listlib deliver``
command (process start, queue scan, SMTP transactions to aiosmtpd on 127.0.0.1, and
the durable per-transaction journal writes with fsync), without VERP (up to
``max_recipients`` RCPT TO per transaction) and with VERP (one transaction per
recipient). For scale, the same transactions sent by plain smtplib with nothing
recorded (the server's and the protocol's share of the time).

    python3 bench/deliver_bench.py                  # 5,000 subscribers
    python3 bench/deliver_bench.py --subscribers 20000 --max-recipients 100
    python3 bench/deliver_bench.py --site-dir /dev/shm   # the queue without the disk

Needs aiosmtpd (pip install aiosmtpd; in the test extras).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import smtplib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.delivery_site import delivery_toml  # noqa: E402
from tests.support.helpers import make_message  # noqa: E402
from tests.support.smtpserver import SmtpServer  # noqa: E402


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-m", "listlib", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"listlib {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


def one_run(base: Path, server: SmtpServer, count: int, verp: bool, max_recipients: int) -> dict[str, object]:
    site = Path(tempfile.mkdtemp(prefix="deliver-bench-", dir=base))
    try:
        subscribers = [f"s{i}@example.com" for i in range(count)]
        (site / "listlib.toml").write_text(
            delivery_toml(server, verp=verp, max_recipients=max_recipients, posters="anyone")
        )
        (site / "subscribers.txt").write_text("\n".join(subscribers) + "\n")
        body = "".join(f"Line {i} of a post of ordinary length, as lists carry them.\n" for i in range(50))
        (site / "post.eml").write_bytes(make_message("Benchmark post", body=body, message_id="<bench@x>"))
        run(["import", "--deliver", "post.eml"], site)
        before = sum(server.handler.received.values())
        started = time.perf_counter()
        out = run(["deliver", "--json"], site)
        seconds = time.perf_counter() - started
        report = json.loads(out.stdout)
        got = sum(server.handler.received.values()) - before
        assert report["delivered"] == count == got, (report, got)
        return {
            "verp": verp,
            "recipients": count,
            "transactions": report["transactions"],
            "seconds": round(seconds, 2),
            "recipients_per_second": round(count / seconds),
        }
    finally:
        shutil.rmtree(site, ignore_errors=True)


def plain_smtplib(server: SmtpServer, count: int, verp: bool, max_recipients: int) -> dict[str, object]:
    """The same transactions from plain smtplib in another process (the server's thread would
    fight an in-process client for the GIL), nothing recorded."""
    size = 1 if verp else max_recipients
    out = subprocess.run(
        [sys.executable, __file__, "--plain", str(server.port), str(count), str(size)],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = float(out.stdout)
    return {"verp": verp, "seconds": round(seconds, 2), "recipients_per_second": round(count / seconds)}


def _plain_client(port: int, count: int, size: int) -> None:
    data = make_message("Benchmark post", body="x\n" * 1500).replace(b"\n", b"\r\n")
    recipients = [f"p{i}@example.com" for i in range(count)]
    started = time.perf_counter()
    with smtplib.SMTP("127.0.0.1", port) as smtp:
        smtp.ehlo()
        for start in range(0, count, size):
            # The same commands listlib's transport sends (MAIL, RCPT..., DATA).
            smtp.mail("dev-bounces@lists.example.org")
            for recipient in recipients[start : start + size]:
                smtp.rcpt(recipient)
            smtp.data(data)
    print(time.perf_counter() - started)


def main() -> None:
    if sys.argv[1:2] == ["--plain"]:
        _plain_client(*map(int, sys.argv[2:5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subscribers", type=int, default=5000)
    parser.add_argument("--max-recipients", type=int, default=50)
    parser.add_argument("--site-dir", type=Path, default=REPO.parent)
    args = parser.parse_args()
    with SmtpServer() as server:
        results = []
        for verp in (False, True):
            result = one_run(args.site_dir, server, args.subscribers, verp, args.max_recipients)
            result["plain_smtplib"] = plain_smtplib(server, args.subscribers, verp, args.max_recipients)
            results.append(result)
            print(
                f"{'VERP   ' if verp else 'no VERP'}: {result['recipients']} recipients in {result['seconds']} s "
                f"({result['transactions']} transactions): {result['recipients_per_second']} recipients/s "
                f"(plain smtplib, nothing recorded: {result['plain_smtplib']['recipients_per_second']}/s)"  # type: ignore[index]
            )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
