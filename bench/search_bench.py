#!/usr/bin/env python3
"""Search benchmark: listlib's static index beside Pagefind, over the same built site.

For linux-raid (19,526 real messages) and a generated archive (100,000 messages by
default, the generator of ``build_bench.py``), in one run:

- the site is imported and built with ``listlib build`` (not measured here; see
  ``build_bench.py``, but the time of its index step is printed: there the thread
  pages hand the indexer the text they displayed), then the search index is rebuilt
  from scratch in a process of its own (``update_index(clean=True)``, 2 workers,
  displaying every message itself): wall time, CPU time, peak PSS of the process tree;
- Pagefind (``pip install pagefind-bin``; ``python -m pagefind_bin --site output``)
  over the same output/ when installed: the same numbers, and the time ratio;
- bytes a browser fetches (uncompressed; the Python reader reads exactly the files
  the JS client fetches) for a first two-word query with a cold cache, then for a
  later query with other words (the manifest and segment metas already cached);
- Python reader latency: median over 30 queries, each with a cold reader (files
  read and parsed again) and with a warm one;
- one new message (a reply to an old thread): import + ``update_index`` in-process,
  the index work timed, and what it wrote;
- one message taken down (its stored file deleted, the store repaired, as the tests
  do): the ``update_index`` that purges it from its segment, timed (target: no more
  than a new message's whole build, about 1 s at 50k).

    python3 bench/search_bench.py --site-dir /dev/shm
    python3 bench/search_bench.py --only generated --messages 20000 --no-pagefind

Targets (issue "Search"): index <= 0.2 x Pagefind's time and <= 1 GB peak at 100k;
first query <= 300 KB, later query <= 100 KB; median query <= 50 ms; one new message
<= 100 ms of index work.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from build_bench import CORPORA, REPO, SITE_TOML, Run, generate, listlib, measured, reply_to_old_thread

sys.path.insert(0, str(REPO))

from listlib.config import load_config
from listlib.filing import file_sources
from listlib.search.reader import Source, search
from listlib.search.update import update_index
from listlib.store.core import Store
from listlib.verify import repair_store

QUERIES = [
    "raid5 reshape", "bitmap", "write journal", "mdadm assemble", "degraded array", "resync speed",
    "superblock version", "raid10 far layout", "spare rebuild", "bad blocks", "raid1 discard", "kernel panic",
    "chunk size", "grow raid6", "replace failed disk", "stripe cache size", "write hole", "raid0 layout",
    "recovery stuck", "udev rules", "uuid mismatch", "nvme timeout", "hung task", "sector error",
    "firmware timeout", '"stripe cache"', "resh*", "disk -raid5", "from:neil bitmap", "metadata after:2021",
]  # fmt: skip
FIRST, LATER = "degraded array", "superblock timeout"
INDEX_CODE = (
    "import json; from pathlib import Path; from listlib.config import load_config; "
    "from listlib.search.update import update_index; "
    "print(json.dumps(update_index(load_config(Path('listlib.toml')), clean=True, workers=2).to_dict()))"
)


def show(label: str, step: str, run: Run, extra: str = "") -> None:
    print(f"{label:<11} {step:<26} {run.wall:8.1f} {run.cpu:8.1f} {run.peak / 2**20:8.0f}  {extra}", flush=True)


def folder_size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def query_numbers(search_dir: Path) -> dict[str, float]:
    cold = Source(search_dir)
    search(cold, FIRST)
    first = cold.fetched
    search(cold, LATER)
    later = cold.fetched - first
    colds, warms = [], []
    warm = Source(search_dir)
    for text in QUERIES:
        started = time.perf_counter()
        search(Source(search_dir), text)
        colds.append(time.perf_counter() - started)
        search(warm, text)
        started = time.perf_counter()
        search(warm, text)
        warms.append(time.perf_counter() - started)
    return {
        "first": first,
        "later": later,
        "cold_ms": statistics.median(colds) * 1000,
        "warm_ms": statistics.median(warms) * 1000,
    }


def add_one(site: Path, scratch: Path) -> tuple[float, int, int]:
    """Import one reply and update the index in-process: (index seconds, files written, bytes)."""
    one = scratch / f"one-{time.time_ns()}.eml"
    reply_to_old_thread(site, one)
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        file_sources(store, config.lists, [one], forced_list="bench")
    search_dir = config.site.output_dir / "search"
    before = {p: p.stat().st_mtime_ns for p in search_dir.rglob("*") if p.is_file()}
    started = time.perf_counter()
    report = update_index(config, workers=1)
    seconds = time.perf_counter() - started
    assert report.indexed == 1, report
    after = [p for p in search_dir.rglob("*") if p.is_file() and before.get(p) != p.stat().st_mtime_ns]
    return seconds, len(after), sum(p.stat().st_size for p in after)


def remove_one(site: Path, nth: int) -> tuple[float, int]:
    """Delete the ``nth`` stored message and update the index in-process: (index seconds, files written)."""
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        rows = list(store.index.filed_rows("bench"))
    (config.site.content_dir / rows[nth % len(rows)].path).unlink()
    with Store(config.site.content_dir).open(discard_damaged_index=True) as store:
        repair_store(store)
    search_dir = config.site.output_dir / "search"
    before = {p.stat().st_ino for p in search_dir.rglob("*") if p.is_file()}
    started = time.perf_counter()
    report = update_index(config, workers=1)
    seconds = time.perf_counter() - started
    assert report.removed == 1, report
    # A purged segment's copy links the files it shares with the old one: those are not written.
    return seconds, sum(1 for p in search_dir.rglob("*") if p.is_file() and p.stat().st_ino not in before)


def bench(label: str, mbox: Path, scratch: Path, pagefind: bool) -> dict[str, object]:
    site = scratch / f"site-{label}"
    site.mkdir()
    (site / "listlib.toml").write_text(SITE_TOML)
    listlib("import", "--json", "--list", "bench", mbox, cwd=site)
    built = listlib("build", "--json", cwd=site)
    in_build = float(json.loads(built.out)["search"]["seconds"])
    print(
        f"{label:<11} (site built in {built.wall:.0f} s; its index step took {in_build:.1f} s, reading the text"
        " its thread pages had displayed)",
        flush=True,
    )
    output = site / "output"
    ours = measured([sys.executable, "-c", INDEX_CODE], site)
    report = json.loads(ours.out)
    manifest = json.loads((output / "search/manifest.json").read_bytes())
    live = [folder_size(output / "search/seg" / info["id"]) for info in manifest["segments"]]
    files, size = sum(n for n, _ in live), sum(b for _, b in live)  # the previous generation is kept a build
    show(label, "listlib search index", ours, f"{report['indexed']} messages, {files} files, {size / 2**20:.0f} MB")
    result: dict[str, object] = {"index": ours, "in_build": in_build}
    if pagefind:
        theirs = measured([sys.executable, "-m", "pagefind_bin", "--site", str(output)], site)
        files, size = folder_size(output / "pagefind")
        show(label, "pagefind", theirs, f"{files} files, {size / 2**20:.0f} MB")
        result["pagefind"] = theirs
        shutil.rmtree(output / "pagefind")
    numbers = query_numbers(output / "search")
    print(
        f"{label:<11} queries: first two-word {numbers['first'] / 1024:.0f} KB, later {numbers['later'] / 1024:.0f} KB"
        f" fetched (uncompressed); median {numbers['cold_ms']:.1f} ms cold reader, {numbers['warm_ms']:.1f} ms warm",
        flush=True,
    )
    # The first update after the rebuild also deletes the generation before it (the whole
    # index the build had written); the second is the steady state of a cron job.
    first, _written, _size = add_one(site, scratch)
    seconds, written, size = add_one(site, scratch)
    print(
        f"{label:<11} one new message: {seconds * 1000:.0f} ms of index work, {written} files ({size} bytes) written"
        f" (the first after the rebuild: {first * 1000:.0f} ms, deleting the previous generation)"
    )
    removed = [remove_one(site, nth) for nth in (7_919, 104_729)]
    print(
        f"{label:<11} one message taken down: "
        + ", ".join(f"{s * 1000:.0f} ms of index work ({n} files written)" for s, n in removed)
    )
    result.update(numbers, add_ms=seconds * 1000, remove_ms=max(s for s, _n in removed) * 1000)
    shutil.rmtree(site)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site-dir", type=Path, default=REPO.parent, help="where sites go (e.g. /dev/shm)")
    parser.add_argument("--only", choices=("raid", "generated"), help="one archive only")
    parser.add_argument("--no-pagefind", action="store_true", help="skip Pagefind even when installed")
    parser.add_argument("--messages", type=int, default=100_000, help="size of the generated archive (default 100000)")
    args = parser.parse_args()
    pagefind = not args.no_pagefind and importlib.util.find_spec("pagefind_bin") is not None
    if not args.no_pagefind and not pagefind:
        print("pagefind: not installed (pip install pagefind-bin) - no comparison")
    print(f"search index on {os.cpu_count()} cores, sites in {args.site_dir}")
    print(f"{'archive':<11} {'step':<26} {'wall s':>8} {'CPU s':>8} {'PSS MB':>8}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="search-bench-", dir=args.site_dir) as tmp:
        scratch = Path(tmp)
        if args.only != "generated":
            raid = CORPORA / "mbox" / "linux-raid.mboxrd.gz"
            if not raid.exists():
                sys.exit(f"{raid} not found; use --only generated")
            results["linux-raid"] = bench("linux-raid", raid, scratch, pagefind)
        if args.only != "raid":
            mbox = generate(args.messages, scratch / "generated.mbox")
            label = f"gen-{args.messages // 1000}k"
            results[label] = bench(label, mbox, scratch, pagefind)
            mbox.unlink()
    print()
    for label, result in results.items():
        index = result["index"]
        assert isinstance(index, Run)
        line = f"{label}: index {index.wall:.1f} s, peak {index.peak / 2**20:.0f} MB"
        if "pagefind" in result:
            theirs = result["pagefind"]
            assert isinstance(theirs, Run)
            ratio = f"{index.wall / theirs.wall:.2f} wall (target <= 0.2), {index.cpu / theirs.cpu:.2f} CPU"
            line += f"; / Pagefind = {ratio}"
            in_build = float(result["in_build"])  # type: ignore[arg-type]
            line += f"; the index step of a build: {in_build:.1f} s, {in_build / theirs.wall:.2f} x Pagefind"
        print(line)
        print(
            f"{label}: fetched {result['first'] / 1024:.0f} KB first (target <= 300), {result['later'] / 1024:.0f} KB"
            f" later (target <= 100); median query {result['cold_ms']:.1f} ms (target <= 50);"
            f" one new message {result['add_ms']:.0f} ms (target <= 100); one taken down {result['remove_ms']:.0f} ms"
        )


if __name__ == "__main__":
    main()
