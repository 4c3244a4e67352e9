"""A full build's planning and rendering take memory flat in the number of messages
(issue 28): the plan is made one list-month at a time as the render workers need work
(only the jobs' ids and keys go to the build state's temporary tables), the Message-ID
lookup is gathered there, and the files made are noted there, not in Python objects.
Four times the messages, in lists of the same size, must not take more memory.

Measured as the benchmarks do: the peak PSS of the ``listlib build`` process tree,
sampled by ``bench/import_bench.watch``, on archives from the benchmarks' generator
(``bench/scale_bench.generate``). The build is stopped (``LISTLIB_CRASH_AT``) where
rendering ends and the search index update would begin: that step still holds the new
segment's postings in memory (one segment per batch, by design), and threading holds a
whole list (so the lists keep one size here).

Marked xfail (strict) while the peak still grows: the day it stops growing, the test
passes, strict xfail fails it, and the mark must go.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.generated import bench_module, imported_site
from tests.support.helpers import subprocess_env

PER_LIST = 700
SMALL, BIG = 3, 12
"""Lists in the small and the big archive: 2,100 and 8,400 messages."""
GROWTH = 1.08
SLACK = 12 * 2**20
"""The big archive's peak may exceed the small one's by 8% plus 12 MB (sampling and
allocator noise). Before the plan was sharded, four times the messages took some 2.5 KB
more per message in the planning process alone (the full plan held every job's record,
every row and every thread): some 16 MB more here in that process, and more in the
render workers that inherit its pages."""


def _peak_of_plan_and_render(scale: ModuleType, watch: ModuleType, site: Path) -> int:
    """Peak PSS of ``listlib build`` from its start until rendering is done."""
    env = {**subprocess_env(), "LISTLIB_CRASH_AT": "removing:1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "listlib", "build", "--json"],
        cwd=site,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    watched = watch.watch(proc)
    assert proc.returncode == -9, proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    return watched.peak


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="needs Linux's smaps_rollup")
@pytest.mark.xfail(
    strict=True,
    reason="not flat yet (issue 28): 77 MB at 2,100 messages, 98 MB at 8,400 on 2026-11-27 (95 allowed), after the "
    "threader's caches were emptied a list at a time, plan batches capped at 500 jobs and 1,024 relative URLs kept "
    "(82 and 114 MB before; spooled first: 80 and 117 MB; main before the sharded plan: 83 and 144 MB); the main "
    "process still grows (30 -> 43 MB: its heap, not Python objects it keeps), each render worker 23 -> 26 MB; "
    "about half of that is SQLite's page caches filling up to their bound (2 MB a database a connection): with every "
    "cache at 64 KB the same builds took 70 and 83 MB (main 29 -> 36 MB), 2026-11-27",
)
def test_four_times_the_messages_take_no_more_memory_to_plan_and_render(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scale = bench_module(monkeypatch, "scale_bench")
    watch = bench_module(monkeypatch, "import_bench")
    peaks = {}
    for lists in (SMALL, BIG):
        site = imported_site(scale, tmp_path, lists, PER_LIST)
        peaks[lists] = _peak_of_plan_and_render(scale, watch, site)
    small, big = peaks[SMALL], peaks[BIG]
    assert big <= small * GROWTH + SLACK, f"peak {small / 2**20:.0f} MB at {SMALL * PER_LIST} messages, " + (
        f"{big / 2**20:.0f} MB at {BIG * PER_LIST}"
    )
