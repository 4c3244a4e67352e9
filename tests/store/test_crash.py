"""Nothing lost, nothing twice: kill -9 a real ``listlib import`` at many moments, re-run, verify.

Two kinds of kill: an external SIGKILL after a measured delay (lands wherever the
process happens to be), and LISTLIB_CRASH_AT, which makes the process SIGKILL
itself the N-th time the store reaches a named point of a batch (to hit the
narrow windows between writing, committing and renaming exactly).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from ..support.helpers import CORPORA, SITE_TOML, run_listlib, subprocess_env

pytestmark = [pytest.mark.corpus, pytest.mark.slow]


def stored(content: Path) -> Counter[tuple[str, str]]:
    """Multiset of (list, sha256 of bytes) over the store."""
    out: Counter[tuple[str, str]] = Counter()
    for path in content.rglob("*.eml"):
        rel = path.relative_to(content)
        if rel.parts[0].startswith("."):
            continue
        out[(rel.parts[0], hashlib.sha256(path.read_bytes()).hexdigest())] += 1
    return out


@pytest.fixture(scope="module")
def crash_sources(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A real corpus of ~9,000 messages: Pipermail months with every message twice, plus a maildir."""
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not present")
    folder = tmp_path_factory.mktemp("crash-src") / "twisted-2003"
    folder.mkdir()
    for path in sorted((CORPORA / "pipermail" / "twisted-python").glob("2003-*.txt.gz")):
        shutil.copy(path, folder / path.name)
    return [folder, CORPORA / "maildir" / "notmuch-lkml"]


def new_site(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "listlib.toml").write_text(SITE_TOML)
    return root


@pytest.fixture(scope="module")
def reference(crash_sources: list[Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Counter, float]:
    """The store after one uninterrupted import, and how long that took."""
    site = new_site(tmp_path_factory.mktemp("reference") / "site")
    started = time.monotonic()
    run_listlib("import", "--list", "dev", *crash_sources, cwd=site, check=True)
    elapsed = time.monotonic() - started
    result = stored(site / "content")
    assert sum(result.values()) > 4000
    return result, elapsed


def start_import(site: Path, sources: list[Path], output: int | None = subprocess.DEVNULL) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "listlib", "import", "--list", "dev", *map(str, sources)],
        cwd=site,
        stdout=output,
        stderr=output,
        env=subprocess_env(),
    )


def assert_complete_and_clean(site: Path, sources: list[Path], expected: Counter) -> None:
    rerun = run_listlib("import", "--list", "dev", "--json", *sources, cwd=site, check=True)
    assert '"failed": 0' in rerun.stdout
    assert stored(site / "content") == expected, "a message was lost or filed twice"
    check = run_listlib("check", cwd=site)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "clean" in check.stdout


@pytest.mark.parametrize("fraction", [0.08, 0.15, 0.22, 0.3, 0.37, 0.45, 0.52, 0.6, 0.68, 0.75, 0.83, 0.92])
def test_external_kill_at_a_moment_then_rerun(
    fraction: float, crash_sources: list[Path], reference: tuple[Counter, float], tmp_path: Path
) -> None:
    expected, elapsed = reference
    site = new_site(tmp_path / "site")
    proc = start_import(site, crash_sources)
    time.sleep(elapsed * fraction)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert_complete_and_clean(site, crash_sources, expected)


@pytest.mark.parametrize(
    "point",
    [
        "temp-written:1",
        "temp-written:3",
        "temp-synced:1",
        "temp-synced:4",
        "pending-committed:1",
        "pending-committed:2",
        "pending-committed:5",
        "renamed:1",
        "renamed:700",
        "renamed:2500",
        "folders-synced:1",
        "folders-synced:3",
        "marked:1",
    ],
)
def test_kill_at_a_batch_point_then_rerun(
    point: str, crash_sources: list[Path], reference: tuple[Counter, float], tmp_path: Path
) -> None:
    expected, _ = reference
    site = new_site(tmp_path / "site")
    crashed = run_listlib("import", "--list", "dev", *crash_sources, cwd=site, env={"LISTLIB_CRASH_AT": point})
    assert crashed.returncode == -signal.SIGKILL, f"the crash point {point} was never reached"
    assert_complete_and_clean(site, crash_sources, expected)


def test_repeated_kills_then_one_complete_run(
    crash_sources: list[Path], reference: tuple[Counter, float], tmp_path: Path
) -> None:
    expected, elapsed = reference
    site = new_site(tmp_path / "site")
    for fraction in (0.2, 0.1, 0.3, 0.05):
        proc = start_import(site, crash_sources)
        time.sleep(elapsed * fraction + 0.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert_complete_and_clean(site, crash_sources, expected)


def test_two_imports_at_once_file_each_message_once(
    crash_sources: list[Path], reference: tuple[Counter, float], tmp_path: Path
) -> None:
    expected, _ = reference
    site = new_site(tmp_path / "site")
    twisted, maildir = crash_sources
    procs = [start_import(site, sources, subprocess.PIPE) for sources in ([twisted, maildir], [maildir, twisted])]
    for proc in procs:
        _out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    assert stored(site / "content") == expected
    assert run_listlib("check", cwd=site).returncode == 0


def test_check_while_an_import_runs_sees_a_consistent_store(
    crash_sources: list[Path], reference: tuple[Counter, float], tmp_path: Path
) -> None:
    expected, _ = reference
    site = new_site(tmp_path / "site")
    proc = start_import(site, crash_sources, subprocess.PIPE)
    checks = 0
    while proc.poll() is None:
        result = run_listlib("check", cwd=site)
        assert result.returncode == 0, result.stdout + result.stderr
        checks += 1
    _out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert checks >= 1
    assert stored(site / "content") == expected
