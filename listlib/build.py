"""``listlib build``: store -> threads -> jobs -> plan -> render -> output/.

Brings the thread cache up to date, then plans: from what changed since the last
complete build (``dirty``, reading rows and threads on demand through ``sitedata``)
when it can, else by describing every job of the site (``site``) from everything
loaded in memory; either way the jobs come from the same builders and are compared
with the keys the last builds recorded (``plan``, ``buildstate``). It then runs the
jobs that changed on every core (``render``), removes the files that no longer
belong, and records what the next build plans from. Only one build runs at a time
per site (a lock in the cache folder).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .buildstate import STATE_VERSION, BuildState
from .config import Config, ListConfig
from .dirty import Memory, dirty_jobs, full_memory, load_memory
from .errors import BuildError
from .fsutil import acquire_lock, release_lock
from .plan import Job, Plan, plan_build
from .render.writer import remove_files, sweep
from .search.update import SearchReport, update_index
from .site import TEMPLATES, LoadedList, SiteInputs, SiteJobs
from .sitedata import StoredList
from .store import Store
from .theme import Theme, load_theme
from .threadset import ThreadSet

if TYPE_CHECKING:
    from .render.pages import Renderer

__all__ = ["BuildReport", "build_site", "compare_plans", "plan_site"]

Progress = Callable[[int, int], None]
"""Called with (work done, total work) as jobs finish."""

_CHUNK_WEIGHT = 40
"""Work handed to a worker at a time (a thread of N messages weighs about N)."""
_PARALLEL_FROM = 60
"""Less work than this is done in-process: starting workers would cost more."""


@dataclass
class BuildReport:
    """What a build did (or, for a plan, would do)."""

    jobs_run: int = 0
    jobs_kept: int = 0
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    planned: list[dict[str, Any]] = field(default_factory=list)
    """For a plan: each job that would run, with the files it made last time."""
    search: SearchReport | None = None
    """What the search index step did (a build's last step)."""

    def to_dict(self, *, with_files: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "jobs_run": self.jobs_run,
            "jobs_unchanged": self.jobs_kept,
            "written": len(self.written),
            "unchanged": self.unchanged,
            "removed": len(self.removed),
            "seconds": round(self.seconds, 3),
        }
        if with_files:
            data["written_files"] = sorted(self.written)
            data["removed_files"] = sorted(self.removed)
        if self.planned:
            data["plan"] = self.planned
        if self.search is not None:
            data["search"] = self.search.to_dict()
        return data

    def summary(self) -> str:
        searched = ""
        if self.search is not None and (self.search.indexed or self.search.removed):
            searched = f", {self.search.indexed} messages indexed for search"
        return (
            f"{len(self.written)} files written, {self.unchanged} unchanged, {len(self.removed)} removed "
            f"({self.jobs_run} of {self.jobs_run + self.jobs_kept} jobs run){searched} in {self.seconds:.2f} s"
        )


def _file_digest(path: Path) -> str:
    return hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()


def _read_markdown(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildError(f"{path}: cannot read ({exc})") from None


def _template_fingerprints(theme: Theme, state: BuildState) -> dict[str, str]:
    """Every template's fingerprint, remembered by the digest of the theme's sources
    (parsing every template to find what it references takes a tenth of a second)."""
    digest = theme.sources_digest()
    try:
        remembered = json.loads(state.get("templates") or "{}")
    except ValueError:
        remembered = {}
    if remembered.get("digest") == digest:
        return dict(remembered["fingerprints"])
    fingerprints = {name: theme.fingerprint(name) for names in TEMPLATES.values() for name in names}
    state.set("templates", json.dumps({"digest": digest, "fingerprints": fingerprints}))
    return fingerprints


_KEY_CODE = ("site.py", "urls.py", "plan.py")
"""Modules whose code decides job arguments and keys."""


def _site_fingerprint(
    site: SiteInputs,
    fingerprints: dict[str, str],
    static: list[tuple[str, str, str]],
    config: Config,
    markdowns: dict[str, str | None],
) -> str:
    """A digest of everything every job may depend on besides rows and threads: when
    it changes, an incremental plan cannot be trusted and the build enumerates all."""
    # The code that turns rows into job arguments: a new version may change any key.
    package = Path(__file__).parent
    code = hashlib.sha256(b"".join((package / name).read_bytes() for name in _KEY_CODE)).hexdigest()
    inputs = (
        STATE_VERSION, __version__, code, site.as_tuple(), sorted(fingerprints.items()), static,
        config.lists, sorted(markdowns.items()),
    )
    return hashlib.sha256(repr(inputs).encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass
class _Planned:
    plan: Plan
    memory: Memory
    kept: int
    """How many jobs stay as they are."""
    incremental: bool


def _plan(config: Config, theme: Theme, state: BuildState, *, full: bool = False) -> _Planned:
    """Bring the threads up to date and plan the build: from the changes since the last
    complete build when that is possible (and ``full`` is not asked), else from every job."""
    fingerprints = _template_fingerprints(theme, state)
    static = [(rel, str(path), _file_digest(path)) for rel, path in theme.static_files().items()]
    site = SiteInputs(
        title=config.site.title,
        base_url=config.site.base_url,
        obfuscate_addresses=config.site.obfuscate_addresses,
        load_remote_images=config.site.load_remote_images,
    )
    content = config.site.content_dir
    markdowns = {lst.slug: _read_markdown(content / lst.slug / "about.md") for lst in config.lists}
    fingerprint = _site_fingerprint(site, fingerprints, static, config, markdowns)
    with Store(content).open() as store, ThreadSet(config.site.cache_dir).open() as threadset:
        threadset.update(store.index)
        last = None if full else load_memory(state)
        changes = threadset.changes_since(*last[:2]) if last else threadset.changes_since("", 0)
        if last is not None and last[2] == fingerprint and not changes.everything:
            with store.index.snapshot(), threadset.cache.snapshot():
                sources = [StoredList(lst, markdowns[lst.slug], store.index, threadset) for lst in config.lists]
                jobs = SiteJobs(site, fingerprints, sources, static)
                built, considered, memory = dirty_jobs(jobs, changes, state, fingerprint)
            previous = state.keys_of(considered)
            plan = plan_build(previous, built)
            kept = state.job_count() - sum(1 for job in plan.run if job.id in previous) - len(plan.dropped)
            return _Planned(plan, memory, kept, incremental=True)
        loaded = [_load_list(lst, markdowns[lst.slug], store, threadset) for lst in config.lists]
    jobs = SiteJobs(site, fingerprints, loaded, static)
    plan = plan_build(state.job_keys(), jobs.all())
    memory = full_memory(jobs, changes.epoch, changes.generation, fingerprint)
    return _Planned(plan, memory, len(plan.kept), incremental=False)


def _load_list(config: ListConfig, markdown: str | None, store: Store, threadset: ThreadSet) -> LoadedList:
    """Every row and thread of a list, for a full enumeration."""
    rows = {row.call: row for row in store.index.filed_rows(config.slug)}
    entries = threadset.threads(config.slug, threadset.thread_ids(config.slug)) if rows else {}
    return LoadedList(config, rows, entries.values(), markdown)


def compare_plans(config: Config) -> tuple[Plan | None, Plan]:
    """The plan an incremental build would follow now (None when it would enumerate
    every job) and the plan of a full enumeration; nothing is written to output/.
    Tests use it to check that the incremental plan misses nothing."""
    cache = config.site.cache_dir
    lock = _lock(cache)
    try:
        theme = _load_theme(config)
        with BuildState(cache / "build.sqlite") as state:
            planned = _plan(config, theme, state)
            full = _plan(config, theme, state, full=True)
    finally:
        release_lock(lock)
    return (planned.plan if planned.incremental else None), full.plan


def _load_theme(config: Config) -> Theme:
    return load_theme(config.theme.name, config.theme.dir, config.root, config.site.cache_dir / "templates")


def _owned_folders(config: Config) -> set[str]:
    return {lst.slug for lst in config.lists} | {"mid", "static"}


def _plan_details(plan: Plan, state: BuildState) -> list[dict[str, Any]]:
    old = state.files_of(job.id for job in plan.run)
    planned = [{"job": job.id, "files": sorted(old.get(job.id, {}))} for job in plan.run]
    gone = state.files_of(plan.dropped)
    planned.extend({"job": job_id, "remove": sorted(gone.get(job_id, {}))} for job_id in plan.dropped)
    return planned


def _lock(cache: Path) -> int:
    cache.mkdir(parents=True, exist_ok=True)
    return acquire_lock(cache / "build.lock", 60.0, "another listlib build is running for this site")


def plan_site(config: Config) -> BuildReport:
    """What ``build_site`` would do, without writing anything to output/."""
    started = time.monotonic()
    cache = config.site.cache_dir
    lock = _lock(cache)
    try:
        theme = _load_theme(config)
        with BuildState(cache / "build.sqlite") as state:
            planned = _plan(config, theme, state)
            report = BuildReport(jobs_run=len(planned.plan.run), jobs_kept=planned.kept)
            report.planned = _plan_details(planned.plan, state)
    finally:
        release_lock(lock)
    report.seconds = time.monotonic() - started
    return report


def build_site(
    config: Config,
    *,
    workers: int | None = None,
    clean: bool = False,
    progress: Progress | None = None,
    fault: Callable[[str], None] | None = None,
) -> BuildReport:
    """Bring output/ up to date with content/, the theme and the configuration.
    ``fault`` is called at named points (crash tests kill the process there)."""
    started = time.monotonic()
    cache = config.site.cache_dir
    output = config.site.output_dir
    lock = _lock(cache)
    try:
        theme = _load_theme(config)
        with BuildState(cache / "build.sqlite") as state:
            if clean:
                state.clear()
                if output.exists():
                    shutil.rmtree(output)
            planned = _plan(config, theme, state, full=clean)
            report = _build(config, theme, planned, state, workers or os.cpu_count() or 1, progress, fault or _no_fault)
        # The search index keeps its own records (it finds changes from the store's month fingerprints).
        report.search = update_index(config, clean=clean, workers=workers or os.cpu_count() or 1, fault=fault)
    finally:
        release_lock(lock)
    report.seconds = time.monotonic() - started
    return report


def _no_fault(_point: str) -> None:
    pass


def _build(
    config: Config,
    theme: Theme,
    planned: _Planned,
    state: BuildState,
    workers: int,
    progress: Progress | None,
    fault: Callable[[str], None],
) -> BuildReport:
    output = config.site.output_dir
    output.mkdir(parents=True, exist_ok=True)
    plan = planned.plan
    report = BuildReport(jobs_run=len(plan.run), jobs_kept=planned.kept)
    if state.get("running") is not None:
        sweep(output, state.all_files(), _owned_folders(config))
    state.set("running", "1")
    touched = [job.id for job in plan.run] + list(plan.dropped)
    old = state.files_of(touched)
    # Every other job recorded last time is kept (an incremental plan never lists them).
    not_kept = {job.id for job in plan.run} | set(plan.dropped)
    produced: dict[str, str] = {}
    total = sum(job.weight for job in plan.run)
    done = 0
    pending_records = 0
    state.begin()
    try:
        for job, files, written, unchanged in _run_jobs(theme, config, plan.run, old, workers, total):
            for path in files:
                if path in produced:
                    raise BuildError(f"{path}: made by two jobs ({produced[path]} and {job.id})")
                produced[path] = job.id
            newcomers = [path for path in files if path not in old.get(job.id, {})]
            for path, owner in state.owner_of(newcomers).items():
                if owner not in not_kept:
                    raise BuildError(f"{path}: made by two jobs ({owner} and {job.id})")
            state.record(job.id, job.key, files)
            fault("job-done")
            report.written.extend(written)
            report.unchanged += unchanged
            done += job.weight
            pending_records += 1
            if pending_records >= 500:
                state.commit()
                state.begin()
                pending_records = 0
            if progress is not None:
                progress(done, total)
        state.forget(plan.dropped)
        state.commit()
    except BaseException:
        state.commit()
        raise
    stale = sorted({path for job_id in touched for path in old.get(job_id, {}) if path not in produced})
    fault("removing")
    remove_files(output, stale)
    report.removed = stale
    state.begin()
    planned.memory.save(state)
    state.set("running", None)
    state.commit()
    return report


# Worker-process state, set once per worker by _init_worker (never in the main process).
_renderer: Renderer | None = None


def _init_worker(theme: Theme, content: Path, output: Path) -> None:
    from .render.pages import Renderer

    global _renderer
    _renderer = Renderer(theme, content, output)


def _run_chunk(chunk: list[tuple[str, str, Any, dict[str, str]]]) -> list[tuple[str, dict[str, str], list[str], int]]:
    assert _renderer is not None
    return _run_with(_renderer, chunk)


def _run_with(
    renderer: Renderer, chunk: Iterable[tuple[str, str, Any, dict[str, str]]]
) -> list[tuple[str, dict[str, str], list[str], int]]:
    results = []
    for job_id, kind, args, old in chunk:
        before_written = len(renderer.writer.written_paths)
        before_unchanged = renderer.writer.unchanged
        files = renderer.run(kind, args, old)
        written = renderer.writer.written_paths[before_written:]
        del renderer.writer.written_paths[before_written:]
        results.append((job_id, files, written, renderer.writer.unchanged - before_unchanged))
    return results


def _chunks(jobs: list[Job], old: dict[str, dict[str, str]]) -> Iterator[list[tuple[str, str, Any, dict[str, str]]]]:
    chunk: list[tuple[str, str, Any, dict[str, str]]] = []
    weight = 0
    # Heaviest first, so that no worker is left with a big thread at the end.
    for job in sorted(jobs, key=lambda j: -j.weight):
        chunk.append((job.id, job.kind, job.args, old.get(job.id, {})))
        weight += job.weight
        if weight >= _CHUNK_WEIGHT:
            yield chunk
            chunk, weight = [], 0
    if chunk:
        yield chunk


def _run_jobs(
    theme: Theme, config: Config, jobs: tuple[Job, ...], old: dict[str, dict[str, str]], workers: int, total: int
) -> Iterator[tuple[Job, dict[str, str], list[str], int]]:
    if not jobs:
        return
    by_id = {job.id: job for job in jobs}
    content, output = config.site.content_dir, config.site.output_dir
    if workers <= 1 or total < _PARALLEL_FROM:
        # Imported here: a build with nothing to render need not load the renderer.
        from .render.pages import Renderer

        renderer = Renderer(theme, content, output)
        for chunk in _chunks(list(jobs), old):
            for job_id, files, written, unchanged in _run_with(renderer, chunk):
                yield by_id[job_id], files, written, unchanged
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(theme, content, output)
    ) as pool:
        chunks = _chunks(list(jobs), old)
        running: set[Future[list[tuple[str, dict[str, str], list[str], int]]]] = set()
        for chunk in chunks:
            running.add(pool.submit(_run_chunk, chunk))
            if len(running) >= workers * 3:
                break
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                for job_id, files, written, unchanged in future.result():
                    yield by_id[job_id], files, written, unchanged
                chunk = next(chunks, None)
                if chunk is not None:
                    running.add(pool.submit(_run_chunk, chunk))

