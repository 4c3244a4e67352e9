#!/usr/bin/env python3
"""Stewarding benchmark: hiding, removing and redacting mail of a built archive,
beside adding one message.

On the generated archive of ``build_bench.py`` (deterministic; 50,000 messages by
default), in a fresh site built once, with real commands (subprocesses), side by side
in one run:

- ``listlib import --build`` of one reply to an old thread (the cost of adding one
  message: the yardstick);
- ``listlib hide CALL --reason ... --build`` of one message in the middle of a long
  thread, then ``listlib unhide CALL --build`` (back to the same site);
- ``listlib remove CALL --reason ... --build`` of another such message (a take-down);
- ``listlib redact CALL --from-file FILE --reason ... --build`` of a third one (a line
  of its text replaced);
- ``listlib hide --query QUERY --reason ... --build`` of about 1,000 messages (the
  query is the word of the generated vocabulary whose hit count is closest to 1,000).

    python3 bench/steward_bench.py --site-dir /dev/shm
    python3 bench/steward_bench.py --messages 10000

Targets (issue "Stewardship"): hiding or removing one message, build included, costs
at most what adding one message does; hiding 1,000 by query in one command and one build < 30 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from build_bench import SITE_TOML, VOCABULARY, generate, listlib, reply_to_old_thread, show
from import_bench import precompile

from listlib.search.reader import Source, search  # build_bench put the checkout first on sys.path
from listlib.store.core import Store


def middle_of_a_long_thread(site: Path, offset: int = 0) -> str:
    """The call number of a message half-way into the archive (``offset`` messages
    further) with both a parent and a thread of some size around it (its References
    chain is at least three long)."""
    with Store(site / "content").open() as store:
        rows = sorted((r for r in store.index.iter_rows() if len(r.refs.split()) >= 3), key=lambda r: (r.date, r.call))
    return rows[len(rows) // 2 + offset].call


def edited_copy(site: Path, call: str, into: Path) -> None:
    """A copy of the message with the last line of its text replaced."""
    with Store(site / "content").open() as store:
        (row,) = store.index.rows_by_call([call])
    raw = (site / "content" / row.path).read_bytes()
    head, _, body = raw.partition(b"\n\n")
    lines = body.rstrip(b"\n").split(b"\n")
    lines[-1] = b"[this line was removed by the list admins]"
    into.write_bytes(head + b"\n\n" + b"\n".join(lines) + b"\n")


def query_of_about(site: Path, wanted: int) -> tuple[str, int]:
    """The word of the generated vocabulary whose search hits are closest to ``wanted``
    (every tenth word by rank, searched in this process)."""
    source = Source(site / "output" / "search")
    totals = {word: search(source, word, limit=1).total for word in VOCABULARY[:6000:10]}
    word = min(totals, key=lambda w: (abs(totals[w] - wanted), w))
    return word, totals[word]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=50_000, help="Size of the generated archive.")
    parser.add_argument("--site-dir", type=Path, help="Where to make the site (default: a temporary folder).")
    parser.add_argument("--bulk", type=int, default=1000, help="Messages to hide by one query.")
    args = parser.parse_args()
    precompile()  # as an installed copy is: a checkout run with PYTHONDONTWRITEBYTECODE compiles every command
    scratch = Path(tempfile.mkdtemp(prefix="steward-bench-", dir=args.site_dir))
    try:
        label = f"gen-{args.messages // 1000}k"
        mbox = generate(args.messages, scratch / "generated.mbox")
        site = scratch / "site"
        site.mkdir()
        (site / "listlib.toml").write_text(SITE_TOML)
        show(label, "listlib import", listlib("import", "--list", "bench", mbox, cwd=site))
        show(label, "listlib build", listlib("build", cwd=site))
        one = scratch / "one.eml"
        reply_to_old_thread(site, one)
        add = listlib("import", "--build", "--json", "--list", "bench", one, cwd=site)
        show(label, "add one (import --build)", add, f"{json.loads(add.out)['build']['written']} files written")
        call = middle_of_a_long_thread(site)
        hide = listlib("hide", call, "--reason", "bench", "--build", "--json", cwd=site)
        show(label, "hide one --build", hide, f"{json.loads(hide.out)['build']['written']} files written")
        unhide = listlib("unhide", call, "--build", "--json", cwd=site)
        show(label, "unhide one --build", unhide, f"{json.loads(unhide.out)['build']['written']} files written")
        removed = middle_of_a_long_thread(site, 1)
        remove = listlib("remove", removed, "--reason", "bench", "--build", "--json", cwd=site)
        show(label, "remove one --build", remove, f"{json.loads(remove.out)['build']['written']} files written")
        redacted = middle_of_a_long_thread(site, 2)
        copy = scratch / "edited.eml"
        edited_copy(site, redacted, copy)
        redact = listlib("redact", redacted, "--from-file", copy, "--reason", "bench", "--build", "--json", cwd=site)
        show(label, "redact one --build", redact, f"{json.loads(redact.out)['build']['written']} files written")
        word, hits = query_of_about(site, args.bulk)
        bulk = listlib("hide", "--query", word, "--reason", "bench", "--build", "--json", cwd=site)
        data = json.loads(bulk.out)
        show(
            label,
            "hide by query --build",
            bulk,
            f"{word!r}: {len(data['messages'])} hidden ({hits} hits), {data['build']['written']} files written",
        )
        print(f"{label}: hide one / add one = {hide.wall / add.wall:.2f} wall (target <= 1)")
        print(f"{label}: remove one / add one = {remove.wall / add.wall:.2f} wall (target <= 1)")
        print(f"{label}: redact one / add one = {redact.wall / add.wall:.2f} wall")
        print(f"{label}: hide {len(data['messages'])} by query, build included = {bulk.wall:.1f} s (target < 30 s)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
