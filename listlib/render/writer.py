"""Writes output files atomically, and only when their bytes change.

Every file goes to a temporary name in its final folder and is renamed into place,
so a reader (or an interrupted build) sees the old file or the new one, never half of
one (symbolic links too: ``Writer.link``). A file whose digest matches the last build's
record, or whose bytes on disk are already the same, is left alone: a build with no changes writes nothing. The size and
modification time of every file made or found the same are kept (``Writer.stats``) so
that the next build can tell, with a stat pass (``changed_files``), which files were
deleted or edited since: the folders first (``changed_folders``: a file made, deleted or
renamed over changes its folder's mtime), then the files of the folders that changed,
or of every folder when asked to verify (an edit in place changes no folder). Output is
derived data, so files are not fsynced one by one (``listlib build --clean`` rebuilds
everything after a power loss).

The writer refuses paths that would leave the output folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import socket
import stat
from collections.abc import Container, Iterable
from pathlib import Path

from ..fsutil import named, read_file, write_all

__all__ = [
    "TEMP_PREFIX",
    "Stat",
    "Writer",
    "changed_files",
    "changed_folders",
    "digest_of",
    "folder_marks",
    "folder_of",
    "folders_with_parents",
    "link_digest",
    "prune_empty_dirs",
    "remove_files",
    "sweep",
]

TEMP_PREFIX = ".listlib-tmp-"

Stat = tuple[int, int]
"""A file's (size, mtime_ns), as recorded when it was written or found the same."""


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
        self.stats: dict[str, Stat] = {}
        """Path -> its stat, for every file put or copied (the caller takes them)."""
        self._names = itertools.count()
        # Workers of a cluster build on several machines (or in containers) may share pids.
        self._host = socket.gethostname()
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
        return f"{self._folder(target)}/{TEMP_PREFIX}{self._host}-{os.getpid()}-{next(self._names)}"

    @staticmethod
    def _same_on_disk(target: str, data: bytes) -> Stat | None:
        """The stat of ``target`` when it holds ``data``."""
        try:
            found = os.lstat(target)
            if found.st_size != len(data) or not stat.S_ISREG(found.st_mode):
                return None
            with open(target, "rb") as handle:
                return (found.st_size, found.st_mtime_ns) if handle.read() == data else None
        except OSError:
            return None

    def _kept(self, path: str, found: Stat) -> None:
        self.unchanged += 1
        self.stats[path] = found

    def put(self, path: str, data: bytes, old_digest: str | None) -> str:
        """Make ``path`` hold ``data``; returns its digest."""
        target = _checked(self.root, path)
        digest = digest_of(data)
        found = _stat(target) if digest == old_digest else None
        if found is None and self._folder(target) not in self._made:
            found = self._same_on_disk(target, data)
        if found is not None:
            self._kept(path, found)
            return digest
        self._replace(path, target, data)
        return digest

    def copy(self, path: str, source: Path | str, digest: str, old_digest: str | None) -> str:
        """Make ``path`` a copy of ``source``, whose content ``digest`` the caller knows."""
        target = _checked(self.root, path)
        found = _stat(target) if digest == old_digest else None
        if found is not None:
            self._kept(path, found)
            return digest
        # Messages are small: reading them whole is cheaper than shutil.copyfile's checks and sendfile.
        data = read_file(source)
        # A copy another job made (a message whose thread changed its root) is left as it is.
        found = self._same_on_disk(target, data) if self._folder(target) not in self._made else None
        if found is not None:
            self._kept(path, found)
            return digest
        self._replace(path, target, data)
        return digest

    def link(self, path: str, to: str, old_digest: str | None) -> str:
        """Make ``path`` a symbolic link to ``to`` (a path relative to ``path``'s folder);
        returns its digest (``link_digest``). Made beside it and renamed into place, as files are."""
        target = _checked(self.root, path)
        digest = link_digest(to)
        found = _lstat(target)
        if found is not None and stat.S_ISLNK(found.st_mode) and (digest == old_digest or _readlink(target) == to):
            self._kept(path, (found.st_size, found.st_mtime_ns))
            return digest
        temp = self._temp(target)
        try:
            os.symlink(to, temp)
            made = os.lstat(temp)
            os.replace(temp, target)
        except OSError as exc:
            _unlink(temp)
            error = named(exc, target)
            if error is exc:
                raise
            raise error from exc
        self.written_paths.append(path)
        self.stats[path] = (made.st_size, made.st_mtime_ns)
        return digest

    def _replace(self, path: str, target: str, data: bytes) -> None:
        """Write ``data`` to a temporary file beside ``target``, then rename it into place."""
        temp = self._temp(target)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
            try:
                write_all(fd, data)
                # The renaming keeps the time of the last write.
                made = os.fstat(fd)
            finally:
                os.close(fd)
            os.replace(temp, target)
        except OSError as exc:
            # Not a context manager: this runs for every file of a build.
            _unlink(temp)
            error = named(exc, target)
            if error is exc:
                raise
            raise error from exc
        except BaseException:
            _unlink(temp)
            raise
        self.written_paths.append(path)
        self.stats[path] = (made.st_size, made.st_mtime_ns)


def _stat(target: str) -> Stat | None:
    """(size, mtime_ns) of a regular file, or None when there is none (or a link is there)."""
    found = _lstat(target)
    return (found.st_size, found.st_mtime_ns) if found is not None and stat.S_ISREG(found.st_mode) else None


def _lstat(target: str) -> os.stat_result | None:
    try:
        return os.lstat(target)
    except OSError:
        return None


def _readlink(target: str) -> str | None:
    try:
        return os.readlink(target)
    except OSError:
        return None


def link_digest(to: str) -> str:
    """The digest recorded for a symbolic link to ``to``: never that of a file's bytes
    (a file holding the text ``to`` is not the link)."""
    return digest_of(b"\0symlink\0" + to.encode("utf-8", "surrogateescape"))


def folder_of(path: str) -> str:
    """The folder of an output path ("" for output/ itself)."""
    return path.rpartition("/")[0]


def folders_with_parents(folders: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for folder in folders:
        while folder not in found:
            found.add(folder)
            if not folder:
                break
            folder = folder_of(folder)
    return found


def folder_marks(root: Path, folders: Iterable[str]) -> dict[str, int | None]:
    """Each folder's mtime_ns (None when it is not there). A folder's mtime changes when
    a file in it is created, deleted or renamed over: not when one is edited in place."""
    marks: dict[str, int | None] = {}
    try:
        # Relative to the root's descriptor: the kernel walks one name, not the whole path.
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return dict.fromkeys(folders)
    try:
        for folder in folders:
            try:
                marks[folder] = os.stat(folder or ".", dir_fd=top).st_mtime_ns
            except OSError:
                marks[folder] = None
    finally:
        os.close(top)
    return marks


def changed_folders(root: Path, marks: dict[str, int]) -> list[str]:
    """The folders whose mtime is not the recorded one (or which are gone)."""
    now = folder_marks(root, marks)
    return [folder for folder, mark in marks.items() if now[folder] != mark]


def changed_files(root: Path, recorded: Iterable[tuple[str, Stat | None]]) -> list[str]:
    """The recorded files that are missing under ``root`` or whose size or modification
    time is not the recorded one (deleted, edited, replaced); a file recorded without a
    stat counts as changed. One directory listing per folder and one stat per file:
    the kernel's stat is most of the cost (about 2 microseconds a file)."""
    by_folder: dict[str, list[tuple[str, str, Stat | None]]] = {}
    for path, recorded_stat in recorded:
        folder, _, name = path.rpartition("/")
        by_folder.setdefault(folder, []).append((path, name, recorded_stat))
    changed: list[str] = []
    for folder, files in by_folder.items():
        try:
            with os.scandir(f"{root}/{folder}" if folder else root) as entries:
                present = {entry.name: entry for entry in entries}
        except (FileNotFoundError, NotADirectoryError):
            changed.extend(path for path, _name, _stat in files)
            continue
        for path, name, recorded_stat in files:
            entry = present.get(name)
            if entry is None or recorded_stat is None:
                changed.append(path)
                continue
            try:
                found = entry.stat(follow_symlinks=False)
            except OSError:
                changed.append(path)
                continue
            if (found.st_size, found.st_mtime_ns) != recorded_stat or not _file_or_link(found.st_mode):
                changed.append(path)
    return changed


def _file_or_link(mode: int) -> bool:
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


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


def sweep(root: Path, owned: Container[str], folders: Iterable[str]) -> list[str]:
    """Remove temporary files anywhere, and files nobody owns inside ``folders`` (the
    folders listlib makes: one per list, ``mid``, ``static``); the paths removed.
    ``owned`` is asked path by path, a folder's files together (``BuildState.recorded``
    reads one folder at a time). Used after an interrupted build, and after a build of
    every job (which owns every file that belongs, even when the build state was lost or
    is from an older version)."""
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
