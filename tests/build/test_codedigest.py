"""Code digests kept across processes (``codedigest.DigestCache``) are never stale: any
edit of a module, even one that keeps its size, inode and mtime, makes the digest
computed again from the files; a snapshot taken as files are still being written is
not kept."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from listlib import codedigest
from listlib.codedigest import RENDER_LIBRARIES, RENDER_ROOTS, DigestCache, compute_digest, snapshot

PACKAGE = Path(__file__).resolve().parents[2] / "listlib"
SETTLED_NS = 50_000_000


@pytest.fixture
def code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the package whose files are settled (older than ``SETTLED_NS``)."""
    copy = tmp_path / "code" / "listlib"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(codedigest, "SETTLED_NS", SETTLED_NS)
    time.sleep(2 * SETTLED_NS / 1e9)
    return copy


def digest(code: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, *, computed: bool) -> str:
    """The render digest as a new process finds it; ``computed``: whether it must read
    the files (a miss) or must not (a hit)."""
    calls: list[Path] = []

    def counting(roots: tuple[str, ...], libraries: tuple[str, ...] = (), package: Path = PACKAGE) -> str:
        calls.append(package)
        return compute_digest(roots, libraries, package)

    with monkeypatch.context() as patch:
        patch.setattr(codedigest, "compute_digest", counting)
        found = DigestCache(code, cache).digest(RENDER_ROOTS, RENDER_LIBRARIES)
    assert calls == ([code] if computed else [])
    return found


def test_a_kept_digest_is_the_computed_one(code: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache" / "code-digests.json"
    first = digest(code, cache, monkeypatch, computed=True)
    assert first == compute_digest(RENDER_ROOTS, RENDER_LIBRARIES, code)
    assert digest(code, cache, monkeypatch, computed=False) == first
    # Another package (another path) has its own entry: both are kept.
    assert digest(PACKAGE, cache, monkeypatch, computed=True) == compute_digest(RENDER_ROOTS, RENDER_LIBRARIES)
    assert digest(code, cache, monkeypatch, computed=False) == first


def test_an_edit_keeping_size_inode_and_mtime_changes_the_digest(
    code: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "code-digests.json"
    first = digest(code, cache, monkeypatch, computed=True)
    page = code / "render" / "pages.py"
    before = page.stat()
    text = page.read_bytes()
    assert b"TOC_THRESHOLD = 6" in text
    with open(page, "r+b") as handle:  # in place: same inode, same size
        handle.write(text.replace(b"TOC_THRESHOLD = 6", b"TOC_THRESHOLD = 4", 1))
    os.utime(page, ns=(before.st_atime_ns, before.st_mtime_ns))  # the mtime put back; the ctime cannot be
    after = page.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    edited = digest(code, cache, monkeypatch, computed=True)
    assert edited != first
    assert edited == compute_digest(RENDER_ROOTS, RENDER_LIBRARIES, code)
    time.sleep(2 * SETTLED_NS / 1e9)
    assert digest(code, cache, monkeypatch, computed=True) == edited  # now settled: kept
    assert digest(code, cache, monkeypatch, computed=False) == edited


@pytest.mark.parametrize("change", ["new module", "removed module", "library folder"])
def test_files_added_or_removed_are_a_miss(
    code: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    cache = tmp_path / "code-digests.json"
    libraries = tmp_path / "site-packages"
    libraries.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(libraries)])
    time.sleep(2 * SETTLED_NS / 1e9)
    digest(code, cache, monkeypatch, computed=True)
    digest(code, cache, monkeypatch, computed=False)
    if change == "new module":
        (code / "display" / "extra.py").write_text("")
    elif change == "removed module":
        (code / "display" / "textbody.py").unlink()
    else:  # a library installed: its folder changes
        (libraries / "jinja2-99.0.dist-info").mkdir()
    time.sleep(2 * SETTLED_NS / 1e9)
    assert digest(code, cache, monkeypatch, computed=True) == compute_digest(RENDER_ROOTS, RENDER_LIBRARIES, code)


def test_a_snapshot_of_files_just_written_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = tmp_path / "code" / "listlib"
    shutil.copytree(PACKAGE, code, ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "code-digests.json"
    # Written a moment ago: another edit in the same clock tick would leave the same stat.
    assert digest(code, cache, monkeypatch, computed=True)
    assert not cache.exists()
    assert digest(code, cache, monkeypatch, computed=True)


def test_a_damaged_or_unwritable_cache_is_only_slower(
    code: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "code-digests.json"
    cache.write_text("{not json")
    first = digest(code, cache, monkeypatch, computed=True)
    assert json.loads(cache.read_text())["entries"]
    blocked = tmp_path / "file" / "code-digests.json"
    blocked.parent.write_text("a file where the folder should be")
    assert digest(code, blocked, monkeypatch, computed=True) == first
    assert digest(code, blocked, monkeypatch, computed=True) == first


def test_the_snapshot_covers_every_module_digested() -> None:
    files = {path for path, _stamp in snapshot()["files"]}
    for module in codedigest.modules_of(RENDER_ROOTS):
        name = "/" + module.replace(".", "/")
        assert f"{name}.py" in files or f"{name}/__init__.py" in files or (module == "" and "/__init__.py" in files)


def test_the_cache_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert codedigest.cache_file() == tmp_path / "listlib" / "code-digests.json"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert codedigest.cache_file() == tmp_path / "home" / ".cache" / "listlib" / "code-digests.json"
