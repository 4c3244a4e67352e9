"""Bring ``output/search/`` up to date with the store (``update_index``), as a build's last step.

Which messages changed is found per list and month from the store's month
fingerprints (a few milliseconds when nothing did): new and changed messages go into
one new segment, removed, redacted (changed bytes) and X-No-Archive messages become
tombstones in the manifest; then segments are merged while ``merge.pick_merges``
asks for it, and every segment that gained a tombstone is purged at once (a take-down
leaves no trace of the message's text under ``output/search/``): rewritten without
it when small (``merge_segments`` of it alone), else revised in place, the files that
held its deleted documents written again under new names (``purge.purge_segment``: a
rewrite of 50,000 documents takes some 20 s). Files of the index found deleted or changed
since they were written (a stat pass, as the build's: the folders whose mtime
changed, or every file with ``verify``) make it rebuild the index. Segments are
written first, the manifest last (atomically), then the state in the cache; the
folders of segments no longer named by this manifest or the one before it are
deleted (a reader that loaded the previous manifest keeps working), and so are at
once the files a purge replaced (noted in the state in the transaction that commits
the update, so that an update killed before deleting them has the next one do it),
the old folders of segments rewritten or merged because of a tombstone, and every
old folder after a rebuild (which cannot tell which of them hold a message taken
down): a reader of the manifest before finds a segment file missing and reads the
manifest again (``reader.search``, ``search.js``).

What is indexed (``WEIGHTS`` in ``segment``): the subject (x3), the author's name and
address (x2; with ``obfuscate_addresses`` only the shortened address pages show),
attachment names (x2) and the body text readers see without quoted lines,
signatures and list footers (x1; they repeat other messages and would make every
reply match its thread's words). Every file is written with its script twin
(``codec.script_twin``, for pages opened from ``file://``) unless the site's
``search_from_disk`` is off. Never touches files outside ``output/search/``.

Length: the order of writes (segments, manifest, state, old folders) is the crash
safety of the index, kept in one module so it can be checked at a glance.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import pickle
import secrets
import shutil
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..classcache import ClassCache, classes_digest
from ..classify import Rule
from ..codedigest import search_digest
from ..config import Config
from ..forkpool import ForkPool
from ..fsutil import naming, read_file
from ..heap import trim_heap
from ..render.writer import changed_files, changed_folders, digest_of, folder_marks, folder_of
from ..store.core import Store
from ..store.index import FILED, HIDDEN, Index, Row
from ..urls import SEARCH_DIR
from .analysis import ANALYZER_VERSION
from .codec import SCRIPT_SUFFIX, impact_table, script_twin
from .document import analyse, document
from .hints import NOTED_UP_TO, forget_terms, indexed_terms, load_terms
from .merge import merge_segments, pick_merges, piece_bounds, read_segment, split_segment
from .purge import purge_segment
from .reader import FORMAT
from .segment import WEIGHTS, DisplayRow, Doc, SegmentData, Told, doc_days, invert, meta_name, write_segment
from .spool import SpoolReader
from .state import SearchState
from .writer import SegmentWriter

if TYPE_CHECKING:
    from .bulk import Columns

__all__ = ["SearchReport", "update_index"]

Classes = Mapping[str, str]
"""Call number -> its message's class (``classcache``)."""

K1 = 1.2
B = 0.75
AVGDL = 150.0
"""The weighted length BM25 normalizes by, fixed: a segment's impacts are then a function
of its documents alone, whichever segment, batch or merge they were indexed in (an
average estimated from the first batch made the same archive score differently when
built incrementally; an exact running average would need every document's length at
query time)."""
MANIFEST = "manifest.json"
MANIFEST_SCRIPT = MANIFEST + SCRIPT_SUFFIX
_PARALLEL_FROM = 400
_CHUNK_DOCS = 256
"""Documents a worker inverts at a time (fewer in a small batch, so every worker gets
work): what a worker and a run hold grows with it. Reached from a batch of 2,048
messages with two workers; 500 took a worker some 10 MB more at its peak for the
same archive."""
_BULK_FROM = 100
RUN_DOCS = 8_192
"""Documents inverted into one run in memory (``_invert_into``): a batch of more is
written from runs of this many spilled to disk, merged a band of terms at a time, so
that indexing holds about the same whatever the number of messages. The merge of a run
is the search step's peak (the main process's arrays of about 125 postings and 275
places a document): at 16,384 it was a full build's peak, 202-203 MB at 80,016
generated messages and 181 MB at 20,004; at 8,192, 165-167 and 159 MB (issue 28). The
build's CPU at 80,016, two runs each: 161 and 177 s at 8,192, 173 and 235 s at 16,384
(a noisy machine: no cost shows)."""
SEGMENT_DOCS = 1 << 30
"""No segment holds more documents (a bigger batch or merge is written as several
segments of at least half this). In effect no cap: a cap bounds what a take-down
copies (the segment holding the message), but every query then fetches a dictionary
chunk and a postings file per segment for each of its terms. Measured at 50,000
generated messages, a cap of 8,192 (seven segments, with dictionary and postings
chunks cut from 8 KB to 2 KB) took hiding one message from about 1.9x to 1.6x the
wall time of adding one, and made a first two-word query fetch 141 KB in 46 files
instead of 89 KB in 16, the median of 30 queries 101 KB in 29 files instead of
52 KB in 5: readers pay on every search for a take-down that is still not as cheap
as adding a message. Kept for tests and for sites that prefer cheap take-downs."""
HINTS_UP_TO = NOTED_UP_TO
"""Up to this many messages taken out of the index in one update, those still stored
(hidden) are displayed again for their terms, and those no longer stored as indexed
(removed, redacted) have the terms ``remove`` and ``redact`` noted (``hints``): their
segment's purge then looks up those terms only, not every term of the segment."""
PURGE_REWRITE_BELOW = 128
"""A segment purged of tombstones is rewritten whole (renumbered, as a merge) below
this many documents (about 0.1 s; 500 take 0.4 s, 50,000 take 20 s), else revised
in place with the deleted documents' traces taken out (``purge_segment``)."""
STALE = "stale"
"""The state's note of the files the last update's purges replaced (a JSON list of paths
under ``search/``), deleted once it committed; until then they hold text taken down."""


@dataclass
class SearchReport:
    indexed: int = 0
    removed: int = 0
    segments: int = 0
    merged: int = 0
    seconds: float = 0.0
    rebuilt: bool = False
    damaged: list[str] = field(default_factory=list)
    """Files of the index found deleted or edited (under ``search/``): they made it rebuild."""

    def to_dict(self) -> dict[str, object]:
        return {
            "damaged": len(self.damaged),
            "indexed": self.indexed,
            "removed": self.removed,
            "segments": self.segments,
            "merged": self.merged,
            "rebuilt": self.rebuilt,
            "seconds": round(self.seconds, 3),
        }


_Analysing = tuple[Path, bool, "SpoolReader | None"]
"""What a message's document is made from (``_analyse_rows``) besides its row and
class: the content folder, whether the site obfuscates addresses, the render pass's
spooled text."""
_Job = tuple[int, list[Row], Classes]
"""Consecutive messages to index: the first one's doc number, their rows, their classes."""

# Worker-process state (set by _init_worker; never in the main process).
_worker: _Analysing | None = None


def _init_worker(*analysing: Any) -> None:
    global _worker
    _worker = analysing  # type: ignore[assignment]


def _invert_chunk(job: _Job) -> Columns:
    assert _worker is not None
    return _invert_rows(job, _worker)


def _invert_rows(job: _Job, analysing: _Analysing) -> Columns:
    from .bulk import invert_columns  # loaded before the fork

    first, rows, classes = job
    columns = invert_columns(_analyse_rows(rows, classes, *analysing), AVGDL, B, first)
    _check_order(columns.rows, rows)
    return columns


def _analyse_rows(
    rows: list[Row], classes: Classes, content: Path, obfuscate: bool, spool: SpoolReader | None
) -> list[Doc]:
    """The documents of these messages: from the render pass's spooled text when there
    is some for the same bytes, else displayed here; ``classes``: call -> class."""
    docs = []
    for row in rows:
        text = spool.text(row.call, row.raw_hash) if spool is not None else None
        cls = classes.get(row.call)
        if text is None:
            docs.append(analyse(row, read_file(f"{content}/{row.path}"), obfuscate, cls))
        else:
            docs.append(document(row, text, cls))
    return docs


_PICKLE = pickle.HIGHEST_PROTOCOL


_MADE_BATCH = 2_000
"""Records of files written held before they go to the state's temporary table."""
_IN_CHUNK = 500
"""Paths looked up in one query (SQLite's limit on a statement's parameters, 999 before 3.32)."""


class _Made:
    """The files an update writes, (path, digest, size, mtime_ns), hashed as they are
    written (a full build's index is not read back), noted in a temporary table of the
    search state a batch at a time: a dict of them took some 360 bytes a file, and an
    index of 80,000 messages has some 25,000 files (every ``DOCS_CHUNK`` documents'
    rows are one), of 1,000,000 some 300,000."""

    def __init__(self, state: SearchState) -> None:
        self.state = state
        self.pending: list[tuple[str, str, int, int]] = []
        state.start_made()

    def add(self, path: str, data: bytes | memoryview, mtime: int) -> None:
        self.pending.append((path, digest_of(data), memoryview(data).nbytes, mtime))
        if len(self.pending) >= _MADE_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.state.note_made(self.pending)
            self.pending = []

    def record(self, folders: Iterable[str]) -> None:
        """Record the files written under these folders (inside the caller's transaction)."""
        self.flush()
        self.state.record_made(folders)

    def not_among(self, paths: list[str]) -> list[str]:
        """Those of ``paths`` not written by this update."""
        self.flush()
        found: set[str] = set()
        for start in range(0, len(paths), _IN_CHUNK):
            found |= self.state.made_among(paths[start : start + _IN_CHUNK])
        return [path for path in paths if path not in found]


class _Adding:
    """The messages an update adds, staged in the search state in doc-number order
    (``SearchState.stage``), read back a run at a time with their classes: an update
    holds the rows of the runs being indexed, not those of every message it adds."""

    def __init__(self, state: SearchState, open_classes: Callable[[], ClassCache], *, allowed: bool) -> None:
        self.state = state
        self._open_classes = open_classes
        self._classes: ClassCache | None = None
        self.count = 0
        self.allowed = allowed
        """False: the update must add nothing (``purge_index``)."""

    @property
    def class_cache(self) -> ClassCache:
        """The class cache, opened when first asked (an update that adds nothing never
        opens it)."""
        if self._classes is None:
            self._classes = self._open_classes()
        return self._classes

    def close(self) -> None:
        if self._classes is not None:
            self._classes.close()

    def stage(self, rows: list[Row]) -> None:
        self.state.stage_rows(
            (row.list, row.date, row.call, row.year, row.month, row.raw_hash, pickle.dumps(tuple(row), _PICKLE))
            for row in rows
        )

    def number(self) -> None:
        self.count = self.state.number_staged()
        if self.count and not self.allowed:
            raise _WouldAdd

    def job(self, first: int, start: int, end: int) -> _Job:
        """The messages numbered ``start`` to before ``end``, as the job of the doc number ``first``."""
        rows = [Row(*pickle.loads(data)) for data in self.state.staged_rows(start, end)]
        return first, rows, self.class_cache.classes(row.call for row in rows)


def _write_batch(
    folder: Path,
    adding: _Adding,
    bounds: tuple[int, int],
    analysing: _Analysing,
    workers: int,
    generation: int,
    made: _Made,
    twins: bool,
) -> dict[str, Any]:
    """Index the messages staged numbered ``bounds`` (start, end) as a new segment; its
    manifest entry. A few are inverted token by token (``invert``); many with numpy
    (``bulk``), on every core, and written as they come (``_invert_into``)."""
    start, end = bounds
    if end - start < _BULK_FROM:
        _first, rows, classes = adding.job(0, start, end)
        data = invert(_analyse_rows(rows, classes, *analysing), AVGDL, B)
        _check_order(data.rows, rows)
        return _write(folder, data, generation, made, twins)
    sid = _new_id(generation)
    writer = SegmentWriter(folder / "seg" / sid, _recorder(made, sid), twins=twins)
    try:
        _invert_into(writer, adding, bounds, analysing, workers, folder / "seg" / f"{sid}.runs")
    except BaseException:
        writer.abort()
        raise
    return _entry(sid, writer.finish())


def _check_order(shown: Sequence[DisplayRow], rows: list[Row]) -> None:
    """The documents made are ``rows``, in order (the state records them so)."""
    if len(shown) != len(rows):
        raise AssertionError(f"{len(rows)} messages made {len(shown)} documents")
    for number, (row, wanted) in enumerate(zip(shown, rows, strict=True)):
        if row.call != wanted.call:
            raise AssertionError(f"document {number} of a run is {row.call}, not {wanted.call}")


def _invert_into(
    writer: SegmentWriter,
    adding: _Adding,
    bounds: tuple[int, int],
    analysing: _Analysing,
    workers: int,
    scratch: Path,
) -> None:
    """Hand ``writer`` the segment of these messages. Runs of consecutive documents are
    inverted (by the workers: small runs, as a worker's analysed documents, every token
    a string, are the biggest thing it holds) and merged as they come back, their rows
    written at once; up to ``RUN_DOCS`` documents are merged into one run, and when
    there are more, each such run is spilled to ``scratch`` and they are merged from
    there a band of terms at a time (``spill``): what the postings take is bounded
    whatever the number of messages."""
    from .bulk import collect_runs, layout_of, merge_columns  # numpy: worth its import for a batch
    from .spill import spill_run, write_runs

    start, end = bounds
    count = end - start
    size = max(100, min(_CHUNK_DOCS, count // (workers * 4)))
    jobs = (adding.job(i, start + i, min(start + i + size, end)) for i in range(0, count, size))
    done = 0

    def run_of(parts: Iterator[Columns]) -> Iterator[Columns]:
        """The next parts up to ``RUN_DOCS`` documents, their rows written."""
        nonlocal done
        docs = 0
        for part in parts:
            writer.add_rows(part.rows)
            done += len(part.rows)
            docs += len(part.rows)
            yield part._replace(rows=[])
            if docs >= RUN_DOCS:
                return

    runs = []
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        with _inverted(jobs, count, analysing, workers) as parts:
            while done < count:
                run = merge_columns(collect_runs(run_of(parts)), by_key=True)
                if not runs and done == count:
                    writer.add_terms(layout_of(run))  # one run: nothing to spill
                    return
                runs.append(spill_run(scratch / str(len(runs)), run))
                del run
        write_runs(writer, runs)  # the workers gone
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def _inverted(jobs: Iterator[_Job], count: int, analysing: _Analysing, workers: int) -> Iterator[Iterator[Columns]]:
    """The runs of ``jobs`` (``count`` messages) inverted, in order: by a pool of
    workers, or here. Jobs are read as the workers need them (``_AHEAD`` per worker)."""
    if workers <= 1 or count < _PARALLEL_FROM:
        yield (_invert_rows(job, analysing) for job in jobs)
        return
    # Late: the workers share this process's pages (numpy included); the memory it freed
    # is given back first, or each worker would keep its own copy of the pages reused.
    trim_heap()
    with ForkPool(workers, _init_worker, analysing, late=True) as pool:
        yield _in_order(pool, jobs, workers * _AHEAD)


_AHEAD = 4
"""Jobs handed to the pool per worker before the first of them is waited for."""


def _in_order(pool: ForkPool, jobs: Iterator[_Job], ahead: int) -> Iterator[Columns]:
    """``pool.map`` of ``_invert_chunk`` over ``jobs`` that takes a job only when fewer
    than ``ahead`` are under way (``map`` takes them all at once)."""
    pending: deque[Future[Columns]] = deque()
    for job in jobs:
        pending.append(pool.submit(_invert_chunk, job))
        if len(pending) >= ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def _settings(config: Config) -> str:
    """Everything the index's bytes depend on besides the messages: another tokenizer
    or segment writer (``search_digest``) re-indexes everything, and so do new class
    rules (every document holds its class, for ``is:``)."""
    return json.dumps(
        [
            FORMAT,
            ANALYZER_VERSION,
            search_digest(),
            config.site.obfuscate_addresses,
            config.site.search_from_disk,
            sorted(WEIGHTS.items()),
            K1,
            B,
            AVGDL,
            classes_digest(config.classes.rules),
        ]
    )


def _no_fault(_point: str) -> None:
    pass


def _load_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads((folder / "manifest.json").read_bytes())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT else None


def _write_manifest(folder: Path, manifest: dict[str, Any], twins: bool) -> None:
    """The manifest and its script twin (when ``twins``, else none), each atomically
    (the twin first: a page from ``file://`` that reads it finds the segments it names)."""
    data = json.dumps(manifest, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if not twins:
        (folder / MANIFEST_SCRIPT).unlink(missing_ok=True)
    writes = [(MANIFEST_SCRIPT, script_twin(MANIFEST, data))] if twins else []
    for name, content in [*writes, (MANIFEST, data)]:
        temp = folder / f".{name}-{os.getpid()}.tmp"
        with naming(temp):
            temp.write_bytes(content)
        os.replace(temp, folder / name)


def _new_id(generation: int) -> str:
    return f"{generation:06d}{secrets.token_hex(3)}"


class _WouldAdd(Exception):
    """The update would index documents, or rebuild the index (``purge_index``)."""


def purge_index(
    config: Config, *, verify: bool = False, fault: Callable[[str], None] | None = None
) -> SearchReport | None:
    """``update_index`` when it indexes no document: messages hidden, removed or gone
    from the configuration are taken out (and their segments purged), segments merged.
    It needs nothing a build's rendering makes, so a build runs it in a child process
    beside its plan and rendering (``build.build_site``). None, with nothing written
    (but the files an earlier update left to delete) and nothing read but the store,
    the state and the index's files, when the update would index a message or rebuild
    the index: the build's own ``update_index`` does it."""
    try:
        return update_index(config, verify=verify, fault=fault, may_add=False)
    except _WouldAdd:
        return None


def update_index(
    config: Config,
    *,
    clean: bool = False,
    verify: bool = False,
    workers: int = 1,
    fault: Callable[[str], None] | None = None,
    spool: Path | None = None,
    may_add: bool = True,
) -> SearchReport:
    """Index what changed in the store since the last update (everything when ``clean``,
    when the settings changed, or when output/search/ and the cache disagree).
    ``fault`` is called at named points (crash tests kill the process there):
    ``search-segment`` (a segment written), ``search-manifest`` (the manifest written,
    the cache not yet). ``spool``: a folder of text the build's render pass spooled
    (``spool``), used for the messages spooled from the bytes now in the store.
    ``may_add`` False: raise ``_WouldAdd`` before writing anything (but deleting the
    files an earlier update left to delete) if it would index a document or rebuild
    the index (``purge_index``)."""
    started = time.monotonic()
    report = SearchReport()
    folder = config.site.output_dir / SEARCH_DIR
    (folder / "seg").mkdir(parents=True, exist_ok=True)
    state = SearchState(config.site.cache_dir / "search.sqlite")
    try:
        _delete_stale(folder, state)  # an update killed after it committed left them
        manifest = _load_manifest(folder)
        settings = _settings(config)
        looked, report.damaged = _damaged_files(folder, state, verify)
        if (
            clean
            or report.damaged
            or manifest is None
            or state.get("settings") != settings
            or state.get("generation") != str(manifest["generation"])
        ):
            if not may_add:
                raise _WouldAdd
            state.clear()
            previous_generation = int(manifest["generation"]) if manifest else 0
            manifest = {
                "format": FORMAT,
                "generation": previous_generation,
                "avgdl": AVGDL,
                "impacts": impact_table(K1),
                "segments": [],
                "live": 0,
                "lists": {},
            }
            report.rebuilt = True
        spooled = SpoolReader(spool) if spool is not None else None
        made = _Made(state)
        try:
            with _staging(config, state, may_add) as staged:
                wrote = _update(
                    config,
                    folder,
                    state,
                    manifest,
                    settings,
                    workers,
                    spooled,
                    report,
                    fault or _no_fault,
                    made,
                    staged,
                )
        finally:
            if spooled is not None:
                spooled.close()
        if wrote or looked:
            _record_files(folder, state, made)
        if not wrote:
            forget_terms(config.site.cache_dir)  # also the notes of messages this update had no need to purge
    finally:
        state.close()
    report.seconds = time.monotonic() - started
    return report


@contextlib.contextmanager
def _staging(config: Config, state: SearchState, may_add: bool) -> Iterator[_Adding]:
    """The stage of the messages an update adds (``_Adding``), with the class cache their
    classes are read from; the staged tables are dropped at the end, whatever happens."""
    adding = _Adding(state, partial(ClassCache, config.site.cache_dir, config.classes.rules), allowed=may_add)
    try:
        state.stage()
        try:
            yield adding
        finally:
            state.unstage()
    finally:
        adding.close()


def _update(
    config: Config,
    folder: Path,
    state: SearchState,
    manifest: dict[str, Any],
    settings: str,
    workers: int,
    spool: SpoolReader | None,
    report: SearchReport,
    fault: Callable[[str], None],
    made: _Made,
    adding: _Adding,
) -> bool:
    """Whether it wrote anything; each segment file written goes into ``made`` (``_write``).
    The messages to add are staged by ``adding`` (read back a run at a time)."""
    content = config.site.content_dir
    slugs = [lst.slug for lst in config.published_lists]
    known = state.months()
    remove: list[tuple[str, str, int]] = []  # (call, segment, doc)
    hashes: dict[str, str] = {}  # call -> the raw hash indexed, of the documents removed
    months: dict[tuple[str, int, int], str | None] = {}
    with Store(content).open() as store:
        index = store.index
        with index.snapshot():
            fresh: dict[tuple[str, int, int], str] = {}
            for slug in slugs:
                for (year, month), fingerprint in index.month_fingerprints(slug).items():
                    fresh[(slug, year, month)] = fingerprint
            for key in set(known) | set(fresh):
                if known.get(key) == fresh.get(key):
                    continue
                slug, year, month = key
                months[key] = fresh.get(key)
                indexed = state.month_docs(slug, year, month)
                rows = {row.call: row for row in index.month_rows(slug, year, month)} if key in fresh else {}
                for call, (raw_hash, segment, doc) in indexed.items():
                    row = rows.get(call)
                    if row is None or row.raw_hash != raw_hash or row.no_archive:
                        remove.append((call, segment, doc))
                        hashes[call] = raw_hash
                new = []
                for call, row in rows.items():
                    if row.no_archive:
                        continue
                    old = indexed.get(call)
                    if old is None or old[0] != row.raw_hash:
                        new.append(_kept(row))
                adding.stage(new)
            adding.number()  # in doc-number order: months came in set order
            obfuscate = config.site.obfuscate_addresses
            rules = config.classes.rules
            hints = {}
            if len(remove) <= HINTS_UP_TO:
                hints = _terms_of(index, content, hashes, obfuscate, rules, load_terms(config.site.cache_dir))
            if adding.count:
                adding.class_cache.update(index, content)  # a build did already: then a read
    twins = config.site.search_from_disk
    segments: list[dict[str, Any]] = manifest["segments"]
    by_id = {str(info["id"]): info for info in segments}
    # A segment's terms of its documents deleted, when every one deleted since its last
    # purge is still stored (hidden): the others were purged already (``_to_purge``).
    named: dict[str, set[str] | None] = {} if manifest.get("purged") else dict.fromkeys(by_id)
    # Likewise the documents deleted since a segment's last purge: the others' traces are
    # gone already (each of them rewritten again would cost as much as the new ones).
    fresh: dict[str, list[int]] | None = {} if manifest.get("purged") else None
    for call, segment, doc in remove:
        terms, known = hints.get(call), named.setdefault(segment, set())
        named[segment] = None if terms is None or known is None else known | terms
        info = by_id.get(segment)
        if info is not None:
            info.setdefault("deleted", []).append(doc)
            info["deleted"].sort()
            if fresh is not None:
                fresh.setdefault(segment, []).append(doc)
    purge = _to_purge(manifest, remove)
    tainted = set(purge)  # their folders hold text of deleted documents (but those revised in place)
    generation = int(manifest["generation"]) + 1
    revised: set[str] = set()  # segments purged in place
    stale: list[str] = []  # the files their purges replaced
    new_docs: list[tuple[str, int, int]] = []  # (segment, start, end): the docs staged so numbered are its
    moves: list[tuple[str, int, str]] = []
    analysing: _Analysing = (content, obfuscate, spool)
    for start, end in piece_bounds(adding.count, SEGMENT_DOCS):
        info = _write_batch(folder, adding, (start, end), analysing, workers, generation, made, twins)
        fault("search-segment")
        segments.append(info)
        new_docs.append((str(info["id"]), start, end))
        report.segments += 1
    while True:
        groups = pick_merges(segments, SEGMENT_DOCS)
        current = {str(info["id"]): info for info in segments}
        if groups:
            group = groups[0]
        elif purge:
            sid = purge.pop()
            purged = _purge(folder, current[sid], twins, named.get(sid), fresh and fresh.get(sid), made, stale)
            if purged is not None:
                fault("search-purge")
                segments[:] = [purged if info is current[sid] else info for info in segments]
                revised.add(sid)
                continue
            group = [sid]  # small: rewritten whole, as a merge of one
        else:
            break
        purge.difference_update(group)
        parts = [
            (read_segment(folder / "seg" / sid, int(current[sid].get("rev", 0))), set(current[sid].get("deleted", ())))
            for sid in group
        ]
        merged = merge_segments(parts)
        segments[:] = [info for info in segments if info["id"] not in group]
        report.merged += len(group)
        for piece in split_segment(merged, SEGMENT_DOCS):
            info = _write(folder, piece, generation, made, twins)
            segments.append(info)
            moves.extend((str(info["id"]), number, row.call) for number, row in enumerate(piece.rows))
    segments.sort(key=lambda info: str(info["id"]))
    names = {lst.slug: lst.name for lst in config.published_lists}
    changed = adding.count or remove or report.merged or report.rebuilt or revised or not manifest.get("purged")
    if not changed and manifest["lists"] == names:
        # Nothing to write: remember the fingerprints seen (their months had nothing indexable).
        state.begin()
        for (slug, year, month), fingerprint in months.items():
            state.set_month(slug, year, month, fingerprint)
        state.commit()
        _remove_folders(folder, {str(info["id"]) for info in segments} | set(manifest.get("previous", ())))
        return False
    previous = set() if report.rebuilt else {str(info["id"]) for info in _previous_segments(folder)} - tainted
    manifest["generation"] = generation
    manifest["live"] = sum(int(info["docs"]) - len(info.get("deleted", ())) for info in segments)
    manifest["min_day"], manifest["max_day"] = _live_days(folder, segments)
    manifest["lists"] = names
    manifest["previous"] = sorted(previous)
    manifest["purged"] = True
    _write_manifest(folder, manifest, twins)
    fault("search-manifest")
    state.begin()
    state.remove_docs(call for call, _segment, _doc in remove)
    for sid, start, end in new_docs:
        state.add_staged_docs(sid, start, end)
    state.move_docs(moves)
    # The files purges wrote and replaced, recorded with the update that names them.
    revised &= {str(info["id"]) for info in segments}  # not merged since
    made.record(f"seg/{sid}" for sid in sorted(revised))
    state.set_files([], stale)
    state.set(STALE, json.dumps(stale))
    for (slug, year, month), fingerprint in months.items():
        state.set_month(slug, year, month, fingerprint)
    state.set("generation", str(generation))
    state.set("settings", settings)
    state.commit()
    forget_terms(config.site.cache_dir)
    fault("search-state")
    _delete_stale(folder, state)
    _remove_folders(folder, {str(info["id"]) for info in segments} | previous)
    report.indexed = adding.count
    report.removed = len(remove)
    return True


def _kept(row: Row) -> Row:
    """What indexing uses of a row to add (``document``, ``_analyse_rows``, the state):
    a full build holds one per message until its segment is written, and the subject,
    sender, vitals and references (but the first: ``document.thread_key``'s) are most
    of a row's 1.3 KB."""
    refs = row.refs.split()
    return row._replace(
        list=sys.intern(row.list),
        vitals="",
        date_source="",
        subject="",
        from_name="",
        from_addr="",
        refs=refs[0] if refs else "",
        in_reply_to=None if refs else row.in_reply_to,
        origin="",
    )


def _to_purge(manifest: dict[str, Any], remove: list[tuple[str, str, int]]) -> set[str]:
    """The segments whose files hold documents deleted: those that gained a tombstone,
    and every one with tombstones in an index of the time before purging."""
    named = {str(info["id"]) for info in manifest["segments"]}
    purge = {segment for _call, segment, _doc in remove if segment in named}
    if not manifest.get("purged"):
        purge.update(str(info["id"]) for info in manifest["segments"] if info.get("deleted"))
    return purge


def _terms_of(
    index: Index,
    content: Path,
    hashes: dict[str, str],
    obfuscate: bool,
    rules: Sequence[Rule],
    noted: Mapping[str, tuple[str, set[str]]],
) -> dict[str, set[str]]:
    """The terms indexed of each removed message whose bytes are still stored as they
    were indexed (hidden ones), by call number: displayed and classified again (``invert``
    of it alone makes the same terms as the batch did; the rules are those it was
    indexed with, as other rules re-index everything); of the others, those ``remove``
    or ``redact`` noted from the same bytes (``hints``)."""
    found = {call: terms for call, (raw_hash, terms) in noted.items() if hashes.get(call) == raw_hash}
    for row in index.rows_by_call(call for call in hashes if call not in found):
        if row.state in (FILED, HIDDEN) and row.raw_hash == hashes[row.call]:
            try:
                raw = read_file(f"{content}/{row.path}")
            except OSError:
                continue  # a file missing: ``check --repair`` finds it
            found[row.call] = indexed_terms(row, raw, obfuscate, rules)
    return found


def _purge(
    folder: Path,
    info: dict[str, Any],
    twins: bool,
    terms: set[str] | None,
    fresh: list[int] | None,
    made: _Made,
    stale: list[str],
) -> dict[str, Any] | None:
    """The manifest entry of the next revision of the segment ``info``, whose files
    hold nothing of its deleted documents, at the same doc numbers; None when it is
    small enough to rewrite (or would be left with no term). ``terms``: those its
    documents deleted since its last purge held, when known; ``fresh``: those documents,
    when the others were purged (every deleted one is taken out otherwise). The files
    written go into ``made`` (``_write``), those replaced into ``stale``."""
    if int(info["docs"]) < PURGE_REWRITE_BELOW:
        return None
    sid = str(info["id"])
    deleted = sorted(info["deleted"])
    dropping = sorted(fresh) if fresh else deleted

    rev = int(info.get("rev", 0))
    purged = purge_segment(folder / "seg" / sid, rev, dropping, twins=twins, terms=terms, told=_recorder(made, sid))
    if purged is None:
        return None
    stale.extend(f"seg/{sid}/{name}" for name in purged.stale)
    return {**info, "rev": purged.rev, "deleted": deleted}


def _delete_stale(folder: Path, state: SearchState) -> None:
    """Delete the files the last update's purges replaced (``STALE``; gone already is fine)."""
    for path in json.loads(state.get(STALE) or "[]"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{folder}/{path}")


def _remove_folders(folder: Path, keep: set[str]) -> None:
    """Delete the segment folders not in ``keep`` (and any a killed update left half written)."""
    for entry in (folder / "seg").iterdir():
        if entry.name not in keep:
            shutil.rmtree(entry, ignore_errors=True)


def _damaged_files(folder: Path, state: SearchState, verify: bool) -> tuple[list[str], list[str]]:
    """The folders looked into and the recorded files of the index found deleted or
    changed there (every folder with ``verify``)."""
    if verify:
        files = state.files()
        looked = sorted({folder_of(path) for path in files})
    else:
        looked = changed_folders(folder, state.folders())
        files = state.files_in(looked)
    damaged = changed_files(folder, [(path, (size, mtime)) for path, (_d, size, mtime) in files.items()])
    return looked, sorted(damaged)


def _record_files(folder: Path, state: SearchState, made: _Made) -> None:
    """Record the files of the segments written since the last record (hashed once:
    a segment's files never change after its folder is renamed into place; a purge's
    are recorded with the update that names them) and the manifest, and the folders'
    mtimes; forget the files of segments deleted. A build that adds one message stats
    and hashes a handful of files, not the whole index.
    ``made``: the files this update wrote, hashed as they were written (a full build's
    index is not read back); the others (a crash's leftovers, the manifest) are read."""
    manifest = _load_manifest(folder)
    keep = {str(info["id"]) for info in manifest["segments"]} | set(manifest.get("previous", ())) if manifest else set()
    recorded = state.recorded_segments()
    fresh = sorted(keep - recorded)
    paths = [MANIFEST] if manifest else []
    if manifest and (folder / MANIFEST_SCRIPT).exists():
        paths.append(MANIFEST_SCRIPT)
    for sid in fresh:
        try:
            with os.scandir(folder / "seg" / sid) as entries:
                names = (f"seg/{sid}/{entry.name}" for entry in entries if entry.is_file(follow_symlinks=False))
                while batch := list(itertools.islice(names, _MADE_BATCH)):
                    paths.extend(made.not_among(batch))
        except FileNotFoundError:
            continue  # a previous generation's segment someone deleted: readers of the new manifest never need it
    add: list[tuple[str, str, int, int]] = []
    base = f"{folder}/"  # a string: a Path per file costs more than its stat
    for path in paths:
        found = os.stat(base + path)
        with open(base + path, "rb") as file:
            digest = digest_of(file.read())
        add.append((path, digest, found.st_size, found.st_mtime_ns))
    state.begin()
    state.set(STALE, "[]")  # deleted by now
    state.forget_segments(recorded - keep)
    made.record(f"seg/{sid}" for sid in fresh)
    gone = [MANIFEST, MANIFEST_SCRIPT] if not manifest else [] if MANIFEST_SCRIPT in paths else [MANIFEST_SCRIPT]
    state.set_files(add, gone)
    state.set_folders(folder_marks(folder, ["", "seg", *(f"seg/{sid}" for sid in sorted(keep))]))
    state.commit()


def _live_days(folder: Path, segments: list[dict[str, Any]]) -> tuple[int, int]:
    """The first and last day of the documents not deleted (the recency factor's range:
    a tombstone must not stretch it)."""
    low: int | None = None
    high: int | None = None
    for info in segments:
        deleted = set(info.get("deleted", ()))
        if not deleted:
            days = [int(info["min_day"]), int(info["max_day"])] if int(info["docs"]) else []
        else:
            meta = json.loads((folder / "seg" / str(info["id"]) / meta_name(int(info.get("rev", 0)))).read_bytes())
            days = [day for number, day in enumerate(doc_days(meta["day_runs"])) if number not in deleted]
        if days:
            low = min(days) if low is None else min(low, *days)
            high = max(days) if high is None else max(high, *days)
    return (low, high) if low is not None and high is not None else (0, 0)


def _previous_segments(folder: Path) -> list[dict[str, Any]]:
    manifest = _load_manifest(folder)
    return list(manifest["segments"]) if manifest else []


def _write(folder: Path, data: SegmentData, generation: int, made: _Made, twins: bool) -> dict[str, Any]:
    """Write a new segment (with script twins when ``twins``); its files' (digest, size,
    mtime_ns) go into ``made``."""
    sid = _new_id(generation)
    return _entry(sid, write_segment(folder / "seg" / sid, data, _recorder(made, sid), twins=twins))


def _recorder(made: _Made, sid: str) -> Told:
    """Notes each file of the segment ``sid`` written in ``made``."""

    def record(name: str, data: bytes | memoryview, mtime: int) -> None:
        made.add(f"seg/{sid}/{name}", data, mtime)

    return record


def _entry(sid: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest entry of the new segment ``sid``."""
    return {"id": sid, "docs": meta["docs"], "min_day": meta["min_day"], "max_day": meta["max_day"], "deleted": []}
