"""Shared fixtures: message builders, a fresh site, the shared corpora, the CLI as a subprocess,
a real Dovecot POP3 server and its mailboxes."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from .dovecot import DovecotServer, Mailbox, dovecot_problem

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LISTLIB_SHARED", REPO.parent / "shared"))
CORPORA = SHARED / "corpora"

# Property tests must not depend on how busy the machine is: no per-example deadline and
# no "data generation is too slow" health check (both are wall-clock limits that fail
# under load; a test that hangs is caught by pytest's own timeout instead). Loaded here
# so every @given test, and every @settings(...) built on the default, inherits it.
settings.register_profile("listlib", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("listlib")

SITE_TOML = """\
[site]
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


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A fresh site folder with a listlib.toml defining lists 'dev' and 'announce'."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "listlib.toml").write_text(SITE_TOML)
    return root


@pytest.fixture(scope="session", autouse=True)
def private_user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """listlib keeps code digests in the user's cache folder (``codedigest.cache_file``):
    the tests, and the listlib commands they run, use a folder of their own."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user-cache")))
    yield
    patch.undo()


@pytest.fixture
def corpora() -> Path:
    """The shared real-mail corpora; the test is skipped when they are absent."""
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not present")
    return CORPORA


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


@pytest.fixture
def listlib() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_listlib


def stored_files(content: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every stored message."""
    return {
        str(p.relative_to(content)): p.read_bytes()
        for p in sorted(content.rglob("*.eml"))
        if not any(part.startswith(".") for part in p.relative_to(content).parts)
    }


@pytest.fixture(scope="session")
def dovecot() -> Iterator[DovecotServer]:
    """A real Dovecot POP3 server (plain + STLS and POP3S with a test CA) shared by the session.

    Tests that need it are skipped, with the reason, when Dovecot or a part of it is not
    installed; a Dovecot that is installed but fails to start is an error.
    """
    with new_dovecot() as server:
        yield server


@pytest.fixture
def private_dovecot() -> Iterator[DovecotServer]:
    """A Dovecot of the test's own, for tests that kill or restart the server."""
    with new_dovecot() as server:
        yield server


def new_dovecot() -> DovecotServer:
    """A Dovecot server not started yet, or a skip saying what is not installed."""
    problem = dovecot_problem()
    if problem is not None:
        pytest.skip(problem)
    return DovecotServer()


_MAILBOX_NUMBERS = itertools.count(1)


@pytest.fixture
def mailbox(dovecot: DovecotServer) -> Mailbox:
    """A fresh, empty mailbox (its own user) on the shared Dovecot."""
    return dovecot.add_user(f"user{next(_MAILBOX_NUMBERS)}-{os.getpid()}")


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
