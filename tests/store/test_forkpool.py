"""Forked work: pools set each worker up once and unfreeze the parent when done; one
computation in a child gives the same result as in this process, or runs here; workers
and children die with their parent."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from listlib.forkpool import ForkPool, fork_child, run_in_child

from ..support.helpers import subprocess_env

_setting: int | None = None


def _init(setting: int) -> None:
    global _setting
    _setting = setting


def _task(n: int) -> tuple[int, int]:
    assert _setting is not None
    return os.getpid(), n * _setting


def test_a_pool_sets_up_each_worker_and_sends_results_back() -> None:
    with ForkPool(2, _init, (3,)) as pool:
        results = list(pool.map(_task, range(10)))
    assert [n for _pid, n in results] == [n * 3 for n in range(10)]
    assert os.getpid() not in {pid for pid, _n in results}
    assert _setting is None  # set in the workers only


def test_a_late_pool_freezes_the_parent_until_it_shuts_down() -> None:
    assert gc.get_freeze_count() == 0
    pool = ForkPool(2, _init, (1,), late=True)
    try:
        assert gc.get_freeze_count() > 0
        assert pool.submit(_task, 2).result()[1] == 2
    finally:
        pool.shutdown()
    assert gc.get_freeze_count() == 0
    with ForkPool(2, _init, (1,)):
        assert gc.get_freeze_count() == 0


def test_big_work_runs_in_a_child_with_the_same_result() -> None:
    join = run_in_child(lambda: (os.getpid(), [1, 2, 3]), big=True)
    pid, result = join()
    assert pid != os.getpid()
    assert result == [1, 2, 3]


def test_small_work_or_other_threads_running_keep_the_work_here() -> None:
    def compute() -> int:
        return os.getpid()

    assert run_in_child(compute, big=False) is compute
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert run_in_child(compute, big=True) is compute
    finally:
        release.set()
        other.join()


def test_a_child_that_sends_nothing_means_the_work_is_done_here() -> None:
    parent = os.getpid()

    def compute() -> int:
        if os.getpid() != parent:
            os._exit(3)  # dies before sending anything
        return 42

    join = run_in_child(compute, big=True)
    assert join is not compute
    assert join() == 42


_KILLED_PARENT = """
import os, signal, sys
from listlib.forkpool import ForkPool

def pid(_n):
    return os.getpid()

pool = ForkPool(2, int, ())
workers = set(pool.map(pid, range(20)))
print(" ".join(map(str, sorted(workers))), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_die_with_a_parent_killed_by_sigkill() -> None:
    # Orphaned workers would keep copies of the parent's file locks (the store lock)
    # for ever, and the next run would wait for them.
    result = subprocess.run(
        [sys.executable, "-c", _KILLED_PARENT], capture_output=True, text=True, env=subprocess_env(), timeout=60
    )
    assert result.returncode == -signal.SIGKILL
    workers = [int(pid) for pid in result.stdout.split()]
    assert workers
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers)


_KILLED_PARENT_OF_A_CHILD = """
import os, signal, time
from listlib.forkpool import fork_child

def slow():
    time.sleep(60)
    return os.getpid()

child = fork_child(slow)
assert child is not None
print(child._pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_dies_with_a_parent_killed_by_sigkill() -> None:
    # A build's search update runs in such a child: it must not go on writing (and
    # holding the build lock) after the build was killed.
    result = subprocess.run(
        [sys.executable, "-c", _KILLED_PARENT_OF_A_CHILD],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=60,
    )
    assert result.returncode == -signal.SIGKILL
    child = int(result.stdout)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_waiting_for_a_child_that_failed_never_does_the_work_here() -> None:
    parent = os.getpid()
    ran_here = []

    def compute() -> int:
        if os.getpid() != parent:
            os._exit(3)
        ran_here.append(True)
        return 42

    child = fork_child(compute)
    assert child is not None
    child.wait()
    assert ran_here == []
    child.wait()  # again: nothing to wait for
    assert child.result() == 42 and ran_here == [True]  # ``result`` after ``wait``: done here
