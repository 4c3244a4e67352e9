#!/usr/bin/env python3
"""Legacy redirect benchmark: what the redirects of an old archive add to a build of linux-raid.

In a fresh site beside the repository (real commands, subprocesses):

1. ``listlib import`` of linux-raid (19,526 messages) and a full ``listlib build``;
2. a ``[lists.bench.legacy]`` HyperKitty table (its URLs are computed from the Message-IDs:
   every message, every thread start, every month: about 25,000 old URLs) and
   ``listlib legacy import``;
3. ``listlib build --plan`` (the cost of planning every job, which the next step does),
   then ``listlib build``: the table changes the site fingerprint, so the build plans
   every job again and runs the legacy jobs only (a redirect page per old URL, and the
   three maps);
4. ``listlib build --clean`` with the table, against step 1's full build.

Prints wall and CPU time of each step and the ratios. Target (issue 26): the redirects of
20,000 old URLs add under 10% to a full build. Step 3 is the cost of the map step alone
(plus one full plan); step 4 against step 1 is the whole-build ratio, which needs a quiet
machine to mean anything.

    python3 bench/legacy_bench.py [--site-dir DIR] [--skip-clean]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from build_bench import CORPORA, SITE_TOML, Run, listlib

REPO = Path(__file__).resolve().parents[1]


def show(step: str, run: Run, extra: str = "") -> None:
    print(f"{step:<44} {run.wall:7.1f} s wall {run.cpu:7.1f} s CPU {extra}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site-dir", type=Path, default=REPO.parent, help="where to make the site")
    parser.add_argument("--skip-clean", action="store_true", help="skip step 4 (a second full build)")
    args = parser.parse_args()
    mbox = CORPORA / "mbox" / "linux-raid.mboxrd.gz"
    if not mbox.is_file():
        sys.exit(f"{mbox} is missing")
    scratch = Path(tempfile.mkdtemp(prefix="legacy-bench-", dir=args.site_dir))
    try:
        site = scratch / "site"
        site.mkdir()
        (site / "listlib.toml").write_text(SITE_TOML)
        show("import linux-raid", listlib("import", "-q", "--list", "bench", mbox, cwd=site))
        full = listlib("build", "--json", cwd=site)
        show("full build", full, f"{json.loads(full.out)['written']} files")
        with (site / "listlib.toml").open("a") as toml:
            toml.write('\n[lists.bench.legacy]\nkind = "hyperkitty"\npath = "hyperkitty"\n')
        mapped = listlib("legacy", "import", "--json", cwd=site)
        (report,) = json.loads(mapped.out)
        urls = report["messages"] + report["pages"]
        show("legacy import (HyperKitty)", mapped, f"{urls} old URLs")
        planned = listlib("build", "--plan", "--json", cwd=site)
        show("its plan alone (build --plan: every job)", planned)
        step = listlib("build", "--json", cwd=site)
        data = json.loads(step.out)
        show("build adding the redirects (map step)", step, f"{data['written']} files, {data['jobs_run']} jobs run")
        print(f"map step / full build: {step.wall / full.wall:.1%} wall, {step.cpu / full.cpu:.1%} CPU")
        print(
            f"map step without its plan / full build: {(step.wall - planned.wall) / full.wall:.1%} wall, "
            f"{(step.cpu - planned.cpu) / full.cpu:.1%} CPU"
        )
        if not args.skip_clean:
            clean = listlib("build", "--clean", "--json", cwd=site)
            show("full build with the redirects (--clean)", clean, f"{json.loads(clean.out)['written']} files")
            print(f"with / without: {clean.wall / full.wall:.3f} wall, {clean.cpu / full.cpu:.3f} CPU")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
