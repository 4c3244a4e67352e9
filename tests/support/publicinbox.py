"""Public-inbox v2 inboxes written the way public-inbox writes them, with real ``git``:
one bare repository per epoch (``git/N.git``), one commit per message holding a
single blob ``m`` at the root of its tree, and a deletion as a commit whose tree holds
only ``d`` (the deleted message). Commits go through ``git fast-import``, as
public-inbox's own ``PublicInbox::Import`` does; the author is the message's sender
and the subject its Subject. Used by tests/filers/test_publicinbox.py and
bench/publicinbox_bench.py; no network, no public-inbox installation.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Deleted", "add_to_epoch", "git", "rewrite_epoch", "write_inbox"]

BRANCH = "refs/heads/master"


@dataclass(frozen=True)
class Deleted:
    """A deletion: public-inbox's ``d`` commit holding the deleted message's bytes."""

    raw: bytes


Item = bytes | Deleted


def git(repo: Path, *args: str, data: bytes | None = None) -> str:
    """Run git on a bare repository; its standard output as text."""
    result = subprocess.run(
        ["git", f"--git-dir={repo}", *args], input=data, capture_output=True, check=True, env=_git_env()
    )
    return result.stdout.decode()


def _git_env() -> dict[str, str]:
    import os

    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "LC_ALL": "C",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.org",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.org",
    }


def _header(raw: bytes, name: bytes) -> bytes:
    match = re.search(rb"^" + name + rb":[ \t]*(.*)$", raw.split(b"\n\n", 1)[0], re.I | re.M)
    return match.group(1).strip() if match else b""


def _ident(raw: bytes) -> bytes:
    sender = _header(raw, b"From")
    address = re.search(rb"<([^<>\s]*)>", sender)
    email = address.group(1) if address else sender.replace(b"<", b"").replace(b">", b"")
    name = sender.split(b"<")[0].strip().strip(b'"') if address else b""
    return (name or b"unknown") + b" <" + email + b">"


def _stream(items: Sequence[Item], start_mark: int, parent: str | None, first_time: int) -> bytes:
    out: list[bytes] = []
    mark = start_mark
    for number, item in enumerate(items):
        raw = item.raw if isinstance(item, Deleted) else item
        name = "d" if isinstance(item, Deleted) else "m"
        blob = mark
        out.append(b"blob\nmark :%d\ndata %d\n" % (blob, len(raw)) + raw + b"\n")
        mark += 1
        subject = b"rm" if isinstance(item, Deleted) else (_header(raw, b"Subject") or b"(no subject)")
        when = b"%d +0000" % (first_time + number)
        ident = b"public-inbox <public-inbox@example.org>" if isinstance(item, Deleted) else _ident(raw)
        out.append(
            b"commit %s\nmark :%d\nauthor %s %s\ncommitter public-inbox <public-inbox@example.org> %s\n"
            % (BRANCH.encode(), mark, ident, when, when)
        )
        out.append(b"data %d\n%s\n" % (len(subject) + 1, subject))
        if number == 0 and parent is not None:
            out.append(b"from %s\n" % parent.encode())
        out.append(b"deleteall\n")  # public-inbox's clean_tree_v2: the tree holds one file, the new one
        out.append(b"M 100644 :%d %s\n\n" % (blob, name.encode()))
        mark += 1
    return b"".join(out)


def _init_epoch(repo: Path) -> None:
    subprocess.run(["git", "init", "--bare", "-q", str(repo)], check=True, env=_git_env())
    git(repo, "symbolic-ref", "HEAD", BRANCH)


def _import(repo: Path, stream: bytes) -> None:
    git(repo, "fast-import", "--quiet", "--force", data=stream + b"done\n")


def add_to_epoch(repo: Path, items: Sequence[Item], *, first_time: int = 1_700_000_000) -> None:
    """Append commits to an epoch (creating it when missing), as a later public-inbox run does."""
    if not repo.exists():
        _init_epoch(repo)
    head = git(repo, "rev-parse", "--verify", "-q", BRANCH + "^0") if _has_commits(repo) else ""
    parent = head.strip() or None
    _import(repo, _stream(items, 1, parent, first_time))


def _has_commits(repo: Path) -> bool:
    result = subprocess.run(
        ["git", f"--git-dir={repo}", "rev-parse", "--verify", "-q", BRANCH],
        capture_output=True,
        env=_git_env(),
    )
    return result.returncode == 0


def write_inbox(folder: Path, epochs: Sequence[Sequence[Item]], *, first_time: int = 1_700_000_000) -> Path:
    """A v2 inbox at ``folder``: ``git/0.git``, ``git/1.git``, ... with these items, plus the
    ``all.git`` (alternates to every epoch) and ``inbox.lock`` public-inbox keeps beside them."""
    (folder / "git").mkdir(parents=True, exist_ok=True)
    for number, items in enumerate(epochs):
        add_to_epoch(folder / "git" / f"{number}.git", items, first_time=first_time + 100_000 * number)
    all_git = folder / "all.git"
    if not all_git.exists():
        _init_epoch(all_git)
    alternates = "".join(f"../../git/{number}.git/objects\n" for number in range(len(epochs)))
    (all_git / "objects" / "info" / "alternates").write_text(alternates)
    (folder / "inbox.lock").touch()
    return folder


def rewrite_epoch(repo: Path, items: Sequence[Item], *, first_time: int = 1_600_000_000) -> None:
    """Replace an epoch's history by new commits (as ``public-inbox-purge`` rewrites it)."""
    stream = _stream(items, 1, None, first_time)
    _import(repo, b"reset %s\n" % BRANCH.encode() + stream)
