"""The host's part of a build's CPU: what creating files costs the kernel right after
many files were deleted on the same file system, against creating them on a file
system left alone.

A build writes each output file to a temporary name and renames it into place (as
``render.writer`` does: create, write, rename). This does the same with plain files,
with no listlib code, so any difference between the rounds is the file system's::

    python3 bench/churn_bench.py --dir /work/churn --files 100000

Rounds: create a tree (``a``); delete it; create another at once (``b``: its inodes
are the ones just freed); create a third (``c``); delete both. Each round prints its
wall time and its user and system CPU (``getrusage``). On the development machine's
ext4 (``discard``, 2026-11-28), 100,000 files of 3.6 KB, system CPU: ``a`` 4.4 s, ``b``
27.5 s, ``c`` 2.9 s, user 0.9-2.3 s in each (an earlier run, begun minutes after other
deletions: ``a`` 15.2, ``b`` 32.2, ``c`` 5.1 s): the kernel's cost of a new file moved
6-10x with what was deleted before it. ext4 without a journal (as there:
``/proc/fs/jbd2`` lists nothing for it) checks, for each free inode it considers,
whether it was deleted in the last minutes, reading the inode, and skips those
(``find_inode_bit`` and ``recently_deleted`` in fs/ext4/ialloc.c); with a journal, the
usual case, it does not check. That is why two identical ``listlib build``
runs of ``scale_bench.py``, one after the other, differ by 60-70 s of system CPU at
50,000 messages while their user CPU stays within a few seconds (bench/README.md).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import time
from pathlib import Path

DATA = b"x" * 3600
"""About a thread page's size."""


def create(root: Path, files: int) -> str:
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    for folder_number in range(-(-files // 100)):
        folder = root / str(folder_number)
        folder.mkdir(parents=True)
        for i in range(min(100, files - 100 * folder_number)):
            temp = folder / f".tmp-{i}"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, DATA)
            os.close(fd)
            os.replace(temp, folder / f"{i}.html")
    after = resource.getrusage(resource.RUSAGE_SELF)
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    return f"wall {time.monotonic() - started:6.1f} s, user {user:5.1f} s, system {system:6.1f} s"


def remove(root: Path) -> str:
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    shutil.rmtree(root)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return f"wall {time.monotonic() - started:6.1f} s, system {after.ru_stime - before.ru_stime:6.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True, help="an empty or missing folder on the file system to test")
    parser.add_argument("--files", type=int, default=100_000, help="files a round creates (default 100000)")
    args = parser.parse_args()
    if args.dir.exists() and any(args.dir.iterdir()):
        parser.error(f"{args.dir} is not empty")
    try:
        print(f"create a: {create(args.dir / 'a', args.files)}", flush=True)
        print(f"remove a: {remove(args.dir / 'a')}", flush=True)
        print(f"create b: {create(args.dir / 'b', args.files)}  (right after a was removed)", flush=True)
        print(f"create c: {create(args.dir / 'c', args.files)}", flush=True)
        print(f"remove b: {remove(args.dir / 'b')}", flush=True)
        print(f"remove c: {remove(args.dir / 'c')}", flush=True)
    finally:
        shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
