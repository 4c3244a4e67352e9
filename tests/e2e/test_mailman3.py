"""listlib as a Mailman 3 archiver (``listlib.mailman3``).

In this environment: the archiver files a post under the list that names Mailman's
list, its permalink is the Message-ID page a build makes, a post that cannot be filed
now (the store locked) waits in the spool and is filed with the next, and the builder
builds. With a real GNU Mailman 3 (its own venv, ``.venv-mailman``, made by ``.ci/run``;
``LISTLIB_MAILMAN_VENV`` points elsewhere): ``mailman create``, ``mailman inject``, the
``in``, ``pipeline`` and ``archive`` runners run once, then the site shows the posts and
every ``Archived-At`` URL Mailman wrote is a page in ``output/``.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import time
from email import message_from_bytes
from email.parser import BytesHeaderParser
from pathlib import Path
from types import SimpleNamespace

import pytest

from listlib.config import load_config
from listlib.mailman3 import Archiver, Site, run_builds
from listlib.stewardship import stored_bytes
from listlib.store.core import Store

from ..support.helpers import REPO, SITE_TOML, make_message, run_listlib

DEV = SimpleNamespace(list_id="dev.lists.example.org", posting_address="dev@lists.example.org")
ELSEWHERE = SimpleNamespace(list_id="other.example.net", posting_address="other@example.net")
MAILMAN_VENV = Path(os.environ.get("LISTLIB_MAILMAN_VENV", REPO / ".venv-mailman"))


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    (root / "listlib.toml").write_text(SITE_TOML)
    return root


def stored_calls(site: Path) -> dict[str, str]:
    """Message-ID -> list of every filed message."""
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        return {row.message_id: row.list for row in store.index.iter_rows() if row.message_id}


def test_a_post_is_filed_under_the_list_naming_mailmans_and_its_permalink_is_built(site: Path) -> None:
    archiver = Archiver(Site(site / "listlib.toml", build=False))
    post = message_from_bytes(make_message("Archived by Mailman", message_id="<mm-1@example.org>", to="x@example.org"))
    link = archiver.archive_message(DEV, post)
    assert archiver.list_url(DEV) == "https://lists.example.org/dev/" and archiver.list_url(ELSEWHERE) is None
    assert link == archiver.permalink(DEV, post) and link is not None and "/mid/" in link
    assert stored_calls(site) == {"mm-1@example.org": "dev"}, "filed under dev though addressed elsewhere"
    assert not any((site / "mailman-spool" / "dev" / "new").iterdir()), "the spool is empty once filed"
    run_listlib("build", "-q", cwd=site, check=True)
    page = site / "output" / link.removeprefix("https://lists.example.org/")
    assert page.is_file() and "Archived by Mailman" in page.read_text()


def test_a_post_that_cannot_be_filed_now_waits_in_the_spool_for_the_next(site: Path) -> None:
    archiver = Archiver(Site(site / "listlib.toml", build=False, lock_wait=0.5))
    config = load_config(site / "listlib.toml")
    config.site.content_dir.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)",
            str(config.site.content_dir / ".lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        archiver.archive_message(DEV, message_from_bytes(make_message("First", message_id="<wait-1@example.org>")))
        assert len(list((site / "mailman-spool" / "dev" / "new").iterdir())) == 1, "kept in the spool"
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    archiver.archive_message(DEV, message_from_bytes(make_message("Second", message_id="<wait-2@example.org>")))
    assert stored_calls(site) == {"wait-1@example.org": "dev", "wait-2@example.org": "dev"}
    assert not any((site / "mailman-spool" / "dev" / "new").iterdir())


def test_a_mistake_in_listlib_toml_keeps_posts_in_the_spool_until_it_is_mended(site: Path) -> None:
    good = (site / "listlib.toml").read_text()
    (site / "listlib.toml").write_text(good.replace("[lists.dev]", "[lists.dev]\nadresses = []"))
    archiver = Archiver(Site(site / "listlib.toml", build=False))
    post = message_from_bytes(make_message("Kept", message_id="<keep-1@example.org>", to="x@example.org"))
    assert archiver.archive_message(DEV, post) is None  # no permalink without a config; no error to Mailman
    spooled = site / "mailman-spool" / "_list-id_dev.lists.example.org" / "new"
    assert len(list(spooled.iterdir())) == 1
    (site / "listlib.toml").write_text(good)
    archiver = Archiver(Site(site / "listlib.toml", build=False))
    archiver.archive_message(DEV, message_from_bytes(make_message("Next", message_id="<keep-2@example.org>")))
    assert stored_calls(site) == {"keep-1@example.org": "dev", "keep-2@example.org": "dev"}, "under Mailman's list"
    assert not any(spooled.iterdir())


def test_the_builder_builds_while_posts_ask_and_one_runs_at_a_time(site: Path) -> None:
    archiver = Archiver(Site(site / "listlib.toml", build=False))
    archiver.archive_message(DEV, message_from_bytes(make_message("Built", message_id="<b-1@example.org>")))
    config = load_config(site / "listlib.toml")
    assert run_builds(site / "listlib.toml") == 0, "nothing asked"
    config.site.cache_dir.mkdir(parents=True, exist_ok=True)
    (config.site.cache_dir / "mailman-build.request").touch()
    assert run_builds(site / "listlib.toml") == 1
    assert (site / "output" / "dev" / "index.html").is_file()
    assert not (config.site.cache_dir / "mailman-build.request").exists()


def test_a_post_starts_a_builder_in_the_background(site: Path) -> None:
    archiver = Archiver(Site(site / "listlib.toml", build=True))
    archiver.archive_message(DEV, message_from_bytes(make_message("Built soon", message_id="<bg-1@example.org>")))
    link = archiver.permalink(DEV, message_from_bytes(make_message("x", message_id="<bg-1@example.org>")))
    assert link is not None
    page = site / "output" / link.removeprefix("https://lists.example.org/")
    deadline = time.monotonic() + 120
    while not page.is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert page.is_file(), "the builder started by the post built its page"


# -- a real Mailman 3 -----------------------------------------------------------------------


def mailman_config(base: Path, site: Path) -> Path:
    listlib_cfg = base / "listlib.cfg"
    parser = configparser.ConfigParser()
    parser["general"] = {"site": str(site / "listlib.toml"), "build": "no"}
    with listlib_cfg.open("w") as file:
        parser.write(file)
    cfg = base / "mailman.cfg"
    cfg.write_text(
        f"""[mailman]
site_owner: owner@example.org
layout: listlibtest

[paths.listlibtest]
var_dir: {base / "var"}

[mta]
incoming: mailman.testing.mta.FakeMTA
smtp_port: 9

[archiver.listlib]
class: listlib.mailman3.Archiver
enable: yes
configuration: {listlib_cfg}
clobber_date: never
"""
    )
    return cfg


def test_a_real_mailman_3_archives_into_listlib_and_archived_at_resolves(site: Path, tmp_path: Path) -> None:
    mailman = MAILMAN_VENV / "bin" / "mailman"
    runner = MAILMAN_VENV / "bin" / "runner"
    if not mailman.exists():
        pytest.skip(f"GNU Mailman 3 is not installed in {MAILMAN_VENV} (.ci/run makes it: pip install mailman -e .)")
    check = subprocess.run([MAILMAN_VENV / "bin" / "python", "-c", "import listlib.mailman3"], capture_output=True)
    if check.returncode != 0:
        pytest.skip(f"listlib is not installed in {MAILMAN_VENV}: {check.stderr.decode()[-300:]}")
    base = tmp_path / "mailman"
    base.mkdir()
    cfg = mailman_config(base, site)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = str(REPO)  # this checkout's listlib, whatever the venv has

    def run(*command: str | Path, stdin: bytes | None = None) -> str:
        done = subprocess.run(
            [str(part) for part in command], input=stdin, capture_output=True, env=env, cwd=base, timeout=300
        )
        assert done.returncode == 0, f"{command}: {done.stdout.decode()[-2000:]} {done.stderr.decode()[-3000:]}"
        return done.stdout.decode()

    root = ["--run-as-root"] if os.geteuid() == 0 else []
    run(mailman, *root, "-C", cfg, "create", "dev@lists.example.org")
    members = base / "members.txt"
    members.write_text("Ann Example <ann@example.org>\n")
    run(mailman, *root, "-C", cfg, "addmembers", members, "dev@lists.example.org")
    posts = [
        make_message("First post through Mailman", message_id="<mm3-1@example.org>"),
        make_message(
            "Re: First post through Mailman",
            message_id="<mm3-2@example.org>",
            extra={"In-Reply-To": "<mm3-1@example.org>"},
        ),
    ]
    for number, post in enumerate(posts):
        path = base / f"post{number}.eml"
        path.write_bytes(post)
        run(mailman, *root, "-C", cfg, "inject", "-f", path, "dev@lists.example.org")
    for name in ("in", "pipeline", "archive"):  # each queue until it is empty (-o takes one pass)
        queue = base / "var" / "queue" / name
        for _ in range(10):
            run(runner, "-C", cfg, "-r", name, "-o")
            if not list(queue.glob("*.pck")):
                break
        assert not list(queue.glob("*.pck")), f"the {name} queue did not empty"
    log = base / "var" / "logs" / "mailman.log"
    assert stored_calls(site) == {"mm3-1@example.org": "dev", "mm3-2@example.org": "dev"}, (
        log.read_text()[-3000:] if log.exists() else "no mailman.log"
    )
    run_listlib("build", "-q", cwd=site, check=True)
    config = load_config(site / "listlib.toml")
    archived_at = []
    for message_id in ("<mm3-1@example.org>", "<mm3-2@example.org>"):
        _row, raw = stored_bytes(config, message_id)
        archived_at.append(BytesHeaderParser().parsebytes(raw)["Archived-At"])
    assert all(archived_at), "Mailman wrote no Archived-At"
    for header in archived_at:
        url = str(header).strip().strip("<>")
        assert url.startswith("https://lists.example.org/mid/")
        page = site / "output" / url.removeprefix("https://lists.example.org/")
        assert page.is_file(), url
    shutil.rmtree(base / "var", ignore_errors=True)
