"""Digests of listlib's own code: what a build's keys and the search index's settings
hold so that pages made by other code are never kept (invariant 7).

A version number would have to be bumped by hand and says nothing of a patched
install; the digest is of the source bytes themselves. A digest covers the modules
named as roots and every listlib module they import, directly or not (found by reading
their ``from .x import`` lines, imports inside functions included: a module named once
too many costs a rebuild, one missed would serve stale pages), the package
``__init__`` files that importing them runs, the Python version (the ``email`` and
``html`` modules render too) and the versions of the third-party libraries named.
Computed once per process from the files on disk; forked workers inherit it. Reads
files only; never imports what it digests.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import re
import sys
from pathlib import Path

__all__ = ["RENDER_ROOTS", "SEARCH_ROOTS", "code_digest", "modules_of", "render_digest", "search_digest"]

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

_FROM = re.compile(r"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)", re.MULTILINE)


@functools.cache
def _source(module: str) -> tuple[bool, bytes] | None:
    """(whether it is a package, source bytes) of ``module`` (dotted, relative to the
    package), or None when it is not one of ours."""
    base = PACKAGE.joinpath(*module.split(".")) if module else PACKAGE
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


def modules_of(roots: tuple[str, ...]) -> dict[str, bytes]:
    """Every listlib module ``roots`` need, with its source (packages on the way included)."""
    found: dict[str, bytes] = {}
    missing: set[str] = set()
    pending = [*roots, ""]
    while pending:
        module = pending.pop()
        if module in found or module in missing:
            continue
        source = _source(module)
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
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "-"


@functools.cache
def code_digest(roots: tuple[str, ...], libraries: tuple[str, ...] = ()) -> str:
    """A digest of the code ``roots`` run: their modules' bytes, Python's version and
    the versions of ``libraries``."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(sys.version.encode())
    for library in libraries:
        digest.update(f"\0{library}={_version(library)}".encode())
    for module, data in sorted(modules_of(roots).items()):
        digest.update(f"\0{module}\0".encode())
        digest.update(hashlib.blake2b(data, digest_size=16).digest())
    return digest.hexdigest()


def render_digest() -> str:
    """The digest of the code that turns a job's arguments into files."""
    return code_digest(RENDER_ROOTS, RENDER_LIBRARIES)


def search_digest() -> str:
    """The digest of the code that turns messages into the search index's files."""
    return code_digest(SEARCH_ROOTS, SEARCH_LIBRARIES)
