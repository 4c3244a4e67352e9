"""Shared fixtures: a fresh site, the shared corpora, the CLI as a subprocess, a real
Dovecot POP3 and IMAP server and its mailboxes (the plain helpers they use: support/helpers.py)."""

from __future__ import annotations

import compileall
import hashlib
import itertools
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from .support.dovecot import DovecotServer, Mailbox
from .support.helpers import CORPORA, REPO, SITE_TOML, new_dovecot, new_imap_dovecot, run_listlib

# Property tests must not depend on how busy the machine is: no per-example deadline and
# no "data generation is too slow" health check (both are wall-clock limits that fail
# under load; a test that hangs is caught by pytest's own timeout instead). Loaded here
# so every @given test, and every @settings(...) built on the default, inherits it.
settings.register_profile("listlib", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("listlib")


MEMORY_FS = Path("/dev/shm")
MEMORY_FS_NEEDED = 8 << 30
"""Free bytes the memory file system must have to hold the run's temporary files: one
run of the suite leaves some 3.5 GB in 565,000 files (2026-11-28)."""
MEMORY_BASETEMP = pytest.StashKey[str]()
"""The base temporary folder ``pytest_configure`` chose in the memory file system."""


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Done by the controller only (xdist workers inherit both):

    - Compile listlib's modules once, as installing it does, on a machine that sets
      ``PYTHONDONTWRITEBYTECODE``: the suite runs ``listlib`` as a subprocess some
      thousands of times, and without the cached bytecode each run compiles every module
      it imports again (some 0.05 s of CPU a ``listlib build``).
    - The tests' temporary folders go to the memory file system (``memory_basetemp``)."""
    if hasattr(config, "workerinput"):
        return
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        compileall.compile_dir(REPO / "listlib", quiet=1)
    if config.option.basetemp is None and (basetemp := memory_basetemp()) is not None:
        config.option.basetemp = basetemp
        config.stash[MEMORY_BASETEMP] = basetemp


def memory_basetemp() -> str | None:
    """The run's base temporary folder in ``/dev/shm`` (one a user and checkout; pytest
    empties it when the next run starts), or None for pytest's own in ``/tmp`` where
    there is no such file system or too little room in it.

    The suite writes and deletes hundreds of thousands of files. On this machine's disk
    (ext4 mounted with ``discard``) deleting is slow: pytest's removal of an old run's
    folders took 64 s at the end of a later run, and ``tmp_path_retention_policy =
    "failed"`` (a passing test's folder deleted at once) made two of the slow files take
    206 s, not 138 s. On a clean clone, ``.ci/run``'s tests took 1,192 s here against
    1,354 and 1,404 s in ``/tmp`` (2026-11-28)."""
    try:
        room = os.statvfs(MEMORY_FS)
    except OSError:
        return None
    if not os.access(MEMORY_FS, os.W_OK) or room.f_bavail * room.f_frsize < MEMORY_FS_NEEDED:
        return None
    checkout = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    return str(MEMORY_FS / f"listlib-tests-{os.getuid()}-{checkout}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A run that passed leaves no temporary files in memory; a failed run's stay there
    for a look until the next run."""
    basetemp = session.config.stash.get(MEMORY_BASETEMP, None)
    if basetemp is not None and exitstatus == 0:
        shutil.rmtree(basetemp, ignore_errors=True)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core. A third worker on two cores (for tests that wait
    on real servers, browsers and ``listlib`` subprocesses) made the suite slower, since
    the heavy tests' builds fork two render workers of their own: on a clean clone, back
    to back on the quiet 2-core machine, 1,791 s with three workers, 1,395 s with two."""
    return os.cpu_count() or 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files that hold a ``slow`` test run first (in their own order, each file on one
    worker: ``--dist loadfile``), so that no long file starts when the others are done."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


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


@pytest.fixture
def listlib() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_listlib


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


_MAILBOX_NUMBERS = itertools.count(1)


@pytest.fixture
def mailbox(dovecot: DovecotServer) -> Mailbox:
    """A fresh, empty mailbox (its own user) on the shared Dovecot."""
    return dovecot.add_user(f"user{next(_MAILBOX_NUMBERS)}-{os.getpid()}")


@pytest.fixture
def imap_mailbox(dovecot: DovecotServer) -> Mailbox:
    """A fresh, empty mailbox on the shared Dovecot, which serves IMAP too (else the test is skipped)."""
    if not dovecot.has_imap:
        pytest.skip("dovecot-imapd is not installed (apt-get install dovecot-imapd)")
    return dovecot.add_user(f"imap{next(_MAILBOX_NUMBERS)}-{os.getpid()}")


@pytest.fixture
def private_imap_dovecot() -> Iterator[DovecotServer]:
    """A Dovecot serving IMAP of the test's own, for tests that kill or restart the server."""
    with new_imap_dovecot() as server:
        yield server
