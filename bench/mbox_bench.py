#!/usr/bin/env python3
"""mbox reader benchmark: one huge message, read with ``iter_mbox``.

    python3 bench/mbox_bench.py                  # 50, 100 and 200 MB messages
    python3 bench/mbox_bench.py --sizes 10 400   # other sizes, in MB

For each size, writes an mbox holding one message of that size (text lines with
an unescaped ``From what I can see`` body line now and then, which the reader
must look at and pass over) followed by one small message, then reads it in a
fresh subprocess with ``listlib.filers.mbox.iter_mbox`` from a plain file.
Prints seconds (wall and CPU) and the reader process's peak RSS (``ru_maxrss``,
interpreter included); the message itself is what the reader must hold at least
once. The mboxes are generated in a temporary folder (deterministic content) and
removed afterwards.

To compare with older code, run the same script from a copy of an older tree
(``git archive <commit> | tar -x -C /tmp/old``, copy this file into it): the script
imports listlib from the tree it sits in.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_LINE = b"The quick brown fox jumps over the lazy dog; pack my box with five dozen jugs.\n"
_FROM_LINE = b"From what I can see, this line is body text and not an mbox separator.\n"


def write_mbox(path: Path, megabytes: int) -> int:
    """An mbox of one ``megabytes`` MB message and a small one; returns the big message's size."""
    header = (
        b"From ann@example.org Mon Jan 12 10:00:00 2009\n"
        b"From: Ann Example <ann@example.org>\nSubject: big\nMessage-ID: <big@example.org>\n\n"
    )
    block = (_LINE * 99 + _FROM_LINE) * 10  # about 78 KB
    target = megabytes << 20
    size = 0
    with path.open("wb") as out:
        out.write(header)
        while size < target:
            out.write(block)
            size += len(block)
        out.write(b"\nFrom bob@example.org Mon Jan 12 11:00:00 2009\nFrom: bob@example.org\n\nsmall\n")
    return size


def measure(path: Path) -> dict[str, float]:
    """Read the mbox in this process (run as a child: --child PATH) and report."""
    sys.path.insert(0, str(REPO))
    from listlib.filers.mbox import iter_mbox

    started, started_cpu = time.perf_counter(), time.process_time()
    sizes = []
    with path.open("rb") as stream:
        for part in iter_mbox(stream):
            sizes.append(len(part.raw))
    wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"wall": wall, "cpu": cpu, "peak_mb": peak, "messages": len(sizes), "largest": max(sizes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=int, default=[50, 100, 200], help="message sizes in MB")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)))
        return
    print(f"listlib from {REPO}")
    print(f"{'message':>10}  {'wall':>8}  {'CPU':>8}  {'peak RSS':>9}  {'RSS/message':>11}")
    with tempfile.TemporaryDirectory(prefix="mbox-bench-") as tmp:
        for megabytes in args.sizes:
            path = Path(tmp) / f"{megabytes}.mbox"
            size = write_mbox(path, megabytes)
            result = subprocess.run(
                [sys.executable, __file__, "--child", str(path)], capture_output=True, text=True, check=True
            )
            got = json.loads(result.stdout)
            assert got["messages"] == 2, got
            print(
                f"{size / 2**20:>7.0f} MB  {got['wall']:>6.2f} s  {got['cpu']:>6.2f} s  {got['peak_mb']:>6.0f} MB"
                f"  {got['peak_mb'] * 2**20 / size:>10.2f}x"
            )
            path.unlink()


if __name__ == "__main__":
    main()
