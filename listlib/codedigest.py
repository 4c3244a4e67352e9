"""Digests of listlib's own code: what a build's keys and the search index's settings
hold so that pages made by other code are never kept (invariant 7).

A version number would have to be bumped by hand and says nothing of a patched
install; the digest is of the source bytes themselves. A digest covers the modules
named as roots and every listlib module they import, directly or not (found by reading
their ``from .x import`` lines, imports inside functions included: a module named once
too many costs a rebuild, one missed would serve stale pages), the package
``__init__`` files that importing them runs, the Python version (the ``email`` and
``html`` modules render too) and the versions of the third-party libraries named.
Computed once per process; forked workers inherit it. Reads files only; never imports
what it digests.

Reading, parsing and hashing some sixty modules and looking up library versions costs
~15 ms, paid by every command that builds: digests are kept across processes in a
per-user cache (``cache_file``), each under a snapshot of what it was made from: the
(inode, size, mtime, ctime) of every ``.py`` file under the package and of every
``sys.path`` entry (installing or removing a library changes its folder), with the
package's path, the interpreter and its version. A snapshot that differs in anything
is a miss, and a miss reads the files: their bytes stay what decides. A ctime cannot
be set back by a user; a snapshot is stored only when every time in it is
``SETTLED_NS`` old, so that an edit in the same clock tick as the last one (same
size, same inode) still shows as a new ctime. The snapshot is taken before the files
are read: an edit while reading makes the stored snapshot one that no longer occurs.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

__all__ = [
    "RENDER_ROOTS",
    "DigestCache",
    "SEARCH_ROOTS",
    "cache_file",
    "code_digest",
    "compute_digest",
    "modules_of",
    "render_digest",
    "search_digest",
    "snapshot",
]

PACKAGE = Path(__file__).resolve().parent

RENDER_ROOTS = ("render.pages", "plan.builders", "theme")
"""What makes a page's bytes: the renderer (display, URLs, downloads, ...), the job
builders that make its arguments, and the template loader."""
RENDER_LIBRARIES = ("jinja2", "markupsafe", "markdown", "nh3", "isal")
"""Libraries whose version changes bytes: templates, Markdown pages, sanitized HTML, and
the gzip streams of downloads (deterministic for one ISA-L version)."""

SEARCH_ROOTS = ("search.document", "search.analysis", "search.segment", "search.bulk", "search.merge", "search.codec")
"""What makes the search index's bytes (``search.update`` holds its own constants in its settings)."""
SEARCH_LIBRARIES = ("numpy", "nh3")

SETTLED_NS = 10 * 10**9
"""How old every time of a snapshot must be for it to be stored: far more than a clock
tick of any file system, and than the skew between a client's clock and a network
file server's."""
CACHE_ENTRIES = 32
"""Snapshots kept in the cache file, the most recently stored: one per install, Python
and ``sys.path`` (which begins with the folder ``python -m`` runs in), and test copies
of the package come and go."""
_CACHE_FORMAT = 1

_FROM = re.compile(r"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)", re.MULTILINE)


def _source(package: Path, module: str) -> tuple[bool, bytes] | None:
    """(whether it is a package, source bytes) of ``module`` (dotted, relative to
    ``package``), or None when it is not one of ours."""
    base = package.joinpath(*module.split(".")) if module else package
    for is_package, candidate in ((False, f"{base}.py"), (True, f"{base}/__init__.py")):
        try:
            with open(candidate, "rb") as handle:
                return is_package, handle.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            continue
    return None


@functools.cache
def _imports(module: str, source: str, is_package: bool) -> frozenset[str]:
    """The listlib modules ``source`` imports (relative imports only: listlib never
    imports itself by its absolute name)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    if module == "":
        package = []
    found: set[str] = set()
    for dots, name, names in _FROM.findall(source):
        base = package[: len(package) - (len(dots) - 1)] if len(dots) > 1 else package
        target = ".".join([*base, *([name] if name else [])])
        found.add(target)
        # ``from . import x`` and ``from .pkg import x`` may name modules.
        for item in names.strip("()").replace("\n", " ").split(","):
            word = item.strip().split(" ")[0]
            if word and word.isidentifier():
                found.add(f"{target}.{word}" if target else word)
    return frozenset(found)


def modules_of(roots: tuple[str, ...], package: Path = PACKAGE) -> dict[str, bytes]:
    """Every module ``roots`` need, with its source (packages on the way included),
    read from ``package`` (listlib's folder unless told)."""
    found: dict[str, bytes] = {}
    missing: set[str] = set()
    pending = [*roots, ""]
    while pending:
        module = pending.pop()
        if module in found or module in missing:
            continue
        source = _source(package, module)
        if source is None:
            missing.add(module)  # a name imported from a module, not a module
            continue
        is_package, data = source
        found[module] = data
        parts = module.split(".")
        pending.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        pending.extend(_imports(module, data.decode("utf-8"), is_package))
    return found


@functools.cache
def _version(distribution: str) -> str:
    import importlib.metadata  # ~10 ms to import: only when a digest is computed

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def compute_digest(roots: tuple[str, ...], libraries: tuple[str, ...] = (), package: Path = PACKAGE) -> str:
    """The digest of the code ``roots`` run, from the files themselves: their modules'
    bytes, Python's version and the versions of ``libraries``."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(sys.version.encode())
    for library in libraries:
        digest.update(f"\0{library}={_version(library)}".encode())
    for module, data in sorted(modules_of(roots, package).items()):
        digest.update(f"\0{module}\0".encode())
        digest.update(hashlib.blake2b(data, digest_size=16).digest())
    return digest.hexdigest()


# -- the cache across processes ------------------------------------------------------------


def cache_file() -> Path | None:
    """Where digests are kept across processes: ``$XDG_CACHE_HOME/listlib/``, by default
    ``~/.cache/listlib/`` (None without a home: nothing is kept)."""
    root = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(root):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        root = os.path.join(home, ".cache")
    return Path(root, "listlib", "code-digests.json")


def _stamp(path: str) -> list[int] | None:
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return [found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns]


def snapshot(package: Path = PACKAGE) -> dict[str, Any]:
    """What the digests of ``package`` are made from, as far as a stat tells: every
    ``.py`` name under it (files, or whatever bears the name) with its (inode, size,
    mtime, ctime), and every ``sys.path`` entry's (where the libraries' versions are
    found). ``__pycache__`` folders hold no source and are not looked into."""
    top = str(package)
    files: list[list[Any]] = []
    seen: set[tuple[int, int]] = set()
    pending = [top]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in listed:
            name = entry.name
            if name.endswith(".py"):
                try:
                    found = entry.stat()
                except OSError:
                    files.append([entry.path[len(top) :], None])
                else:
                    stamp = [found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns]
                    files.append([entry.path[len(top) :], stamp])
            if name != "__pycache__" and entry.is_dir():
                if entry.is_symlink():  # a linked folder is read as the modules in it: followed, once
                    try:
                        linked = entry.stat()
                    except OSError:
                        continue
                    if (linked.st_dev, linked.st_ino) in seen:
                        continue
                    seen.add((linked.st_dev, linked.st_ino))
                pending.append(entry.path)
    paths = [[entry, _stamp(entry or os.getcwd())] for entry in sys.path]
    return {
        "package": top,
        "python": [sys.executable, sys.version],
        "libraries": paths,
        "files": files,
    }


def _settled(taken: dict[str, Any], now: int) -> bool:
    """Whether every time in the snapshot is ``SETTLED_NS`` older than ``now``."""
    limit = now - SETTLED_NS
    stamps = [stamp for _path, stamp in taken["files"]] + [stamp for _path, stamp in taken["libraries"]]
    return all(stamp is None or (stamp[2] < limit and stamp[3] < limit) for stamp in stamps)


def _read_cache(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or data.get("format") != _CACHE_FORMAT or not isinstance(data.get("entries"), list):
        return []
    return [
        entry
        for entry in data["entries"]
        if isinstance(entry, dict) and isinstance(entry.get("snapshot"), str) and isinstance(entry.get("digests"), dict)
    ]


class DigestCache:
    """Digests of one package's code as kept in the cache file ``path``, under a
    snapshot taken once, before any file is read (``snapshot``)."""

    def __init__(self, package: Path, path: Path | None) -> None:
        self.package, self.path = package, path
        taken = snapshot(package)
        self.settled = _settled(taken, time.time_ns())
        self.key = hashlib.blake2b(json.dumps(taken).encode(), digest_size=16).hexdigest()
        self.known: dict[str, str] = {}
        if path is not None:
            for entry in _read_cache(path):
                if entry["snapshot"] == self.key:
                    self.known = {str(k): str(v) for k, v in entry["digests"].items()}
                    break

    def digest(self, roots: tuple[str, ...], libraries: tuple[str, ...] = ()) -> str:
        name = json.dumps([list(roots), list(libraries)])
        found = self.known.get(name)
        if found is None:
            found = self.known[name] = compute_digest(roots, libraries, self.package)
            self._store()
        return found

    def _store(self) -> None:
        """Keep what is known under this snapshot, most recent first (entries another
        process stored meanwhile are kept: the file is read again)."""
        if self.path is None or not self.settled:
            return
        entries = _read_cache(self.path)
        mine = next((entry for entry in entries if entry["snapshot"] == self.key), None)
        digests = {**(mine["digests"] if mine else {}), **self.known}
        others = [entry for entry in entries if entry["snapshot"] != self.key]
        kept = [{"snapshot": self.key, "digests": digests}, *others][:CACHE_ENTRIES]
        temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temp.write_text(json.dumps({"format": _CACHE_FORMAT, "entries": kept}, separators=(",", ":")))
            os.replace(temp, self.path)
        except OSError:  # no writable cache folder: digests are computed every time
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)


@functools.cache
def _cache() -> DigestCache:
    return DigestCache(PACKAGE, cache_file())


@functools.cache
def code_digest(roots: tuple[str, ...], libraries: tuple[str, ...] = ()) -> str:
    """A digest of the code ``roots`` run: their modules' bytes, Python's version and
    the versions of ``libraries`` (``compute_digest``, or the same kept in the cache
    for files that are, by their stat, the same)."""
    return _cache().digest(roots, libraries)


def render_digest() -> str:
    """The digest of the code that turns a job's arguments into files."""
    return code_digest(RENDER_ROOTS, RENDER_LIBRARIES)


def search_digest() -> str:
    """The digest of the code that turns messages into the search index's files."""
    return code_digest(SEARCH_ROOTS, SEARCH_LIBRARIES)
