#!/usr/bin/env python3
"""Threading benchmark: cold threading of linux-raid and rethreading after one new message.

    python3 bench/thread_bench.py                  # imports linux-raid into a temporary site first
    python3 bench/thread_bench.py --site DIR       # reuse a site that already holds it (list 'linux-raid')

Prints: the cold update (empty thread cache -> every thread of the list cached),
the threader alone on the same messages, an update with nothing new, and updates
after adding one reply at a time to threads spread over the archive (each
followed by what it rethreaded). Peak memory is the process's maximum RSS.
Targets (issue "Threading..."): cold <= 1 s, one added message <= 50 ms.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from listlib.config import ListConfig  # noqa: E402
from listlib.filing import file_sources  # noqa: E402
from listlib.store.core import Store  # noqa: E402
from listlib.threader import thread_messages  # noqa: E402
from listlib.threadset import ThreadSet, thread_input  # noqa: E402

CORPORA = Path(os.environ.get("LISTLIB_SHARED", REPO.parent / "shared")) / "corpora"
LIST = ListConfig("linux-raid", "linux-raid", "", ("linux-raid@vger.kernel.org",), ("linux-raid.vger.kernel.org",))


def timed(func, *args):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = func(*args)
    return time.perf_counter() - started, result


def reply_to(row, n: int) -> bytes:  # type: ignore[no-untyped-def]
    date = time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime(row.date + 600))
    return (
        f"From: Bench <bench@example.org>\nTo: linux-raid@vger.kernel.org\nSubject: Re: {row.subject}\n"
        f"Date: {date}\nMessage-ID: <bench-{n}-{time.time_ns()}@example.org>\n"
        f"In-Reply-To: <{row.message_id}>\nReferences: {row.refs} <{row.message_id}>\n\nOne more reply.\n"
    ).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, help="existing site folder holding linux-raid (list 'linux-raid')")
    parser.add_argument("--list", default="linux-raid", help="the list's slug in --site (default linux-raid)")
    parser.add_argument("--runs", type=int, default=5, help="cold runs and added messages (default 5)")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="thread-bench-", dir=REPO.parent))
    try:
        content = args.site / "content" if args.site else scratch / "content"
        store = Store(content).open()
        if not args.site:
            source = CORPORA / "mbox" / "linux-raid.mboxrd.gz"
            if not source.exists():
                print(f"{source} not found", file=sys.stderr)
                return 1
            seconds, report = timed(file_sources, store, [LIST], [source])
            print(f"imported {report.filed} messages in {seconds:.1f} s (setup, not measured)")
        cache = scratch / "cache"

        cold = []
        for _ in range(args.runs):
            shutil.rmtree(cache, ignore_errors=True)
            with ThreadSet(cache) as threadset:
                seconds, changes = timed(threadset.update, store.index)
                cold.append(seconds)
        print(
            f"cold update: {changes.rethreaded} messages -> {len(changes.threads)} threads in "
            f"{len(changes.months)} months: median {statistics.median(cold):.3f} s "
            f"(min {min(cold):.3f}, max {max(cold):.3f}; target <= 1 s)"
        )
        facts = store.index.thread_facts(args.list)
        inputs = [thread_input(f) for f in facts]
        alone = [timed(thread_messages, inputs)[0] for _ in range(args.runs)]
        print(f"threader alone: median {statistics.median(alone):.3f} s for {len(inputs)} messages")

        with ThreadSet(cache) as threadset:
            seconds, changes = timed(threadset.update, store.index)
            print(f"update with nothing new: {seconds * 1000:.1f} ms, rethreaded {changes.rethreaded}")
            rows = sorted(
                (r for r in store.index.iter_rows() if r.list == args.list and r.message_id),
                key=lambda r: r.date,
            )
            added = []
            for n in range(args.runs):
                target = rows[(n * 2 + 1) * len(rows) // (args.runs * 2)]
                mail = scratch / f"reply-{n}.eml"
                mail.write_bytes(reply_to(target, n))
                file_sources(store, [ListConfig(args.list, args.list, "", (), ())], [mail], forced_list=args.list)
                seconds, changes = timed(threadset.update, store.index)
                added.append(seconds)
                print(
                    f"  +1 reply in {target.year}-{target.month:02d}: {seconds * 1000:.1f} ms, rethreaded "
                    f"{changes.rethreaded} messages, changed {len(changes.threads)} thread(s), "
                    f"{len(changes.months)} month(s)"
                )
            print(
                f"one added message: median {statistics.median(added) * 1000:.1f} ms, "
                f"max {max(added) * 1000:.1f} ms (target <= 50 ms)"
            )
        store.close()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS of this process: {peak:.0f} MB")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
