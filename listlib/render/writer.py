"""Writes output files atomically, and only when their bytes change.

Every file goes to a temporary name in its final folder and is renamed into place,
so a reader (or an interrupted build) sees the old file or the new one, never half of
one. A file whose digest matches the last build's record, or whose bytes on disk are
already the same, is left alone: a build with no changes writes nothing. Output is
derived data, so files are not fsynced one by one (``listlib build --clean`` rebuilds
everything after a power loss).

The writer refuses paths that would leave the output folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
from collections.abc import Iterable
from pathlib import Path

from ..fsutil import naming, read_file, write_all

__all__ = ["TEMP_PREFIX", "Writer", "digest_of", "prune_empty_dirs", "remove_files", "sweep"]

TEMP_PREFIX = ".listlib-tmp-"


def digest_of(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _checked(root: Path, path: str) -> str:
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") or "\\" in p or "\0" in p for p in parts):
        raise ValueError(f"refusing to write outside the output folder: {path!r}")
    return f"{root}/{path}"


class Writer:
    """Puts files under one output root; counts what it wrote and left alone."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.written_paths: list[str] = []
        self.unchanged = 0
        self._names = itertools.count()
        self._dirs: set[str] = set()
        self._made: set[str] = set()
        """Folders this writer created: nothing was in them before, so nothing there is
        compared with what is on disk (a fresh build makes most files in such folders)."""

    def _folder(self, target: str) -> str:
        """Make sure ``target``'s folder exists; returns the folder."""
        folder = os.path.dirname(target)
        if folder not in self._dirs:
            if _make_dir(folder):
                self._made.add(folder)
            self._dirs.add(folder)
        return folder

    def _temp(self, target: str) -> str:
        return f"{self._folder(target)}/{TEMP_PREFIX}{os.getpid()}-{next(self._names)}"

    @staticmethod
    def _same_on_disk(target: str, data: bytes) -> bool:
        try:
            if os.stat(target).st_size != len(data):
                return False
            with open(target, "rb") as handle:
                return handle.read() == data
        except OSError:
            return False

    def put(self, path: str, data: bytes, old_digest: str | None) -> str:
        """Make ``path`` hold ``data``; returns its digest."""
        target = _checked(self.root, path)
        digest = digest_of(data)
        if (digest == old_digest and os.path.isfile(target)) or (
            self._folder(target) not in self._made and self._same_on_disk(target, data)
        ):
            self.unchanged += 1
            return digest
        self._replace(path, target, data)
        return digest

    def copy(self, path: str, source: Path | str, digest: str, old_digest: str | None) -> str:
        """Make ``path`` a copy of ``source``, whose content ``digest`` the caller knows."""
        target = _checked(self.root, path)
        if digest == old_digest and os.path.isfile(target):
            self.unchanged += 1
            return digest
        # Messages are small: reading them whole is cheaper than shutil.copyfile's checks and sendfile.
        self._replace(path, target, read_file(source))
        return digest

    def _replace(self, path: str, target: str, data: bytes) -> None:
        """Write ``data`` to a temporary file beside ``target``, then rename it into place."""
        temp = self._temp(target)
        try:
            with naming(target):
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
                try:
                    write_all(fd, data)
                finally:
                    os.close(fd)
            os.replace(temp, target)
        except BaseException:
            _unlink(temp)
            raise
        self.written_paths.append(path)


def _make_dir(folder: str) -> bool:
    """Create ``folder`` and its missing parents; whether this call created ``folder``."""
    try:
        os.mkdir(folder)
    except FileExistsError:
        return False
    except FileNotFoundError:
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        return _make_dir(folder)
    return True


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def remove_files(root: Path, paths: Iterable[str]) -> int:
    """Delete output files (missing ones are fine) and the folders they leave empty."""
    removed = 0
    folders: set[Path] = set()
    for path in paths:
        target = Path(_checked(root, path))
        try:
            target.unlink()
            removed += 1
        except FileNotFoundError:
            pass
        folders.add(target.parent)
    prune_empty_dirs(root, folders)
    return removed


def prune_empty_dirs(root: Path, folders: Iterable[Path]) -> None:
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        current = folder
        while current != root and root in current.parents:
            try:
                current.rmdir()
            except OSError:
                break
            current = current.parent


def sweep(root: Path, owned: set[str], folders: Iterable[str]) -> list[str]:
    """Remove temporary files anywhere, and files nobody owns inside ``folders`` (the
    folders listlib makes: one per list, ``mid``, ``static``); the paths removed.
    Used after an interrupted build, and after a build of every job (which owns every
    file that belongs, even when the build state was lost or is from an older version)."""
    removed: list[str] = []
    emptied: set[Path] = set()
    if not root.is_dir():
        return removed
    for dirpath, _dirs, names in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        top = rel_dir.split("/", 1)[0]
        for name in names:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if name.startswith(TEMP_PREFIX) or (top in folders and rel not in owned):
                Path(dirpath, name).unlink(missing_ok=True)
                emptied.add(Path(dirpath))
                if not name.startswith(TEMP_PREFIX):
                    removed.append(rel)
    prune_empty_dirs(root, emptied)
    return removed
