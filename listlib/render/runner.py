"""Run render jobs: in this process for a little work, else on worker processes, one
per core, fed chunks of jobs heaviest first. Never decides what to run (``build``
does) and never records anything (the caller records each finished job).

Workers are forked (``forkpool``, which holds the rules). A build forks them early
(``JobRunner.start``), as soon as it knows it has work and before it loads what the
jobs need: they load the renderer while the build plans, and share none of the
parent's memory; a worker forked from a parent holding 50,000 rows would soon copy
much of it. When the need for workers shows only later, the pool is forked ``late``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..forkpool import ForkPool
from ..plan.jobs import Job
from ..theme import Theme
from .writer import Stat

if TYPE_CHECKING:
    from ..display import MessageDisplay
    from .pages import Renderer

__all__ = ["Executor", "JobRunner", "Result"]

CHUNK_WEIGHT = 40
"""Work handed to a worker at a time (a thread of N messages weighs about N)."""
PARALLEL_FROM = 60
"""Less work than this is done in-process: starting workers would cost more."""

Chunk = list[tuple[str, str, Any, dict[str, str]]]


class Result(NamedTuple):
    """A finished job, as a worker sends it back."""

    job_id: str
    files: dict[str, str]
    """Every file the job owns now: path -> digest."""
    written: list[str]
    """The paths it wrote (the others were already as they should be)."""
    unchanged: int
    """How many of its files were left as they were."""
    stats: dict[str, Stat]
    """Each file's (size, mtime_ns) once made or found the same (the next build's stat pass)."""


class TextSink(Protocol):
    """Where a render process hands the messages it displays (the search spool)."""

    def __call__(self, call: str, raw_hash: str, display: MessageDisplay) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


SinkFactory = Callable[[], TextSink]
"""Makes a process's own sink (each worker makes one after it is forked)."""

# Worker-process state, set once per worker by _init_worker (never in the main process).
_renderer: Renderer | None = None
_sink: TextSink | None = None


def _init_worker(theme: Theme, content: Path, output: Path, sinks: SinkFactory | None) -> None:
    global _renderer, _sink
    _sink = sinks() if sinks is not None else None
    _renderer = _new_renderer(theme, content, output, _sink)


def _new_renderer(theme: Theme, content: Path, output: Path, sink: TextSink | None) -> Renderer:
    # Imported here: a build with nothing to render need not load the renderer.
    from .pages import Renderer

    return Renderer(theme, content, output, sink)


def _run_chunk(chunk: Chunk) -> list[Result]:
    assert _renderer is not None
    return _run_with(_renderer, chunk, _sink)


def _run_with(
    renderer: Renderer, chunk: Iterable[tuple[str, str, Any, dict[str, str]]], sink: TextSink | None
) -> list[Result]:
    results = []
    for job_id, kind, args, old in chunk:
        before_written = len(renderer.writer.written_paths)
        before_unchanged = renderer.writer.unchanged
        files = renderer.run(kind, args, old)
        written = renderer.writer.written_paths[before_written:]
        del renderer.writer.written_paths[before_written:]
        stats = {path: renderer.writer.stats.pop(path) for path in files if path in renderer.writer.stats}
        results.append(Result(job_id, files, written, renderer.writer.unchanged - before_unchanged, stats))
    if sink is not None:
        sink.flush()  # pool workers end without flushing
    return results


def _chunks(
    jobs: Iterable[Job], old: Mapping[str, dict[str, str]], by_id: dict[str, Job], size: int = CHUNK_WEIGHT
) -> Iterator[Chunk]:
    """The jobs in chunks of about ``size`` work each, in their order (the caller's:
    heaviest first), taken from ``jobs`` only as chunks are asked for; each job handed
    out is noted in ``by_id``."""
    chunk: Chunk = []
    weight = 0
    for job in jobs:
        by_id[job.id] = job
        chunk.append((job.id, job.kind, job.args, old.get(job.id, {})))
        weight += job.weight
        if weight >= size:
            yield chunk
            chunk, weight = [], 0
    if chunk:
        yield chunk


class Executor(Protocol):
    """Where a build's jobs run: the build maps its jobs over one of these and records
    each result as it comes back (this process stays the only writer of the records).
    ``JobRunner`` (this machine's cores) and ``cluster.ClusterRunner`` (a Dask cluster)."""

    def __enter__(self) -> Executor: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def start(self) -> None:
        """Get ready for work that is coming (the build calls it once it knows it has some)."""

    def run(self, jobs: Iterable[Job], old: Mapping[str, dict[str, str]], total: int) -> Iterator[tuple[Job, Result]]:
        """Each job with its result, as they finish; ``jobs`` in the order to hand them
        out, read only as work is needed (``old`` knows the files of a job's last build by
        the time it is read); ``total``: the jobs' summed weight (0: not known yet)."""
        ...

    def workers_report(self) -> dict[str, Any] | None:
        """What ran where, for ``--json`` (None: nothing to say)."""
        ...


class JobRunner:
    """Renders jobs for one build on this machine; a context manager that stops its
    workers on exit (an ``Executor``)."""

    def __init__(
        self, theme: Theme, content: Path, output: Path, workers: int, sinks: SinkFactory | None = None
    ) -> None:
        """``sinks``: makes the sink that each rendering process hands the messages it
        displays to (the build's search spool, ``search.spool.DisplayedText``)."""
        self.theme, self.content, self.output, self.workers = theme, content, output, workers
        self.sinks = sinks
        self._pool: ForkPool | None = None

    def __enter__(self) -> JobRunner:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def start(self) -> None:
        """Fork the workers now (when there is more than one), ahead of the jobs: they
        load the renderer while this process plans. Returns without waiting for them.
        Forked as a late pool (this process's objects collected and frozen until the
        workers stop): the plan goes on allocating, and each full collection would
        write to every object shared with the workers, copying its pages; measured on
        a build of 8,400 messages, the planning process took some 3 MB less at its peak."""
        if self.workers > 1 and self._pool is None:
            self._pool = self._new_pool(late=True)

    def _new_pool(self, *, late: bool) -> ForkPool:
        return ForkPool(self.workers, _init_worker, (self.theme, self.content, self.output, self.sinks), late=late)

    def workers_report(self) -> dict[str, Any] | None:
        return None

    def run(self, jobs: Iterable[Job], old: Mapping[str, dict[str, str]], total: int) -> Iterator[tuple[Job, Result]]:
        """Each job with its result, as they finish; ``total``: the jobs' summed weight
        (0: not known yet). ``jobs`` is read as workers need work (a full plan is made
        as it is read: while the workers render)."""
        by_id: dict[str, Job] = {}
        chunks = _chunks(jobs, old, by_id)
        first = next(chunks, None)
        if first is None:
            return
        if self.workers <= 1 or (0 < total < PARALLEL_FROM and self._pool is None):
            sink = self.sinks() if self.sinks is not None else None
            renderer = _new_renderer(self.theme, self.content, self.output, sink)
            try:
                for chunk in itertools.chain([first], chunks):
                    for result in _run_with(renderer, chunk, sink):
                        yield by_id.pop(result[0]), result
            finally:
                if sink is not None:
                    sink.close()
            return
        if self._pool is None:
            self._pool = self._new_pool(late=True)
        pool = self._pool
        running: set[Future[list[Result]]] = {pool.submit(_run_chunk, first)}
        for chunk in chunks:
            running.add(pool.submit(_run_chunk, chunk))
            if len(running) >= self.workers * 3:
                break
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            # The next chunk goes out before the results are handled: the workers keep busy.
            for _future in finished:
                chunk = next(chunks, None)
                if chunk is not None:
                    running.add(pool.submit(_run_chunk, chunk))
            for future in finished:
                for result in future.result():
                    yield by_id.pop(result[0]), result
