"""Run render jobs on a Dask cluster (``distributed``): the ``Executor`` of
``listlib build --cluster tcp://HOST:8786``. Never decides what to run and never
records anything: like ``JobRunner``, it hands each finished job back to the build,
which stays the one writer of the build records.

The jobs go to the cluster in coarse shards (``SHARD_WEIGHT``, heaviest first, a few
per worker thread in flight). A worker renders them with a renderer of its own, made on
its first shard of a build from paths every worker can open: the store, output/ and
the cache (the search spool, compiled templates) must be on a filesystem all workers
mount at the same path. A worker whose listlib renders differently (another version,
another Python, other library versions) is refused: its pages would differ from this
machine's. A worker that dies mid-shard is survived: Dask runs the shard again
elsewhere, and the atomic writer makes a file written twice harmless. The scheduler
going away ends the build with a ``BuildError``; the records of every job finished
until then are kept, so the next build (here or on the cluster) does only the rest.

``distributed`` is imported only here, and this module only when a build is asked to
use a cluster (``pip install 'listlib[cluster]'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import CancelledError
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from distributed import Client, Future, as_completed, get_worker

from ..codedigest import render_digest
from ..errors import BuildError
from ..plan.jobs import Job
from ..theme import Theme
from .runner import Chunk, Result, SinkFactory, TextSink, _chunks, _new_renderer, _run_with

__all__ = ["SHARD_WEIGHT", "ClusterRunner"]

SHARD_WEIGHT = 400
"""Work sent to a worker as one task (a thread of N messages weighs about N): ten times a
local chunk, since every task costs a round trip through the scheduler."""
CONNECT_SECONDS = 30
"""How long to try to reach the scheduler before giving up."""
WORKERS_SECONDS = 120
"""How long to wait for a first worker when the scheduler has none."""
PROBE_SECONDS = 10
"""How long the first check that the scheduler's port answers may take."""
DEFAULT_PORT = 8786


class _Setup(NamedTuple):
    """What a worker needs to render one build's shards (small: it travels with each)."""

    build: str
    """Names the build: a worker makes a new renderer when it changes."""
    theme: Callable[[], Theme]
    content: Path
    output: Path
    sinks: SinkFactory | None
    digest: str
    """The render digest of the process running the build."""


# Worker-side state, one per worker thread: the renderer of the build it last rendered for
# (never used in the process running the build).
_local = threading.local()


def _renderer_for(setup: _Setup) -> tuple[Any, TextSink | None]:
    current = getattr(_local, "state", None)
    if current is not None and current[0] == setup.build:
        return current[1], current[2]
    if current is not None and current[2] is not None:
        current[2].close()
    _local.state = None
    found = render_digest()
    if found != setup.digest:
        raise BuildError(
            f"the Dask worker on {socket.gethostname()} (pid {os.getpid()}) runs listlib code that renders "
            f"differently from the build's (render digest {found[:12]}, not {setup.digest[:12]}): install the same "
            f"listlib, Python and libraries on every worker"
        )
    sink = setup.sinks() if setup.sinks is not None else None
    renderer = _new_renderer(setup.theme(), setup.content, setup.output, sink)
    _local.state = (setup.build, renderer, sink)
    return renderer, sink


def _run_shard(setup: _Setup, chunk: Chunk) -> tuple[str, list[Result]]:
    """A task on a worker: render one shard; returns the worker's name and the results."""
    renderer, sink = _renderer_for(setup)
    worker = get_worker()
    name = str(worker.name) if worker.name is not None else worker.address
    return name, _run_with(renderer, chunk, sink)


@contextmanager
def _quiet_client_logs() -> Iterator[None]:
    """Keep Dask's own log lines (reconnection attempts, a closed comm) off the terminal:
    the build reports what went wrong itself, in one line."""
    loggers = [logging.getLogger(name) for name in ("distributed", "distributed.client", "distributed.comm")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class ClusterRunner:
    """Renders a build's jobs on the workers of the Dask scheduler at ``address`` (an
    ``Executor``); a context manager that connects when started (or at the first jobs)
    and disconnects on exit."""

    def __init__(
        self,
        address: str,
        theme: Callable[[], Theme],
        content: Path,
        output: Path,
        sinks: SinkFactory | None = None,
        *,
        shard_weight: int = SHARD_WEIGHT,
    ) -> None:
        """``theme``: loads the site's theme (on each worker; a picklable function of
        paths). ``sinks``: as ``JobRunner``'s, made on each worker thread."""
        self.address = address
        self._setup = _Setup(uuid.uuid4().hex, theme, content, output, sinks, render_digest())
        self.shard_weight = shard_weight
        self._client: Client | None = None
        self._jobs: Counter[str] = Counter()
        self._shards: Counter[str] = Counter()
        self._quiet = _quiet_client_logs()

    def __enter__(self) -> ClusterRunner:
        _probe(self.address)
        self._quiet.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if self._client is not None:
                client, self._client = self._client, None
                # The scheduler may be gone already: nothing to close politely then.
                with contextlib.suppress(OSError, TimeoutError, RuntimeError):
                    client.close(timeout=10)
        finally:
            self._quiet.__exit__(kind, exc, tb)

    def start(self) -> None:
        """Connect to the scheduler, once the build knows it has work (a build with none
        never does). Not earlier: the client's thread would keep the plan from threading
        a big archive in a child process on the other core (``run_in_child`` does not
        fork while other threads run), and the plan would take longer."""
        if self._client is not None:
            return
        try:
            self._client = Client(self.address, timeout=CONNECT_SECONDS, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise BuildError(f"cannot reach the Dask scheduler at {self.address}: {_reason(exc)}") from None

    def workers_report(self) -> dict[str, Any]:
        return {
            "scheduler": self.address,
            "workers": {
                name: {"jobs": self._jobs[name], "shards": self._shards[name]} for name in sorted(self._shards)
            },
        }

    def _threads(self, client: Client) -> int:
        """The worker threads the cluster has, waiting a while for a first worker."""
        try:
            threads = sum(client.nthreads().values())
            if not threads:
                client.wait_for_workers(1, timeout=WORKERS_SECONDS)
                threads = sum(client.nthreads().values())
        except (OSError, TimeoutError) as exc:
            raise BuildError(
                f"the Dask scheduler at {self.address} has no workers ({_reason(exc)}); start some with "
                f"'dask worker {self.address}'"
            ) from None
        return max(threads, 1)

    def run(self, jobs: Iterable[Job], old: Mapping[str, dict[str, str]], total: int) -> Iterator[tuple[Job, Result]]:
        """Each job with its result, as its shard finishes (``total`` is not needed here)."""
        by_id: dict[str, Job] = {}
        shards = _chunks(jobs, old, by_id, self.shard_weight)
        first = next(shards, None)
        if first is None:
            return
        shards = itertools.chain([first], shards)
        self.start()
        client = self._client
        assert client is not None
        try:
            window = self._threads(client) * 3
            running = as_completed(loop=client.loop)
            for shard in shards:
                running.add(self._submit(client, shard))
                if running.count() >= window:
                    break
            for future in running:
                worker, results = future.result()
                self._shards[worker] += 1
                self._jobs[worker] += len(results)
                future.release()
                for result in results:
                    yield by_id.pop(result.job_id), result
                shard = next(shards, None)
                if shard is not None:
                    running.add(self._submit(client, shard))
        except BuildError:
            raise
        except (OSError, TimeoutError, CancelledError, asyncio.CancelledError) as exc:
            raise BuildError(
                f"lost the Dask scheduler at {self.address} mid-build ({_reason(exc)}); the jobs finished so far "
                f"are recorded: run the build again, on the cluster or here, to finish it"
            ) from None

    def _submit(self, client: Client, shard: Chunk) -> Future:
        # pure=False: a shard is work with effects (files written), never to be deduplicated.
        return client.submit(_run_shard, self._setup, shard, pure=False)


def _probe(address: str) -> None:
    """Check, before the build does anything, that a TCP (or TLS) scheduler's port takes
    connections: a wrong address is an error even for a build with nothing to render,
    found in milliseconds rather than after the threading and the plan of a big archive.
    The connection is closed at once, without a client (whose thread would keep the
    plan from forking its threading child); other protocols are left to the client."""
    parts = urlsplit(address)
    if parts.scheme not in ("tcp", "tls"):
        return
    try:
        port = parts.port or DEFAULT_PORT
        with socket.create_connection((parts.hostname or "", port), timeout=PROBE_SECONDS):
            pass
    except (OSError, ValueError) as exc:
        raise BuildError(f"cannot reach the Dask scheduler at {address}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
