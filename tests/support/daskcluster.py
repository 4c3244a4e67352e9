"""A real Dask cluster on 127.0.0.1 for the cluster-build tests: a ``dask scheduler``
and ``dask worker`` processes (no nanny, so that killing a worker kills it for good),
started and stopped by the test, their logs kept in a folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from .dovecot import free_port
from .helpers import subprocess_env

START_SECONDS = 120
"""How long a loaded machine may take to start the scheduler and its workers."""


def dask_problem() -> str | None:
    """Why the cluster tests cannot run here, or None."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return "Dask's distributed is not installed (pip install 'listlib[cluster]')"
    return None


class DaskCluster:
    """``workers`` single-threaded workers of a fresh scheduler; a context manager."""

    def __init__(self, logs: Path, workers: int = 2) -> None:
        self.logs = logs
        self.count = workers
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.scheduler: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []

    def _start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        self.logs.mkdir(parents=True, exist_ok=True)
        with open(self.logs / f"{name}.log", "ab") as log:
            # Dask's own CLI, as an operator runs it (the same Python as the tests').
            return subprocess.Popen(
                [sys.executable, "-m", "dask", *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=subprocess_env(),
                cwd=self.logs,
                start_new_session=True,
            )

    def __enter__(self) -> DaskCluster:
        try:
            self.scheduler = self._start(
                "scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"
            )
            for number in range(self.count):
                self.add_worker(f"w{number}")
            self.wait_for_workers(self.count)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def add_worker(self, name: str) -> subprocess.Popen[bytes]:
        worker = self._start(
            name,
            "worker",
            self.address,
            "--name",
            name,
            "--nthreads",
            "1",
            "--no-nanny",
            "--no-dashboard",
            "--host",
            "127.0.0.1",
            "--local-directory",
            str(self.logs / name),
        )
        self.workers.append(worker)
        return worker

    def wait_for_workers(self, count: int) -> None:
        from distributed import Client

        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with Client(self.address, timeout=START_SECONDS, set_as_default=False) as client:
                    client.wait_for_workers(count, timeout=START_SECONDS)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"the Dask cluster did not start; see {self.logs}") from None
                time.sleep(0.5)

    def kill_worker(self, number: int) -> None:
        """kill -9 of a worker process."""
        os.kill(self.workers[number].pid, signal.SIGKILL)
        self.workers[number].wait(timeout=60)

    def kill_scheduler(self) -> None:
        """kill -9 of the scheduler."""
        assert self.scheduler is not None
        os.kill(self.scheduler.pid, signal.SIGKILL)
        self.scheduler.wait(timeout=60)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for process in [*self.workers, *([self.scheduler] if self.scheduler else [])]:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=30)
        self.workers.clear()
        self.scheduler = None
        shutil.rmtree(self.logs, ignore_errors=True)
