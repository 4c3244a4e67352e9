"""``listlib import`` of public-inbox v2 inboxes, built with real git in temporary folders
(tests/support/publicinbox.py): epochs read oldest first from their history, only new
commits on the next run, epochs recognised by their root commit wherever they are,
rewritten histories read again, deletions reported or taken down, and nothing lost
or filed twice when the import is killed at any point."""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from listlib.errors import SourceError
from listlib.filers import inboxgit, open_source
from listlib.inboxlog import STATE_FOLDER, load_records
from listlib.store.core import Store
from listlib.store.index import REMOVED
from listlib.store.ledger import read_ledger

from ..support.helpers import SITE_TOML, make_message, run_listlib, subprocess_env
from ..support.publicinbox import Deleted, add_to_epoch, git, rewrite_epoch, write_inbox

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def message(number: int, body: str = "") -> bytes:
    return make_message(
        f"Message {number}",
        body or f"Body of message {number}.\n",
        message_id=f"<m{number}@example.org>",
        extra={"List-Id": "<dev.lists.example.org>"},
    )


def import_json(site: Path, *args: str | Path, check: bool = True) -> dict:
    result = run_listlib("import", "--json", *args, cwd=site, check=check)
    return json.loads(result.stdout)


def stored(content: Path) -> Counter[tuple[str, str]]:
    """Multiset of (list, sha256 of the bytes) over the store."""
    out: Counter[tuple[str, str]] = Counter()
    for path in content.rglob("*.eml"):
        rel = path.relative_to(content)
        if not rel.parts[0].startswith("."):
            out[(rel.parts[0], hashlib.sha256(path.read_bytes()).hexdigest())] += 1
    return out


def sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def test_an_inbox_is_read_epoch_by_epoch_oldest_first_with_the_bytes_of_each_blob(tmp_path: Path) -> None:
    odd = b"From: x@example.org\nSubject: odd\n\n>From the start\r\nlast line without newline"
    inbox = write_inbox(tmp_path / "inbox", [[message(1), message(2)], [odd, message(4)]])
    for path in (inbox, inbox / "all.git"):
        source = open_source(path)
        try:
            mails = list(source.iter_mail())
        finally:
            source.close()
        assert [m.raw for m in mails] == [message(1), message(2), odd, message(4)]
        assert mails[2].origin.startswith(f"{inbox / 'git' / '1.git'}#")
    one = open_source(inbox / "git" / "1.git")
    assert [m.raw for m in one.iter_mail()] == [odd, message(4)]
    one.close()


def test_a_repository_that_is_not_a_v2_epoch_is_reported(tmp_path: Path, site: Path) -> None:
    repo = tmp_path / "other.git"
    subprocess.run(["git", "init", "--bare", "-q", str(repo)], check=True)
    blob = git(repo, "hash-object", "-w", "--stdin", data=b"hello\n").strip()
    tree = git(repo, "mktree", data=f"100644 blob {blob}\tREADME\n".encode()).strip()
    commit = git(repo, "commit-tree", tree, "-m", "readme").strip()
    git(repo, "update-ref", "HEAD", commit)
    source = open_source(repo)
    with pytest.raises(SourceError, match="not a public-inbox v2 epoch"):
        list(source.iter_mail())
    source.close()
    result = run_listlib("import", repo, cwd=site)
    assert result.returncode == 1
    assert "not a public-inbox v2 epoch" in result.stderr and "Traceback" not in result.stderr


def _not_v2_epoch(repo: Path) -> None:
    """A bare repository whose one commit holds a README (no ``m``, no ``d``)."""
    subprocess.run(["git", "init", "--bare", "-q", str(repo)], check=True)
    blob = git(repo, "hash-object", "-w", "--stdin", data=b"hello\n").strip()
    tree = git(repo, "mktree", data=f"100644 blob {blob}\tREADME\n".encode()).strip()
    git(repo, "update-ref", "HEAD", git(repo, "commit-tree", tree, "-m", "readme").strip())


def test_an_epoch_that_cannot_be_read_is_reported_and_the_next_epoch_is_still_read(tmp_path: Path) -> None:
    inbox = write_inbox(tmp_path / "inbox", [[message(1)], [message(2), message(3)]])
    shutil.rmtree(inbox / "git" / "0.git")
    _not_v2_epoch(inbox / "git" / "0.git")
    unreadable: list[tuple[Path, str]] = []
    source = open_source(inbox)
    try:
        mails = list(source.iter_mail(on_error=lambda path, reason: unreadable.append((path, reason))))
    finally:
        source.close()
    assert [m.raw for m in mails] == [message(2), message(3)]
    ((path, reason),) = unreadable
    assert path == inbox / "git" / "0.git" and "not a public-inbox v2 epoch" in reason


def test_a_first_import_records_each_epoch_by_its_root_commit(tmp_path: Path, site: Path) -> None:
    inbox = write_inbox(tmp_path / "inbox", [[message(1), message(2)], [message(3), Deleted(message(3))]])
    import_json(site, inbox)
    records = load_records(site / "content" / STATE_FOLDER)
    epochs = [inbox / "git" / "0.git", inbox / "git" / "1.git"]
    assert set(records) == {git(epoch, "rev-list", "--max-parents=0", "HEAD").strip() for epoch in epochs}
    assert {record.last for record in records.values()} == {git(epoch, "rev-parse", "HEAD").strip() for epoch in epochs}


def _git_processes(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[bytes]]:
    """Every git process the blob reader starts, from now on."""
    started: list[subprocess.Popen[bytes]] = []
    popen = inboxgit._popen

    def recording(repo: Path, *args: str, **kwargs: object) -> subprocess.Popen[bytes]:
        process = popen(repo, *args, **kwargs)
        started.append(process)
        return process

    monkeypatch.setattr(inboxgit, "_popen", recording)
    return started


def test_blobs_are_read_ahead_of_the_import_no_further_than_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = [message(n, "A line of the message body.\n" * 50) for n in range(1, 41)]
    inbox = write_inbox(tmp_path / "inbox", [messages[:20], messages[20:]])
    monkeypatch.setattr(inboxgit, "_GROUP", 4)
    monkeypatch.setattr(inboxgit, "_AHEAD_BYTES", 1)  # one group ahead at most
    source = open_source(inbox)
    try:
        mails = source.iter_mail()
        first = next(mails)
        assert source.reader is not None
        buffer = source.reader.buffer
        deadline = time.monotonic() + 10
        while not buffer.items and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        assert len(buffer.items) == 1 and buffer.size <= 4 * max(len(m) for m in messages)
        assert [first.raw] + [m.raw for m in mails] == messages
    finally:
        source.close()


def test_closing_a_source_half_read_ends_its_git_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inbox = write_inbox(tmp_path / "inbox", [[message(n) for n in range(1, 300)]])
    monkeypatch.setattr(inboxgit, "_AHEAD_BYTES", 1)
    started = _git_processes(monkeypatch)
    source = open_source(inbox)
    mails = source.iter_mail()
    assert next(mails).raw == message(1)
    reader = source.reader
    assert reader is not None and reader.is_alive() and started
    source.close()
    assert not reader.is_alive()
    assert all(process.poll() is not None for process in started)


def test_the_second_import_files_only_the_messages_added_since(tmp_path: Path, site: Path) -> None:
    inbox = write_inbox(tmp_path / "inbox", [[message(n) for n in range(1, 6)], [message(n) for n in range(6, 9)]])
    first = import_json(site, inbox)
    assert (first["messages"], first["filed"], first["by_list"]) == (8, 8, {"dev": 8})
    add_to_epoch(inbox / "git" / "1.git", [message(n) for n in range(9, 12)], first_time=1_800_000_000)
    add_to_epoch(inbox / "git" / "2.git", [message(12)])
    second = import_json(site, inbox)
    assert (second["messages"], second["filed"], second["duplicates"]) == (4, 4, 0)
    assert import_json(site, inbox)["messages"] == 0
    assert sum(stored(site / "content").values()) == 12


def test_a_moved_inbox_and_a_recloned_epoch_are_recognised(tmp_path: Path, site: Path) -> None:
    inbox = write_inbox(tmp_path / "inbox", [[message(1), message(2)], [message(3)]])
    import_json(site, inbox)
    moved = tmp_path / "elsewhere" / "inbox"
    moved.parent.mkdir()
    inbox.rename(moved)
    clone = tmp_path / "clone.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(moved / "git" / "0.git"), str(clone)], check=True)
    assert import_json(site, moved)["messages"] == 0
    assert import_json(site, clone)["messages"] == 0
    add_to_epoch(clone, [message(4)])
    assert import_json(site, clone)["filed"] == 1


def test_a_rewritten_epoch_is_read_again_with_a_warning_and_nothing_filed_twice(tmp_path: Path, site: Path) -> None:
    inbox = write_inbox(tmp_path / "inbox", [[message(n) for n in range(1, 5)]])
    import_json(site, inbox)
    # public-inbox-purge rewrites the history without the purged message (here: 2).
    rewrite_epoch(inbox / "git" / "0.git", [message(1), message(3), message(4), message(5)], first_time=1_700_000_000)
    result = run_listlib("import", "--json", inbox, cwd=site, check=True)
    report = json.loads(result.stdout)
    assert "rewritten" in " ".join(report["warnings"])
    assert (report["messages"], report["filed"], report["duplicates"]) == (4, 1, 3)
    text = run_listlib("import", inbox, cwd=site, check=True)
    assert "warning" not in text.stderr and text.stdout.startswith("0 messages")


def test_deletions_upstream_are_reported_once_and_kept_without_the_option(tmp_path: Path, site: Path) -> None:
    inbox = write_inbox(tmp_path / "inbox", [[message(1), message(2), Deleted(message(1)), message(3)]])
    result = run_listlib("import", inbox, cwd=site, check=True)
    assert "3 filed" in result.stdout and "; 1 deleted upstream" in result.stdout
    assert "1 message deleted upstream in public-inbox: 1 stored here" in result.stdout
    assert "<m1@example.org>" in result.stderr
    assert sha(message(1)) in {digest for _slug, digest in stored(site / "content")}
    again = run_listlib("import", inbox, cwd=site, check=True)
    assert "deleted upstream" not in again.stdout + again.stderr
    assert all(not record.pending for record in load_records(site / "content" / STATE_FOLDER).values())


def test_apply_deletions_takes_the_message_down_as_listlib_remove_does(tmp_path: Path, site: Path) -> None:
    inbox = write_inbox(tmp_path / "inbox", [[message(1), message(2)]])
    import_json(site, inbox)
    add_to_epoch(inbox / "git" / "0.git", [Deleted(message(1)), message(3)])
    report = import_json(site, "--apply-deletions", inbox)
    assert report["deleted_upstream"][0]["message_id"] == "m1@example.org"
    assert report["upstream_deletions"]["removal"]["action"] == "remove"
    entries, _size = read_ledger(site / "content")
    (entry,) = [e for e in entries if e.action == "remove"]
    assert entry.reason == "deleted upstream in public-inbox"
    with Store(site / "content").open() as store:
        (row,) = [r for r in store.index.iter_rows() if r.state == REMOVED]
    assert row.call == entry.messages[0].call
    assert sha(message(1)) not in {digest for _slug, digest in stored(site / "content")}
    # A full read of the epoch elsewhere (a new site's records are empty here) refuses the copy.
    shutil.rmtree(site / "content" / STATE_FOLDER)
    again = import_json(site, "--apply-deletions", inbox)
    assert (again["removed"], again["filed"], again["upstream_deletions"]["already_removed"]) == (1, 0, 1)


def test_a_malformed_message_goes_to_failed_with_its_exact_bytes(tmp_path: Path, site: Path) -> None:
    broken = b"this is not a mail header\n\nat all\n"
    inbox = write_inbox(tmp_path / "inbox", [[message(1), broken]])
    report = import_json(site, inbox)
    assert (report["filed"], report["failed"]) == (1, 1)
    failed = list((site / "content" / "_failed").rglob("*.eml"))
    assert [p.read_bytes() for p in failed] == [broken]


def test_a_dry_run_records_nothing(tmp_path: Path, site: Path) -> None:
    inbox = write_inbox(tmp_path / "inbox", [[message(1), Deleted(message(1)), message(2)]])
    report = import_json(site, "--dry-run", "--apply-deletions", inbox)
    assert report["messages"] == 2 and len(report["deleted_upstream"]) == 1
    assert load_records(site / "content" / STATE_FOLDER) == {}
    assert import_json(site, inbox)["filed"] == 2


# -- kill -9 at any point, then a re-run: nothing lost, nothing twice ----------------------

CRASH_MESSAGES = 1500
"""Per epoch: two epochs make three store batches (1,024 messages each)."""


@pytest.fixture(scope="module")
def crash_inbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Counter[tuple[str, str]], float]:
    """A two-epoch inbox, the store one uninterrupted import makes of it, and how long that took."""
    root = tmp_path_factory.mktemp("crash-inbox")
    numbers = range(1, 2 * CRASH_MESSAGES + 1)
    messages = [message(n, f"Message {n}.\n" + "Some text of a list message.\n" * (n % 40)) for n in numbers]
    inbox = write_inbox(root / "inbox", [messages[:CRASH_MESSAGES], messages[CRASH_MESSAGES:]])
    site = _new_site(root / "reference")
    started = time.monotonic()
    import_json(site, inbox)
    elapsed = time.monotonic() - started
    expected = stored(site / "content")
    assert sum(expected.values()) == 2 * CRASH_MESSAGES
    return inbox, expected, elapsed


def _new_site(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "listlib.toml").write_text(SITE_TOML)
    return folder


def _assert_records_never_run_ahead(site: Path, inbox: Path) -> None:
    """Every commit an epoch's record says was filed has its message in the store."""
    have = {digest for _slug, digest in stored(site / "content")}
    for record in load_records(site / "content" / STATE_FOLDER).values():
        if record.last is None:
            continue
        repo = Path(record.path)
        for raw in blobs_up_to(repo, record.last):
            assert sha(raw) in have, f"{record.path} records {record.last[:12]}, not all filed"


def blobs_up_to(repo: Path, last: str) -> list[bytes]:
    """The ``m`` blob of every commit up to ``last`` (one ``git cat-file --batch``)."""
    names = "".join(f"{commit}:m\n" for commit in git(repo, "rev-list", last).split())
    out = subprocess.run(
        ["git", f"--git-dir={repo}", "cat-file", "--batch"], input=names.encode(), capture_output=True, check=True
    ).stdout
    blobs = []
    while out:
        header, _, out = out.partition(b"\n")
        size = int(header.split()[2])
        blobs.append(out[:size])
        out = out[size + 1 :]
    return blobs


def _assert_complete(site: Path, inbox: Path, expected: Counter[tuple[str, str]]) -> None:
    before = sum(stored(site / "content").values())
    rerun = import_json(site, inbox)
    assert rerun["failed"] == 0 and rerun["filed"] == 2 * CRASH_MESSAGES - before
    assert stored(site / "content") == expected, "a message was lost or filed twice"
    assert import_json(site, inbox)["messages"] == 0
    check = run_listlib("check", cwd=site)
    assert check.returncode == 0 and "clean" in check.stdout, check.stdout + check.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "point",
    [
        "temp-synced:1",
        "renamed:700",
        "marked:1",
        "inbox-recorded:1",
        "temp-synced:2",
        "renamed:2500",
        "inbox-recorded:2",
        "marked:3",
        "inbox-recorded:4",
    ],
)
def test_kill_at_a_point_then_rerun_loses_nothing_and_files_nothing_twice(
    point: str, crash_inbox: tuple[Path, Counter[tuple[str, str]], float], tmp_path: Path
) -> None:
    inbox, expected, _elapsed = crash_inbox
    site = _new_site(tmp_path / "site")
    crashed = run_listlib("import", inbox, cwd=site, env={"LISTLIB_CRASH_AT": point})
    assert crashed.returncode == -signal.SIGKILL, f"the crash point {point} was never reached"
    _assert_records_never_run_ahead(site, inbox)
    _assert_complete(site, inbox, expected)


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.2, 0.45, 0.7, 0.9])
def test_kill_at_a_moment_then_rerun_loses_nothing_and_files_nothing_twice(
    fraction: float, crash_inbox: tuple[Path, Counter[tuple[str, str]], float], tmp_path: Path
) -> None:
    inbox, expected, elapsed = crash_inbox
    site = _new_site(tmp_path / "site")
    process = subprocess.Popen(
        [sys.executable, "-m", "listlib", "import", str(inbox)],
        cwd=site,
        env=subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(elapsed * fraction)
    process.send_signal(signal.SIGKILL)
    process.wait()
    _assert_records_never_run_ahead(site, inbox)
    _assert_complete(site, inbox, expected)


@pytest.mark.parametrize("point", ["inbox-recorded:1", "ledger-appended:1", "ledger-applied:1", "upstream-removed:1"])
def test_a_killed_import_applies_each_deletion_once_on_the_rerun(point: str, tmp_path: Path, site: Path) -> None:
    inbox = write_inbox(tmp_path / "inbox", [[message(1), message(2)]])
    import_json(site, inbox)
    add_to_epoch(inbox / "git" / "0.git", [message(3), Deleted(message(2)), message(4)])
    crashed = run_listlib("import", "--apply-deletions", inbox, cwd=site, env={"LISTLIB_CRASH_AT": point})
    assert crashed.returncode == -signal.SIGKILL, f"the crash point {point} was never reached"
    rerun = import_json(site, "--apply-deletions", inbox)
    assert rerun["failed"] == 0 and len(rerun["deleted_upstream"]) == 1
    assert import_json(site, "--apply-deletions", inbox)["messages"] == 0
    entries, _size = read_ledger(site / "content")
    removed = [m.call for e in entries if e.action == "remove" for m in e.messages]
    assert len(removed) == 1
    digests = stored(site / "content")
    assert sha(message(2)) not in {d for _s, d in digests}
    assert {sha(message(n)) for n in (1, 3, 4)} <= {d for _s, d in digests} and sum(digests.values()) == 3
