"""Golden output: a small hand-made site (tests/data/golden) builds to exactly the
pages kept in tests/data/golden/expected.

Call numbers come from the clock, so before comparing, each is replaced by a stable
8-character name derived from its message's Message-ID (``g1@example.org`` ->
``gold--g1``). Run with ``LISTLIB_UPDATE_GOLDEN=1`` to rewrite the expected
files after an intended change, then review the diff.
"""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

from listlib.build import build_site
from listlib.config import load_config
from listlib.filing import file_sources
from listlib.store.core import Store

GOLDEN = Path(__file__).parent.parent / "data" / "golden"
EXPECTED = GOLDEN / "expected"
COMPARED_SUFFIXES = (".html", ".atom", ".xml", ".txt", ".mbox.gz")


def built_site(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    site = tmp_path / "golden"
    site.mkdir()
    shutil.copy(GOLDEN / "listlib.toml", site)
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        report = file_sources(store, config.lists, [GOLDEN / "site.mbox"])
        assert report.filed == 13, report.summary()
        names = {
            row.call: "gold" + (row.message_id or "").split("@")[0].rjust(4, "-") for row in store.index.iter_rows()
        }
    build_site(config, workers=1)
    return site / "output", names


def normalized(output: Path, names: dict[str, str]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for path in sorted(output.rglob("*")):
        rel = path.relative_to(output).as_posix()
        if not path.is_file() or not rel.endswith(COMPARED_SUFFIXES) or rel.startswith("static/"):
            continue
        data = path.read_bytes()
        if rel.endswith(".gz"):
            data = gzip.decompress(data)
            rel = rel[: -len(".gz")]
        for call, name in names.items():
            data = data.replace(call.encode(), name.encode())
            rel = rel.replace(call, name)
        files[rel] = data
    return files


def test_the_golden_site_builds_to_the_expected_pages(tmp_path: Path) -> None:
    output, names = built_site(tmp_path)
    got = normalized(output, names)
    if os.environ.get("LISTLIB_UPDATE_GOLDEN"):
        shutil.rmtree(EXPECTED, ignore_errors=True)
        for rel, data in got.items():
            target = EXPECTED / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    expected = {
        path.relative_to(EXPECTED).as_posix(): path.read_bytes()
        for path in sorted(EXPECTED.rglob("*"))
        if path.is_file()
    }
    assert sorted(got) == sorted(expected)
    for rel, data in got.items():
        assert data.decode() == expected[rel].decode(), rel
