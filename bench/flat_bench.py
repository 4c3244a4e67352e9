#!/usr/bin/env python3
"""Memory flat in the number of messages (issue 28), at the issue's sizes: the measure of
``tests/build/test_build_memory.py`` (which runs at 2,100 and 8,400 messages to fit the
test suite's time) on archives of 20,000 and 80,000 messages in lists of one size.

For each size (``--lists``, default 6 and 24 lists of ``--per-list`` 3,334 generated
messages: ``scale_bench.generate``), a site is imported once, then ``listlib build
--clean`` runs twice: stopped where rendering ends (``LISTLIB_CRASH_AT=removing:1``, as
the test does) and whole. Printed: the peak PSS of the process tree (``import_bench.watch``,
as every benchmark measures it) and the peak of each of its processes (sampled every
0.1 s: the main process and the render or index workers apart), wall seconds.

    python3 bench/flat_bench.py --site-dir /dev/shm
    python3 bench/flat_bench.py --lists 3 12 --per-list 700    # the test's sizes

Target (issue 28): the bigger archive's peak no more than the smaller one's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import import_bench
import scale_bench


def _children(pid: int) -> list[int]:
    found = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as file:
                for child in file.read().split():
                    found += _children(int(child))
    except OSError:
        pass
    return found


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as file:
            return next(int(line.split()[1]) for line in file if line.startswith("Pss:"))
    except (OSError, StopIteration):
        return 0


def _per_process(proc: subprocess.Popen[bytes], peaks: dict[int, int], stop: threading.Event) -> None:
    while not stop.is_set():
        for pid in _children(proc.pid):
            peaks[pid] = max(peaks.get(pid, 0), _pss_kib(pid))
        stop.wait(0.1)


def build(site: Path, crash: str | None) -> tuple[int, list[int], float, int]:
    """(tree peak, per-process peaks biggest first, both in bytes; seconds; exit code)."""
    env = {**os.environ, "PYTHONPATH": str(scale_bench.bb.REPO)}
    env.pop("LISTLIB_CRASH_AT", None)
    if crash:
        env["LISTLIB_CRASH_AT"] = crash
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "listlib", "build", "--clean", "--json"],
        cwd=site,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    peaks: dict[int, int] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=_per_process, args=(proc, peaks, stop), daemon=True)
    sampler.start()
    watched = import_bench.watch(proc)
    stop.set()
    sampler.join()
    return (
        watched.peak,
        sorted((kib * 1024 for kib in peaks.values()), reverse=True),
        time.monotonic() - started,
        (proc.returncode),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lists", type=int, nargs="+", default=[6, 24], help="lists of each archive (default 6 24)")
    parser.add_argument("--per-list", type=int, default=3334, help="messages a list (default 3334)")
    parser.add_argument("--site-dir", type=Path, help="where the sites go (default: a temporary folder)")
    args = parser.parse_args()
    import_bench.precompile()
    scratch = Path(tempfile.mkdtemp(prefix="flat-bench-", dir=args.site_dir))
    mb = 2**20
    try:
        for lists in args.lists:
            site = scratch / f"site-{lists}"
            site.mkdir()
            (site / "listlib.toml").write_text(scale_bench.site_toml(lists))
            mbox = scale_bench.generate([args.per_list] * lists, scratch / f"{lists}.mbox")
            subprocess.run(
                [sys.executable, "-m", "listlib", "import", "--json", str(mbox)],
                cwd=site,
                env={**os.environ, "PYTHONPATH": str(scale_bench.bb.REPO)},
                capture_output=True,
                check=True,
            )
            mbox.unlink()
            for label, crash in (("plan and render", "removing:1"), ("whole build", None)):
                peak, each, seconds, code = build(site, crash)
                shown = ", ".join(f"{size / mb:.0f}" for size in each[:4])
                print(
                    f"{lists * args.per_list:>9,} messages, {label:15}: peak {peak / mb:6.1f} MB "
                    f"(processes {shown} MB), {seconds:5.0f} s, exit {code}",
                    flush=True,
                )
            shutil.rmtree(site)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
