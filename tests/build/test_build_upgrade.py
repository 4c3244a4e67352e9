"""An upgraded or patched listlib never keeps pages made by other code (invariant 7):
the code that renders is part of every job's key, and the search code part of the
index's settings. Runs a copy of the package as a subprocess, edits the copy, builds
again: exactly the files whose bytes change are written, the others are untouched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from listlib.codedigest import RENDER_ROOTS, modules_of

from .test_build import add, post, tree

PACKAGE = Path(__file__).resolve().parents[2] / "listlib"


def copy_package(tmp_path: Path) -> Path:
    code = tmp_path / "code"
    shutil.copytree(PACKAGE, code / "listlib", ignore=shutil.ignore_patterns("__pycache__"))
    return code


def run_build(code: Path, site: Path, *args: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "listlib", "build", "-j", "1", "--json", "--files", *args],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def stats(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path} no longer holds {old!r}"
    path.write_text(text.replace(old, new, 1))


EDITS = {
    # A constant of the renderer: a thread of four now gets a table of contents.
    "constant": ("render/pages.py", "TOC_THRESHOLD = 6", "TOC_THRESHOLD = 4"),
    # Display code, imported by the renderer (through listlib.display).
    "display": ("display/textbody.py", '"""', '"""\n# patched\n'),
    "template": ("themes/default/templates/thread.html", '<details class="toc" open>', '<details class="toc">'),
    "static": ("themes/default/static/style.css", "\n", "\n/* patched */\n"),
}


@pytest.fixture
def upgraded_site(site: Path, tmp_path: Path) -> tuple[Path, Path]:
    long_thread = [post(1, "Long thread"), *(post(n, "Re: Long thread", reply_to=n - 1) for n in range(2, 8))]
    short_thread = [post(10, "Short thread"), *(post(n, "Re: Short thread", reply_to=n - 1) for n in range(11, 14))]
    add(site, *long_thread, *short_thread, post(20, "Alone"))
    return copy_package(tmp_path), site


@pytest.mark.parametrize("change", sorted(EDITS))
def test_changed_code_or_theme_rewrites_exactly_the_pages_it_changes(
    upgraded_site: tuple[Path, Path], change: str
) -> None:
    code, site = upgraded_site
    first = run_build(code, site)
    assert first["written"]
    output = site / "output"
    before_bytes = tree(output)
    before_stats = stats(output)
    name, old, new = EDITS[change]
    edit(code / "listlib" / name, old, new)
    second = run_build(code, site)
    after_bytes = tree(output)
    changed = {
        path for path in before_bytes.keys() | after_bytes.keys() if before_bytes.get(path) != after_bytes.get(path)
    }
    if change == "constant":
        (page,) = changed
        assert b'class="toc"' in after_bytes[page] and b'class="toc"' not in before_bytes[page]
    elif change == "display":  # a comment changes no bytes: every job runs and writes nothing
        assert second["jobs_run"] == first["jobs_run"] and not changed
    else:
        assert changed
    assert set(second["written_files"]) == changed  # type: ignore[arg-type]
    assert second["removed_files"] == []
    after_stats = stats(output)
    untouched = {path for path in before_bytes if path not in changed}
    assert {path: after_stats[path] for path in untouched} == {path: before_stats[path] for path in untouched}
    # And it is what a clean build with the new code makes.
    run_build(code, site, "--clean")
    assert tree(output) == after_bytes


def test_changed_search_code_reindexes(upgraded_site: tuple[Path, Path]) -> None:
    code, site = upgraded_site
    run_build(code, site)
    again = run_build(code, site)
    assert again["search"]["rebuilt"] is False  # type: ignore[index]
    edit(code / "listlib" / "search" / "merge.py", '"""', '"""\n# patched\n')
    upgraded = run_build(code, site)
    assert upgraded["search"]["rebuilt"] is True  # type: ignore[index]
    assert upgraded["jobs_run"] == 0  # the pages do not depend on the tokenizer


def test_render_digest_covers_the_code_that_renders() -> None:
    modules = modules_of(RENDER_ROOTS)
    for module in (
        "render.pages",
        "render.downloads",
        "display",
        "display.sanitize",
        "urls",
        "plan.builders",
        "plan.kinds",
        "theme",
    ):
        assert module in modules
    for module in ("cli", "delivery", "filers.pop3", "serve"):
        assert module not in modules


def test_the_same_code_at_another_path_rebuilds_nothing(upgraded_site: tuple[Path, Path], tmp_path: Path) -> None:
    """Moving an install (another checkout, a venv rebuilt elsewhere) is not an upgrade:
    no job key holds where the code or the theme's files are."""
    code, site = upgraded_site
    run_build(code, site)
    moved = tmp_path / "elsewhere"
    shutil.copytree(code, moved)
    again = run_build(moved, site)
    assert again["jobs_run"] == 0 and again["written_files"] == [], again["jobs_run"]
