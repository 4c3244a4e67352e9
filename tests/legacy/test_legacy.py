"""Legacy redirect maps: the old archive's URLs (MHonArc, HyperKitty) lead to their
messages' permanent URLs, as static pages and as server maps that agree with each other;
removed messages' old URLs lead to their tombstones; incremental builds stay equal to
a clean build."""

from __future__ import annotations

import calendar
import email
import gzip
import html
import http.client
import json
import mailbox
import posixpath
import re
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from listlib.config import load_config
from listlib.errors import BuildError, ConfigError
from listlib.legacy.hyperkitty import hyperkitty_hash
from listlib.legacy.importer import import_legacy
from listlib.store.core import Store

from ..build.test_build import add, build, post, tree
from ..support.helpers import SITE_TOML, mboxrd, run_listlib
from ..support.pipermail import Article, write_pipermail
from ..support.webservers import WebServer, apache_missing, nginx_missing, public_copy, start_apache, start_nginx

# Message-ID -> Message-ID-Hash. The first is the vector of HyperKitty's own test suite
# (hyperkitty/tests/lib/test_utils.py, test_get_message_id_hash) and of Mailman's message
# store documentation; the others are the Message-ID-Hash headers Mailman 3 wrote on
# real list mail (the same function: HyperKitty names messages by that header's value).
HYPERKITTY_VECTORS = [
    ("<87myycy5eh.fsf@uwakimon.sk.tsukuba.ac.jp>", "JJIGKPKB6CVDX6B2CUG4IHAJRIQIOUTP"),
    ("<175815674591.268333.2624904445631478642.b4-ty@kernel.org>", "QM74LZKADEYWWGUAL35Y6RZCJL5LZ3SS"),
    ("<20220506141009.18047-1-christian.koenig@amd.com>", "MOGQN3TBLB5ZRRF5VEVBPCWDM3AJXIXR"),
    ("<20230310144733.1546413-1-robh@kernel.org>", "4GKMX7ISRT2B5265UD4CM4BJCTPSCBS7"),
    ("<CAPcyv4jF6ofAmXrcNXsK-vaSD8ptzhH4SrcaksD_wSwrsYi0KA@mail.gmail.com>", "LOAUX6IDCXJAJ6HP5ZDNJW3NNUTOPFKX"),
    ("<20200426095232.27524-1-redhairer.li@intel.com>", "PKZPQ3YQH4223CJAA7KWJMB2QM7HSWTL"),
    ("<CAGEkeHdOWdUhjE5daUNd-nMAS7qx6+o_9=vKczbK8+VXqmdTiA@mail.gmail.com>", "B4BIS57EAELBMTQWPUNBEWPQLNXFPJQ5"),
]

HYPERKITTY_TOML = """
[lists.dev.legacy]
kind = "hyperkitty"
path = "hyperkitty"
"""


@pytest.mark.parametrize(("message_id", "expected"), HYPERKITTY_VECTORS)
def test_hyperkitty_hashes_agree_with_hyperkitty(message_id: str, expected: str) -> None:
    assert hyperkitty_hash(message_id) == expected
    assert hyperkitty_hash(message_id.strip("<>")) == expected


# -- what the build made, read back ---------------------------------------------------------

_REFRESH_RE = re.compile(r'<meta http-equiv="refresh" content="0; url=([^"]+)">')
_CANONICAL_RE = re.compile(r'<link rel="canonical" href="([^"]+)">')


def redirect_of(output: Path, page: str) -> str:
    """Where a static redirect page leads, as a path in output/ (its refresh, canonical
    link and plain link must agree)."""
    text = (output / page).read_text()
    assert 'content="noindex' in text
    refresh = html.unescape(_REFRESH_RE.search(text).group(1))  # type: ignore[union-attr]
    target = posixpath.normpath(posixpath.join(posixpath.dirname(page), refresh))
    canonical = html.unescape(_CANONICAL_RE.search(text).group(1))  # type: ignore[union-attr]
    assert canonical.endswith("/" + target)
    assert f'<a href="{html.escape(refresh)}">' in text
    return target


def server_maps(output: Path, base: str) -> dict[str, dict[str, str]]:
    """Old URL -> target (paths in output/) as each of the three map files says."""

    def strip(url: str) -> str:
        assert url.startswith(base), url
        return url[len(base) :]

    maps: dict[str, dict[str, str]] = {"netlify": {}, "nginx": {}, "apache": {}}
    for line in (output / "_redirects").read_text().splitlines():
        if line and not line.startswith("#"):
            old, new, status = line.split()
            assert status == "301"
            maps["netlify"][strip(old)] = strip(new)
    for line in (output / "_legacy/nginx-map.conf").read_text().splitlines():
        if line and not line.startswith("#"):
            found = re.fullmatch(r'"([^"]+)" "([^"]+)";', line)
            assert found, line
            maps["nginx"][strip(found.group(1))] = strip(found.group(2))
    for line in (output / "_legacy/apache-rewritemap.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            old, new = line.split()
            maps["apache"][strip(old)] = strip(new)
    return maps


def page_of(url: str) -> str:
    return url + "index.html" if url.endswith("/") else url


def check_agreement(output: Path, base: str) -> dict[str, str]:
    """The three maps and the redirect pages say the same, and every target exists."""
    maps = server_maps(output, base)
    assert maps["netlify"] == maps["nginx"] == maps["apache"]
    mapped = maps["netlify"]
    for old, target in mapped.items():
        assert redirect_of(output, page_of(old)) == target, old
        assert (output / target).is_file(), target
    return mapped


def row_of(root: Path, call: str):  # type: ignore[no-untyped-def]
    with Store(root / "content").open() as store:
        (row,) = store.index.rows_by_call([call])
        return row


# -- MHonArc ----------------------------------------------------------------------------------

MONTHS = [f"{year}-{month}" for year in (2010, 2011) for month in calendar.month_name[1:]]
"""Two years of imagej-devel: 500 messages."""


@pytest.fixture
def mhonarc_site(corpora: Path, tmp_path: Path) -> Path:
    """A site whose list 'imagej' had an MHonArc archive, made by the real mhonarc from
    the same mbox the store was filed from; mapped and built."""
    if shutil.which("mhonarc") is None:
        pytest.skip("mhonarc is not installed (Debian package mhonarc)")
    mbox = tmp_path / "old.mbox"
    mbox.write_bytes(
        b"".join(gzip.decompress((corpora / f"pipermail/imagej-devel/{m}.txt.gz").read_bytes()) for m in MONTHS)
    )
    old = tmp_path / "mhonarc"
    old.mkdir()
    subprocess.run(["mhonarc", "-quiet", "-outdir", str(old), str(mbox)], check=True, timeout=300)
    root = tmp_path / "site"
    root.mkdir()
    (root / "listlib.toml").write_text(
        '[site]\ntitle = "Old"\nbase_url = "https://example.org/archive/"\n\n'
        '[lists.imagej]\naddresses = ["imagej-devel@imagej.net"]\n\n'
        f'[lists.imagej.legacy]\nkind = "mhonarc"\npath = "old/imagej"\nsource = "{old}"\n'
    )
    run_listlib("import", "--list", "imagej", mbox, cwd=root, check=True)
    result = run_listlib("legacy", "import", cwd=root, check=True)
    assert "not matched" not in result.stderr
    run_listlib("build", "-q", cwd=root, check=True)
    return root


def old_message_pages(root: Path) -> dict[str, str]:
    """msgNNNNN.html -> the Message-ID MHonArc recorded in it."""
    found = {}
    for page in sorted((root.parent / "mhonarc").glob("msg*.html")):
        recorded = re.search(r"<!--X-Message-Id: (.*?) -->", page.read_text(errors="replace"))
        assert recorded, page
        found[page.name] = html.unescape(recorded.group(1))
    return found


def test_every_mhonarc_message_page_redirects_to_its_message(mhonarc_site: Path) -> None:
    output = mhonarc_site / "output"
    pages = old_message_pages(mhonarc_site)
    assert len(pages) > 400
    for name, message_id in pages.items():
        target = redirect_of(output, f"old/imagej/{name}")
        assert (output / target).is_file()
        call = posixpath.basename(target).removesuffix(".html")
        row = row_of(mhonarc_site, call)
        assert row is not None and row.message_id == message_id, name
    for index in ("maillist.html", "threads.html"):
        assert redirect_of(output, f"old/imagej/{index}") == "imagej/index.html"


def test_redirect_pages_and_server_maps_agree(mhonarc_site: Path) -> None:
    mapped = check_agreement(mhonarc_site / "output", "/archive/")
    assert len(mapped) == len(old_message_pages(mhonarc_site)) + 2


def answers(server: WebServer, urls: list[str]) -> dict[str, tuple[int, str]]:
    """URL path -> (status, Location path) as a real server answers, without following."""
    port = int(server.url.rsplit(":", 1)[1].strip("/"))
    found = {}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for url in urls:
            connection.request("GET", url)
            response = connection.getresponse()
            response.read()
            location = response.getheader("Location") or ""
            found[url] = (response.status, location.removeprefix(server.url[:-1]))
    finally:
        connection.close()
    return found


@pytest.mark.parametrize("kind", ["nginx", "apache"])
def test_real_servers_redirect_every_old_url_with_a_301_by_the_maps(mhonarc_site: Path, kind: str) -> None:
    missing = nginx_missing() if kind == "nginx" else apache_missing()
    if missing:
        pytest.skip(missing)
    docroot = public_copy(mhonarc_site / "output")
    work = mhonarc_site.parent / f"{kind}-work"
    work.mkdir()
    if kind == "nginx":
        server = start_nginx(
            docroot,
            work,
            http=f"  map $uri $listlib_legacy {{ include {docroot}/_legacy/nginx-map.conf; }}\n",
            server="    if ($listlib_legacy) { return 301 $listlib_legacy; }\n",
        )
    else:
        server = start_apache(
            docroot,
            work,
            modules=("rewrite",),
            extra=(
                "RewriteEngine on\n"
                f'RewriteMap listlib_legacy "txt:{docroot}/_legacy/apache-rewritemap.txt"\n'
                'RewriteCond ${listlib_legacy:%{REQUEST_URI}} !=""\n'
                "RewriteRule ^ ${listlib_legacy:%{REQUEST_URI}} [R=301,L]\n"
            ),
        )
    try:
        mapped = server_maps(docroot, "/archive/")["netlify"]
        urls = [f"/archive/{old}" for old in mapped]
        got = answers(server, [*urls, "/imagej/index.html"])
    finally:
        server.stop()
        shutil.rmtree(docroot.parent)
    assert {url: got[url] for url in urls} == {
        f"/archive/{old}": (301, f"/archive/{new}") for old, new in mapped.items()
    }
    assert got["/imagej/index.html"] == (200, "")  # a page of the site itself is no redirect


def test_an_old_url_of_a_removed_message_leads_to_its_tombstone(mhonarc_site: Path) -> None:
    output = mhonarc_site / "output"
    before = redirect_of(output, "old/imagej/msg00010.html")
    call = posixpath.basename(before).removesuffix(".html")
    run_listlib("remove", call, "--reason", "asked", "--build", cwd=mhonarc_site, check=True)
    assert redirect_of(output, "old/imagej/msg00010.html") == before
    assert "Removed message" in (output / before).read_text()
    check_agreement(output, "/archive/")


def test_an_old_url_of_a_hidden_message_leads_nowhere_until_it_is_shown_again(mhonarc_site: Path) -> None:
    output = mhonarc_site / "output"
    page = output / "old/imagej/msg00011.html"
    call = posixpath.basename(redirect_of(output, "old/imagej/msg00011.html")).removesuffix(".html")
    run_listlib("hide", call, "--reason", "spam", "--build", cwd=mhonarc_site, check=True)
    assert not page.exists()
    assert "msg00011.html" not in (output / "_redirects").read_text()
    check_agreement(output, "/archive/")
    run_listlib("unhide", call, "--build", cwd=mhonarc_site, check=True)
    assert page.exists() and "msg00011.html" in (output / "_redirects").read_text()


def test_an_old_page_that_matches_no_message_is_reported_with_the_reason(mhonarc_site: Path) -> None:
    stray = mhonarc_site.parent / "mhonarc" / "msg99999.html"
    stray.write_text("<!-- MHonArc v2.6.19 -->\n<!--X-Message-Id: nowhere&#64;example.org -->\n")
    result = run_listlib("legacy", "import", "--dry-run", cwd=mhonarc_site, check=True)
    assert "not matched: msg99999.html: no message of list 'imagej' has Message-ID <nowhere@example.org>" in (
        result.stderr
    )


# -- Pipermail ---------------------------------------------------------------------------------

PIPERMAIL_YEARS = ("2010", "2011", "2012")
"""Three years of imagej-devel: 1,400 messages."""


def message_id_of(raw: bytes) -> str:
    return str(email.message_from_bytes(raw).get("Message-ID", "")).strip().strip("<>")


def pipermail_site(corpora: Path, tmp_path: Path, *, with_message_ids: bool) -> tuple[Path, list[Article], str]:
    """A site whose list 'imagej' had a Pipermail archive (written by tests/support/pipermail.py
    from the same mail); the store lacks one of its messages. (site, articles, the missing
    one's Message-ID.)"""
    months = sorted((corpora / "pipermail/imagej-devel").glob("*.txt.gz"), key=lambda p: p.name)
    mbox = tmp_path / "old.mbox"
    mbox.write_bytes(b"".join(gzip.decompress(p.read_bytes()) for p in months if p.name.startswith(PIPERMAIL_YEARS)))
    old = tmp_path / "pipermail"
    articles = write_pipermail([mbox], old, "imagej-devel@imagej.net", with_message_ids=with_message_ids)
    missing = articles[len(articles) // 2].message_id
    old_mail = mailbox.mbox(mbox, create=False)
    kept = [old_mail.get_bytes(key) for key in old_mail.iterkeys()]
    old_mail.close()
    store_mbox = tmp_path / "store.mbox"
    store_mbox.write_bytes(mboxrd([raw for raw in kept if message_id_of(raw) != missing]))
    root = tmp_path / "site"
    root.mkdir()
    (root / "listlib.toml").write_text(
        '[site]\ntitle = "Old"\nbase_url = "https://example.org/"\n\n'
        '[lists.imagej]\naddresses = ["imagej-devel@imagej.net"]\n\n'
        f'[lists.imagej.legacy]\nkind = "pipermail"\npath = "pipermail/imagej-devel"\nsource = "{old}"\n'
    )
    run_listlib("import", "--list", "imagej", store_mbox, cwd=root, check=True)
    return root, articles, missing


@pytest.mark.parametrize("with_message_ids", [False, True], ids=["pages-without-message-ids", "mailman-2.1-pages"])
def test_every_pipermail_article_redirects_to_its_message(
    corpora: Path, tmp_path: Path, with_message_ids: bool
) -> None:
    root, articles, missing = pipermail_site(corpora, tmp_path, with_message_ids=with_message_ids)
    assert len(articles) > 1000
    result = run_listlib("legacy", "import", "--json", cwd=root, check=True)
    (report,) = json.loads(result.stdout)
    (lost,) = [a for a in articles if a.message_id == missing]
    assert report["unmatched"] == [{"url": lost.path, "reason": report["unmatched"][0]["reason"]}]
    # Its subject, author and date, and why: no message of theirs, or none with its text.
    assert re.match(
        r"(no stored message of list 'imagej' is|the text of) '.+' from '.+' of 20", report["unmatched"][0]["reason"]
    )
    run_listlib("build", "-q", cwd=root, check=True)
    output = root / "output"
    for article in articles:
        page = f"pipermail/imagej-devel/{article.path}"
        if article.message_id == missing:
            assert not (output / page).exists()
            continue
        target = redirect_of(output, page)
        row = row_of(root, posixpath.basename(target).removesuffix(".html"))
        assert row.message_id == article.message_id, article.path
    for month in {a.month for a in articles}:
        year, name = month.split("-")
        expected = f"imagej/{year}/{list(calendar.month_name).index(name):02d}/index.html"
        for index in ("thread", "date", "author", "subject"):
            assert redirect_of(output, f"pipermail/imagej-devel/{month}/{index}.html") == expected
        mbox = f"imagej/{year}/{list(calendar.month_name).index(name):02d}/imagej-{year}-"
        assert redirect_of(output, f"pipermail/imagej-devel/{month}.txt.gz").startswith(mbox)
    assert redirect_of(output, "pipermail/imagej-devel/index.html") == "imagej/index.html"
    check_agreement(output, "/")


def test_a_pipermail_article_of_a_removed_message_leads_to_its_tombstone(corpora: Path, tmp_path: Path) -> None:
    root, articles, _missing = pipermail_site(corpora, tmp_path, with_message_ids=True)
    chosen = articles[10]
    with Store(root / "content").open() as store:
        (row,) = store.index.rows_by_message_id("imagej", chosen.message_id)
    run_listlib("remove", row.call, "--reason", "asked", cwd=root, check=True)
    run_listlib("legacy", "import", cwd=root, check=True)
    run_listlib("build", "-q", cwd=root, check=True)
    target = redirect_of(root / "output", f"pipermail/imagej-devel/{chosen.path}")
    assert target.endswith(f"/{row.call}.html")
    assert "Removed message" in (root / "output" / target).read_text()


# -- HyperKitty, and the incremental build --------------------------------------------------


def hyperkitty_site(site: Path) -> None:
    (site / "listlib.toml").write_text(SITE_TOML + HYPERKITTY_TOML)


def test_hyperkitty_urls_lead_to_their_messages_months_and_list(site: Path) -> None:
    hyperkitty_site(site)
    add(site, post(1, "Plans"), post(2, "Re: Plans", reply_to=1, refs=(1,)), post(3, "Other"))
    (report,) = import_legacy(load_config(site / "listlib.toml"))
    assert report.messages == 3 + 2 and report.unmatched == []  # three messages, two thread starters
    build(site)
    output = site / "output"
    base = "hyperkitty/list/dev@lists.example.org/"
    for n in (1, 2, 3):
        digest = hyperkitty_hash(f"<m{n}@example.org>")
        target = redirect_of(output, f"{base}message/{digest}/index.html")
        assert row_of(site, posixpath.basename(target)[:-5]).message_id == f"m{n}@example.org"
    assert (output / f"{base}thread/{hyperkitty_hash('m1@example.org')}/index.html").is_file()
    assert not (output / f"{base}thread/{hyperkitty_hash('m2@example.org')}/index.html").exists()
    assert redirect_of(output, f"{base}2024/3/index.html") == "dev/2024/03/index.html"
    assert redirect_of(output, f"{base}2024/03/index.html") == "dev/2024/03/index.html"
    assert redirect_of(output, f"{base}index.html") == "dev/index.html"
    check_agreement(output, "/")


def test_incremental_builds_with_legacy_maps_give_the_same_bytes_as_a_clean_build(site: Path) -> None:
    hyperkitty_site(site)
    config = site / "listlib.toml"
    add(site, post(1, "Plans"), post(2, "Re: Plans", reply_to=1, refs=(1,)), post(3, "Other"), post(40, "May"))
    import_legacy(load_config(config))
    build(site)
    add(site, post(4, "Re: Other", reply_to=3, refs=(3,), body="Later mail, no old URL.\n"))
    build(site)
    with Store(site / "content").open() as store:
        calls = {n: store.index.rows_by_message_id("dev", f"m{n}@example.org")[0].call for n in (1, 2, 3, 40)}
    may = "hyperkitty/list/dev@lists.example.org/2024/5/index.html"
    assert redirect_of(site / "output", may) == "dev/2024/05/index.html"
    run_listlib("hide", calls[40], "--reason", "spam", cwd=site, check=True)  # May is empty now
    build(site)
    assert redirect_of(site / "output", may) == "dev/index.html"
    run_listlib("hide", calls[3], "--reason", "spam", cwd=site, check=True)
    report = build(site)
    assert sum(path.startswith("hyperkitty/") for path in report.removed) == 2  # its message and thread URLs
    run_listlib("remove", calls[2], "--reason", "asked", cwd=site, check=True)
    build(site)
    add(site, post(5, "Much later", body="A new month.\n"), post(6, "Earlier", body="x\n"))
    import_legacy(load_config(config))  # the map now holds 5 and 6 too
    build(site)
    incremental = tree(site / "output")
    shutil.rmtree(site / ".cache")
    build(site, clean=True)
    assert tree(site / "output") == incremental
    check_agreement(site / "output", "/")


def test_a_legacy_table_without_its_map_stops_the_build(site: Path) -> None:
    hyperkitty_site(site)
    add(site, post(1, "Plans"))
    with pytest.raises(BuildError, match=r"lists\.dev\.legacy: the old archive is not mapped yet"):
        build(site)
    result = run_listlib("build", cwd=site)
    assert result.returncode == 1 and "listlib legacy import dev" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('kind = "hypermail"\npath = "old"', "lists.dev.legacy.kind: 'hypermail' is not one of"),
        ('kind = "mhonarc"\npath = "old"', "lists.dev.legacy.source: is required for kind = 'mhonarc'"),
        ('kind = "hyperkitty"\npath = "../up"', "lists.dev.legacy.path: '../up' is not a path relative"),
        ('kind = "hyperkitty"\npath = "old archive"', "lists.dev.legacy.path: 'old archive' may hold only letters"),
        ('kind = "hyperkitty"\npath = "mid/old"', "lists.dev.legacy.path: 'mid/old' is inside the site's own /mid/"),
        ('kind = "hyperkitty"\npath = "announce/old"', "lists.dev.legacy.path: 'announce/old' is inside list"),
        ('kind = "pipermail"\npath = ""\nsource = "."', "lists.dev.legacy.path: a Pipermail archive's index.html"),
        (
            'kind = "hyperkitty"\npath = "old"\nsorce = "x"',
            "lists.dev.legacy.sorce: unknown key (did you mean source?)",
        ),
    ],
)
def test_a_bad_legacy_table_is_an_error_naming_the_key(site: Path, table: str, problem: str) -> None:
    (site / "listlib.toml").write_text(SITE_TOML + f"\n[lists.dev.legacy]\n{table}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(site / "listlib.toml")
    assert problem in str(raised.value)


def test_legacy_import_without_an_old_archive_is_a_clear_error(site: Path) -> None:
    result = run_listlib("legacy", "import", cwd=site)
    assert result.returncode == 1 and "no list has a [lists.<slug>.legacy] table" in result.stderr
    result = run_listlib("legacy", "import", "dev", cwd=site)
    assert result.returncode == 1 and "lists.dev.legacy: no such table" in result.stderr
    (site / "listlib.toml").write_text(
        SITE_TOML + '\n[lists.dev.legacy]\nkind = "mhonarc"\npath = "o"\nsource = "gone"\n'
    )
    result = run_listlib("legacy", "import", cwd=site)
    assert result.returncode == 1 and "lists.dev.legacy.source:" in result.stderr and "is not a folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_damaged_map_stops_the_build_naming_its_line(site: Path) -> None:
    hyperkitty_site(site)
    add(site, post(1, "Plans"))
    import_legacy(load_config(site / "listlib.toml"))
    map_file = site / "content/dev/legacy.tsv"
    map_file.write_text(map_file.read_text() + "list/x/message/Y/\tnot-a-call\t2024-03\n")
    with pytest.raises(BuildError, match=r"legacy\.tsv, line \d+: not a line of a legacy map"):
        build(site)


def test_hyperkitty_urls_of_a_message_id_used_twice_lead_to_the_earliest(site: Path) -> None:
    # HyperKitty archives one message per Message-ID; linux-raid has 37 Message-IDs used twice.
    hyperkitty_site(site)
    add(site, post(1, "First"))
    add(site, post(1, "Second", body="Another message with the same Message-ID.\n", at=timedelta(days=40)))
    (report,) = import_legacy(load_config(site / "listlib.toml"))
    (note,) = report.notes
    assert note.startswith("1 message with the Message-ID of an earlier one: HyperKitty archived only the earliest")
    build(site)
    page = f"hyperkitty/list/dev@lists.example.org/message/{hyperkitty_hash('m1@example.org')}/index.html"
    assert redirect_of(site / "output", page).startswith("dev/2024/03/")


def test_without_pages_only_the_server_maps_redirect(site: Path) -> None:
    (site / "listlib.toml").write_text(SITE_TOML + HYPERKITTY_TOML + "pages = false\n")
    add(site, post(1, "Plans"), post(2, "Re: Plans", reply_to=1, refs=(1,)))
    import_legacy(load_config(site / "listlib.toml"))
    build(site)
    output = site / "output"
    assert not (output / "hyperkitty").exists()
    mapped = server_maps(output, "/")  # two messages, a thread, the list, its month (2024/3/, 2024/03/)
    assert mapped["netlify"] == mapped["nginx"] == mapped["apache"] and len(mapped["netlify"]) == 6
    assert all((output / target).is_file() for target in mapped["netlify"].values())
    (site / "listlib.toml").write_text(SITE_TOML + HYPERKITTY_TOML)  # pages again
    build(site)
    assert check_agreement(output, "/") == mapped["netlify"]


def test_check_reports_a_missing_map_and_old_urls_of_messages_the_store_lacks(site: Path) -> None:
    hyperkitty_site(site)
    add(site, post(1, "Plans"))
    result = run_listlib("check", cwd=site)
    assert result.returncode == 1 and "lists.dev.legacy: the old archive is not mapped yet (" in result.stderr
    assert "legacy.tsv is missing); run 'listlib legacy import dev'" in result.stderr
    import_legacy(load_config(site / "listlib.toml"))
    assert run_listlib("check", cwd=site).returncode == 0
    map_file = site / "content/dev/legacy.tsv"
    map_file.write_text(map_file.read_text() + "list/dev@lists.example.org/message/GONE/\t0Zzzzzzz\t2024-03\n")
    result = run_listlib("check", cwd=site)
    assert result.returncode == 1
    assert "legacy.tsv: 1 old URL without a message in list 'dev' (no redirect)" in result.stderr
