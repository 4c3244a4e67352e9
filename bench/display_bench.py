#!/usr/bin/env python3
"""Message display benchmark: every message of linux-raid through ``display_message``.

    python3 bench/display_bench.py               # linux-raid (19,526 messages)
    python3 bench/display_bench.py SOURCE...     # any mbox, maildir, folder ...
    python3 bench/display_bench.py --profile     # also print the 25 costliest functions

Messages are read with listlib's filers and displayed one by one (streaming, so
peak memory is the display's, not the corpus's); only the ``display_message``
calls are timed. Prints messages/second for all messages and for the
single-part ``text/plain`` ones, wall and CPU time, and the process's peak RSS.
CPU time is the steadier number on a shared machine.
Target (issue "The site ..."): >= 3,000 plain-text messages/s on one core.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from listlib.display import display_message  # noqa: E402
from listlib.filers import open_source  # noqa: E402
from listlib.message import split_message  # noqa: E402

CORPORA = Path(os.environ.get("LISTLIB_SHARED", REPO.parent / "shared")) / "corpora"
_CONTENT_TYPE_RE = re.compile(rb"^content-type[ \t]*:[ \t]*([^;\s]*)", re.I | re.M)


def is_plain(raw: bytes) -> bool:
    match = _CONTENT_TYPE_RE.search(split_message(raw)[0])
    return match is None or match.group(1).lower() == b"text/plain"


def run(sources: list[Path]) -> None:
    count = plain = 0
    wall = cpu = plain_wall = plain_cpu = 0.0
    html_bytes = 0
    for source in sources:
        for mail in open_source(source).iter_mail():
            started, started_cpu = time.perf_counter(), time.process_time()
            shown = display_message(mail.raw)
            spent, spent_cpu = time.perf_counter() - started, time.process_time() - started_cpu
            count += 1
            wall += spent
            cpu += spent_cpu
            html_bytes += len(shown.body_html)
            if is_plain(mail.raw):
                plain += 1
                plain_wall += spent
                plain_cpu += spent_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"messages           {count:>10,}   ({plain:,} single-part text/plain)")
    print(f"display wall time  {wall:>10.2f} s   {count / wall:,.0f} messages/s")
    print(f"display CPU time   {cpu:>10.2f} s   {count / cpu:,.0f} messages/s")
    if plain:
        print(f"text/plain         {plain_cpu:>10.2f} s   {plain / plain_cpu:,.0f} messages/s (CPU)")
    print(f"body_html written  {html_bytes / 1e6:>10.1f} MB")
    print(f"peak RSS           {peak:>10.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sources", nargs="*", type=Path)
    parser.add_argument("--profile", action="store_true", help="print the costliest functions")
    args = parser.parse_args()
    sources = args.sources or [CORPORA / "mbox" / "linux-raid.mboxrd.gz"]
    for source in sources:
        if not source.exists():
            sys.exit(f"{source} does not exist (set LISTLIB_SHARED or name a source)")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(run, sources)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    else:
        run(sources)


if __name__ == "__main__":
    main()
