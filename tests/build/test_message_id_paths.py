"""``[site] message_id_paths``: public-inbox's (lore's) Message-ID paths under each list
(``<list>/<Message-ID>/``, ``raw``, ``t.mbox.gz``), as symbolic links that Apache, nginx,
``python -m http.server`` and ``file://`` follow; never for a removed, hidden or hostile
Message-ID; incremental builds equal clean ones (links included); and the real b4 fetching
patch series from a static copy of the site."""

from __future__ import annotations

import gzip
import http.client
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest

from listlib.config import load_config
from listlib.errors import ConfigError
from listlib.store.core import Store
from listlib.urls import NAME_MAX, message_id_folder, mid_escape

from ..support.helpers import CORPORA, SITE_TOML, make_message, run_listlib
from ..support.hostile.headers import control_header_messages, odd_header_messages
from ..support.webservers import apache_missing, free_port, nginx_missing, public_copy, start_apache, start_nginx
from .test_build import T0, add, build, call_of, post, tree

ON = SITE_TOML.replace(
    'base_url = "https://lists.example.org/"\n', 'base_url = "https://lists.example.org/"\nmessage_id_paths = true\n'
)

THREAD = [
    post(1, "Plans for 2.0"),
    post(2, "Re: Plans for 2.0", reply_to=1, refs=(1,)),
    post(3, "Re: Plans for 2.0", reply_to=2, refs=(1, 2)),
    post(4, "Another topic"),
]


def links(folder: Path) -> dict[str, str]:
    """Every symbolic link under ``folder``: its path -> what it points to."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            if path.is_symlink():
                found[path.relative_to(folder).as_posix()] = os.readlink(path)
    return found


def site_with(root: Path, toml: str = ON) -> Path:
    (root / "listlib.toml").write_text(toml)
    return root


# -- the names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message_id", "escaped"),
    [
        ("foo!@(bar)", "foo!@(bar)"),  # public-inbox's own t/mid.t vectors
        ("foo%!@(bar)", "foo%25!@(bar)"),
        ("a/b@c", "a%2Fb@c"),
        ("x y?#@h", "x%20y%3F%23@h"),
        ("pré@h", "pr%C3%A9@h"),
        ("~a-b.c_d$&'*+,;=:@h", "~a-b.c_d$&'*+,;=:@h"),
    ],
)
def test_message_ids_are_escaped_as_public_inbox_escapes_them(message_id: str, escaped: str) -> None:
    assert mid_escape(message_id) == escaped


@pytest.mark.parametrize(
    "message_id",
    [
        "",
        "no-at-sign",
        "2024",
        "index.html",
        "..",
        ".",
        "../../etc@passwd",
        "a/b@c",
        "a\\b@c",
        ".hidden@h",
        "tab\t@h",
        "nul\x00@h",
        "bad\udcff@h",
        "x" * NAME_MAX + "@h",
    ],
)
def test_hostile_message_ids_get_no_folder(message_id: str) -> None:
    assert message_id_folder("dev", "", message_id) is None


def test_a_folder_is_the_message_id_itself_under_the_list() -> None:
    assert message_id_folder("dev", "", "m1@example.org") == "dev/m1@example.org"
    assert message_id_folder("dev", "m", "a%b@c") == "dev/m/a%b@c"
    longest = "é" * ((NAME_MAX - 2) // 2) + "@h"
    assert len(longest.encode()) <= NAME_MAX and message_id_folder("dev", "", longest) == f"dev/{longest}"


def test_a_bad_message_id_folder_is_a_config_error(site: Path) -> None:
    site_with(site, ON.replace("message_id_paths = true\n", 'message_id_paths = true\nmessage_id_folder = "../x"\n'))
    with pytest.raises(ConfigError, match=r"site\.message_id_folder"):
        load_config(site / "listlib.toml")


# -- the build ----------------------------------------------------------------------------


def test_each_message_has_a_redirect_page_raw_and_thread_mbox_under_its_message_id(site: Path) -> None:
    site_with(site)
    add(site, *THREAD)
    build(site)
    out = site / "output"
    for n in (1, 2, 3):
        folder = out / "dev" / f"m{n}@example.org"
        call, stored = call_of(site, n)
        assert (folder / "raw").is_symlink() and (folder / "t.mbox.gz").is_symlink()
        assert (folder / "raw").read_bytes() == (site / "content" / stored).read_bytes()
        root_call, root_stored = call_of(site, 1)
        thread_mbox = out / root_stored[: -len(".eml")]
        assert os.path.samefile(folder / "t.mbox.gz", thread_mbox.with_suffix(".mbox.gz"))
        assert gzip.decompress((folder / "t.mbox.gz").read_bytes()).count(b"\nFrom ") + 1 == 3
        page = (folder / "index.html").read_text()
        assert f"{root_call}.html#{call}" in page
    assert os.readlink(out / "dev/m4@example.org/raw").startswith("../2024/")
    # Off by default: no folder at all.
    site_with(site, SITE_TOML)
    report = build(site)
    assert not (out / "dev/m1@example.org").exists()
    assert {p for p in report.removed if "@" in p} == {
        f"dev/m{n}@example.org/{name}" for n in (1, 2, 3, 4) for name in ("index.html", "raw", "t.mbox.gz")
    }


def test_a_folder_can_be_put_under_a_subfolder_of_the_list(site: Path) -> None:
    site_with(site, ON.replace("message_id_paths = true\n", 'message_id_paths = true\nmessage_id_folder = "m"\n'))
    add(site, *THREAD)
    build(site)
    assert (site / "output/dev/m/m1@example.org/raw").read_bytes().startswith(b"From: ")
    assert "../../2024/03/" in (site / "output/dev/m/m1@example.org/index.html").read_text()


def test_removed_and_hidden_messages_have_no_folder_and_redacted_ones_serve_the_edit(
    site: Path, tmp_path: Path
) -> None:
    site_with(site)
    secret = make_message(
        "Re: Plans for 2.0",
        message_id="<secret-mid-5@example.org>",
        date=T0 + timedelta(days=5),
        extra={"In-Reply-To": "<m1@example.org>"},
    )
    add(site, *THREAD, secret, post(6, "Re: Another topic", reply_to=4, refs=(4,)))
    build(site)
    out = site / "output"
    assert (out / "dev/secret-mid-5@example.org/raw").exists()
    run_listlib("remove", "<secret-mid-5@example.org>", "--reason", "privacy", cwd=site, check=True)
    call6, _stored = call_of(site, 6)
    run_listlib("hide", call6, "--reason", "spam", cwd=site, check=True)
    call3, stored3 = call_of(site, 3)
    edited = (site / "content" / stored3).read_bytes().replace(b"Message number 3.", b"Message number [redacted].")
    copy = tmp_path / "edited.eml"
    copy.write_bytes(edited)
    run_listlib("redact", call3, "--from-file", copy, "--reason", "leak", cwd=site, check=True)
    build(site)
    assert not (out / "dev/secret-mid-5@example.org").exists()
    assert not (out / "dev/m6@example.org").exists()
    assert b"secret-mid-5" not in b"".join(tree(out).values())
    assert not any("secret-mid-5" in path for path in links(out))
    assert (out / "dev/m3@example.org/raw").read_bytes() == edited
    thread = gzip.decompress((out / "dev/m3@example.org/t.mbox.gz").read_bytes())
    assert b"Message number [redacted]." in thread and b"Message number 3." not in thread


def test_hostile_message_ids_build_and_stay_inside_the_list_folder(site: Path) -> None:
    site_with(site)
    crafted = [
        "<../../../escape@example.org>",
        "<a@b/../../../../tmp/x>",
        "<..@example.org>",
        "<.hidden@example.org>",
        "<" + "x" * 300 + "@example.org>",
        "<index.html>",
        "<2024>",
        "<%2e%2e@example.org>",
    ]
    messages = [
        make_message(f"Crafted {n}", message_id=mid, date=T0 + timedelta(days=n)) for n, mid in enumerate(crafted)
    ]
    add(site, *control_header_messages(), *odd_header_messages(), *messages)
    build(site)
    out = site / "output"
    folders = {p.parent for p in out.rglob("raw") if p.is_symlink()}
    assert folders and all(folder.parent == out / "dev" for folder in folders)
    names = {folder.name for folder in folders}
    assert all("@" in name and not name.startswith(".") and len(name.encode()) <= NAME_MAX for name in names)
    assert not any(ch in name for name in names for ch in "\x00\x01\x1b\x7f/\\")
    assert "%2e%2e@example.org" in names  # a name of its own: no server decodes it to ".."
    for folder in folders:
        assert (folder / "raw").resolve().is_relative_to(out) and (folder / "raw").read_bytes()
        assert (folder / "t.mbox.gz").resolve().is_relative_to(out)
    assert sorted(p.name for p in out.iterdir() if p.is_symlink()) == []
    assert not (site / "escape@example.org").exists() and not Path("/tmp/x").exists()


def test_check_reports_the_folders_of_removed_and_hidden_mail_until_the_build(site: Path) -> None:
    site_with(site)
    twin = make_message("Same id, other text", message_id="<m2@example.org>", date=T0 + timedelta(days=9))
    add(site, *THREAD, twin)
    build(site)
    call1, _stored = call_of(site, 1)
    run_listlib("hide", call1, "--reason", "spam", cwd=site, check=True)
    run_listlib("remove", "<m3@example.org>", "--reason", "privacy", cwd=site, check=True)
    with Store(site / "content").open() as store:
        twin_call = [
            r.call for r in store.index.rows_by_message_id("dev", "m2@example.org") if b"other" in r.subject.encode()
        ]
    run_listlib("remove", *twin_call, "--reason", "privacy", cwd=site, check=True)
    result = run_listlib("check", cwd=site)
    assert result.returncode == 1, result.stderr
    reported = {line.split(": ")[1] for line in result.stderr.splitlines() if "still published" in line}
    for name in ("index.html", "raw", "t.mbox.gz"):
        assert f"dev/m1@example.org/{name}" in reported and f"dev/m3@example.org/{name}" in reported
        assert f"dev/m2@example.org/{name}" not in reported  # the folder of the other m2, which stays
    build(site)
    assert run_listlib("check", cwd=site).returncode == 0
    assert (site / "output/dev/m2@example.org/raw").exists()


def test_incremental_builds_make_the_same_links_and_files_as_a_clean_build(site: Path) -> None:
    site_with(site)
    steps = [
        [post(2, "Re: Plans", reply_to=1, refs=(1,))],  # a reply whose parent is not there yet
        [post(4, "Topic B"), post(3, "Re: Plans", reply_to=2, refs=(1, 2))],
        [post(1, "Plans")],  # the late root: the thread and its download move
        [post(5, "Re: Topic B", reply_to=4, refs=(4,), at=timedelta(days=40))],
        [post(6, "Topic C", extra={"X-No-Archive": "yes"}), post(7, "Re: Topic B", reply_to=4, refs=(4,))],
    ]
    for step in steps:
        add(site, *step)
        build(site)
    run_listlib("remove", "<m5@example.org>", "--reason", "privacy", cwd=site, check=True)
    build(site)
    incremental, incremental_links = tree(site / "output"), links(site / "output")
    assert "dev/m1@example.org/t.mbox.gz" in incremental_links
    assert "dev/m6@example.org/raw" not in incremental_links  # X-No-Archive: not archived, no folder
    shutil.rmtree(site / ".cache")
    build(site, clean=True)
    assert links(site / "output") == incremental_links
    assert tree(site / "output") == incremental
    assert build(site).written == []


def test_a_replaced_link_is_put_back_by_the_next_build(site: Path) -> None:
    site_with(site)
    add(site, *THREAD)
    build(site)
    raw = site / "output/dev/m2@example.org/raw"
    target = os.readlink(raw)
    raw.unlink()
    raw.write_bytes(b"not the message")
    build(site, verify=True)
    assert raw.is_symlink() and os.readlink(raw) == target


# -- serving --------------------------------------------------------------------------------


def _get(url: str) -> tuple[int, bytes]:
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        connection.request("GET", parts.path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _served_site(site: Path) -> Path:
    site_with(site)
    odd = make_message("Odd", message_id="<a%b+c&d=e?#!@h>", date=T0 + timedelta(days=9))
    add(site, *THREAD, odd)
    build(site)
    return site / "output"


def _check_served(base: str, out: Path) -> None:
    for message_id in ("m2@example.org", "a%b+c&d=e?#!@h"):
        folder = out / "dev" / message_id
        for url in (f"{base}dev/{mid_escape(message_id)}/", f"{base}dev/{urllib.parse.quote_plus(message_id)}/"):
            assert _get(url + "raw") == (200, (folder / "raw").read_bytes()), url
            assert _get(url + "t.mbox.gz") == (200, (folder / "t.mbox.gz").read_bytes()), url
            assert _get(url) == (200, (folder / "index.html").read_bytes()), url


@pytest.mark.skipif(apache_missing() is not None, reason=str(apache_missing()))
def test_apache_with_its_defaults_serves_the_links(site: Path, tmp_path: Path) -> None:
    out = _served_site(site)
    www = public_copy(out)
    server = start_apache(www, tmp_path)
    try:
        _check_served(server.url, out)
    finally:
        server.stop()
        shutil.rmtree(www.parent)


@pytest.mark.skipif(nginx_missing() is not None, reason=str(nginx_missing()))
def test_nginx_with_its_defaults_serves_the_links(site: Path, tmp_path: Path) -> None:
    out = _served_site(site)
    www = public_copy(out)
    server = start_nginx(www, tmp_path)
    try:
        _check_served(server.url, out)
    finally:
        server.stop()
        shutil.rmtree(www.parent)


def test_file_urls_follow_the_links(site: Path) -> None:
    out = _served_site(site)
    for message_id in ("m2@example.org", "a%b+c&d=e?#!@h"):
        url = f"{out.as_uri()}/dev/{mid_escape(message_id)}/"
        with urllib.request.urlopen(url + "raw") as response:
            assert response.read() == (out / "dev" / message_id / "raw").read_bytes()
        with urllib.request.urlopen(url + "t.mbox.gz") as response:
            assert response.read() == (out / "dev" / message_id / "t.mbox.gz").read_bytes()


# -- b4 ---------------------------------------------------------------------------------------

RAID = CORPORA / "mbox" / "linux-raid.mboxrd.gz"
SEPARATOR = b"From mboxrd@z Thu Jan  1 00:00:00 1970\n"
SERIES = {
    # [PATCH 0/3] enable fail last device in raid1/10 array: a cover letter, three patches, replies.
    "20190724090921.13296-1-guoqing.jiang@cloud.ionos.com": (3, True),
    # [PATCH 1/2] mdadm: add --no-devices ...: no cover letter, the second patch answers the first.
    "20190730164024.97862-1-colyli@suse.de": (2, False),
}
"""Root Message-ID -> (patches, whether a cover letter leads them)."""
RAID_TOML = """\
[site]
title = "Test archive"
base_url = "https://lists.example.org/"
message_id_paths = true

[lists.raid]
name = "linux-raid"
addresses = ["linux-raid@vger.kernel.org"]
list_ids = ["linux-raid.vger.kernel.org"]
"""


def _series_mbox(path: Path) -> None:
    """The messages of the two series' threads (and of no other thread) from the corpus,
    as an mboxrd file: everything that names a root in its Message-ID, In-Reply-To or
    References."""
    data = gzip.decompress(RAID.read_bytes())
    kept = []
    for chunk in data.split(b"\n" + SEPARATOR):
        head = chunk.split(b"\n\n", 1)[0]
        ids = set(re.findall(rb"<([^<>\s]+)>", re.sub(rb"\n[ \t]", b" ", head)))
        if any(root.encode() in ids for root in SERIES):
            kept.append(chunk.removeprefix(SEPARATOR).rstrip(b"\n") + b"\n")
    path.write_bytes(b"".join(SEPARATOR + chunk + b"\n" for chunk in kept))


SEPARATOR_ANY = rb"^From \S+ .*\n"


def _messages(mbox: bytes, separator: bytes = rb"^From mboxrd@z Thu Jan  1 00:00:00 1970\n") -> list[bytes]:
    """The messages of an mbox file, without the blank line that ends each. b4 reads a
    fetched ``t.mbox.gz`` with its own splitter, which keeps that line in each message
    (as it does with lore's), and ``-m`` files with Python's ``mailbox``, which drops it:
    its two outputs differ only there."""
    return [chunk.rstrip(b"\n") for chunk in re.split(separator, mbox, flags=re.MULTILINE)[1:]]


def _b4(home: Path, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        # Nothing but 127.0.0.1: any other request fails at once.
        "http_proxy": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "no_proxy": "127.0.0.1",
    }
    command = [sys.executable, "-c", "import sys, b4.command; sys.exit(b4.command.cmd())", *map(str, args)]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def _b4_missing() -> str | None:
    if not RAID.exists():
        return f"{RAID} is missing (the shared corpora)"
    try:
        import b4  # noqa: F401
    except ImportError:
        return "b4 is not installed (pip install '.[test]')"
    if shutil.which("git") is None:
        return "git is missing"
    return None


@pytest.mark.corpus
@pytest.mark.skipif(_b4_missing() is not None, reason=str(_b4_missing()))
def test_b4_fetches_patch_series_from_a_static_copy_of_the_site(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    site_with(site, RAID_TOML)
    source = tmp_path / "series.mbox"
    _series_mbox(source)
    run_listlib("import", source, cwd=site, check=True)
    run_listlib("build", cwd=site, check=True)
    static = tmp_path / "static"
    shutil.copytree(site / "output", static, symlinks=True)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(static), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    home = tmp_path / "home"
    home.mkdir()
    gitconfig = [
        ("b4.midmask", f"http://127.0.0.1:{port}/raid/%s"),
        ("b4.attestation-policy", "off"),
        ("user.name", "Tester"),
        ("user.email", "tester@example.org"),
    ]
    for key, value in gitconfig:
        subprocess.run(["git", "config", "--file", str(home / ".gitconfig"), key, value], check=True)
    try:
        _wait_for(port)
        for root, (patches, cover) in SERIES.items():
            folder = static / "raid" / root
            # t.mbox.gz is the thread's own download: beside the thread page the root's page leads to.
            page = re.search(r'url=\.\./([^"#]+)\.html', (folder / "index.html").read_text())
            assert page is not None
            download = static / "raid" / f"{page[1]}.mbox.gz"
            assert os.path.samefile(folder / "t.mbox.gz", download)
            local = tmp_path / f"{root}.mbox"
            local.write_bytes(gzip.decompress(download.read_bytes()))
            for command in ("mbox", "am"):
                remote_out, local_out = tmp_path / f"{command}-remote", tmp_path / f"{command}-local"
                remote_out.mkdir()
                local_out.mkdir()
                fetched = _b4(home, command, "--no-cache", "-o", remote_out, root, cwd=tmp_path)
                assert fetched.returncode == 0, fetched.stderr
                offline = _b4(home, command, "-m", local, "-o", local_out, root, cwd=tmp_path)
                assert offline.returncode == 0, offline.stderr
                remote_files = {p.name: p.read_bytes() for p in remote_out.iterdir()}
                local_files = {p.name: p.read_bytes() for p in local_out.iterdir()}
                assert remote_files.keys() == local_files.keys()
                (name,) = (name for name in remote_files if name.endswith(".mbx"))
                if command == "am":
                    # The patches, ready for git am: the very same bytes.
                    assert remote_files[name] == local_files[name]
                    subjects = re.findall(rb"^Subject: (.*)$", remote_files[name], re.MULTILINE)
                    assert len(subjects) == patches
                    assert all(re.match(rb"\[PATCH[^\]]* \d+/\d+\]", subject) for subject in subjects)
                    assert all(remote_files[n].rstrip() == local_files[n].rstrip() for n in remote_files)
                    assert any(n.endswith(".cover") for n in remote_files) == cover
                else:
                    # The whole thread, as in its download.
                    fetched_messages = _messages(remote_files[name])
                    assert fetched_messages == _messages(local_files[name])
                    assert len(fetched_messages) == len(_messages(local.read_bytes(), SEPARATOR_ANY)) > patches
                shutil.rmtree(remote_out)
                shutil.rmtree(local_out)
    finally:
        server.terminate()
        server.wait(15)
        if server.stderr:
            log = server.stderr.read().decode(errors="replace")
            server.stderr.close()
    requests = re.findall(r'"(\w+) (\S+) HTTP', log)
    # b4 gets each thread's t.mbox.gz; 'b4 am' also POSTs a search for code-review
    # trailers sent outside the thread (?x=m&q=patchid:...), which a static site cannot
    # answer (501 here): b4 goes on without them.
    gets = [urllib.parse.unquote(path) for method, path in requests if method == "GET"]
    assert sorted(gets) == sorted(f"/raid/{root}/t.mbox.gz" for root in SERIES for _command in ("mbox", "am"))
    assert all(method in ("GET", "POST") for method, _path in requests)
    assert all("?x=m" in path for method, path in requests if method == "POST")


def _wait_for(port: int) -> None:
    import socket
    import time

    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
