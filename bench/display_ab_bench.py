#!/usr/bin/env python3
"""Display cost of this tree against another (a base commit), in alternating runs.

    git worktree add --detach /tmp/base 5e9b42b
    python3 bench/display_ab_bench.py /tmp/base            # linux-raid, 3 rounds
    python3 bench/display_ab_bench.py /tmp/base --rounds 5 SOURCE...
    git worktree remove /tmp/base

    python3 bench/display_ab_bench.py /tmp/base --instructions        # callgrind, first 4,000
    python3 bench/display_ab_bench.py /tmp/base --instructions --messages 1000 SOURCE

Each round runs ``bench/display_bench.py`` of the base tree, then of this one (each
in its own process, importing its own ``listlib``), and reads the display CPU time
they print; alternating spreads the load of a shared machine over both. Prints
every run, the median CPU seconds of each tree and the change in percent.
Target (issue 30, diffs in bodies): under +10% on linux-raid.

``--instructions`` counts instructions instead, which a loaded machine does not
disturb: the first ``--messages`` messages (default 4,000) are read once (with this
tree's filers) into a temporary file; then, for each tree, ``valgrind --tool=callgrind``
runs the real Python binary twice over them: one message displayed (the warm-up:
imports, the translation table, regexes compiled on first use), then the same and
every message displayed. The difference is the display step's own instructions,
without start-up and one-time costs. About 70x slower than a plain run: 4,000
linux-raid messages take about two minutes per tree on the development machine.
"""

from __future__ import annotations

import argparse
import itertools
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_CPU_RE = re.compile(r"display CPU time\s+([\d.]+) s")
_COLLECTED_RE = re.compile(r"Collected : (\d+)")
CORPORA = Path(os.environ.get("LISTLIB_SHARED", REPO.parent / "shared")) / "corpora"

# Run under callgrind with a tree's listlib first on sys.path: display the first
# message (warm-up), then, when asked, every message.
_DRIVER = """
import pickle, sys
sys.path.insert(0, sys.argv[1])
from listlib.display import display_message
with open(sys.argv[2], "rb") as file:
    raws = pickle.load(file)
display_message(raws[0])
if sys.argv[3] == "all":
    for raw in raws:
        display_message(raw)
"""


def display_cpu(tree: Path, sources: list[str]) -> float:
    """The display CPU seconds ``tree``'s display bench reports."""
    command = [sys.executable, str(tree / "bench" / "display_bench.py"), *sources]
    return float(_reported(command, _CPU_RE, f"{tree}: the display bench", stderr=False))


def _reported(command: list[str], pattern: re.Pattern[str], what: str, *, stderr: bool) -> str:
    """Run ``command``; the first group of ``pattern`` in its stdout (or stderr), or exit
    saying that ``what`` failed."""
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = pattern.search(done.stderr if stderr else done.stdout)
    if done.returncode or found is None:
        sys.exit(f"{what} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return found[1]


def write_messages(sources: list[str], count: int, folder: Path) -> Path:
    """The first ``count`` raw messages of ``sources`` (this tree's filers), pickled."""
    sys.path.insert(0, str(REPO))
    from listlib.filers import open_source

    paths = [Path(source) for source in sources] or [CORPORA / "mbox" / "linux-raid.mboxrd.gz"]
    mails = itertools.chain.from_iterable(open_source(path).iter_mail() for path in paths)
    raws = [mail.raw for mail in itertools.islice(mails, count)]
    if not raws:
        sys.exit("no messages to display")
    target = folder / "messages.pickle"
    target.write_bytes(pickle.dumps(raws))
    return target


def instructions(tree: Path, messages: Path, which: str) -> int:
    """The instructions callgrind counts for the driver over ``tree`` (``which``: "one"
    or "all")."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("--instructions needs valgrind (apt-get install valgrind)")
    python = os.path.realpath(sys.executable)  # not a pyenv shim: callgrind follows no exec chain
    command = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", python, "-c", _DRIVER]
    command += [str(tree), str(messages), which]
    return int(_reported(command, _COLLECTED_RE, f"{tree}: the callgrind run", stderr=True))


def compare_instructions(base: Path, sources: list[str], count: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        messages = write_messages(sources, count, Path(folder))
        shown = len(pickle.loads(messages.read_bytes()))
        net = {}
        for name, tree in (("base", base), ("this tree", REPO)):
            one, every = instructions(tree, messages, "one"), instructions(tree, messages, "all")
            net[name] = every - one
            print(
                f"{name:10s} {net[name] / 1e6:10,.0f} M instructions for {shown:,} messages "
                f"({net[name] / shown:,.0f} per message)",
                flush=True,
            )
    old, new = net["base"], net["this tree"]
    print(f"display instructions: base {old / 1e6:,.0f} M, this tree {new / 1e6:,.0f} M ({(new - old) / old:+.1%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", type=Path, help="the other tree (a git worktree of the base commit)")
    parser.add_argument("sources", nargs="*", help="mail sources (default: linux-raid)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--instructions", action="store_true", help="count instructions (callgrind), not CPU time")
    parser.add_argument("--messages", type=int, default=4000, help="with --instructions: the first N messages")
    args = parser.parse_args()
    if args.instructions:
        if not (args.base / "listlib" / "display").is_dir():
            sys.exit(f"{args.base} has no listlib/display")
        compare_instructions(args.base, args.sources, args.messages)
        return
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
