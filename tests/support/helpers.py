"""Plain helpers the tests share (the fixtures built on them are in tests/conftest.py):
message and mbox builders, a site's listlib.toml, the CLI as a subprocess, the stored
files, POP3 accounts on the test Dovecot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path

import pytest

from .dovecot import DovecotServer, Mailbox, dovecot_problem, imap_problem

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("LISTLIB_SHARED", REPO.parent / "shared"))
CORPORA = SHARED / "corpora"

SITE_TOML = """\
[site]
search_from_disk = true
title = "Test archive"
base_url = "https://lists.example.org/"

[lists.dev]
name = "dev"
addresses = ["dev@lists.example.org"]
list_ids = ["dev.lists.example.org"]

[lists.announce]
addresses = ["announce@lists.example.org"]
list_ids = ["announce.lists.example.org"]
"""


def make_message(
    subject: str = "Hello",
    body: str = "Hello, world.\n",
    *,
    message_id: str | None = "<m1@example.org>",
    sender: str = "Ann Example <ann@example.org>",
    to: str = "dev@lists.example.org",
    date: datetime | str | None = datetime(2024, 5, 17, 10, 30, tzinfo=UTC),
    extra: dict[str, str] | None = None,
) -> bytes:
    """A small well-formed message as bytes (LF line endings)."""
    lines = [f"From: {sender}", f"To: {to}", f"Subject: {subject}"]
    if date is not None:
        lines.append(f"Date: {date if isinstance(date, str) else format_datetime(date)}")
    if message_id is not None:
        lines.append(f"Message-ID: {message_id}")
    for name, value in (extra or {}).items():
        lines.append(f"{name}: {value}")
    return ("\n".join(lines) + "\n\n" + body).encode("utf-8")


def mboxrd(messages: list[bytes], sender: bytes = b"mboxrd@z", date: bytes = b"Thu Jan  1 00:00:00 1970") -> bytes:
    """Messages written as an mboxrd file."""
    import re

    out = []
    for raw in messages:
        quoted = re.sub(rb"^(>*From )", rb">\1", raw, flags=re.M)
        if not quoted.endswith(b"\n"):
            quoted += b"\n"
        out.append(b"From " + sender + b" " + date + b"\n" + quoted + b"\n")
    return b"".join(out)


def early_pipermail(messages: list[bytes], dates: list[str]) -> bytes:
    """Messages as the Pipermail of Mailman 2's early years (1999-2001) wrote its monthly
    ``.txt`` files: mboxo (body ``From `` lines unescaped) with RFC 2822 dates in the
    separators, e.g. ``From ann@example.org Thu, 1 Jul 1999 06:06:56 -0400 (EDT)``."""
    out = []
    for raw, date in zip(messages, dates, strict=True):
        out.append(b"From ann@example.org " + date.encode() + b"\n" + raw + b"\n")
    return b"".join(out)


def subprocess_env() -> dict[str, str]:
    """The environment for listlib subprocesses: always the code under test, whatever is installed."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{path}" if path else str(REPO)}


def run_listlib(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the real ``listlib`` command in a subprocess."""
    full_env = {**subprocess_env(), **(env or {})}
    result = subprocess.run(
        [sys.executable, "-m", "listlib", *map(str, args)],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"listlib {args} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def stored_files(content: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every stored message."""
    return {
        str(p.relative_to(content)): p.read_bytes()
        for p in sorted(content.rglob("*.eml"))
        if not any(part.startswith(".") for part in p.relative_to(content).parts)
    }


def new_dovecot() -> DovecotServer:
    """A Dovecot server not started yet, or a skip saying what is not installed."""
    problem = dovecot_problem()
    if problem is not None:
        pytest.skip(problem)
    return DovecotServer()


def new_imap_dovecot(imap_capability: str | None = None) -> DovecotServer:
    """A Dovecot server that also serves IMAP, not started yet, or a skip saying what is not installed."""
    problem = imap_problem()
    if problem is not None:
        pytest.skip(problem)
    return DovecotServer(imap_capability=imap_capability)


def imap_account_toml(mailbox: Mailbox, name: str = "archive", *, security: str = "ssl", **options: object) -> str:
    """An [imap.<name>] table for ``mailbox``: IMAPS with the test CA unless told otherwise."""
    server = mailbox.server
    values: dict[str, object] = {
        "host": "127.0.0.1",
        "port": server.imaps_port if security == "ssl" else server.imap_port,
        "security": security,
        "user": mailbox.user,
        "password": mailbox.password,
        "ca_file": str(server.ca_file),
    }
    values.update(options)
    lines = [f"\n[imap.{name}]"]
    for key, value in values.items():
        if value is None:
            continue
        lines.append(f"{key} = {json.dumps(str(value) if isinstance(value, Path) else value)}")
    return "\n".join(lines) + "\n"


def add_imap_account(site: Path, mailbox: Mailbox, name: str = "archive", **options: object) -> None:
    """Append an IMAP account for ``mailbox`` to the site's listlib.toml."""
    with (site / "listlib.toml").open("a") as f:
        f.write(imap_account_toml(mailbox, name, **options))


def pop3_account_toml(mailbox: Mailbox, name: str = "archive", *, security: str = "ssl", **options: object) -> str:
    """A [pop3.<name>] table for ``mailbox``: POP3S with the test CA unless told otherwise."""
    server = mailbox.server
    values: dict[str, object] = {
        "host": "127.0.0.1",
        "port": server.ssl_port if security == "ssl" else server.port,
        "security": security,
        "user": mailbox.user,
        "password": mailbox.password,
        "ca_file": str(server.ca_file),
    }
    values.update(options)
    lines = [f"\n[pop3.{name}]"]
    for key, value in values.items():
        if value is None:
            continue
        lines.append(f"{key} = {json.dumps(str(value) if isinstance(value, Path) else value)}")
    return "\n".join(lines) + "\n"


def add_pop3_account(site: Path, mailbox: Mailbox, name: str = "archive", **options: object) -> None:
    """Append a POP3 account for ``mailbox`` to the site's listlib.toml."""
    with (site / "listlib.toml").open("a") as f:
        f.write(pop3_account_toml(mailbox, name, **options))


def wait_until_stopped(pid: int, timeout: float = 60) -> None:
    """Wait until a process has stopped itself (LISTLIB_STOP_AT) or exited."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state in ("T", "t", "Z"):
            return
        assert time.monotonic() < deadline, "the process never stopped"
        time.sleep(0.01)


def threads_taking(pid: int, sig: int) -> list[int]:
    """The threads of a process that do not block ``sig`` (the kernel may hand them a
    signal sent to the process), from /proc: the main thread's id is ``pid``."""
    taking = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        status = (task / "status").read_text()
        blocked = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigBlk:")), 16)
        if not blocked & (1 << (sig - 1)):
            taking.append(int(task.name))
    return taking
