#!/usr/bin/env python3
"""Public-inbox benchmark: ``listlib import`` of a v2 inbox beside the same mail as an mbox.

Builds a two-epoch v2 inbox (``git fast-import`` as public-inbox writes it, then
``git repack -adf`` as a served inbox is packed) from the first messages of the real
linux-raid archive (``--messages N``, default 4,000), writes the very same messages
as an uncompressed mboxrd file and as a gzip-compressed one (what lore.kernel.org
offers for download), and imports each into fresh sites, alternately (``--rounds``,
default 3): median wall seconds, messages/second and the ratios (target: the inbox at
least as fast as the mbox, ratio <= 1), and median CPU seconds of each import's process
tree beside those of git's own pipeline alone (``rev-list | diff-tree | cat-file
--batch`` over every epoch, nothing filed): the part of the inbox's extra CPU that is
git inflating and un-deltifying its objects. Then adds 100 messages
to the last epoch and times the incremental import (what a cron run does).

    python3 bench/publicinbox_bench.py
    python3 bench/publicinbox_bench.py --inbox /srv/lore/linux-raid   # a real inbox at hand

With ``--inbox``, the mbox is written from that inbox's own messages (every epoch).
Sites are created beside the repository (same file system as a real site) and removed
at the end.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from listlib.filers import open_source  # noqa: E402
from tests.support.helpers import make_message, mboxrd  # noqa: E402
from tests.support.publicinbox import add_to_epoch, git, write_inbox  # noqa: E402

CORPORA = Path(os.environ.get("LISTLIB_SHARED", REPO.parent / "shared")) / "corpora"
SITE_TOML = """[site]
title = "bench"
base_url = "https://bench.example.org/"
[lists.linux-raid]
list_ids = ["linux-raid.vger.kernel.org"]
addresses = ["linux-raid@vger.kernel.org"]
"""


def read_messages(path: Path, limit: int | None) -> list[bytes]:
    source = open_source(path)
    try:
        out = []
        for mail in source.iter_mail():
            out.append(mail.raw)
            if limit is not None and len(out) >= limit:
                break
        return out
    finally:
        source.close()


def children_cpu() -> float:
    """CPU seconds (user + sys) of every child waited for so far, and of theirs."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def git_alone(inbox: Path) -> float:
    """CPU seconds of git's part of an inbox import, run without listlib: each epoch's
    commits named, their blobs named, and the blobs read (``cat-file --batch``)."""
    before = children_cpu()
    for epoch in sorted((inbox / "git").glob("*.git")):
        script = (
            'git --git-dir="$1" rev-list --reverse --topo-order HEAD '
            '| git --git-dir="$1" diff-tree --stdin -r --root --always --no-renames --no-abbrev '
            "| awk '/^:/ {print $4}' | git --git-dir=\"$1\" cat-file --batch > /dev/null"
        )
        subprocess.run(["bash", "-c", script, "git-alone", str(epoch)], check=True)
    return children_cpu() - before


def timed_import(work: Path, name: str, source: Path) -> tuple[float, dict]:
    site = work / name
    site.mkdir()
    (site / "listlib.toml").write_text(SITE_TOML)
    return run_import(site, source)


def run_import(site: Path, source: Path) -> tuple[float, dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started, cpu = time.monotonic(), children_cpu()
    result = subprocess.run(
        [sys.executable, "-m", "listlib", "import", "--json", str(source)],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.monotonic() - started, {**json.loads(result.stdout), "cpu": children_cpu() - cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--inbox", type=Path, help="a real public-inbox v2 inbox (or epoch) to import")
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "listlib")], check=True)
    work = Path(tempfile.mkdtemp(prefix="pi-bench-", dir=REPO.parent))
    try:
        if args.inbox is not None:
            inbox = args.inbox.resolve()
            messages = read_messages(inbox, None)
        else:
            raid = CORPORA / "mbox" / "linux-raid.mboxrd.gz"
            if not raid.exists():
                sys.exit(f"{raid} is not present (or pass --inbox)")
            messages = read_messages(raid, args.messages)
            half = len(messages) // 2
            inbox = write_inbox(work / "inbox", [messages[:half], messages[half:]])
            for epoch in sorted((inbox / "git").glob("*.git")):
                git(epoch, "repack", "-adfq")
        mbox = work / "same.mbox"
        mbox.write_bytes(mboxrd(messages))
        compressed = work / "same.mbox.gz"
        compressed.write_bytes(gzip.compress(mbox.read_bytes(), compresslevel=6))
        size = mbox.stat().st_size
        print(f"{len(messages)} messages, {size / 1e6:.1f} MB as mboxrd; inbox {inbox}")
        times: dict[str, list[float]] = {"mbox": [], "mbox.gz": [], "inbox": []}
        cpus: dict[str, list[float]] = {"mbox": [], "mbox.gz": [], "inbox": [], "git alone": []}
        for round_number in range(args.rounds):
            cpus["git alone"].append(git_alone(inbox))
            for kind, source in (("mbox", mbox), ("mbox.gz", compressed), ("inbox", inbox)):
                seconds, report = timed_import(work, f"{kind.replace('.', '-')}-{round_number}", source)
                assert report["messages"] == len(messages), report
                times[kind].append(seconds)
                cpus[kind].append(report["cpu"])
                print(
                    f"  round {round_number + 1} {kind:7}: {seconds:5.2f} s  {len(messages) / seconds:7.0f} msg/s  "
                    f"CPU {report['cpu']:5.2f} s"
                )
        median = {kind: statistics.median(values) for kind, values in times.items()}
        print(
            "median: "
            + ", ".join(f"{kind} {s:.2f} s ({len(messages) / s:.0f} msg/s)" for kind, s in median.items())
            + f"; inbox/mbox = {median['inbox'] / median['mbox']:.2f}, "
            f"inbox/mbox.gz = {median['inbox'] / median['mbox.gz']:.2f}"
        )
        cpu = {kind: statistics.median(values) for kind, values in cpus.items()}
        print(
            "median CPU: "
            + ", ".join(f"{kind} {s:.2f} s" for kind, s in cpu.items())
            + f"; inbox - mbox = {cpu['inbox'] - cpu['mbox']:+.2f} s, of which git alone {cpu['git alone']:.2f} s"
        )
        if args.inbox is None:
            site = work / "inbox-0"  # the first round's site
            nothing, _report = run_import(site, inbox)
            last = sorted((inbox / "git").glob("*.git"))[-1]
            extra = [
                make_message(f"new {n}", message_id=f"<bench-{n}@example.org>", to="linux-raid@vger.kernel.org")
                for n in range(100)
            ]
            add_to_epoch(last, extra, first_time=1_800_000_000)
            seconds, report = run_import(site, inbox)
            print(f"cron run, nothing new: {nothing:.2f} s; 100 new commits: {seconds:.2f} s ({report['filed']} filed)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
