#!/usr/bin/env python3
"""Cluster benchmark: the full build of a generated archive on this machine's cores, and
the same build on a Dask ``LocalCluster`` of worker processes on the same machine
(``listlib build --cluster``), side by side in one run; the cluster's overhead is the
difference (target, issue 28: at most 25 % at 50,000 messages with 2 workers on 2 cores).

One import (``listlib import``, the generator of ``build_bench.py``), copied to two sites,
so that both builds render the same store; each build is the real command in a
subprocess (wall time, CPU of the process tree, peak PSS of the building process's tree; the
cluster's worker processes are not children of the build: their CPU and the
scheduler's are added to the cluster build's, and that total is the overhead that does
not depend on what else the machine is running). The scheduler and the workers' nannies
run on this process's threads; its main thread samples the builds' memory, and that
CPU is nobody's build (about 5 % of a core).

The ``LocalCluster`` runs with the Dask settings the README ("Large archives")
recommends for a build cluster (``CLUSTER_CONFIG``: no statistical profiler, slower
event-loop and system monitors, which take most of what idle Dask processes cost, and
glibc's own malloc trimming in the workers); ``--dask-defaults`` measures Dask's
defaults instead (whose nannies also put ``MALLOC_TRIM_THRESHOLD_`` in this process's
environment, and so in the cluster build's).
The two outputs are then compared file by file (all but the search index's randomly
named segments), so a benchmark run is also an exactness check.

    python3 bench/cluster_bench.py                        # 50,000 messages, 2 workers
    python3 bench/cluster_bench.py --messages 5000 --site-dir /dev/shm
    python3 bench/cluster_bench.py --workers 2 --threads 1
    python3 bench/cluster_bench.py --dask-defaults         # Dask's own settings

Needs ``pip install 'listlib[cluster]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from build_bench import SITE_TOML, Run, generate, listlib, output_size

# The cluster's workers load the checkout's listlib, like the measured commands.
REPO = Path(__file__).resolve().parents[1]

CLUSTER_CONFIG: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
    # Unset, not Dask's 65536: set at all, it also stops glibc from raising its mmap threshold
    # (128 KiB), so the big strings pages are rendered into are mapped and faulted in anew
    # each time (at 10,000 messages the workers took 224,000 page faults against 36,000).
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
}
"""The README's settings for a build cluster (scheduler, nannies and workers read them)."""


def same_output(one: Path, other: Path) -> list[str]:
    """Paths whose bytes differ (or that only one side has), search segments aside."""

    def files(folder: Path) -> dict[str, Path]:
        found = {}
        for path in folder.rglob("*"):
            rel = path.relative_to(folder).as_posix()
            if path.is_file() and not rel.startswith(("search/seg/", "search/manifest")):
                found[rel] = path
        return found

    left, right = files(one), files(other)
    differ = sorted(set(left) ^ set(right))
    differ += [rel for rel in sorted(set(left) & set(right)) if left[rel].read_bytes() != right[rel].read_bytes()]
    return differ


def process_cpu() -> float:
    """User + system CPU seconds of the calling process (run on each worker too)."""
    times = os.times()
    return times.user + times.system


def cluster_threads_cpu() -> float:
    """CPU seconds of this process's threads but the main one (which samples memory):
    the ``LocalCluster``'s scheduler and nannies."""
    assert threading.current_thread() is threading.main_thread()
    return process_cpu() - time.thread_time()


def show(step: str, run: Run, extra: str = "") -> None:
    print(f"{step:<28} {run.wall:8.1f} s wall {run.cpu:8.1f} s CPU {run.peak / 1e6:7.0f} MB  {extra}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=50_000, help="size of the generated archive (default 50000)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the LocalCluster (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="threads per worker (default 1)")
    parser.add_argument("--site-dir", type=Path, help="where the sites go (default: a temporary folder)")
    parser.add_argument("--dask-defaults", action="store_true", help="Dask's own settings, not CLUSTER_CONFIG")
    args = parser.parse_args()

    os.environ["PYTHONPATH"] = str(REPO)  # the LocalCluster's worker processes start from this environment
    import dask
    from distributed import Client, LocalCluster

    if not args.dask_defaults:
        dask.config.set(CLUSTER_CONFIG)  # the nannies hand their configuration to the workers they start

    scratch = Path(tempfile.mkdtemp(prefix="listlib-cluster-bench-", dir=args.site_dir))
    try:
        mbox = generate(args.messages, scratch / "gen.mbox")
        local = scratch / "local"
        local.mkdir()
        (local / "listlib.toml").write_text(SITE_TOML)
        imported = listlib("import", "--json", "--list", "bench", mbox, cwd=local)
        show("listlib import", imported, f"{json.loads(imported.out)['filed']} filed")
        clustered = scratch / "cluster"
        shutil.copytree(local, clustered, symlinks=True)

        built = listlib("build", "--json", cwd=local)
        report = json.loads(built.out)
        show("local build", built, f"{report['written']} files, {report['jobs_run']} jobs")
        started = time.monotonic()
        with LocalCluster(
            n_workers=args.workers, threads_per_worker=args.threads, processes=True, dashboard_address=None
        ) as cluster:
            print(f"{'LocalCluster started':<28} {time.monotonic() - started:8.1f} s", flush=True)
            # CPU, unlike wall time, does not depend on what else the machine runs: the cluster's
            # is the build command's, its workers' and the scheduler's and nannies' (in this process).
            with Client(cluster.scheduler_address) as client:
                workers_before, here_before = client.run(process_cpu), cluster_threads_cpu()
                on_cluster = listlib("build", "--json", "--cluster", cluster.scheduler_address, cwd=clustered)
                workers_after, here_after = client.run(process_cpu), cluster_threads_cpu()
        worker_cpu = {name: workers_after[name] - workers_before.get(name, 0.0) for name in workers_after}
        cluster_cpu = on_cluster.cpu + here_after - here_before + sum(worker_cpu.values())
        cluster_report = json.loads(on_cluster.out)
        workers = ", ".join(f"{name}: {w['jobs']} jobs" for name, w in cluster_report["cluster"]["workers"].items())
        show("cluster build", on_cluster, f"{cluster_report['written']} files ({workers})")
        render_local = report["seconds"] - report["search"]["seconds"]
        render_cluster = cluster_report["seconds"] - cluster_report["search"]["seconds"]
        settings = "Dask's defaults" if args.dask_defaults else "CLUSTER_CONFIG"
        print(
            f"cluster CPU (build + workers + scheduler, {settings}): {cluster_cpu:.1f} s, "
            f"{cluster_cpu / built.cpu - 1:+.1%} of the local build's {built.cpu:.1f} s: build {on_cluster.cpu:.1f} s, "
            f"workers {sum(worker_cpu.values()):.1f} s ({', '.join(f'{cpu:.1f}' for cpu in worker_cpu.values())}), "
            f"scheduler and nannies {here_after - here_before:.1f} s"
        )
        print(
            f"cluster overhead: {on_cluster.wall / built.wall - 1:+.1%} of the whole build's wall time; "
            f"{render_cluster / render_local - 1:+.1%} of the part before indexing "
            f"({render_local:.1f} s local, {render_cluster:.1f} s cluster)"
        )
        for label, data in (("local", report), ("cluster", cluster_report)):
            render = data["seconds"] - data["plan_seconds"] - data["check_seconds"] - data["search"]["seconds"]
            print(
                f"{label}: plan {data['plan_seconds']:.1f} s, render {render:.1f} s, "
                f"search index {data['search']['seconds']:.1f} s (plan and index stay on the build machine)"
            )
        print(output_size(local / "output"))
        differ = same_output(local / "output", clustered / "output")
        print("outputs identical" if not differ else f"OUTPUTS DIFFER in {len(differ)} files, e.g. {differ[:5]}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
