"""Patch series on a real patch-review list (linux-raid): grouping and version links
checked against hand-verified expectations (``tests/data/series/raid-series-expected.json``:
Message-IDs only), and the trailers collected compared with what the real ``b4 am``
applies to the same threads (``raid-b4-threads.json``), run offline over each thread's mbox.

The messages are threaded by ``listlib.threader``, as the store's thread cache does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from listlib.filers import open_source
from listlib.message import parse_message
from listlib.patchsubject import parse_subject
from listlib.series import Posting, Series, group_series, link_versions, version_label
from listlib.threader import ThreadInput, thread_messages
from listlib.trailers import Reply, collect_reviews, reply_text

from .support.helpers import CORPORA, mboxrd

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

DATA = Path(__file__).parent / "data" / "series"
RAID = CORPORA / "mbox" / "linux-raid.mboxrd.gz"


@dataclass
class Corpus:
    raw: dict[str, bytes]
    facts: dict[str, tuple[str | None, str, str, str]]
    """call -> (Message-ID, subject, From name, From address)."""
    threads: dict[str, list[tuple[str, str | None]]]
    """thread id -> (call, parent) in thread order."""
    series: list[Series]
    links: dict[str, tuple[str | None, str | None]]

    def headed_by(self, message_id: str) -> Series:
        """The series headed by this Message-ID (of a message in the archive twice, the
        copy the patches answer)."""
        calls = {call for call, facts in self.facts.items() if facts[0] == message_id}
        return max((s for s in self.series if s.head in calls), key=lambda s: len(s.patches))

    def message_id(self, call: str | None) -> str | None:
        return None if call is None else self.facts[call][0]


@pytest.fixture(scope="module")
def corpus() -> Iterator[Corpus]:
    if not RAID.exists():
        pytest.skip(f"{RAID} is not present")
    raw: dict[str, bytes] = {}
    facts = {}
    inputs = []
    for number, mail in enumerate(open_source(RAID).iter_mail()):
        call = f"c{number:07d}"
        parsed = parse_message(mail.raw)
        raw[call] = mail.raw
        facts[call] = (parsed.message_id, parsed.subject, parsed.from_name, parsed.from_addr)
        inputs.append(
            ThreadInput(
                call,
                parsed.message_id,
                parsed.in_reply_to,
                parsed.references,
                parsed.subject,
                parsed.date or 0,
                parsed.raw_hash,
            )
        )
    dates = {i.call: i.date for i in inputs}
    threads = {}
    series: list[Series] = []
    for thread in thread_messages(inputs):
        threads[thread.id] = [(p.call, p.parent) for p in thread.messages]
        postings = [
            Posting(p.call, p.parent, facts[p.call][1], facts[p.call][3], dates[p.call], thread.id)
            for p in thread.messages
        ]
        series.extend(group_series(postings))
    yield Corpus(raw, facts, threads, series, link_versions(series))


def test_linux_raid_has_hundreds_of_series_and_linked_versions(corpus: Corpus) -> None:
    multi = [s for s in corpus.series if s.total > 1]
    linked = [head for head, (before, _after) in corpus.links.items() if before is not None]
    assert 1800 <= len(corpus.series) <= 2200 and 900 <= len(multi) <= 1100
    assert 450 <= len(linked) <= 600
    # every patch of every series is a patch by its subject, numbered within its size or 1
    for found in corpus.series:
        for number, call in found.patches:
            parsed = parse_subject(corpus.facts[call][1])
            assert parsed.is_patch and not parsed.reply and (parsed.number or 1) == number


EXPECTED = json.loads((DATA / "raid-series-expected.json").read_text())["series"]


@pytest.mark.parametrize("expected", EXPECTED, ids=[e["head"] for e in EXPECTED])
def test_hand_verified_series_group_and_link_as_expected(corpus: Corpus, expected: dict[str, object]) -> None:
    found = corpus.headed_by(str(expected["head"]))
    assert version_label(found) == expected["label"], expected["note"]
    assert (found.cover is not None, found.total) == (expected["cover"], expected["total"])
    assert [n for n, _c in found.patches] == expected["numbers"]
    assert [corpus.message_id(c) for _n, c in found.patches] == expected["patches"]
    before, after = corpus.links[found.head]
    assert (corpus.message_id(before), corpus.message_id(after)) == (expected["previous"], expected["next"])


# -- against b4 ---------------------------------------------------------------------------------


def _b4_missing() -> str | None:
    try:
        import b4  # noqa: F401
    except ImportError:
        return "b4 is not installed (pip install '.[test]')"
    return None


def b4_trailers(home: Path, mbox: Path, version: int) -> dict[int, set[tuple[str, str]]]:
    """Patch number -> the trailers ``b4 am`` adds to it (its ``+ Name: value`` lines),
    run offline with attestation off and nothing but loopback reachable."""
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "http_proxy": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "no_proxy": "127.0.0.1",
    }
    args = ["--offline-mode", "--no-stdin", "-c", "attestation-policy=off", "am", "-C", "-m", str(mbox)]
    args += ["-o", str(home / "out"), "-v", str(version)]
    command = [sys.executable, "-c", "import sys, b4.command; sys.exit(b4.command.cmd())", *args]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    added: dict[int, set[tuple[str, str]]] = {}
    number = None
    for line in result.stderr.splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line)
        patch = re.match(r"  [^\[\s]*\s*(\[.*)", line)
        if patch and not line.startswith("    "):
            number = parse_subject(patch.group(1)).number or 1
            added.setdefault(number, set())
        elif line.startswith("    + ") and number is not None:
            name, value = line[6:].split(":", 1)
            added[number].add((name.strip().lower(), value.strip()))
    return added


THREADS = json.loads((DATA / "raid-b4-threads.json").read_text())["threads"]


@pytest.mark.skipif(_b4_missing() is not None, reason=str(_b4_missing()))
@pytest.mark.parametrize("expected", THREADS, ids=[t["cover"] for t in THREADS])
def test_trailers_collected_match_what_b4_applies(corpus: Corpus, expected: dict[str, str], tmp_path: Path) -> None:
    series = corpus.headed_by(expected["cover"])
    messages = corpus.threads[series.thread]
    taken = {call for other in corpus.series if other.thread == series.thread for call in other.calls}
    replies = [
        Reply(call, parent, corpus.facts[call][2], corpus.facts[call][3], reply_text(corpus.raw[call]))
        for call, parent in messages
        if call not in taken
    ]
    reviews = collect_reviews(series, replies)
    mbox = tmp_path / "thread.mbox"
    mbox.write_bytes(mboxrd([corpus.raw[call] for call, _parent in messages]))
    added = b4_trailers(tmp_path, mbox, series.version)
    assert any(added.values()), "b4 added no trailer: pick a thread with reviews"
    for number, call in series.patches:
        patch_text = corpus.raw[call].decode("utf-8", "replace").lower()
        # b4 lists only the trailers a patch does not carry already
        ours = {
            (t.name.lower(), t.value)
            for t in reviews[call].trailers
            if f"{t.name.lower()}: {t.value.lower()}" not in patch_text
        }
        assert ours == added.get(number, set()), (expected["note"], number)
