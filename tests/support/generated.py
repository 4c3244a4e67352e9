"""Generated archives for the memory tests: the benchmarks' own modules (``bench/``)
loaded in a test, and a site of lists of one size imported from their generator."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from .helpers import REPO, subprocess_env


def bench_module(monkeypatch: pytest.MonkeyPatch, name: str) -> ModuleType:
    """A module of ``bench/`` (``scale_bench``, ``import_bench``, ...)."""
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    return importlib.import_module(name)


def imported_site(scale: ModuleType, root: Path, lists: int, per_list: int) -> Path:
    """A site of ``lists`` lists of ``per_list`` generated messages each
    (``scale_bench.generate``), imported by ``listlib import``; the mbox is removed."""
    site = root / f"site-{lists}"
    site.mkdir()
    (site / "listlib.toml").write_text(scale.site_toml(lists))
    mbox = scale.generate([per_list] * lists, root / f"{lists}.mbox")
    imported = subprocess.run(
        [sys.executable, "-m", "listlib", "import", "--json", str(mbox)],
        cwd=site,
        env=subprocess_env(),
        capture_output=True,
        check=True,
    )
    assert json.loads(imported.stdout)["filed"] == per_list * lists
    mbox.unlink()
    return site
