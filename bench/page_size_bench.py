#!/usr/bin/env python3
"""Page weight benchmark: the largest HTML page a corpus's site has, and its thread pages' sizes.

Each corpus of ``../shared/corpora`` is imported into a fresh site of its own
(``listlib import --list bench``, real commands) and built (``listlib build``); then
every ``.html`` file of its output is measured: the largest page (its path and bytes),
and the median and largest thread page (a page with ``<article class="thread">``;
issue 29 asks for every page under ~500 KB).

    python3 bench/page_size_bench.py                        # every corpus
    python3 bench/page_size_bench.py --only linux-raid      # one (names below)
    python3 bench/page_size_bench.py --repo /tmp/old-tree   # another checkout's listlib

Sites go to a temporary folder (``--site-dir`` to choose where) and are removed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPORA = Path(os.environ.get("LISTLIB_SHARED", REPO.parent / "shared")) / "corpora"
SITE_TOML = """[site]
title = "bench"
base_url = "https://bench.example.org/"
[lists.bench]
addresses = ["bench@lists.example.org"]
"""
SOURCES = {
    "linux-raid": ("mbox/linux-raid.mboxrd.gz",),
    "twisted-python": ("pipermail/twisted-python",),
    "twisted-web": ("pipermail/twisted-web",),
    "imagej-devel": ("pipermail/imagej-devel",),
    "notmuch-lkml": ("maildir/notmuch-lkml",),
    "notmuch-default": ("maildir/notmuch-default",),
    "spamassassin": ("eml/spamassassin-easy-ham-1",),
    "edge": tuple(
        f"edge/{name}"
        for name in ("bigbang", "cpython-test", "flanker", "flufl-bounce", "hyperkitty", "notmuch", "perceval")
    ),
}
"""Corpus name -> its sources under ``CORPORA`` (imported together into one list)."""
THREAD_MARK = b'<article class="thread">'


def run(repo: Path, site: Path, *args: str) -> float:
    """``listlib ARGS`` in ``site`` with ``repo``'s listlib; its wall time."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "listlib", *args], cwd=site, env=env, capture_output=True)
    if done.returncode not in (0, 1):  # 1: some messages could not be filed (the edge corpora)
        sys.exit(
            f"listlib {' '.join(args)} failed ({done.returncode}):\n{done.stderr.decode(errors='replace')[-3000:]}"
        )
    return time.monotonic() - started


def measure(output: Path) -> tuple[int, tuple[int, str], list[int]]:
    """(HTML pages, (bytes, path) of the largest, sizes of the thread pages)."""
    largest = (0, "")
    threads: list[int] = []
    pages = 0
    for dirpath, _dirnames, filenames in os.walk(output):
        for name in filenames:
            if not name.endswith(".html"):
                continue
            path = Path(dirpath, name)
            if path.is_symlink():
                continue
            pages += 1
            size = path.stat().st_size
            largest = max(largest, (size, str(path.relative_to(output))))
            with path.open("rb") as page:
                if THREAD_MARK in page.read(4096):
                    threads.append(size)
    return pages, largest, threads


def bench(name: str, repo: Path, scratch: Path) -> int:
    """Build one corpus and print its page sizes; the largest page's bytes."""
    site = scratch / f"site-{name}"
    site.mkdir()
    (site / "listlib.toml").write_text(SITE_TOML)
    sources = [str(CORPORA / rel) for rel in SOURCES[name]]
    took = run(repo, site, "import", "--list", "bench", *sources)
    took += run(repo, site, "build")
    pages, (size, path), threads = measure(site / "output")
    median = statistics.median(threads) if threads else 0
    print(
        f"{name:<16} {pages:7d} pages  largest {size / 1000:8.1f} KB ({path})  "
        f"thread pages: {len(threads)}, median {median / 1000:.1f} KB, "
        f"largest {max(threads, default=0) / 1000:.1f} KB  [{took:.0f} s]",
        flush=True,
    )
    shutil.rmtree(site)
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(SOURCES), help="a corpus (repeatable)")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose listlib builds")
    parser.add_argument("--site-dir", type=Path, default=None, help="where the sites are made")
    args = parser.parse_args()
    if not CORPORA.is_dir():
        sys.exit(f"no corpora at {CORPORA}")
    with tempfile.TemporaryDirectory(dir=args.site_dir) as scratch:
        largest = max(bench(name, args.repo.resolve(), Path(scratch)) for name in args.only or SOURCES)
    print(f"largest HTML page over these corpora: {largest / 1000:.1f} KB")


if __name__ == "__main__":
    main()
