"""A full disk under the store, the output or the cache is one error line naming the
file, never a traceback, and nothing is lost: once there is room again, a re-run
finishes the work (issue 23, item 7). Uses a real, small tmpfs (needs root)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support.helpers import SITE_TOML, make_message, mboxrd, run_listlib


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of 64 KiB at a fresh folder, unmounted afterwards."""
    point = tmp_path / "disk"
    point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(point)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def _grow(point: Path) -> None:
    subprocess.run(["mount", "-o", "remount,size=64m", str(point)], check=True)


def _site(tmp_path: Path, setting: str) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    (root / "listlib.toml").write_text(SITE_TOML.replace("[site]\n", f"[site]\n{setting}\n", 1))
    messages = [
        make_message(f"Post {n}", f"Words {n} " * 400 + "\n", message_id=f"<n{n}@example.org>") for n in range(300)
    ]
    (tmp_path / "in.mbox").write_bytes(mboxrd(messages))
    return root


def _one_clear_line(result: subprocess.CompletedProcess[str], where: Path) -> None:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    assert str(where) in errors[0], errors[0]
    # A full disk is not damage: the user must not be sent to repair a healthy index.
    assert "space" in errors[0] and "damaged" not in errors[0], errors[0]


def test_a_full_disk_under_the_store_is_one_line_and_loses_nothing(tmp_path: Path, small_disk: Path) -> None:
    root = _site(tmp_path, f'content_dir = "{small_disk / "content"}"')
    _one_clear_line(run_listlib("import", tmp_path / "in.mbox", cwd=root), small_disk)
    _grow(small_disk)
    again = run_listlib("import", tmp_path / "in.mbox", cwd=root, check=True)
    assert "0 failed" in again.stdout
    assert run_listlib("check", cwd=root, check=True).returncode == 0
    stored = list((small_disk / "content").glob("dev/*/*/*.eml"))
    assert len(stored) == 300


@pytest.mark.parametrize("folder", ["output", "cache"])
def test_a_full_disk_under_the_output_or_cache_is_one_line(tmp_path: Path, small_disk: Path, folder: str) -> None:
    root = _site(tmp_path, f'{folder}_dir = "{small_disk / folder}"')
    run_listlib("import", tmp_path / "in.mbox", cwd=root, check=True)
    _one_clear_line(run_listlib("build", cwd=root), small_disk)
    _grow(small_disk)
    run_listlib("build", cwd=root, check=True)
    output = small_disk / "output" if folder == "output" else root / "output"
    assert len(list(output.glob("dev/*/*/*.html"))) >= 300
