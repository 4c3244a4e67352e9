"""``listlib build``: store -> threads -> jobs -> plan -> render -> output/.

Brings the thread cache up to date, then plans: from what changed since the last
complete build (``dirty``, reading rows and threads on demand through ``sitedata``)
when it can, else by describing every job of the site one shard (a list's month)
at a time (``plan.full``) as the render workers need work, so that memory stays flat
in the size of the archive and the workers render while this process plans; either
way the jobs come from the same builders and are compared with the keys the last
builds recorded (``plan``, ``buildstate``). It runs the jobs that changed on every
core (``render``), removes the files that no longer
belong, and records what the next build plans from. Then the search index is brought
up to date (``search.update``); an update that indexes nothing (a take-down, messages
hidden) runs instead in a child process from the start, beside the plan and the
rendering, when the build has more than one core. Only one build runs at a time per
site (a lock in the cache folder, which that child holds too).

Length: the order of a build's steps (lock, threads, plan, render, clean-up, record)
is its crash safety; it is kept in one module so it reads top to bottom.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from .classcache import ClassCache, classes_digest
from .codedigest import code_digest, render_digest
from .config import Config
from .errors import BuildError
from .forkpool import Child, fork_child
from .fsutil import release_lock
from .heap import trim_heap
from .legacy.mapfile import LegacyMap, required_map
from .overrides import threading_overrides
from .pathlog import PathLog
from .plan.builders import SiteJobs
from .plan.full import StreamedPlan, estimate_full, full_shards
from .plan.incremental import Memory, dirty_jobs, load_memory
from .plan.jobs import Job, Plan, plan_build
from .plan.kinds import KINDS, TEMPLATES, SiteSettings, StaticFile
from .plan.shown import WORDS_PREFIX, words_of
from .plan.state import STATE_VERSION, BuildState, lock_output
from .plan.stored import StoredList
from .render.runner import Executor, JobRunner
from .render.writer import (
    Stat,
    changed_files,
    changed_folders,
    folder_marks,
    folder_of,
    folders_with_parents,
    remove_files,
    sweep,
)
from .search.spool import SPOOL_DIR, DisplayedText, clear_spool
from .search.update import SearchReport, purge_index, update_index
from .store.core import Store
from .theme import Theme, load_theme
from .threadset import ThreadSet
from .urls import LEGACY_DIR, MID_DIR, SEARCH_DIR, STATIC_DIR
from .values import NO_LIST, plural

__all__ = ["CLUSTER_MISSING", "BuildReport", "cluster_installed", "build_site", "compare_plans", "plan_site"]

CLUSTER_MISSING = (
    "building on a cluster needs Dask's 'distributed' package, which is not installed: pip install 'listlib[cluster]'"
)

logger = logging.getLogger(__name__)

_BIG_BUILD = 500
"""Jobs run from which the heap is tidied before indexing (a small build leaves little)."""

Progress = Callable[[int, int, int, int], None]
"""Called with (work done, total work, jobs done, jobs to run) as jobs finish; a job's work
is its weight (about the messages it renders), a better measure of time than the count."""


@dataclass
class BuildReport:
    """What a build did (or, for a plan, would do)."""

    jobs_run: int = 0
    jobs_kept: int = 0
    written: PathLog = field(default_factory=PathLog)
    """Every file written, in a list that keeps all but the last few thousand on disk."""
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    plan_seconds: float = 0.0
    """Of ``seconds``, the time spent deciding what to rebuild: bringing the threads and
    classes up to date and planning. A full build plans as it renders: its planning time
    is summed over the shards, and was spent while the workers rendered (it overlaps
    their time; with one worker, rendering waits for it)."""
    planned: list[dict[str, Any]] = field(default_factory=list)
    """For a plan: each job that would run, with the files it made last time."""
    search: SearchReport | None = None
    """What the search index step did (a build's last step)."""
    damaged: list[str] = field(default_factory=list)
    """Files of earlier builds found deleted or edited in output/ (their jobs ran again)."""
    check_seconds: float = 0.0
    """Of ``seconds``, the time spent comparing output/ with the records (the stat pass)."""
    cluster: dict[str, Any] | None = None
    """For a build on a cluster: its scheduler, and the jobs and shards each worker ran."""

    def to_dict(self, *, with_files: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "jobs_run": self.jobs_run,
            "jobs_unchanged": self.jobs_kept,
            "written": len(self.written),
            "unchanged": self.unchanged,
            "removed": len(self.removed),
            "seconds": round(self.seconds, 3),
            "plan_seconds": round(self.plan_seconds, 3),
            "damaged": len(self.damaged),
            "check_seconds": round(self.check_seconds, 3),
        }
        if with_files:
            data["written_files"] = sorted(self.written)
            data["removed_files"] = sorted(self.removed)
            data["damaged_files"] = sorted(self.damaged)
        if self.planned:
            data["plan"] = self.planned
        if self.search is not None:
            data["search"] = self.search.to_dict()
        if self.cluster is not None:
            data["cluster"] = self.cluster
        return data

    def summary(self) -> str:
        searched = ""
        if self.search is not None and (self.search.indexed or self.search.removed):
            searched = f", {plural(self.search.indexed, 'message')} indexed for search"
        damaged = f" ({len(self.damaged)} found deleted or edited)" if self.damaged else ""
        jobs = plural(self.jobs_run + self.jobs_kept, "job")
        return (
            f"{plural(len(self.written), 'file')} written{damaged}, {self.unchanged} unchanged, "
            f"{len(self.removed)} removed ({self.jobs_run} of {jobs} run){searched} in {self.seconds:.2f} s"
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
    fingerprints.update(
        {f"texts:{name}": theme.texts_fingerprint(kind.texts) for name, kind in KINDS.items() if kind.texts}
    )
    # The plan's own words (plan.shown) are in the records that show them, but an
    # incremental plan looks only at what changed: a change of them must make it look at all.
    fingerprints["texts:plan"] = theme.texts_fingerprint((WORDS_PREFIX,))
    state.set("templates", json.dumps({"digest": digest, "fingerprints": fingerprints}))
    return fingerprints


_PLAN_ROOTS = ("build",)
"""The build and everything it runs: the code that decides which jobs exist, their
arguments and keys, and which of them an incremental plan looks at."""


def _site_fingerprint(
    site: SiteSettings,
    fingerprints: dict[str, str],
    static: list[StaticFile],
    config: Config,
    markdowns: dict[str, str | None],
    legacy: dict[str, tuple[str, LegacyMap, bool]],
) -> str:
    """A digest of everything every job may depend on besides rows and threads: when
    it changes, an incremental plan cannot be trusted and the build enumerates all."""
    # The code that plans and renders: other code may make other jobs (the keys hold
    # the renderer's digest; an incremental plan could not find the jobs it changed).
    inputs = (
        STATE_VERSION,
        code_digest(_PLAN_ROOTS),
        render_digest(),
        tuple(site),
        sorted(fingerprints.items()),
        static,
        config.published_lists,
        sorted(markdowns.items()),
        sorted((slug, found.digest) for slug, (_path, found, _pages) in legacy.items()),
        (config.site.message_id_paths, config.site.message_id_folder),
        # Month and by-date pages show classes: new rules may change any of them.
        classes_digest(config.classes.rules),
    )
    return hashlib.sha256(repr(inputs).encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass
class _Planned:
    plan: Plan | StreamedPlan
    """An incremental plan in memory; a full one made as it is read, a batch at a time."""
    memory: Memory
    incremental_kept: int
    incremental: bool

    @property
    def kept(self) -> int:
        """How many jobs stay as they are (of a full plan: once it is read whole)."""
        return self.plan.kept if isinstance(self.plan, StreamedPlan) else self.incremental_kept


def _plan(
    config: Config,
    theme: Theme,
    state: BuildState,
    *,
    full: bool = False,
    on_work: Callable[[], None] | None = None,
    workers: int = 1,
) -> _Planned:
    """Bring the threads up to date and plan the build: from the changes since the last
    complete build when that is possible (and ``full`` is not asked), else from every job.
    ``on_work`` is called as soon as the build is known to have work, before the jobs
    are described (for a full plan, before every list is loaded). ``workers``: the cores
    that new messages' classes may be worked out on."""
    fingerprints = _template_fingerprints(theme, state)
    static = [StaticFile(rel, layer, _file_digest(path)) for rel, (layer, path) in theme.static_sources().items()]
    site = SiteSettings(
        title=config.site.title,
        base_url=config.site.base_url,
        obfuscate_addresses=config.site.obfuscate_addresses,
        load_remote_images=config.site.load_remote_images,
        show_removal_reasons=config.site.show_removal_reasons,
        language=config.site.language,
    )
    content = config.site.content_dir
    lists = config.published_lists  # with _no_list when [site] publish_unrouted is on
    markdowns = {lst.slug: _read_markdown(content / lst.slug / "about.md") for lst in lists}
    legacy = _legacy_maps(config)
    mid_folder = config.site.message_id_folder if config.site.message_id_paths else None
    words = words_of(theme.texts)  # in the records that show them: a change reaches those pages
    fingerprint = _site_fingerprint(site, fingerprints, static, config, markdowns, legacy)
    with ExitStack() as held:
        store = held.enter_context(Store(content).open())
        threadset = held.enter_context(ThreadSet(config.site.cache_dir).open())
        classes = held.enter_context(ClassCache(config.site.cache_dir, config.classes.rules))
        threadset.update(store.index, threading_overrides(store.root, store.index, [lst.slug for lst in config.lists]))
        classes.update(store.index, store.root, workers)
        last = None if full else load_memory(state)
        changes = threadset.changes_since(*last[:2]) if last else threadset.changes_since("", 0)
        if last is not None and last[2] == fingerprint and not changes.everything:
            if on_work is not None and not changes.nothing:
                on_work()
            with store.index.snapshot(), threadset.cache.snapshot():
                sources = [
                    StoredList(lst, markdowns[lst.slug], store.index, threadset, classes.classes) for lst in lists
                ]
                jobs = SiteJobs(site, fingerprints, sources, static, render_digest(), legacy, mid_folder, words)
                built, considered, memory = dirty_jobs(jobs, changes, state, fingerprint, threadset.cache.month_marks)
            previous = state.keys_of(considered)
            plan = plan_build(previous, built)
            kept = state.job_count() - sum(1 for job in plan.run if job.id in previous) - len(plan.dropped)
            return _Planned(plan, memory, kept, incremental=True)
        if on_work is not None:
            # The workers fork now: not with the threading's freed memory scattered over the heap.
            gc.collect()
            trim_heap()
            on_work()
        # One read snapshot of the cache: the marks recorded must be those of the threads planned.
        held.enter_context(store.index.snapshot())
        held.enter_context(threadset.cache.snapshot())
        sources = [StoredList(lst, markdowns[lst.slug], store.index, threadset, classes.classes) for lst in lists]
        marks = {lst.slug: threadset.cache.month_marks(lst.slug) for lst in lists}
        jobs = SiteJobs(site, fingerprints, sources, static, render_digest(), legacy, mid_folder, words)
        memory = Memory(changes.epoch, changes.generation, fingerprint, spooled_mids=True)
        state.start_plan()
        # Planned as it is rendered (``_build``), inside these snapshots: the plan holds them.
        estimate = estimate_full(jobs)
        streamed = StreamedPlan(state, full_shards(jobs, state, memory, marks), held.pop_all(), estimate)
    return _Planned(streamed, memory, 0, incremental=False)


def _whole(plan: Plan | StreamedPlan) -> Plan:
    """A plan in memory (a full one made whole)."""
    return plan.plan() if isinstance(plan, StreamedPlan) else plan


def _batches(plan: Plan | StreamedPlan) -> Iterator[Sequence[Job]]:
    """The jobs to run, a batch at a time (a full plan's planned as they are read)."""
    if isinstance(plan, StreamedPlan):
        yield from plan.batches()
    elif plan.run:
        yield plan.run


def _legacy_maps(config: Config) -> dict[str, tuple[str, LegacyMap, bool]]:
    """The legacy redirect maps of the published lists with a ``legacy`` table: list slug ->
    (the old archive's path, its map, whether to write a page per old URL). A table
    without its map is an error, not a build without redirects: the old links would
    break without a word."""
    found = {}
    for lst in config.published_lists:
        if lst.legacy is None:
            continue
        try:
            loaded = required_map(config.site.content_dir, lst.slug, f"{config.path}: lists.{lst.slug}.legacy")
        except ValueError as exc:
            raise BuildError(str(exc)) from None
        found[lst.slug] = (lst.legacy.path, loaded, lst.legacy.pages)
    return found


def compare_plans(config: Config) -> tuple[Plan | None, Plan]:
    """The plan an incremental build would follow now (None when it would enumerate
    every job) and the plan of a full enumeration; nothing is written to output/.
    Tests use it to check that the incremental plan misses nothing."""
    cache = config.site.cache_dir
    lock = lock_output(cache)
    try:
        theme = _load_theme(config)
        with BuildState(cache / "build.sqlite") as state:
            planned = _plan(config, theme, state)
            incremental = _whole(planned.plan) if planned.incremental else None
            full = _whole(_plan(config, theme, state, full=True).plan)
    finally:
        release_lock(lock)
    return incremental, full


def _load_theme(config: Config) -> Theme:
    """The site's theme, with the translation table of its language (what the table
    lacks is logged as a warning, once per build)."""
    theme = load_theme(
        config.theme.name, config.theme.dir, config.root, config.site.cache_dir / "templates", config.site.language
    )
    for warning in theme.texts.warnings:
        logger.warning("%s", warning)
    return theme


def _owned_folders(config: Config) -> set[str]:
    return {lst.slug for lst in config.published_lists} | {MID_DIR, STATIC_DIR, LEGACY_DIR}


def _check_lists_kept(config: Config, state: BuildState) -> None:
    """Refuse a build that would take down every page of a list whose mail is still in the
    store, unless the configuration says so (``publish = false``): a table renamed by a
    typo (``[lists.anounce]``) looks like a list removed, and must not unpublish one."""
    recorded = state.get("published")
    if recorded is None:
        return
    shown = {lst.slug for lst in config.published_lists}
    unpublished = {lst.slug for lst in config.lists if not lst.publish}
    gone = [slug for slug in json.loads(recorded) if slug not in shown and slug not in unpublished]
    if not gone:
        return
    with Store(config.site.content_dir).open() as store:
        stored = set(store.index.slugs())
    for slug in gone:
        if slug in stored and slug != NO_LIST:
            raise BuildError(
                f"{config.path}: list {slug!r} is published and its mail is in "
                f"{config.site.content_dir / slug}, but listlib.toml has no [lists.{slug}] table: "
                f"the build would remove all its pages. If the table was renamed by mistake, restore it; "
                f"to take the list's pages down on purpose, keep the table with 'publish = false'."
            )


def _record_lists(config: Config, state: BuildState) -> None:
    state.set("published", json.dumps(sorted(lst.slug for lst in config.published_lists)))


def _clean_output(config: Config, state: BuildState) -> None:
    """Empty what the build owns in output/: the files its records name and every file in
    the folders it makes (lists, ``mid``, ``static``, the search index). Never the whole
    folder: files someone else put there (a host's ``CNAME``, ``.well-known/``) stay, and
    a misplaced output folder could never take anything else with it."""
    output = config.site.output_dir
    remove_files(output, state.all_files())
    sweep(output, set(), _owned_folders(config) | {SEARCH_DIR})
    state.clear()


def _plan_details(plan: Plan, state: BuildState) -> list[dict[str, Any]]:
    old = state.files_of(job.id for job in plan.run)
    planned = [{"job": job.id, "files": sorted(old.get(job.id, {}))} for job in plan.run]
    gone = state.files_of(plan.dropped)
    planned.extend({"job": job_id, "remove": sorted(gone.get(job_id, {}))} for job_id in plan.dropped)
    return planned


def plan_site(config: Config) -> BuildReport:
    """What ``build_site`` would do, without writing anything to output/."""
    started = time.monotonic()
    cache = config.site.cache_dir
    lock = lock_output(cache)
    try:
        theme = _load_theme(config)
        with BuildState(cache / "build.sqlite") as state:
            _check_lists_kept(config, state)
            planned = _plan(config, theme, state)
            plan = _whole(planned.plan)
            report = BuildReport(jobs_run=len(plan.run), jobs_kept=planned.kept)
            report.planned = _plan_details(plan, state)
    finally:
        release_lock(lock)
    report.seconds = time.monotonic() - started
    return report


def build_site(
    config: Config,
    *,
    workers: int | None = None,
    clean: bool = False,
    verify: bool = False,
    progress: Progress | None = None,
    fault: Callable[[str], None] | None = None,
    cluster: str | None = None,
) -> BuildReport:
    """Bring output/ up to date with content/, the theme and the configuration.
    Files of earlier builds deleted or replaced in output/ are made again; with
    ``verify``, also files edited in place (a stat of every file, not only of the
    folders that changed). ``fault`` is called at named points (crash tests kill the
    process there). ``cluster``: render on the workers of this Dask scheduler
    (``tcp://HOST:8786``) instead of this machine's cores; everything else (threads,
    plan, records, search index) is done here. On more than one core, a search update
    that indexes nothing runs beside the plan and the rendering (``purge_index``, in
    a child process that dies with this one; its fault points kill this process)."""
    started = time.monotonic()
    cache = config.site.cache_dir
    output = config.site.output_dir
    lock = lock_output(cache)
    beside: Child[SearchReport | None] | None = None
    try:
        theme = _load_theme(config)
        with BuildState(cache / "build.sqlite") as state:
            _check_lists_kept(config, state)
            cores = workers or os.cpu_count() or 1
            # A search update that indexes nothing (a take-down, messages hidden) needs
            # nothing the rendering makes: it runs on another core from now on.
            if cores > 1 and not clean:
                beside = fork_child(partial(purge_index, config, verify=verify, fault=fault))
            checking = time.monotonic()
            damaged, looked = ([], []) if clean else _invalidate_damaged(output, state, verify)
            check_seconds = time.monotonic() - checking
            if clean:
                _clean_output(config, state)
            # Thread pages display every message they show: the search step reads their text from here.
            spool = cache / SPOOL_DIR
            clear_spool(spool)
            sinks = partial(DisplayedText, spool, config.site.obfuscate_addresses)
            with _executor(config, theme, cores, sinks, cluster) as runner:
                planning = time.monotonic()
                # A damaged file's job may be one an incremental plan would not look at.
                planned = _plan(config, theme, state, full=clean or bool(damaged), on_work=runner.start, workers=cores)
                plan_seconds = time.monotonic() - planning
                report = _build(config, planned, state, runner, progress, fault or _no_fault)
                # A full plan is made as it is rendered: its shards' time, spent while the workers render.
                streamed = planned.plan.seconds if isinstance(planned.plan, StreamedPlan) else 0.0
                report.plan_seconds = plan_seconds + streamed
                report.damaged, report.check_seconds = damaged, check_seconds
                report.cluster = runner.workers_report()
                _mark_folders(output, state, report, looked, every=not planned.incremental)
                del planned  # the plan of a full build is big: free it before indexing
        # The search index keeps its own records (it finds changes from the store's month fingerprints).
        if report.jobs_run >= _BIG_BUILD:
            # Rendering left freed memory scattered over the heap: index workers would inherit it.
            gc.collect()
            trim_heap()
        searched = beside.result() if beside is not None else None
        if searched is None:
            searched = update_index(config, clean=clean, verify=verify, workers=cores, fault=fault, spool=spool)
        report.search = searched
    finally:
        if beside is not None:
            beside.wait()  # a build that failed: the update beside it ends first (after ``result``: at once)
        clear_spool(cache / SPOOL_DIR)
        release_lock(lock)
    report.seconds = time.monotonic() - started
    return report


def _executor(
    config: Config, theme: Theme, cores: int, sinks: Callable[[], DisplayedText], cluster: str | None
) -> Executor:
    """Where the jobs run: this machine's cores, or the workers of a Dask cluster."""
    if cluster is None:
        return JobRunner(theme, config.site.content_dir, config.site.output_dir, cores, sinks)
    try:
        from .render.cluster import ClusterRunner
    except ImportError:
        raise BuildError(CLUSTER_MISSING) from None
    # Each worker loads the theme itself, from the same paths and in the same language (it is not sent).
    load = partial(
        load_theme,
        config.theme.name,
        config.theme.dir,
        config.root,
        config.site.cache_dir / "templates",
        config.site.language,
    )
    return ClusterRunner(cluster, load, config.site.content_dir, config.site.output_dir, sinks)


def cluster_installed() -> bool:
    """Whether a build can use a Dask cluster (``pip install 'listlib[cluster]'``)."""
    try:
        from .render import cluster  # noqa: F401
    except ImportError:
        return False
    return True


def _no_fault(_point: str) -> None:
    pass


def _invalidate_damaged(output: Path, state: BuildState, verify: bool) -> tuple[list[str], list[str]]:
    """The recorded files deleted or edited since they were written (output/ is safe
    to delete), and the folders looked into: their jobs are marked to run again, durably,
    before anything else. Only the files of folders whose mtime changed are looked at,
    unless ``verify`` (an edit in place changes no folder's mtime)."""
    if verify:
        folders = sorted(state.folders())
        candidates = state.file_stats()
    else:
        folders = changed_folders(output, state.folder_marks())
        candidates = state.file_stats_in(folders)
    damaged = sorted(changed_files(output, candidates))
    if damaged:
        state.begin()
        state.invalidate(damaged)
        state.commit()
    return damaged, folders


def _mark_folders(output: Path, state: BuildState, report: BuildReport, looked: list[str], every: bool) -> None:
    """Record the mtime of the folders this build changed or looked into (``every``:
    of every folder holding a recorded file, forgetting the others), for the next
    build's stat pass."""
    if every:
        changed = state.folders()
    else:
        changed = {folder_of(path) for path in (*report.written, *report.removed, *report.damaged)}
        changed.update(looked)
    state.begin()
    state.set_folder_marks(folder_marks(output, folders_with_parents(changed)), replace=every)
    state.commit()


def _build(
    config: Config,
    planned: _Planned,
    state: BuildState,
    runner: Executor,
    progress: Progress | None,
    fault: Callable[[str], None],
) -> BuildReport:
    output = config.site.output_dir
    output.mkdir(parents=True, exist_ok=True)
    plan = planned.plan
    streamed = isinstance(plan, StreamedPlan)
    # A full plan's counts are estimated until it is made, corrected as it is (``expected``).
    count, total = (
        plan.expected() if isinstance(plan, StreamedPlan) else (len(plan.run), sum(j.weight for j in plan.run))
    )
    report = BuildReport(jobs_run=count, jobs_kept=0 if streamed else planned.kept)
    if state.get("running") is not None:
        sweep(output, state.recorded(), _owned_folders(config))
    state.set("running", "1")
    if not streamed:
        state.start_plan()  # the files made by this build are noted in its temporary tables
    # Every other job recorded last time is kept (an incremental plan never lists them).
    not_kept = set() if streamed else {job.id for job in plan.run} | set(plan.dropped)

    def kept(owners: set[str]) -> set[str]:
        return state.spooled_kept(owners) if streamed else owners - not_kept

    stale: set[str] = set()
    """Files of earlier builds no job has made again (yet): removed at the end."""
    done = finished = 0
    # Records go to the state 500 jobs at a time, in one transaction (as durable as one per job:
    # a build killed before the commit is finished by the next one).
    pending: list[tuple[str, str, dict[str, str], dict[str, Stat]]] = []
    newcomers: dict[str, str] = {}
    """Path -> the job that made it, for paths its job did not make last time."""
    later: list[tuple[str, str, str]] = []
    """(path, its earlier job, the job that made it now) whose earlier job a full plan has
    not planned yet: checked at the end (a job kept must not lose a file to another)."""
    # Files of earlier builds may belong to jobs this build keeps; in a fresh state none can.
    check_owners = state.has_files()

    def clash(path: str, owner: str, job_id: str) -> BuildError:
        return BuildError(f"{path}: made by two jobs ({owner} and {job_id})")

    def flush() -> None:
        if check_owners:
            owners = state.owner_of(newcomers)
            clashes = kept(set(owners.values()))
            planned_yet = state.spooled(set(owners.values())) if streamed else set()
            for path, owner in owners.items():
                if owner in clashes:
                    raise clash(path, owner, newcomers[path])
                if streamed and owner not in planned_yet:
                    later.append((path, owner, newcomers[path]))
        state.record_many(pending)
        state.commit()
        state.begin()
        pending.clear()
        newcomers.clear()

    old: dict[str, dict[str, str]] = {}
    """The files of the last build of the jobs handed to the runner and not finished."""

    def to_run() -> Iterator[Job]:
        for batch in _batches(plan):
            old.update(state.files_of(job.id for job in batch))
            # Heaviest first, so that no worker is left with a big thread at the end.
            yield from sorted(batch, key=lambda j: -j.weight)

    state.begin()
    try:
        # The runner is told no weight for a full plan: its estimate is no reason to render in one process.
        for job, result in runner.run(to_run(), old, 0 if streamed else total):
            files = result.files
            for path, earlier, _job in state.add_produced((path, job.id) for path in files):
                raise BuildError(f"{path}: made by two jobs ({earlier} and {job.id})")
            before = old.pop(job.id, {})
            newcomers.update((path, job.id) for path in files if path not in before)
            stale.update(path for path in before if path not in files)
            pending.append((job.id, job.key, files, result.stats))
            fault("job-done")
            report.written.extend(result.written)
            report.unchanged += result.unchanged
            done += job.weight
            finished += 1
            if len(pending) >= 500:
                flush()
            if progress is not None:
                if isinstance(plan, StreamedPlan):
                    count, total = plan.expected()
                progress(done, total, finished, count)
        flush()
        if later:
            clashes = state.spooled_kept({owner for _path, owner, _job in later})
            found = [(path, owner, job_id) for path, owner, job_id in later if owner in clashes]
            if found:
                # The records of the jobs that made these files are committed, taking the
                # files from the jobs kept: forget both, so that the next build (a full one:
                # this one is left unfinished) runs them both and meets the clash, if it is
                # still there, before it records anything.
                state.forget({owner for _path, owner, _job in found} | {job_id for _path, _owner, job_id in found})
                raise clash(*found[0])
        gone = state.files_of(plan.dropped)
        stale.update(path for files in gone.values() for path in files)
        state.forget(plan.dropped)
        state.commit()
    except BuildError:
        # The jobs were stopped (a cluster's scheduler lost, a template's mistake): keep the
        # records of those that finished, so that the next build does only the rest.
        try:
            flush()
        finally:
            state.commit()
        raise
    except BaseException:
        state.commit()
        raise
    finally:
        if isinstance(plan, StreamedPlan):
            plan.close()
    report.jobs_run, report.jobs_kept = (
        (plan.count, plan.kept) if isinstance(plan, StreamedPlan) else (count, planned.kept)
    )
    removed = sorted(state.not_produced(stale))
    fault("removing")
    remove_files(output, removed)
    report.removed = removed
    if not planned.incremental:
        # Every job ran or was kept, so the state names every file that belongs: anything
        # else in listlib's folders is left from a lost or older build state.
        report.removed += sorted(sweep(output, state.recorded(), _owned_folders(config)))
    state.begin()
    planned.memory.save(state)
    _record_lists(config, state)
    state.set("running", None)
    state.commit()
    return report
