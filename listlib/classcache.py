"""The class cache: every filed message's class (``classify``), kept in one SQLite file
of the cache folder (``classes.sqlite``, derived data) by call number and content hash.

A message is read and classified once; again only when its bytes change (a redaction),
the rules or the classifier's code do: the file's version is ``classes_digest``, so
either starts it afresh. ``update`` brings it in line with the index: the
classes of new and changed messages are worked out, those of messages no longer filed
dropped. It reads only the months of the index whose filed messages changed since it
last did (the index's month versions, within the index's ``epoch``; another epoch, an
index made again, is read whole): a build reads a handful of rows, not every message.
Reads the store's files, never writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path

from .classify import Rule, classify_message, rules_digest
from .codedigest import code_digest
from .forkpool import ForkPool
from .sqlfile import open_derived
from .store.index import Index

__all__ = ["CLASS_CACHE", "ClassCache", "classes_digest"]

CLASS_CACHE = "classes.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS classes (
    call TEXT PRIMARY KEY, token TEXT NOT NULL, class TEXT NOT NULL, list TEXT NOT NULL, year INTEGER NOT NULL,
    month INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS classes_by_month ON classes (list, year, month, call);
-- The index's month versions the classes are up to date with (under meta's ``epoch``).
CREATE TABLE IF NOT EXISTS months (
    list TEXT NOT NULL, year INTEGER NOT NULL, month INTEGER NOT NULL, version INTEGER NOT NULL,
    PRIMARY KEY (list, year, month)
) WITHOUT ROWID;
"""
_FORMAT = "months-1"
"""The file's layout, beside ``classes_digest`` in its version."""
_Filed = tuple[str, str, str, str, int, int]
"""A filed message as ``Index.month_contents`` gives it."""
_BATCH = 500
_PARALLEL_FROM = 2_000
"""Messages to classify from which the work is spread over the cores (a first build)."""
_KNOWN = "SELECT call, token FROM classes WHERE list = ? AND year = ? AND month = ? ORDER BY call"
_ROUND = 10_000
"""Messages classified at a time: what an update holds of them (some 380 bytes each)."""

# Worker-process state (set by _init_worker; never in the main process).
_worker: tuple[Path, tuple[Rule, ...]] | None = None


def _init_worker(content_dir: Path, rules: tuple[Rule, ...]) -> None:
    global _worker
    _worker = (content_dir, rules)


def _classify_paths(paths: list[str]) -> list[str | None]:
    assert _worker is not None
    return _classify_files(_worker[0], paths, _worker[1])


def _classify_files(content_dir: Path, paths: list[str], rules: tuple[Rule, ...]) -> list[str | None]:
    """The class of each stored file, None for a file that cannot be read."""
    found: list[str | None] = []
    for path in paths:
        try:
            raw = (content_dir / path).read_bytes()
        except OSError:
            found.append(None)
            continue
        found.append(classify_message(raw, rules))
    return found


def classes_digest(rules: Sequence[Rule]) -> str:
    """What every message's class depends on besides its bytes: the rules and the code
    that applies them. Pages and the search index that show classes key on it."""
    return f"{rules_digest(rules)}:{code_digest(('classify',))}"


class ClassCache:
    """The classes of a site's filed messages under one set of rules."""

    def __init__(self, cache_dir: Path, rules: Sequence[Rule]) -> None:
        self.rules = tuple(rules)
        self.digest = classes_digest(self.rules)
        self.db = open_derived(cache_dir / CLASS_CACHE, _SCHEMA, f"{self.digest}:{_FORMAT}")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> ClassCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, index: Index, content_dir: Path, workers: int = 1) -> int:
        """Classify the filed messages not classified yet (or changed since), forget those
        no longer filed; returns how many were classified (on ``workers`` cores when they
        are many). A file that cannot be read is left for the next update (its pages show
        no class meanwhile). The months are compared one at a time and their messages
        classified ``_ROUND`` at a time: what is held is a round, not the archive (a first
        build classifies every message)."""
        with nullcontext() if index.db.in_transaction else index.snapshot():
            epoch = index.get_meta("epoch") or ""
            versions = index.all_month_versions()
            row = self.db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
            everything = row is None or row[0] != epoch
            if everything:
                # Another index: every month it has, and every month classified, compared again.
                held = self.db.execute("SELECT DISTINCT list, year, month FROM classes")
                months = sorted(versions.keys() | {(slug, y, m) for slug, y, m in held})
            else:
                seen = {(slug, y, m): v for slug, y, m, v in self.db.execute("SELECT * FROM months")}
                months = sorted(key for key in versions.keys() | seen.keys() if versions.get(key) != seen.get(key))
            self.db.execute("BEGIN")
            try:
                with _Rounds(self, content_dir, workers) as rounds:
                    for key in months:
                        known = self.db.execute(_KNOWN, key).fetchall()
                        gone, todo = _changes(index.month_contents(*key), iter(known))
                        for start in range(0, len(gone), _BATCH):
                            chunk = gone[start : start + _BATCH]
                            self.db.execute(f"DELETE FROM classes WHERE call IN ({_marks(chunk)})", chunk)
                        rounds.add(todo)
                # A month with a message left unread is read again by the next update.
                if everything:
                    self.db.execute("DELETE FROM months")
                    self.db.execute("INSERT OR REPLACE INTO meta VALUES ('epoch', ?)", (epoch,))
                for key in months:
                    if key in rounds.unread or key not in versions:
                        self.db.execute("DELETE FROM months WHERE list = ? AND year = ? AND month = ?", key)
                    else:
                        self.db.execute("INSERT OR REPLACE INTO months VALUES (?, ?, ?, ?)", (*key, versions[key]))
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        return rounds.classified

    def classes(self, calls: Iterable[str]) -> dict[str, str]:
        """Call -> class, for those of the calls that have one."""
        wanted = list(calls)
        found: dict[str, str] = {}
        for start in range(0, len(wanted), _BATCH):
            chunk = wanted[start : start + _BATCH]
            found.update(self.db.execute(f"SELECT call, class FROM classes WHERE call IN ({_marks(chunk)})", chunk))
        return found

    def all(self) -> dict[str, str]:
        """Every call -> class."""
        return dict(self.db.execute("SELECT call, class FROM classes"))


class _Rounds:
    """Messages to classify, classified and written ``_ROUND`` at a time (``add``): on
    ``workers`` cores from the first round of ``_PARALLEL_FROM`` or more (one pool for
    the whole update), else here."""

    def __init__(self, cache: ClassCache, content_dir: Path, workers: int) -> None:
        self.db, self.rules = cache.db, cache.rules
        self.content_dir, self.workers = content_dir, workers
        self.pool: ForkPool | None = None
        self.todo: list[_Filed] = []
        self.classified = 0
        self.unread: set[tuple[str, int, int]] = set()
        """The months with a message whose file could not be read."""

    def __enter__(self) -> _Rounds:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        try:
            if kind is None:
                self._classify()
        finally:
            if self.pool is not None:
                self.pool.shutdown()

    def add(self, todo: list[_Filed]) -> None:
        self.todo += todo
        if len(self.todo) >= _ROUND:
            self._classify()

    def _classify(self) -> None:
        todo, self.todo = self.todo, []
        paths = [filed[2] for filed in todo]
        if self.pool is None and self.workers > 1 and len(paths) >= _PARALLEL_FROM:
            self.pool = ForkPool(self.workers, _init_worker, (self.content_dir, self.rules))
        if self.pool is None:
            classes = _classify_files(self.content_dir, paths, self.rules)
        else:
            chunks = [paths[start : start + _BATCH] for start in range(0, len(paths), _BATCH)]
            classes = [cls for found in self.pool.map(_classify_paths, chunks) for cls in found]
        rows = [(*filed[:2], cls, *filed[3:]) for filed, cls in zip(todo, classes, strict=True) if cls is not None]
        self.db.executemany("INSERT OR REPLACE INTO classes VALUES (?, ?, ?, ?, ?, ?)", rows)
        self.unread.update(filed[3:] for filed, cls in zip(todo, classes, strict=True) if cls is None)
        self.classified += len(rows)


def _changes(filed: Iterator[_Filed], known: Iterator[tuple[str, str]]) -> tuple[list[str], list[_Filed]]:
    """The calls classified but no longer filed, and the messages filed (call, raw hash,
    path, list, year, month) but not classified from those bytes, from both in call
    order, read side by side: what is held is what changed, not every message."""
    gone: list[str] = []
    todo: list[_Filed] = []
    mine = next(known, None)
    for item in filed:
        call = item[0]
        while mine is not None and mine[0] < call:
            gone.append(mine[0])
            mine = next(known, None)
        if mine is not None and mine[0] == call:
            if mine[1] != item[1]:
                todo.append(item)
            mine = next(known, None)
        else:
            todo.append(item)
    while mine is not None:
        gone.append(mine[0])
        mine = next(known, None)
    return gone, todo


def _marks(values: list[str]) -> str:
    return ", ".join("?" for _ in values)
