"""``listlib build --cluster`` and ``[build] cluster`` without a cluster: Dask is
optional (without it, the option says how to install it and exits 2, and everything
else works), a scheduler address is checked before anything runs, and the theme each
worker loads for itself is the build's, in the site's language."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from listlib.build import _executor, _load_theme
from listlib.config import load_config
from listlib.search.spool import DisplayedText

from ..support.helpers import REPO, make_message, mboxrd, run_listlib


def without_dask(folder: Path) -> dict[str, str]:
    """An environment in which ``import distributed`` fails, as where it is not installed."""
    hidden = folder / "no-dask" / "distributed"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError(\"No module named 'distributed'\")\n")
    return {"PYTHONPATH": f"{hidden.parent}:{REPO}"}


def filed_site(site: Path) -> Path:
    (site / "in.mbox").write_bytes(mboxrd([make_message()]))
    run_listlib("import", "in.mbox", cwd=site, check=True)
    return site


def test_without_dask_cluster_says_how_to_install_it_and_exits_2(site: Path, tmp_path: Path) -> None:
    env = without_dask(tmp_path)
    filed_site(site)
    result = run_listlib("build", "--cluster", "tcp://127.0.0.1:8786", cwd=site, env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "pip install 'listlib[cluster]'" in result.stderr
    assert not (site / "output").exists()
    # Everything else works without Dask.
    built = run_listlib("build", cwd=site, env=env)
    assert built.returncode == 0, built.stderr
    assert (site / "output" / "dev" / "index.html").is_file()


def test_without_dask_the_build_table_s_cluster_says_how_to_install_it(site: Path, tmp_path: Path) -> None:
    env = without_dask(tmp_path)
    filed_site(site)
    with open(site / "listlib.toml", "a") as toml:
        toml.write('\n[build]\ncluster = "tcp://127.0.0.1:8786"\n')
    for command in (["build"], ["import", "in.mbox", "--build"]):
        result = run_listlib(*command, cwd=site, env=env)
        assert result.returncode == 2, command
        assert "pip install 'listlib[cluster]'" in result.stderr


def test_a_scheduler_address_is_checked_before_anything_runs(site: Path) -> None:
    result = run_listlib("build", "--cluster", "localhost", cwd=site)
    assert result.returncode == 2
    assert "--cluster" in result.stderr and "tcp://HOST:8786" in result.stderr
    with open(site / "listlib.toml", "a") as toml:
        toml.write('\n[build]\ncluster = "8786"\n')
    result = run_listlib("build", cwd=site)
    assert result.returncode == 1
    assert "build.cluster: expected a Dask scheduler address such as tcp://HOST:8786" in result.stderr
    assert not (site / "output").exists()


def test_cluster_workers_load_the_theme_in_the_site_s_language(site: Path) -> None:
    pytest.importorskip("distributed")
    toml = site / "listlib.toml"
    toml.write_text(toml.read_text().replace("[site]\n", '[site]\nlanguage = "de"\n', 1))
    config = load_config(toml)
    theme = _load_theme(config)
    sinks = partial(DisplayedText, site / "spool", obfuscate=False)
    # Not connected: a runner reaches its scheduler only once the build has work.
    runner = _executor(config, theme, 1, sinks, "tcp://127.0.0.1:8786")
    loaded = runner._setup.theme()  # what each worker calls (the theme is not sent)
    assert loaded.texts.language == theme.texts.language == "de"
    assert loaded.texts_fingerprint(("",)) == theme.texts_fingerprint(("",))
