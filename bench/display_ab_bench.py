#!/usr/bin/env python3
"""Display cost of this tree against another (a base commit), in alternating runs.

    git worktree add --detach /tmp/base 5e9b42b
    python3 bench/display_ab_bench.py /tmp/base            # linux-raid, 3 rounds
    python3 bench/display_ab_bench.py /tmp/base --rounds 5 SOURCE...
    git worktree remove /tmp/base

Each round runs ``bench/display_bench.py`` of the base tree, then of this one (each
in its own process, importing its own ``listlib``), and reads the display CPU time
they print; alternating spreads the load of a shared machine over both. Prints
every run, the median CPU seconds of each tree and the change in percent.
Target (issue 30, diffs in bodies): under +10% on linux-raid.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_CPU_RE = re.compile(r"display CPU time\s+([\d.]+) s")


def display_cpu(tree: Path, sources: list[str]) -> float:
    """The display CPU seconds ``tree``'s display bench reports."""
    done = subprocess.run(
        [sys.executable, str(tree / "bench" / "display_bench.py"), *sources],
        capture_output=True,
        text=True,
        check=False,
    )
    found = _CPU_RE.search(done.stdout)
    if done.returncode or found is None:
        sys.exit(f"{tree}: the display bench failed:\n{done.stdout}{done.stderr}")
    return float(found[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", type=Path, help="the other tree (a git worktree of the base commit)")
    parser.add_argument("sources", nargs="*", help="mail sources (default: linux-raid)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not (args.base / "bench" / "display_bench.py").exists():
        sys.exit(f"{args.base} has no bench/display_bench.py")
    base: list[float] = []
    here: list[float] = []
    for round_ in range(1, args.rounds + 1):
        base.append(display_cpu(args.base, args.sources))
        here.append(display_cpu(REPO, args.sources))
        print(f"round {round_}: base {base[-1]:.2f} s   this tree {here[-1]:.2f} s", flush=True)
    old, new = statistics.median(base), statistics.median(here)
    print(f"median display CPU: base {old:.2f} s, this tree {new:.2f} s ({(new - old) / old:+.1%})")


if __name__ == "__main__":
    main()
