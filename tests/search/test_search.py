"""Search: the tokenizer (shared vectors with the JS client), queries through the
Python reader and ``listlib search``, the same answers from the JS client under node,
incremental updates (one new message -> one small segment and the manifest),
merging, and removed, redacted and X-No-Archive messages never found."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from listlib.config import load_config
from listlib.search.analysis import words
from listlib.search.reader import Source, search
from listlib.store.core import Store
from listlib.verify import repair_store

from ..build.test_build import add, build, call_of, post
from ..support.helpers import REPO, make_message, run_listlib

VECTORS = json.loads((REPO / "tests/data/search_vectors.json").read_text(encoding="utf-8"))
SEARCH_JS = REPO / "listlib/themes/default/static/search.js"
NODE = shutil.which("node")

MESSAGES = [
    post(1, "RAID5 write hole", body="The write hole in raid5 is closed by the journal device.\n"),
    post(2, "Re: RAID5 write hole", reply_to=1, refs=(1,), body="> The write hole in raid5\n\nUse a bitmap instead.\n"),
    post(3, "mdadm.conf question", body="Where does mdadm.conf live on Debian? The reshape failed.\n"),
    post(4, "Reshape stuck at 99%", body="My reshape of md0 is stuck. Resyncing never finishes.\n"),
    post(5, "数据库 on RAID", body="数据库系统 runs on raid10 with a write-intent bitmap.\n"),
    post(6, "Straße und Größe", body="Die STRASSE ist groß; café naïve.\n", at=timedelta(days=40)),
    post(7, "Bitmap reshape journal", body="Journal, bitmap and reshape all in one message.\n", at=timedelta(days=80)),
]
QUERIES = [
    "raid5",
    "write hole",
    '"write hole"',
    '"hole write"',
    "bitmap -journal",
    "resh*",
    "from:person",
    "from:p1",
    "subject:reshape",
    'subject:"write hole"',
    "mdadm.conf",
    "数据",
    "数据库系统",
    "strasse",
    "GRÖSSE",
    "cafe",
    "café",
    "reshape after:2024-05",
    "reshape before:2024-05",
    "bitmap list:dev",
    "bitmap list:announce",
    "journal OR",
    "nothing-like-this",
    "-bitmap",
    "re: raid5",
]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["text"][:20] or "empty")
def test_tokenizer_follows_the_shared_vectors(vector: dict[str, object]) -> None:
    assert words(str(vector["text"])) == vector["tokens"]


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_js_tokenizer_follows_the_shared_vectors() -> None:
    texts = [v["text"] for v in VECTORS]
    out = _node({"vectors": texts}, REPO)
    assert out == [v["tokens"] for v in VECTORS]


def _node(payload: object, index: Path) -> object:
    result = subprocess.run(
        [NODE, str(REPO / "tests/support/search_node.js"), str(SEARCH_JS), str(index) + "/"],  # type: ignore[list-item]
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(result.stdout)


def assert_twins_match(folder: Path) -> None:
    """Every file of the index has a script twin that carries its bytes (and every twin a file)."""
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {"index.html"}
    data = {p for p in files if not p.endswith(".js")}
    assert {p for p in files if p.endswith(".js")} == {p + ".js" for p in data}
    assert any(p.startswith("seg/") for p in data)
    for path in data:
        twin = (folder / (path + ".js")).read_bytes()
        head = b"ListlibSearch.put(" + json.dumps(path.rpartition("/")[2]).encode() + b","
        assert twin.startswith(head) and twin.endswith(b");\n"), path
        payload = twin[len(head) : -3]
        original = (folder / path).read_bytes()
        carried = payload if path.endswith(".json") else base64.b64decode(json.loads(payload))
        assert carried == original, path


@pytest.fixture
def searched_site(site: Path) -> Path:
    add(site, *MESSAGES)
    build(site)
    return site


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def found(site: Path, query: str, **options: object) -> list[str]:
    """Subjects of the hits, best first."""
    results = search(Source(site / "output/search"), query, **options)  # type: ignore[arg-type]
    return [hit.subject for hit in results.hits]


def test_queries_find_what_they_should(searched_site: Path) -> None:
    site = searched_site
    assert set(found(site, "raid5")) == {"RAID5 write hole", "Re: RAID5 write hole"}
    assert found(site, '"write hole"')[0] == "RAID5 write hole"
    assert found(site, '"hole write"') == []
    assert found(site, "bitmap -journal") == ["Re: RAID5 write hole", "数据库 on RAID"]
    assert set(found(site, "resh*")) == {"mdadm.conf question", "Reshape stuck at 99%", "Bitmap reshape journal"}
    assert set(found(site, "subject:reshape")) == {"Reshape stuck at 99%", "Bitmap reshape journal"}
    assert found(site, "mdadm.conf") == ["mdadm.conf question"]
    assert found(site, "数据") == ["数据库 on RAID"]
    assert found(site, "数据库系统") == ["数据库 on RAID"]
    assert found(site, "strasse") == ["Straße und Größe"]
    assert found(site, "GRÖSSE") == ["Straße und Größe"]
    assert found(site, "reshape after:2024-05") == ["Bitmap reshape journal"]
    assert len(found(site, "reshape before:2024-05")) == 2
    assert len(found(site, "bitmap list:dev")) == 3
    assert found(site, "bitmap list:announce") == []
    # Addresses are obfuscated on this site: authors are found by name (and domain) only.
    assert set(found(site, 'from:"person 1"')) == {"RAID5 write hole", "Reshape stuck at 99%", "Bitmap reshape journal"}
    assert found(site, "from:p1") == []
    # The quoted line of message 2 is not indexed: only message 1 has "closed".
    assert found(site, "closed") == ["RAID5 write hole"]
    # Subjects weigh more than bodies.
    assert found(site, "journal")[0] == "Bitmap reshape journal"


def test_results_are_paged(searched_site: Path) -> None:
    every = found(searched_site, "resh*", limit=10)
    assert len(every) == 3
    pages = [found(searched_site, "resh*", offset=i, limit=1) for i in range(4)]
    assert [p[0] for p in pages[:3]] == every and pages[3] == []


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_js_client_gives_the_python_readers_results(searched_site: Path) -> None:
    add(searched_site, *[post(n, f"Bitmap topic {n}", body=f"bitmap reshape number {n}\n") for n in range(20, 60)])
    build(searched_site)  # a second segment
    source_dir = searched_site / "output/search"
    cases = [{"q": q} for q in QUERIES] + [{"q": "bitmap", "offset": 5, "limit": 7}, {"q": "resh*", "lists": ["dev"]}]
    expected = []
    for case in cases:
        offset, limit, lists = case.get("offset", 0), case.get("limit", 10), case.get("lists")
        results = search(Source(source_dir), case["q"], offset=offset, limit=limit, lists=lists)
        expected.append({"total": results.total, "hits": [[h.call, h.score] for h in results.hits]})
    got = _node(cases, source_dir)
    assert [{"total": g["total"], "hits": g["hits"]} for g in got] == expected  # type: ignore[union-attr,index]
    assert sum(e["total"] for e in expected) > 50


def test_one_new_message_writes_one_small_segment_and_the_manifest(searched_site: Path) -> None:
    folder = searched_site / "output/search"
    before = tree(folder)
    add(searched_site, post(30, "A late question about raid6"))
    report = build(searched_site)
    assert report.search.indexed == 1
    after = tree(folder)
    changed = {path for path in after if before.get(path) != after[path]}
    new_segments = {path.split("/")[1] for path in changed if path.startswith("seg/")}
    assert len(new_segments) == 1
    assert changed - {p for p in changed if p.startswith("seg/")} == {"manifest.json", "manifest.json.js"}
    assert all(p in after and after[p] == before[p] for p in before if not p.startswith("manifest.json"))
    files = [p for p in changed if p.startswith("seg/") and not p.endswith(".js")]
    # meta, one dictionary chunk, postings, positions, one display chunk: every day is in the meta
    assert sorted(p.split("/")[2] for p in files) == ["d0.json", "meta.json", "p0.bin", "q0.bin", "t0.json"]
    assert sum(len(after[p]) for p in files) < 4000
    assert {p for p in changed if p.endswith(".js")} == {"manifest.json.js", *(p + ".js" for p in files)}
    assert found(searched_site, "raid6") == ["A late question about raid6"]
    assert build(searched_site).search.indexed == 0
    assert tree(folder) == after


def test_search_from_disk_can_be_turned_off_and_on_again(searched_site: Path) -> None:
    folder = searched_site / "output/search"
    toml = searched_site / "listlib.toml"
    answers = found(searched_site, "bitmap")
    assert_twins_match(folder)
    toml.write_text(toml.read_text().replace("search_from_disk = true", "search_from_disk = false"))
    assert build(searched_site).search.rebuilt
    assert [p for p in folder.rglob("*.js")] == [] and found(searched_site, "bitmap") == answers
    add(searched_site, post(30, "A late bitmap question"))
    build(searched_site)
    assert [p for p in folder.rglob("*.js")] == [] and len(found(searched_site, "bitmap")) == len(answers) + 1
    toml.write_text(toml.read_text().replace("search_from_disk = false", "search_from_disk = true"))
    assert build(searched_site).search.rebuilt
    assert_twins_match(folder)


def test_removed_and_redacted_messages_disappear(searched_site: Path) -> None:
    site = searched_site
    assert found(site, "resyncing") == ["Reshape stuck at 99%"]
    _call, path = call_of(site, 4)
    (site / "content" / path).unlink()
    _call, path = call_of(site, 3)
    stored = site / "content" / path
    stored.write_bytes(stored.read_bytes().replace(b"Debian", b"[redacted]"))
    with Store(site / "content").open(discard_damaged_index=True) as store:
        repair_store(store)
    report = build(site)
    assert report.search.removed == 2 and report.search.indexed == 1
    assert found(site, "resyncing") == []
    assert found(site, "debian") == []
    assert found(site, "redacted") == ["mdadm.conf question"]


def test_x_no_archive_messages_are_not_indexed(site: Path) -> None:
    add(site, post(1, "Secret plans", body="zanzibar\n", extra={"X-No-Archive": "yes"}), post(2, "Open plans"))
    build(site)
    assert found(site, "zanzibar") == [] and found(site, "secret") == []
    assert found(site, "plans") == ["Open plans"]
    assert b"zanzibar" not in b"".join(tree(site / "output/search").values())


def test_obfuscated_addresses_never_reach_the_index(site: Path) -> None:
    body = "Mail me at secret.person@corp.example please.\n"
    add(site, make_message("Hi", body, sender="Al <al.longname@host.example>"))
    build(site)
    blob = b"".join(tree(site / "output/search").values())
    assert b"longname" not in blob and b"secret.person" not in blob and b"person" not in blob
    assert found(site, "from:al") == ["Hi"]


def test_segments_merge_and_stay_few(site: Path) -> None:
    for n in range(1, 14):
        add(site, post(n, f"Topic {n}", body="common words here\n"))
        build(site)
    manifest = json.loads((site / "output/search/manifest.json").read_text())
    assert len(manifest["segments"]) <= 4
    assert len(list((site / "output/search/seg").iterdir())) <= 2 * len(manifest["segments"]) + 4
    assert len(found(site, "common", limit=50)) == 13
    # Deleted messages are tombstones until their segment is merged, then gone from it.
    for n in (2, 3):
        _call, path = call_of(site, n)
        (site / "content" / path).unlink()
    with Store(site / "content").open(discard_damaged_index=True) as store:
        repair_store(store)
    build(site)
    assert sorted(found(site, "common", limit=50)) == sorted(f"Topic {n}" for n in range(1, 14) if n not in (2, 3))
    for n in range(14, 30):
        add(site, post(n, f"Topic {n}", body="common words here\n"))
        build(site)
    manifest = json.loads((site / "output/search/manifest.json").read_text())
    assert len(manifest["segments"]) <= 6  # at most 3 of each size tier (1-7 and 8-63 messages)
    assert manifest["live"] == 27 == len(found(site, "common", limit=50))
    assert sum(len(info["deleted"]) for info in manifest["segments"]) <= 2


def test_build_clean_rebuilds_the_index(searched_site: Path) -> None:
    first = found(searched_site, "bitmap")
    report = build(searched_site, clean=True)
    assert report.search.rebuilt and report.search.indexed == len(MESSAGES)
    assert found(searched_site, "bitmap") == first
    shutil.rmtree(searched_site / "output/search")
    assert build(searched_site).search.indexed == len(MESSAGES)


def test_an_index_of_the_format_before_is_rebuilt(searched_site: Path) -> None:
    """Format 3 had a ``days.bin`` in each segment; the readers no longer read it, and a
    build after the upgrade writes the index again in the format the readers expect."""
    first = found(searched_site, "bitmap")
    folder = searched_site / "output/search"
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "format": 3}))
    report = build(searched_site)
    assert report.search.rebuilt and report.search.indexed == len(MESSAGES)
    assert json.loads((folder / "manifest.json").read_text())["format"] == 4
    assert not list(folder.glob("seg/*/days.bin"))
    assert found(searched_site, "bitmap") == first


def test_cli_search(searched_site: Path) -> None:
    result = run_listlib("search", "write", "hole", "--json", "--limit", "1", cwd=searched_site, check=True)
    data = json.loads(result.stdout)
    assert data["total"] == 2 and len(data["hits"]) == 1
    hit = data["hits"][0]
    assert hit["message_id"] == "m1@example.org" and hit["url"].startswith("https://lists.example.org/dev/2024/")
    assert set(hit) >= {"message_id", "call", "url", "subject", "date", "score"}
    excluded = run_listlib("search", "--json", "--", "bitmap", "-journal", cwd=searched_site, check=True).stdout
    assert json.loads(excluded)["total"] == 2
    text = run_listlib("search", "bitmap", "--list", "announce", cwd=searched_site, check=True).stdout
    assert text.strip().endswith("0 messages")
    only_out = run_listlib("search", "--", "-journal", cwd=searched_site, check=True).stdout
    assert only_out.splitlines() == [
        "0 messages",
        "Only words to leave out: add a word to search for (-word leaves out messages the other words find).",
    ]
    config = load_config(searched_site / "listlib.toml")
    shutil.rmtree(config.site.output_dir)
    missing = run_listlib("search", "x", cwd=searched_site)
    assert missing.returncode == 1 and missing.stderr.startswith("Error:") and "listlib build" in missing.stderr


@pytest.mark.parametrize("point", ["search-segment", "search-manifest"])
def test_a_build_killed_while_indexing_is_repaired_by_the_next_one(searched_site: Path, point: str) -> None:
    add(searched_site, post(40, "Killed while indexing", body="phoenix\n"), post(41, "Also new", body="phoenix\n"))
    killed = run_listlib("build", "--jobs", "1", cwd=searched_site, env={"LISTLIB_CRASH_AT": f"{point}:1"})
    assert killed.returncode == -9, killed.stderr
    # Readers meanwhile see the old index or the new one, whole.
    assert len(found(searched_site, "phoenix")) in (0, 2)
    assert found(searched_site, "bitmap")
    run_listlib("build", cwd=searched_site, check=True)
    assert sorted(found(searched_site, "phoenix")) == ["Also new", "Killed while indexing"]
    assert len(found(searched_site, "bitmap", limit=50)) == 3
    manifest = json.loads((searched_site / "output/search/manifest.json").read_text())
    live = {info["id"] for info in manifest["segments"]} | set(manifest["previous"])
    assert {p.name for p in (searched_site / "output/search/seg").iterdir()} <= live


def test_an_empty_archive_answers_no_messages(site: Path) -> None:
    build(site)  # lists, but no mail yet
    for query in ("foo", "foo*", "foo after:2024", "-foo"):
        result = run_listlib("search", "--", query, cwd=site)
        hint = "Only words to leave out: add a word to search for" if query == "-foo" else ""
        assert (result.returncode, result.stdout.startswith("0 messages\n"), result.stderr) == (0, True, ""), query
        assert (hint in result.stdout) and (result.stdout == "0 messages\n") == (not hint), query
        assert json.loads(run_listlib("search", "--json", "--", query, cwd=site, check=True).stdout) == {
            "total": 0,
            "hits": [],
        }


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_js_client_answers_no_messages_on_an_empty_archive(site: Path) -> None:
    build(site)
    got = _node([{"q": "foo"}, {"q": "foo*"}, {"q": "foo after:2024"}], site / "output/search")
    assert [(g["total"], g["hits"]) for g in got] == [(0, [])] * 3  # type: ignore[index,union-attr]
