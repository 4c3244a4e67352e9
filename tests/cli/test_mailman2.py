"""listlib as Mailman 2's external archiver (and any MTA's pipe): ``listlib import --build -``.

Mailman 2.1 is Python 2 and cannot be installed here, so the test plays its part
exactly as ``Mailman/Archiver/Archiver.py`` (2.1.x) does it, marked as such:
``ArchiveMail`` takes ``txt = str(msg)`` (Python 2's ``Message.__str__`` is
``as_string(unixfrom=True)``, whose generator mangles body lines starting with
``From `` to ``>From ``), and ``ExternalArchive`` runs ``PUBLIC_EXTERNAL_ARCHIVER %
{'listname': internal_name, 'hostname': host_name}`` with ``os.popen(cmd, 'w')``,
writes ``txt`` and logs a non-zero exit status. The listlib side is the real
command, building the real site.
"""

from __future__ import annotations

import email
import email.policy
import io
import shlex
import subprocess
import sys
from email.generator import BytesGenerator
from pathlib import Path

from ..support.helpers import make_message, stored_files, subprocess_env

LISTLIB = f"{shlex.quote(sys.executable)} -m listlib"


def mailman2_text(raw: bytes, unixfrom: str | None) -> bytes:
    """What Mailman 2.1 hands its external archiver for a post: ``str(msg)``."""
    msg = email.message_from_bytes(raw, policy=email.policy.compat32)
    if unixfrom is not None:
        msg.set_unixfrom(unixfrom)
    out = io.BytesIO()
    BytesGenerator(out, mangle_from_=True, maxheaderlen=0).flatten(msg, unixfrom=unixfrom is not None)
    return out.getvalue()


def external_archive(archiver: str, listname: str, txt: bytes) -> int:
    """Mailman 2.1's ``ExternalArchive``: the command with the list's names filled in,
    the post on its standard input; return the exit status Mailman would log."""
    cmd = archiver % {"listname": listname, "hostname": "lists.example.org"}
    extarch = subprocess.Popen(cmd, shell=True, stdin=subprocess.PIPE, env=subprocess_env())
    extarch.communicate(txt, timeout=300)
    return extarch.returncode


def test_mailman2_external_archiver_files_and_publishes_each_post(site: Path) -> None:
    archiver = f"cd {shlex.quote(str(site))} && {LISTLIB} --quiet import --build --list %(listname)s -"
    posts = [
        make_message("First post", body="Hello.\nFrom here on, all is well.\n", message_id="<mm1@example.org>"),
        make_message("Second post", message_id="<mm2@example.org>"),
        make_message("Third post", message_id="<mm3@example.org>"),
    ]
    # Mailman keeps the MTA's From_ line when there was one (Postfix pipe flag F), else none.
    unixfroms = ["From ann@example.org Thu Nov 26 18:00:00 2026", None, "From bob@example.org Thu Nov 26 18:05:00 2026"]
    for raw, unixfrom in zip(posts, unixfroms, strict=True):
        assert external_archive(archiver, "dev", mailman2_text(raw, unixfrom)) == 0
    stored = list(stored_files(site / "content").values())
    assert len(stored) == 3 and all(path.startswith("dev/") for path in stored_files(site / "content"))
    # With or without a From_ line, the post is stored as Mailman handed it over: the
    # From_ line is the mbox separator, not part of the message; Mailman's generator
    # wrote the body's "From here on" as ">From here on", and an mbox that is not
    # mboxrd keeps such lines as they are (see --mbox-format).
    assert sorted(stored) == sorted(mailman2_text(raw, None) for raw in posts)
    assert b"\n>From here on" in mailman2_text(posts[0], None)
    pages = b"".join(p.read_bytes() for p in (site / "output" / "dev").rglob("*.html"))
    for subject in (b"First post", b"Second post", b"Third post"):
        assert subject in pages, "each post is published by its own archiver run"
    # Mailman retries nothing: the same post again is a duplicate, not a second copy.
    assert external_archive(archiver, "dev", mailman2_text(posts[1], None)) == 0
    assert len(stored_files(site / "content")) == 3


def test_mailman2_external_archiver_routes_by_list_id_without_list(site: Path) -> None:
    archiver = f"cd {shlex.quote(str(site))} && {LISTLIB} --quiet import -"
    raw = make_message(
        "Routed",
        message_id="<routed@example.org>",
        to="someone@example.org",  # only the List-Id Mailman adds says which list
        extra={"List-Id": "Announcements <announce.lists.example.org>"},
    )
    assert external_archive(archiver, "whatever", mailman2_text(raw, None)) == 0
    (path,) = stored_files(site / "content")
    assert path.startswith("announce/")


def test_a_failing_archiver_run_gives_mailman_a_nonzero_status(tmp_path: Path) -> None:
    # No site there: Mailman logs "external archiver non-zero exit status: 1".
    archiver = f"cd {shlex.quote(str(tmp_path))} && {LISTLIB} --quiet import --build -"
    assert external_archive(archiver, "dev", mailman2_text(make_message(), None)) == 1
