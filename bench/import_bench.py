#!/usr/bin/env python3
"""Import benchmark: messages/second and peak memory of a real ``listlib import``.

Runs the real command in a fresh site for each input and samples the resident
memory (PSS) of its whole process tree (main process plus parsing workers) while
it runs (``watch``: at most a tenth of a core).

    python3 bench/import_bench.py                 # linux-raid mboxrd + twisted-python Pipermail
    python3 bench/import_bench.py --scaling       # also linux-raid x1, x2, x3: memory must stay flat
    python3 bench/import_bench.py --repeat 3      # linux-raid three times: the spread
    python3 bench/import_bench.py SOURCE...       # your own sources

Sites are removed only at the end. On the development machine's disk, start a run
five minutes after the last one (bench/README.md: file creation is slow for minutes
after many deletions on an ext4 without a journal).

Also times MHonArc on the same mbox when ``mhonarc`` is installed (apt-get install mhonarc).
Targets (issue "The archive store..."): >= 4,000 messages/s, <= 300 MB peak PSS.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
CORPORA = Path(os.environ.get("LISTLIB_SHARED", REPO.parent / "shared")) / "corpora"
SITE_TOML = """[site]
title = "bench"
base_url = "https://bench.example.org/"
[lists.linux-raid]
list_ids = ["linux-raid.vger.kernel.org"]
addresses = ["linux-raid@vger.kernel.org"]
[lists.twisted]
addresses = ["twisted-python@twistedmatrix.com"]
"""


def precompile() -> None:
    """Compile listlib's modules to bytecode once, as installing a wheel does.

    A source checkout run with PYTHONDONTWRITEBYTECODE (set on some machines) would
    otherwise compile every module on every command, ~0.15 s that no installed copy pays.
    """
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "listlib")], check=True)


def tree_rss(pid: int) -> int:
    """Proportional resident bytes (PSS) of a process and all its descendants.

    PSS rather than RSS: the parsing workers are forked and share pages with the
    main process, which a sum of RSS would count twice.
    """
    total = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            with open(f"/proc/{current}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
            with open(f"/proc/{current}/task/{current}/children") as f:
                pending.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


class Watched(NamedTuple):
    ended: float
    """``time.monotonic()`` when the process ended."""
    cpu: float
    """User + system seconds of the process and the children it waited for."""
    peak: int
    """Peak PSS of the process tree, in bytes."""
    system: float = 0.0
    """The system (kernel) part of ``cpu``: file system and page-table work."""


def watch(proc: subprocess.Popen[bytes]) -> Watched:
    """Reap ``proc`` (setting its ``returncode``), sampling its tree's PSS until it ends.

    Reading ``smaps_rollup`` walks the process's page tables: ~20 ms of CPU for a
    600 MB process. Sampling every 20 ms regardless would take half a core from the
    program measured (a quarter of a 2-core machine). So the pause after a sample is
    nine times what the sample took (at least 20 ms): the sampler never uses more than
    a tenth of a core, and a big process is sampled every ~0.2 s. A thread waits for
    the process, so its end time does not depend on the pauses.
    """
    ended = threading.Event()
    reaped: list[tuple[float, int, resource.struct_rusage]] = []

    def wait() -> None:
        _, status, usage = os.wait4(proc.pid, 0)
        reaped.append((time.monotonic(), status, usage))
        ended.set()

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    peak = 0
    while not ended.is_set():
        started = time.perf_counter()
        peak = max(peak, tree_rss(proc.pid))
        ended.wait(max(0.02, 9 * (time.perf_counter() - started)))
    waiter.join()
    end, status, usage = reaped[0]
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return Watched(end, usage.ru_utime + usage.ru_stime, peak, usage.ru_stime)


def run_measured(cmd: list[str], cwd: Path) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # the checkout's listlib, whatever is installed
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, env=env)
        watched = watch(proc)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{err.read().decode(errors='replace')}")
        return watched.ended - started, watched.peak, out.read().decode(errors="replace")


SITE_PARENT = [REPO.parent]
SITES: list[Path] = []
"""Sites made by this run, removed together at its end: right after thousands of
files are deleted, creating files is slower for minutes on some file systems (ext4
without a journal checks recently deleted inodes one by one before reusing them,
``recently_deleted`` in fs/ext4/ialloc.c), which would slow the next import."""


def bench_listlib(sources: list[Path], label: str, extra: list[str]) -> dict[str, object]:
    site = Path(tempfile.mkdtemp(dir=SITE_PARENT[0]))
    SITES.append(site)
    (site / "listlib.toml").write_text(SITE_TOML)
    cmd = [sys.executable, "-m", "listlib", "import", "--json", *extra, *map(str, sources)]
    elapsed, peak, out = run_measured(cmd, site)
    report = json.loads(out)
    rate = report["messages"] / elapsed
    print(
        f"{label:<34} {report['messages']:>7} msgs  {elapsed:6.1f} s  {rate:7.0f} msg/s  "
        f"peak PSS {peak / 2**20:5.0f} MB  (filed {report['filed']}, duplicates {report['duplicates']})"
    )
    return {"label": label, "messages": report["messages"], "seconds": elapsed, "rate": rate, "peak_rss": peak}


def repeated_mbox(source: Path, copies: int, target: Path) -> Path:
    """``copies`` copies of a gzipped mboxrd file, Message-IDs made unique per copy.

    The same mail again and again, so memory per message is comparable between
    sizes: a flat peak across 1x, 2x and 3x means memory does not grow with input.
    """
    import re

    data = gzip.decompress(source.read_bytes())
    with gzip.open(target, "wb", compresslevel=1) as out:
        for copy in range(copies):
            out.write(data if copy == 0 else re.sub(rb"(?im)^(message-id:\s*<)", rb"\1copy%d." % copy, data))
    return target


def bench_mhonarc(mbox_gz: Path, listlib_seconds: float) -> None:
    if not shutil.which("mhonarc"):
        print("mhonarc: not installed (apt-get install mhonarc) - no comparison")
        return
    with tempfile.TemporaryDirectory(dir=REPO.parent) as tmp:
        mbox = Path(tmp) / "in.mbox"
        mbox.write_bytes(gzip.decompress(mbox_gz.read_bytes()))
        out = Path(tmp) / "out"
        out.mkdir()
        elapsed, peak, _ = run_measured(["mhonarc", "-quiet", "-outdir", str(out), str(mbox)], Path(tmp))
        print(f"{'mhonarc (full HTML build)':<34} {elapsed:6.1f} s  peak PSS {peak / 2**20:5.0f} MB")
        print(
            f"ratio: mhonarc takes {elapsed / listlib_seconds:.1f}x as long as listlib import "
            "(not like for like: mhonarc also writes HTML; compare again once listlib build exists)"
        )


def main() -> None:
    try:
        run()
    finally:
        for site in SITES:
            shutil.rmtree(site, ignore_errors=True)


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sources", nargs="*", type=Path)
    parser.add_argument("--scaling", action="store_true", help="also import linux-raid repeated 1, 2 and 3 times")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="import linux-raid N times into fresh sites (default 1)"
    )
    parser.add_argument(
        "--site-dir",
        type=Path,
        help="create the sites here (e.g. /dev/shm to measure CPU without the disk); default: beside the repo",
    )
    args = parser.parse_args()
    precompile()
    if args.site_dir:
        SITE_PARENT[0] = args.site_dir
    if args.sources:
        bench_listlib(args.sources, "custom", [])
        return
    if not CORPORA.is_dir():
        sys.exit(f"{CORPORA} not found; pass sources explicitly")
    raid = CORPORA / "mbox" / "linux-raid.mboxrd.gz"
    print(f"listlib import on {os.cpu_count()} cores")
    raid_results = [bench_listlib([raid], "linux-raid.mboxrd.gz", []) for _ in range(max(1, args.repeat))]
    raid_result = raid_results[0]
    if len(raid_results) > 1:
        rates = sorted(float(r["rate"]) for r in raid_results)  # type: ignore[arg-type]
        print(
            f"{'linux-raid, ' + str(len(rates)) + ' runs':<34} median {rates[len(rates) // 2]:.0f} msg/s, "
            f"range {rates[0]:.0f}-{rates[-1]:.0f}"
        )
    bench_listlib(
        [CORPORA / "pipermail" / "twisted-python"], "twisted-python Pipermail (2x dups)", ["--list", "twisted"]
    )
    if args.scaling:
        with tempfile.TemporaryDirectory(dir=REPO.parent) as tmp:
            for copies in (1, 2, 3):
                mbox = repeated_mbox(raid, copies, Path(tmp) / f"raid-x{copies}.mbox.gz")
                bench_listlib([mbox], f"linux-raid x{copies} (unique ids)", [])
    bench_mhonarc(raid, float(raid_result["seconds"]))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
