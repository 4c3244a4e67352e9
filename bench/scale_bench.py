#!/usr/bin/env python3
"""Scale benchmark: a generated archive of many lists (default 1,000,000 messages over
300 lists), imported and built from scratch, with memory measured as the other benches do.

    python3 bench/scale_bench.py --site-dir /dev/shm                       # 1M messages, 300 lists
    python3 bench/scale_bench.py --messages 200000 --lists 60 --site-dir /tmp
    python3 bench/scale_bench.py --messages 20000 80000 --lists 1          # one list, two sizes

Each list's messages come from the generator of ``build_bench.py`` (threads of varied
size and depth with proper In-Reply-To/References, quotes, patches, a few attachments,
HTML parts, non-ASCII subjects and names; ~5 years), with its own seed, address and
Message-IDs. List sizes follow 1/rank (at 1M over 300 lists: the largest ~159,000
messages, the smallest ~530), as on a real host where a few lists hold most of the mail.
One mbox holds every list; ``listlib import`` routes each message by its address.

Reported for each size (real commands, subprocesses): ``listlib import`` and
``listlib build`` wall time, CPU time of the process tree, peak PSS of the tree
(``import_bench.watch``), messages per second, files written, output size. The target
(issue 28): 1M messages build with peak memory under 1 GB and the same msg/s as at 50k
(within 20%). Generating 1M messages takes some 20 minutes on one core before anything
is measured; sites are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import build_bench as bb

LIST_DOMAIN = "lists.example.org"


def list_sizes(messages: int, lists: int) -> list[int]:
    """Messages per list, by 1/rank, summing to ``messages`` (every list gets at least one)."""
    weights = [1 / rank for rank in range(1, lists + 1)]
    total = sum(weights)
    sizes = [max(1, int(messages * w / total)) for w in weights]
    sizes[0] += messages - sum(sizes)
    return sizes


def site_toml(lists: int) -> str:
    table = "".join(f'[lists.l{k}]\naddresses = ["l{k}@{LIST_DOMAIN}"]\n' for k in range(lists))
    return f'[site]\ntitle = "scale"\nbase_url = "https://scale.example.org/"\n{table}'


def generate(sizes: list[int], target: Path, seed: int = 20240517) -> Path:
    """One mbox of every list's messages (``sizes``: per list); list ``k`` is
    ``build_bench``'s generator with seed ``seed + k``, its address, List-Id and
    Message-ID domain made its own."""
    with open(target, "wb") as out:
        for k, size in enumerate(sizes):
            metas, senders = bb.plan(size, seed + k)
            by_n = {m.n: m for m in metas}
            own = [
                (bb.LIST_ADDRESS.encode(), f"l{k}@{LIST_DOMAIN}".encode()),
                (b"bench.lists.example.org", f"l{k}.{LIST_DOMAIN}".encode()),
                (b"@bench.example.org>", f"@l{k}.bench.example.org>".encode()),
            ]
            for meta in metas:
                raw = bb.render(meta, by_n, senders, seed + k)
                for old, new in own:
                    raw = raw.replace(old, new)
                raw = re.sub(rb"^(>*From )", rb">\1", raw, flags=re.M)
                separator = meta.date.strftime("%a %b %d %H:%M:%S %Y")
                out.write(f"From {senders[meta.sender].split(chr(9))[1]} {separator}\n".encode() + raw + b"\n")
    return target


def bench(messages: int, lists: int, scratch: Path, keep: bool = False) -> dict[str, object]:
    """Import and build one archive in ``scratch``. With ``keep``, the generated mbox and
    the imported site stay there, and a later run reuses them: the mbox is not generated
    again, and a site imported before is built again from scratch (``build --clean``)."""
    label = f"{messages // 1000}k/{lists}"
    site = scratch / f"site-{messages}-{lists}"
    imported_mark = site / ".scale-bench-imported"
    if keep and imported_mark.exists():
        print(f"{label:<11} (reusing the site imported in {site}; building it with --clean)", flush=True)
        imported = None
    else:
        mbox = scratch / f"scale-{messages}-{lists}.mbox"
        if not (keep and mbox.exists()):
            started = time.monotonic()
            partial = mbox.with_suffix(".partial")
            generate(list_sizes(messages, lists), partial).rename(mbox)
            print(
                f"(generated {messages} messages over {lists} lists, {mbox.stat().st_size / 2**20:.0f} MB, "
                f"in {time.monotonic() - started:.0f} s; not measured)",
                flush=True,
            )
        if site.exists():
            shutil.rmtree(site)
        site.mkdir()
        (site / "listlib.toml").write_text(site_toml(lists))
        imported = bb.listlib("import", "--json", mbox, cwd=site)
        if not keep:
            mbox.unlink()
        report = json.loads(imported.out)
        rate = report["filed"] / imported.wall
        bb.show(label, "listlib import", imported, f"{report['filed']} filed, {rate:.0f} msg/s")
        imported_mark.touch()
    built = bb.listlib("build", "--json", *(["--clean"] if imported is None else []), cwd=site)
    phases = json.loads(built.out)
    written = phases["written"]
    bb.show(label, "listlib build", built, f"{written} files written, {messages / built.wall:.0f} msg/s")
    search_seconds = phases["search"]["seconds"] if phases.get("search") else 0.0
    print(
        f"{'':<11} build's phases: threads, classes and plan {phases['plan_seconds']:.1f} s "
        f"(a full plan's shards overlap rendering), search index {search_seconds:.1f} s, "
        f"of {phases['seconds']:.1f} s; of the CPU, {built.system:.1f} s in the kernel",
        flush=True,
    )
    size = bb.output_size(site / "output")
    print(f"{'':<11} {size}", flush=True)
    # Not removed here: ext4 without a journal makes files created in the minutes after
    # many deletions several times dearer (bench/README.md), which would be charged to
    # the next size's build. The temporary folder goes at the end.
    return {
        "messages": messages,
        "lists": lists,
        "import_wall": imported.wall if imported else None,
        "import_cpu": imported.cpu if imported else None,
        "import_system_cpu": imported.system if imported else None,
        "import_peak_mb": imported.peak / 2**20 if imported else None,
        "build_wall": built.wall,
        "build_cpu": built.cpu,
        "build_system_cpu": built.system,
        "build_peak_mb": built.peak / 2**20,
        "build_msg_per_s": messages / built.wall,
        "written": written,
        "build_seconds": phases["seconds"],
        "plan_seconds": phases["plan_seconds"],
        "search_seconds": search_seconds,
        "output": size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, nargs="+", default=[1_000_000], help="archive sizes (default 1000000)")
    parser.add_argument("--lists", type=int, default=300, help="lists the messages are spread over (default 300)")
    parser.add_argument("--site-dir", type=Path, default=bb.REPO.parent, help="where sites and inputs go")
    parser.add_argument("--json", action="store_true", help="print the results as JSON at the end")
    parser.add_argument(
        "--keep",
        type=Path,
        help="keep the generated mbox and the imported site in this folder, and reuse them when there "
        "(a site imported before is built again with --clean)",
    )
    args = parser.parse_args()
    bb.precompile()
    print(f"listlib import + build, sites in {args.site_dir}")
    print(f"{'archive':<11} {'step':<24} {'wall s':>8} {'CPU s':>8} {'PSS MB':>8}")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        results = [bench(messages, args.lists, args.keep, keep=True) for messages in args.messages]
    else:
        with tempfile.TemporaryDirectory(prefix="scale-bench-", dir=args.site_dir) as tmp:
            results = [bench(messages, args.lists, Path(tmp)) for messages in args.messages]
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()
