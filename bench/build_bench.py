#!/usr/bin/env python3
"""Build benchmark: a whole archive from mbox to website, then one new message, beside MHonArc.

For linux-raid (19,526 real messages) and a generated 50,000-message archive, in one run:

- ``listlib import --list bench`` + ``listlib build`` in a fresh site (real commands,
  subprocesses): wall time, CPU time (user + sys of the process tree, from ``os.wait4``),
  peak PSS of the tree (sampled every 20 ms, less often for big processes), files written (``build --json``);
- one reply to an old thread (~10% into the archive, dated now), imported and built:
  wall time of ``listlib import`` + ``listlib build``; then another reply to the same
  message added by one ``listlib import --build`` (the ratio to MHonArc's ``-add`` uses this one);
- MHonArc on the same inputs when installed: ``mhonarc -quiet -outdir DIR FILE.mbox``
  and ``mhonarc -add -quiet -outdir DIR < one.eml``.

    python3 bench/build_bench.py                          # both archives, sites beside the repo
    python3 bench/build_bench.py --site-dir /dev/shm      # CPU without the disk
    python3 bench/build_bench.py --only generated --messages 10000 --no-mhonarc

The generated archive is deterministic (fixed seed): ~5 years of threads of varied size
and depth with proper In-Reply-To/References, bodies with quoted text, patches, a few
attachments, HTML alternatives and non-ASCII subjects and names.
Targets (issue "Renderer"): listlib import+build <= 0.25 x MHonArc full; one added
message <= 0.05 x MHonArc -add at 50k; peak PSS <= 500 MB at 50k.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from email.header import Header
from email.utils import format_datetime
from itertools import accumulate
from pathlib import Path

from import_bench import precompile, watch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from listlib.store.core import Store  # noqa: E402

CORPORA = Path(os.environ.get("LISTLIB_SHARED", REPO.parent / "shared")) / "corpora"
LIST_ADDRESS = "bench@lists.example.org"
SITE_TOML = f"""[site]
title = "bench"
base_url = "https://bench.example.org/"
[lists.bench]
addresses = ["{LIST_ADDRESS}"]
"""


# -- measuring ----------------------------------------------------------------------


@dataclass
class Run:
    wall: float
    cpu: float
    peak: int
    out: str
    system: float = 0.0
    """The kernel's part of ``cpu``."""

    def __add__(self, other: Run) -> Run:
        peak = max(self.peak, other.peak)
        return Run(self.wall + other.wall, self.cpu + other.cpu, peak, "", self.system + other.system)


def measured(cmd: list[str], cwd: Path, stdin: Path | None = None) -> Run:
    """Run ``cmd``; wall time, user+sys CPU of it and the children it waited for, peak tree PSS."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # the checkout's listlib, whatever is installed
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with open(stdin or os.devnull, "rb") as source:
            started = time.monotonic()
            proc = subprocess.Popen(cmd, cwd=cwd, stdin=source, stdout=out, stderr=err, env=env)
            watched = watch(proc)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.read().decode(errors='replace')[-3000:]}")
        out_text = out.read().decode(errors="replace")
        return Run(watched.ended - started, watched.cpu, watched.peak, out_text, watched.system)


def listlib(*args: str | Path, cwd: Path, stdin: Path | None = None) -> Run:
    return measured([sys.executable, "-m", "listlib", *map(str, args)], cwd, stdin)


# -- the generated archive ---------------------------------------------------------------

_WORD_TEXT = (
    "the a of to and in is that for it with as was on be by this are not or at have from but an they "
    "which one you were all we when there can if more so what about would will up out into than them "
    "array disk disks stripe kernel patch build cache write read mirror rebuild sector superblock device "
    "driver bitmap journal resync degraded layout chunk metadata reshape spare member failure timeout "
    "queue request bio page memory lock thread state error warning log boot controller firmware "
    "performance latency throughput test tests result results option config version release branch "
    "upstream commit review change changes problem issue fix fixed works working broken think seems "
    "should could maybe probably actually really just still already again instead because however"
)
_NAME_TEXT = (
    "Ann Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Neil Olivia Peggy Rupert Sybil Trent Victor",
    "Adams Baker Clark Davis Evans Foster Green Hughes Irving Jones King Lewis Moore Nash Owens Parker Quinn",
)
WORDS = _WORD_TEXT.split()
TOPIC = WORDS[47:]
"""The technical words, for subjects and code."""


def _vocabulary(size: int = 30_000) -> tuple[list[str], list[float]]:
    """Body words with Zipf frequencies (weight 1/rank), as in real text: the 47 function
    words first, the technical words spread over ranks 48-600, then made-up words
    ("kestravo") for the long tail. Uniform draws from 128 words would put every word
    in over half the messages, which no real archive does (search postings would all
    be huge)."""
    rng = random.Random(1234)
    onsets, vowels, codas = (
        ["b", "br", "c", "d", "dr", "f", "g", "gr", "k", "l", "m", "n", "p", "pr", "s", "st", "t", "tr", "v", "z"],
        "aeiou",
        ["", "n", "s", "r", "l"],
    )
    tail: list[str] = []
    seen = set(WORDS)
    while len(tail) < size - len(WORDS):
        word = "".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas) for _ in range(rng.randint(2, 3)))
        if word not in seen:
            seen.add(word)
            tail.append(word)
    words: list[str] = WORDS[:47]
    topic = iter(TOPIC)
    for word in tail:
        if len(words) % 7 == 0 and len(words) < 47 + 7 * len(TOPIC):
            words.append(next(topic))  # the technical words at every 7th rank from 49 on
        words.append(word)
    words.extend(topic)  # none left unless the vocabulary is tiny
    weights = [1 / rank for rank in range(1, len(words) + 1)]
    return words, list(accumulate(weights))


VOCABULARY, _CUMULATIVE = _vocabulary()
FIRST, LAST = (names.split() for names in _NAME_TEXT)
NON_ASCII_PEOPLE = ["José Núñez", "Jürgen Müller", "Zoë Brontë", "Søren Ødegård", "田中 太郎", "Анна Петрова"]
NON_ASCII_SUBJECTS = [
    "Übersicht der Änderungen",
    "Problème avec la reconstruction",
    "RAID-массив не собирается",
    "ディスク交換の手順について",
    "Ερώτηση για το bitmap",  # noqa: RUF001 - Greek on purpose
]
START = datetime(2019, 1, 1, tzinfo=UTC)
SPAN = timedelta(days=5 * 365)


@dataclass
class Meta:
    n: int
    thread: int
    parent: int | None
    ancestors: list[int]
    date: datetime
    sender: int
    subject: str


def people(rng: random.Random) -> list[str]:
    names = [f"{rng.choice(FIRST)} {rng.choice(LAST)}" for _ in range(800)] + NON_ASCII_PEOPLE * 4
    return [
        f"{name}\t{re.sub(r'[^a-z]', '', name.lower()) or 'user'}{i}@example{i % 40}.org"
        for i, name in enumerate(names)
    ]


def subject(rng: random.Random, thread: int) -> str:
    if rng.random() < 0.012:
        return rng.choice(NON_ASCII_SUBJECTS) + f" ({thread})"
    words = " ".join(rng.choice(TOPIC) for _ in range(rng.randint(2, 7)))
    if rng.random() < 0.25:
        total = rng.randint(1, 12)
        return f"[PATCH v{rng.randint(1, 4)} {rng.randint(1, total)}/{total}] md/{rng.choice(TOPIC)}: {words}"
    return rng.choice(["", "Question: ", "[RFC] ", "Help: ", ""]) + words[0].upper() + words[1:]


def plan(count: int, seed: int) -> tuple[list[Meta], list[str]]:
    """Who wrote what when, answering whom: ``count`` messages sorted by date."""
    rng = random.Random(seed)
    senders = people(rng)
    metas: list[Meta] = []
    thread = 0
    while len(metas) < count:
        size = min(count - len(metas), 300, int(rng.paretovariate(1.1)))
        start = START + SPAN * rng.random()
        root = Meta(len(metas), thread, None, [], start, rng.randrange(len(senders)), subject(rng, thread))
        members = [root]
        for _ in range(size - 1):
            pick = rng.random()
            parent = members[-1] if pick < 0.5 else members[0] if pick < 0.7 else rng.choice(members)
            delay = (
                timedelta(days=rng.uniform(20, 90)) if rng.random() < 0.02 else timedelta(hours=rng.expovariate(1 / 8))
            )
            members.append(
                Meta(
                    root.n + len(members),
                    thread,
                    parent.n,
                    [*parent.ancestors, parent.n],
                    max(parent.date, members[-1].date) + delay,
                    rng.randrange(len(senders)),
                    "Re: " + root.subject,
                )
            )
        metas.extend(members)
        thread += 1
    metas.sort(key=lambda m: (m.date, m.n))
    return metas, senders


def message_id(n: int) -> str:
    return f"<gen.{n}.{n * 2654435761 % 2**32:08x}@bench.example.org>"


def own_text(n: int, seed: int) -> list[str]:
    """The paragraphs message ``n`` itself wrote (regenerated when quoted)."""
    rng = random.Random(seed * 1_000_003 + n)
    paragraphs = []
    for _ in range(rng.choice((1, 1, 2, 2, 3, 3, 4, 5, 8))):
        sentences = []
        for _ in range(rng.randint(1, 5)):
            words = rng.choices(VOCABULARY, cum_weights=_CUMULATIVE, k=rng.randint(5, 22))
            sentences.append(" ".join(words).capitalize() + rng.choice(".....?!"))
        paragraphs.append(textwrap.fill(" ".join(sentences), 72))
    return paragraphs


def patch(rng: random.Random) -> str:
    name = f"drivers/md/{rng.choice(TOPIC)}.c"
    lines = [f"diff --git a/{name} b/{name}", "index 0123abc..4567def 100644", f"--- a/{name}", f"+++ b/{name}"]
    for hunk in range(rng.randint(1, 6)):
        lines.append(f"@@ -{hunk * 80 + 10},12 +{hunk * 80 + 10},14 @@ static int md_{rng.choice(TOPIC)}(void)")
        for _ in range(rng.randint(6, 30)):
            code = "\t" * rng.randint(1, 3) + " ".join(rng.choice(TOPIC) for _ in range(rng.randint(2, 8))) + ";"
            lines.append(rng.choice("   +-") + code)
    return "\n".join(lines) + "\n"


def render(meta: Meta, metas_by_n: dict[int, Meta], senders: list[str], seed: int) -> bytes:
    rng = random.Random(seed * 7_000_003 + meta.n)
    name, address = senders[meta.sender].split("\t")
    parts = []
    if meta.parent is not None:
        parent = metas_by_n[meta.parent]
        parent_name = senders[parent.sender].split("\t")[0]
        quoted = own_text(parent.n, seed)[: rng.randint(1, 3)]
        if parent.parent is not None and rng.random() < 0.5:
            parts.append(f"On {format_datetime(parent.date)}, {parent_name} wrote:")
            parts.append("\n".join("> > " + line for line in own_text(parent.parent, seed)[0].splitlines()))
        else:
            parts.append(f"{parent_name} wrote:")
        parts.append("\n".join("> " + line if line else ">" for line in "\n\n".join(quoted).splitlines()))
    parts.extend(own_text(meta.n, seed))
    if meta.subject.startswith("[PATCH") and meta.parent is None:
        parts.append(f"Signed-off-by: {name} <{address}>\n---\n{patch(rng)}")
    if rng.random() < 0.05 and meta.parent is not None:
        parts.append("> " + own_text(meta.n + 1, seed)[0].splitlines()[0] + "\n\nAnd a later point, inline.")
    parts.append(f"-- \n{name}")
    text = "\n\n".join(parts) + "\n"
    ascii_only = text.isascii()
    headers = [
        f"From: {Header(name, 'utf-8').encode() if not name.isascii() else name} <{address}>",
        f"To: {LIST_ADDRESS}",
        f"Subject: {Header(meta.subject, 'utf-8').encode() if not meta.subject.isascii() else meta.subject}",
        f"Date: {format_datetime(meta.date.astimezone(timezone(timedelta(hours=meta.sender % 13 - 6))))}",
        f"Message-ID: {message_id(meta.n)}",
    ]
    if meta.parent is not None:
        headers.append(f"In-Reply-To: {message_id(meta.parent)}")
        headers.append("References: " + "\n ".join(message_id(a) for a in meta.ancestors[-12:]))
    received = format_datetime(meta.date + timedelta(seconds=rng.randint(1, 90)))
    host = f"mail{meta.sender % 50}.example{meta.sender % 40}.org"
    signature = base64.b64encode(rng.randbytes(256)).decode()
    headers += [
        "MIME-Version: 1.0",
        f"User-Agent: Bench/{meta.sender % 5}.0",
        f"Received: from {host} ({host} [192.0.2.{meta.sender % 250}])\n\tby lists.example.org (Postfix) with ESMTPS"
        f" id {rng.getrandbits(40):010X}\n\tfor <{LIST_ADDRESS}>; {received}",
        f"Received: by {host} with SMTP id {rng.getrandbits(64):016x}; {format_datetime(meta.date)}",
        "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=example.org; s=mail;\n\t"
        f"h=from:to:subject:date:message-id; bh={signature[:44]};\n\tb=" + "\n\t ".join(textwrap.wrap(signature, 70)),
        "List-Id: Bench list <bench.lists.example.org>",
        f"List-Unsubscribe: <mailto:{LIST_ADDRESS.replace('@', '-unsubscribe@')}>",
        "Precedence: list",
    ]
    charset = "us-ascii" if ascii_only else "utf-8"
    plain = (
        f"Content-Type: text/plain; charset={charset}\nContent-Transfer-Encoding: {'7bit' if ascii_only else '8bit'}\n"
    )
    kind = rng.random()
    if kind < 0.03:  # an HTML alternative
        html = "".join(f"<p>{p}</p>" for p in text.split("\n\n")).replace("\n", "<br>")
        boundary = f"alt-{meta.n}"
        body = (
            f"--{boundary}\n{plain}\n{text}\n--{boundary}\nContent-Type: text/html; charset={charset}\n\n"
            f"<html><body>{html}</body></html>\n--{boundary}--\n"
        )
        headers.append(f'Content-Type: multipart/alternative; boundary="{boundary}"')
    elif kind < 0.04:  # an attachment: a log as text or a binary dump
        boundary = f"mix-{meta.n}"
        if rng.random() < 0.5:
            log = "\n".join(
                f"[{i * 0.37:12.6f}] md/raid: {rng.choice(TOPIC)} event" for i in range(rng.randint(50, 600))
            )
            attached = (
                'Content-Type: text/plain; charset=us-ascii; name="dmesg.txt"\n'
                f'Content-Disposition: attachment; filename="dmesg.txt"\n\n{log}\n'
            )
        else:
            data = base64.encodebytes(rng.randbytes(rng.randint(2_000, 80_000))).decode()
            attached = (
                'Content-Type: application/octet-stream; name="superblock.bin"\nContent-Transfer-Encoding: base64\n'
                f'Content-Disposition: attachment; filename="superblock.bin"\n\n{data}'
            )
        body = f"--{boundary}\n{plain}\n{text}\n--{boundary}\n{attached}--{boundary}--\n"
        headers.append(f'Content-Type: multipart/mixed; boundary="{boundary}"')
    else:
        body = text
        headers += plain.strip().split("\n")
    return ("\n".join(headers) + "\n\n" + body).encode()


def generate(count: int, target: Path, seed: int = 20240517) -> Path:
    metas, senders = plan(count, seed)
    by_n = {m.n: m for m in metas}
    with open(target, "wb") as out:
        for meta in metas:
            raw = re.sub(rb"^(>*From )", rb">\1", render(meta, by_n, senders, seed), flags=re.M)
            separator = meta.date.strftime("%a %b %d %H:%M:%S %Y")
            out.write(f"From {senders[meta.sender].split(chr(9))[1]} {separator}\n".encode() + raw + b"\n")
    return target


# -- the benchmark ---------------------------------------------------------------------


def reply_to_old_thread(site: Path, target: Path) -> str:
    """Write a reply (dated now) to the message ~10% into the archive; its subject."""
    store = Store(site / "content").open()
    try:
        rows = sorted((r for r in store.index.iter_rows() if r.message_id), key=lambda r: (r.date, r.call))
    finally:
        store.close()
    old = rows[len(rows) // 10]
    now = format_datetime(datetime.now(UTC))
    target.write_bytes(
        (
            f"From: Late Replier <late@example.org>\nTo: {LIST_ADDRESS}\nSubject: Re: {old.subject}\n"
            f"Date: {now}\nMessage-ID: <bench-add-{time.time_ns()}@example.org>\n"
            f"In-Reply-To: <{old.message_id}>\nReferences: {old.refs} <{old.message_id}>\n"
            "MIME-Version: 1.0\nContent-Type: text/plain; charset=us-ascii\n\n"
            f"{old.from_name or old.from_addr} wrote:\n> (an old message)\n\nYears later: this still happens.\n"
        ).encode()
    )
    return f"{old.year}-{old.month:02d}"


def show(label: str, step: str, run: Run, extra: str = "") -> None:
    print(f"{label:<11} {step:<24} {run.wall:8.1f} {run.cpu:8.1f} {run.peak / 2**20:8.0f}  {extra}", flush=True)


def output_size(output: Path) -> str:
    """What the built site costs its host: files, symbolic links and folders, and bytes
    (apparent, and allocated on this file system)."""
    files = links = folders = apparent = allocated = 0
    for dirpath, dirnames, filenames in os.walk(output):
        folders += 1
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            found = os.lstat(os.path.join(dirpath, name))
            if os.path.islink(os.path.join(dirpath, name)):
                links += 1
            else:
                files += 1
            apparent += found.st_size
            allocated += found.st_blocks * 512
    return (
        f"output: {files} files, {links} symlinks, {folders} folders, "
        f"{apparent / 2**20:.0f} MB apparent, {allocated / 2**20:.0f} MB allocated"
    )


def bench(label: str, mbox: Path, scratch: Path, mhonarc: bool, message_id_paths: bool = False) -> dict[str, Run]:
    runs: dict[str, Run] = {}
    site = scratch / f"site-{label}"
    site.mkdir()
    toml = SITE_TOML
    if message_id_paths:
        toml = toml.replace("[site]\n", "[site]\nmessage_id_paths = true\n", 1)
    (site / "listlib.toml").write_text(toml)
    runs["import"] = imported = listlib("import", "--json", "--list", "bench", mbox, cwd=site)
    report = json.loads(imported.out)
    show(label, "listlib import", imported, f"{report['messages']} messages, {report['filed']} filed")
    runs["build"] = built = listlib("build", "--json", cwd=site)
    show(label, "listlib build", built, f"{json.loads(built.out)['written']} files written")
    print(f"{'':<11} {output_size(site / 'output')}", flush=True)
    runs["full"] = imported + built
    show(label, "listlib import+build", runs["full"])
    one = scratch / f"one-{label}.eml"
    month = reply_to_old_thread(site, one)
    add_import = listlib("import", "--json", "--list", "bench", one, cwd=site)
    add_build = listlib("build", "--json", cwd=site)
    runs["add-two"] = add_import + add_build
    show(
        label,
        "listlib add, 2 commands",
        runs["add-two"],
        f"reply to {month}: import {add_import.wall:.2f} s + build {add_build.wall:.2f} s, "
        f"{json.loads(add_build.out)['written']} files written",
    )
    # What compares with 'mhonarc -add': one command that files the message and updates the site.
    another = scratch / f"another-{label}.eml"
    reply_to_old_thread(site, another)
    runs["add"] = listlib("import", "--build", "--json", "--list", "bench", another, cwd=site)
    show(
        label,
        "listlib add one",
        runs["add"],
        f"import --build, another reply to {month}: {json.loads(runs['add'].out)['build']['written']} files written",
    )
    # Sites and MHonArc's folders stay until the run's end (its temporary folder): on ext4
    # without a journal, files made in the minutes after many were deleted cost the kernel
    # several times more (bench/churn_bench.py), which would be charged to the next step.
    if mhonarc:
        plain = mbox
        if mbox.suffix == ".gz":
            plain = scratch / f"{label}.mbox"
            with gzip.open(mbox) as source, open(plain, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
        out = (scratch / f"mhonarc-{label}").resolve()
        out.mkdir()
        runs["mhonarc"] = measured(["mhonarc", "-quiet", "-outdir", str(out), str(plain)], scratch)
        show(label, "mhonarc full", runs["mhonarc"], f"{sum(1 for _ in out.iterdir())} files")
        runs["mhonarc-add"] = measured(["mhonarc", "-add", "-quiet", "-outdir", str(out)], scratch, stdin=one)
        show(label, "mhonarc -add one", runs["mhonarc-add"])
        if plain != mbox:
            plain.unlink()
    return runs


def ratios(label: str, runs: dict[str, Run], targets: bool) -> Iterator[str]:
    if "mhonarc" in runs:
        full, add = runs["full"].wall / runs["mhonarc"].wall, runs["add"].wall / runs["mhonarc-add"].wall
        cpu = runs["full"].cpu / runs["mhonarc"].cpu
        yield f"{label}: listlib import+build / MHonArc full = {full:.3f} wall, {cpu:.3f} CPU (target <= 0.25 wall)"
        yield f"{label}: listlib add one / MHonArc -add = {add:.3f} wall" + (" (target <= 0.05)" if targets else "")
        two = runs["add-two"].wall / runs["mhonarc-add"].wall
        yield f"{label}: (listlib import, then listlib build) / MHonArc -add = {two:.3f} wall"
    peak = max(runs["full"].peak, runs["add-two"].peak, runs["add"].peak) / 2**20
    yield f"{label}: listlib peak PSS {peak:.0f} MB" + (" (target <= 500 MB)" if targets else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--site-dir",
        type=Path,
        default=REPO.parent,
        help="where sites and inputs go (e.g. /dev/shm); default: beside the repo",
    )
    parser.add_argument("--only", choices=("raid", "generated"), help="one archive only")
    parser.add_argument("--no-mhonarc", action="store_true", help="skip MHonArc even when installed")
    parser.add_argument("--messages", type=int, default=50_000, help="size of the generated archive (default 50000)")
    parser.add_argument(
        "--message-id-paths", action="store_true", help="build with [site] message_id_paths = true (b4's paths)"
    )
    args = parser.parse_args()
    mhonarc = not args.no_mhonarc and shutil.which("mhonarc") is not None
    if not args.no_mhonarc and not mhonarc:
        print("mhonarc: not installed (apt-get install mhonarc) - no comparison")
    raid = CORPORA / "mbox" / "linux-raid.mboxrd.gz"
    if args.only != "generated" and not raid.exists():
        sys.exit(f"{raid} not found; use --only generated")
    precompile()
    print(f"listlib import + build on {os.cpu_count()} cores, sites in {args.site_dir}")
    print(f"{'archive':<11} {'step':<24} {'wall s':>8} {'CPU s':>8} {'PSS MB':>8}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="build-bench-", dir=args.site_dir) as tmp:
        scratch = Path(tmp)
        if args.only != "generated":
            results["linux-raid"] = bench("linux-raid", raid, scratch, mhonarc, args.message_id_paths)
        if args.only != "raid":
            started = time.monotonic()
            mbox = generate(args.messages, scratch / "generated.mbox")
            size = mbox.stat().st_size
            print(
                f"(generated {args.messages} messages, {size / 2**20:.0f} MB, in {time.monotonic() - started:.0f} s; "
                "not measured)"
            )
            results[f"gen-{args.messages // 1000}k"] = bench(
                f"gen-{args.messages // 1000}k", mbox, scratch, mhonarc, args.message_id_paths
            )
    print()
    for label, runs in results.items():
        for line in ratios(label, runs, targets=label.startswith("gen")):
            print(line)


if __name__ == "__main__":
    main()
