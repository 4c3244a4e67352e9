#!/usr/bin/env python3
"""Threading a list from scratch: peak memory and CPU against the list's size.

    python3 bench/thread_memory_bench.py                       # 20,000, 40,000, 80,000 messages
    python3 bench/thread_memory_bench.py --messages 20000 --site-dir /dev/shm

For each size: a one-list archive from ``build_bench.py``'s generator, imported by
``listlib import --list bench`` into a fresh site (``build_bench.SITE_TOML``); then,
in a process of its own, the build's threading step alone (``ThreadSet.update`` with
the site's overrides, into an empty thread cache). Prints the step's wall time (``--repo DIR``: another checkout's), the
CPU time of its process tree, and its peak memory: the largest sum of the RSS of the
process and its children, sampled every 10 ms from outside (threading may fork a
child, and a sampler thread inside would stop it from forking). ``--trace`` runs
the step once more under tracemalloc and prints its top allocations by line at the
peak. Target (issue 28): peak nearly flat in the list's size.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from build_bench import SITE_TOML, generate  # noqa: E402

STEP = """
import sys, time, resource
sys.path.insert(0, {repo!r})
from pathlib import Path
from listlib.config.load import load_config
from listlib.overrides import threading_overrides
from listlib.store.core import Store
from listlib.threadset import ThreadSet
config = load_config(Path("listlib.toml"))
trace = {trace!r}
if trace:
    import tracemalloc
    tracemalloc.start(1)
with Store(config.site.content_dir).open() as store, ThreadSet(config.site.cache_dir).open() as threadset:
    overrides = threading_overrides(store.root, store.index, [lst.slug for lst in config.lists])
    started = time.perf_counter()
    changes = threadset.update(store.index, overrides)
    wall = time.perf_counter() - started
if trace:
    snapshot = tracemalloc.take_snapshot()
    print("traced peak", tracemalloc.get_traced_memory()[1] // 2**20, "MB")
    for stat in snapshot.statistics("lineno")[:15]:
        print(stat)
print("threads", len(changes.threads), "rethreaded", changes.rethreaded, "wall", round(wall, 2))
"""


def tree_rss(process: psutil.Process) -> int:
    total = 0
    for proc in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total


def run_step(site: Path, repo: Path, *, trace: bool = False) -> tuple[float, float, int, str]:
    """(wall, CPU of the tree, peak RSS of the tree, output) of the threading step."""
    cache = site / ".cache"
    shutil.rmtree(cache / "threads.sqlite", ignore_errors=True)
    for name in ("threads.sqlite", "threads.sqlite-wal", "threads.sqlite-shm"):
        (cache / name).unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", STEP.format(repo=str(repo), trace=trace)],
        cwd=site,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    process = psutil.Process(child.pid)
    peak = 0
    while child.poll() is None:
        with contextlib.suppress(psutil.Error):
            peak = max(peak, tree_rss(process))
        time.sleep(0.01)
    out = child.stdout.read() if child.stdout else ""
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if child.returncode:
        raise SystemExit(f"the threading step failed ({child.returncode})")
    return wall, cpu, peak, out.strip()


def make_site(root: Path, messages: int) -> Path:
    site = root / f"site-{messages}"
    site.mkdir()
    (site / "listlib.toml").write_text(SITE_TOML)
    mbox = generate(messages, root / f"gen-{messages}.mbox")
    subprocess.run([sys.executable, "-m", "listlib", "import", "--list", "bench", str(mbox)], cwd=site, check=True)
    mbox.unlink()
    return site


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, nargs="+", default=[20_000, 40_000, 80_000])
    parser.add_argument("--site-dir", type=Path, help="where to make the sites (default: a temporary folder)")
    parser.add_argument("--keep", type=Path, help="reuse (or keep) the sites in this folder")
    parser.add_argument("--runs", type=int, default=1, help="threading steps per size (the best is shown)")
    parser.add_argument("--repo", type=Path, default=REPO, help="the listlib checkout that threads (default: this one)")
    parser.add_argument("--trace", action="store_true", help="also print tracemalloc's top allocations")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="threadmem-", dir=args.site_dir))
    root.mkdir(parents=True, exist_ok=True)
    os.environ["PYTHONPATH"] = str(REPO)
    try:
        for messages in args.messages:
            site = root / f"site-{messages}"
            if not site.exists():
                site = make_site(root, messages)
            runs = [run_step(site, args.repo) for _ in range(args.runs)]
            wall, cpu, peak, out = min(runs, key=lambda run: run[1])
            print(f"{messages:>8,} messages: wall {wall:6.2f} s, CPU {cpu:6.2f} s, peak RSS {peak / 2**20:6.0f} MB")
            print("   ", out)
            if args.trace:
                print(run_step(site, args.repo, trace=True)[3])
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
