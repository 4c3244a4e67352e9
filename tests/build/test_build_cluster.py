"""Building on a Dask cluster (``listlib build --cluster``): output/ is byte for byte a
local build's, for a full and an incremental build, on a ``LocalCluster`` of worker
processes and on a real ``dask scheduler`` with two ``dask worker`` processes; a worker
killed mid-build is survived, the scheduler killed mid-build fails the build in one line
and the next build catches up. Without Dask, ``--cluster`` says how to install it.

Three real corpora (the edge cases and two notmuch maildirs) make the site: the test
skips without ../shared/corpora or without Dask's ``distributed``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from listlib.build import build_site
from listlib.config import load_config
from listlib.errors import BuildError
from listlib.filing import file_sources
from listlib.search.reader import Source, search
from listlib.store.core import Store

from ..support.daskcluster import DaskCluster, dask_problem
from ..support.dovecot import free_port
from ..support.helpers import CORPORA, make_message, mboxrd, run_listlib

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

SOURCES = {"edge": "edge", "lkml": "maildir/notmuch-lkml", "notmuch": "maildir/notmuch-default"}
QUERIES = ["patch", "notmuch", "the mail", "utf-8"]


def tree(folder: Path) -> dict[str, bytes]:
    """Every file of a built site but the search index's data (its segment names are
    random; the index is compared by its answers, ``answers``)."""
    return {
        rel: p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not (rel := p.relative_to(folder).as_posix()).startswith(("search/seg/", "search/manifest"))
    }


def answers(site: Path) -> list[list[tuple[str, str, str]]]:
    return [
        [(hit.url, hit.subject, hit.excerpt) for hit in search(Source(site / "output/search"), query, limit=20).hits]
        for query in QUERIES
    ]


def copy_site(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


def assert_same_site(site: Path, reference: Path) -> None:
    built, expected = tree(site / "output"), tree(reference / "output")
    assert sorted(built) == sorted(expected)
    assert [path for path, data in built.items() if expected[path] != data] == []
    assert answers(site) == answers(reference)


def add_mail(site: Path) -> None:
    """A reply to an old lkml thread and a new thread in notmuch (an incremental build's work)."""
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        parent = next(row for row in store.index.iter_rows() if row.list == "lkml" and row.message_id)
    when = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    mail = [
        make_message("Re: an old thread", "Late, but: yes.\n", message_id="<late@example.org>", date=when)
        .replace(b"\n\n", f"\nIn-Reply-To: {parent.message_id}\n\n".encode(), 1)
        .replace(b"dev@lists", b"lkml@lists", 1),
        make_message("A new thread", "Hello again.\n", message_id="<new@example.org>", date=when),
    ]
    mbox = site.parent / f"{site.name}-new.mbox"
    mbox.write_bytes(mboxrd(mail[:1]))
    other = site.parent / f"{site.name}-other.mbox"
    other.write_bytes(mboxrd(mail[1:]))
    with Store(config.site.content_dir).open() as store:
        assert file_sources(store, config.lists, [mbox], forced_list="lkml").filed == 1
        assert file_sources(store, config.lists, [other], forced_list="notmuch").filed == 1


def take_content(site: Path, source: Path) -> None:
    """The store of ``source`` in ``site`` (filing twice would give other call numbers)."""
    shutil.rmtree(site / "content")
    shutil.copytree(source / "content", site / "content", symlinks=True)


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    problem = dask_problem()
    if problem:
        pytest.skip(problem)
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not present")
    folder = tmp_path_factory.mktemp("cluster")
    base = folder / "base"
    base.mkdir()
    lists = "".join(f'[lists.{slug}]\naddresses = ["{slug}@lists.example.org"]\n' for slug in SOURCES)
    (base / "listlib.toml").write_text(f'[site]\ntitle = "Corpora"\nbase_url = "https://x.example/"\n{lists}')
    config = load_config(base / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        for slug, source in SOURCES.items():
            file_sources(store, config.lists, [CORPORA / source], forced_list=slug)
    # The reference: a local build, full, then incremental after new mail.
    local = copy_site(base, folder / "local")
    build_site(load_config(local / "listlib.toml"), workers=2)
    copy_site(local, folder / "local-full")
    add_mail(local)
    report = build_site(load_config(local / "listlib.toml"), workers=2)
    assert report.jobs_run > 0 and report.jobs_kept > 0
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_local_cluster_builds_what_a_local_build_does_full_and_incremental(sites: Path) -> None:
    from distributed import LocalCluster

    site = copy_site(sites / "base", sites / "on-local-cluster")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        full = build_site(load_config(site / "listlib.toml"), cluster=cluster.scheduler_address)
        assert_same_site(site, sites / "local-full")
        assert full.cluster is not None
        assert sum(worker["jobs"] for worker in full.cluster["workers"].values()) == full.jobs_run
        take_content(site, sites / "local")
        incremental = build_site(load_config(site / "listlib.toml"), cluster=cluster.scheduler_address)
    assert_same_site(site, sites / "local")
    assert incremental.jobs_run > 0 and incremental.jobs_kept > 0


def test_real_dask_workers_build_the_same_site_and_survive_a_worker_killed_mid_build(sites: Path) -> None:
    on_cluster = copy_site(sites / "base", sites / "on-dask")
    survivor = copy_site(sites / "base", sites / "on-dask-killed")
    with DaskCluster(sites / "dask-logs") as cluster:
        result = run_listlib("build", "--cluster", cluster.address, "--json", cwd=on_cluster)
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert_same_site(on_cluster, sites / "local-full")
        workers = report["cluster"]["workers"]
        assert sum(worker["jobs"] for worker in workers.values()) == report["jobs_run"]
        assert set(workers) <= {"w0", "w1"}

        # kill -9 of one worker once a third of the work is back: its shards run again on the other.
        killed: list[int] = []

        def kill_one(done: int, total: int, _finished: int, _jobs: int) -> None:
            if not killed and done * 3 >= total:
                killed.append(done)
                cluster.kill_worker(0)

        build_site(load_config(survivor / "listlib.toml"), cluster=cluster.address, progress=kill_one)
        assert killed and cluster.workers[0].poll() is not None
    assert_same_site(survivor, sites / "local-full")


def test_the_scheduler_killed_mid_build_fails_it_and_the_next_build_catches_up(sites: Path) -> None:
    site = copy_site(sites / "base", sites / "scheduler-killed")
    with DaskCluster(sites / "dask-logs-2") as cluster:
        killed: list[int] = []

        def kill_scheduler(done: int, total: int, _finished: int, _jobs: int) -> None:
            if not killed and done * 3 >= total:
                killed.append(done)
                cluster.kill_scheduler()

        with pytest.raises(BuildError, match=r"lost the Dask scheduler at tcp://127\.0\.0\.1:\d+ mid-build"):
            build_site(load_config(site / "listlib.toml"), cluster=cluster.address, progress=kill_scheduler)
    caught_up = run_listlib("build", "--json", cwd=site)
    assert caught_up.returncode == 0, caught_up.stderr
    kept = json.loads(caught_up.stdout)["jobs_unchanged"]
    assert kept > 0  # the jobs finished on the cluster were recorded
    assert_same_site(site, sites / "local-full")


def test_an_unreachable_scheduler_is_a_one_line_error(sites: Path) -> None:
    site = copy_site(sites / "base", sites / "unreachable")
    result = run_listlib("build", "--cluster", f"tcp://127.0.0.1:{free_port()}", cwd=site)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unreachable_scheduler_is_an_error_even_with_nothing_to_render(sites: Path) -> None:
    site = copy_site(sites / "base", sites / "unreachable-built")
    assert run_listlib("build", cwd=site).returncode == 0
    before = sorted(p.relative_to(site) for p in (site / "output").rglob("*"))
    result = run_listlib("build", "--cluster", f"tcp://127.0.0.1:{free_port()}", cwd=site)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:" in result.stderr
    assert sorted(p.relative_to(site) for p in (site / "output").rglob("*")) == before
