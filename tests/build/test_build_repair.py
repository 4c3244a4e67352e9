"""output/ is safe to delete (invariant 7): a build finds the files of earlier builds
deleted, replaced or (with ``verify``) edited in place, the search index's included,
and makes exactly what a clean build makes, without rendering what is intact. And the
manifest lists every file the build owns in output/, with the digest of its bytes."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from listlib.config import load_config
from listlib.manifest import load_manifest, manifest_stamp
from listlib.search.reader import Source, search
from listlib.search.state import SearchState
from listlib.store.core import Store
from listlib.verify import repair_store

from ..support.helpers import make_message, run_listlib
from .test_build import add, build, call_of, post, tree

QUERIES = ["thread", "message number", "attachment", "person", "zebra"]


def answers(site: Path) -> list[list[tuple[str, float]]]:
    source = Source(site / "output" / "search")
    return [[(hit.call, round(hit.score, 6)) for hit in search(source, query).hits] for query in QUERIES]


def files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def built(site: Path) -> Path:
    """A generated site with threads, a lone message with an attachment, raw copies and a search index."""
    thread = [post(1, "A thread"), *(post(n, "Re: A thread", reply_to=n - 1) for n in range(2, 6))]
    attached = make_message(
        "With an attachment",
        "See the attachment, zebra.\n",
        message_id="<att@example.org>",
        extra={"Content-Type": "multipart/mixed; boundary=b"},
    ).replace(
        b"See the attachment, zebra.\n",
        b"--b\nContent-Type: text/plain\n\nSee the attachment, zebra.\n--b\n"
        b"Content-Type: application/octet-stream\nContent-Disposition: attachment; filename=notes.bin\n\n"
        b"\x00\x01binary\n--b--\n",
    )
    add(site, *thread, post(9, "Alone"), attached)
    build(site)
    return site


def clean_result(site: Path) -> tuple[dict[str, bytes], list[list[tuple[str, float]]]]:
    build(site, clean=True)
    return tree(site / "output"), answers(site)


def damage(site: Path, what: str) -> str:
    """Damage one file of output/ (or all of it); returns the path damaged."""
    output = site / "output"
    call, _path = call_of(site, 3)
    page = next(p for p in files(output) if p.startswith("dev/") and p.endswith(f"/{call}.html"))
    segment = sorted(p for p in files(output) if p.startswith("search/seg/") and p.endswith(".json"))[0]
    target = {
        "output": "",
        "page": page,
        "page-replaced": page,
        "page-edited": page,
        "static": "static/style.css",
        "raw": next(p for p in files(output) if p.endswith(".eml")),
        "attachment": next(p for p in files(output) if p.endswith("notes.bin")),
        "search-segment": segment,
        "search-segment-edited": segment,
        "search-manifest": "search/manifest.json",
    }[what]
    path = output / target
    if what == "output":
        shutil.rmtree(output)
    elif what == "page-replaced":
        # How most editors and tools save: a new file renamed over the old one.
        temp = path.with_name("edit.tmp")
        temp.write_bytes(path.read_bytes().replace(b"</body>", b"<p>edited</p></body>"))
        os.replace(temp, path)
    elif what.endswith("-edited"):
        # In place: no folder changes (found by ``verify`` only).
        with open(path, "r+b") as handle:
            handle.write(b"X")
    else:
        path.unlink()
    return target


@pytest.mark.parametrize(
    "what",
    [
        "output",
        "page",
        "page-replaced",
        "page-edited",
        "static",
        "raw",
        "attachment",
        "search-segment",
        "search-segment-edited",
        "search-manifest",
    ],
)
def test_a_build_restores_what_a_clean_build_makes(built: Path, what: str) -> None:
    before = tree(built / "output")
    before_answers = answers(built)
    target = damage(built, what)
    verify = what.endswith("-edited")
    report = build(built, verify=True) if verify else build(built)
    assert tree(built / "output") == before
    assert answers(built) == before_answers
    if what == "output":
        assert len(report.damaged) > 10 and report.search is not None and report.search.rebuilt
    elif target.startswith("search/"):
        assert report.search is not None and report.search.damaged == [target.removeprefix("search/")]
        assert report.search.rebuilt
    else:
        # Only the damaged file's job ran, and only the damaged file was written.
        assert report.damaged == [target]
        assert report.written == [target]
        assert report.jobs_run == 1
    # Nothing left to repair, and the same as a clean build.
    again = build(built, verify=True)
    assert again.damaged == [] and again.written == [] and again.jobs_run == 0
    assert again.search is not None and not again.search.rebuilt
    assert clean_result(built) == (before, before_answers)


def test_an_edit_in_place_is_left_to_verify(built: Path) -> None:
    """The default stat pass looks only into folders whose mtime changed: an edit in
    place changes none (``listlib build --verify`` stats every file)."""
    damage(built, "page-edited")
    assert build(built).damaged == []


def test_a_deleted_output_folder_is_rebuilt_on_the_command_line(built: Path) -> None:
    before = tree(built / "output")
    shutil.rmtree(built / "output")
    result = run_listlib("build", cwd=built, check=True)
    assert tree(built / "output") == before
    assert "found deleted or edited" in result.stdout


def test_a_real_archive_is_restored_after_deleting_output_or_one_file(site: Path, corpora: Path) -> None:
    maildir = corpora / "maildir" / "notmuch-lkml"
    toml = site / "listlib.toml"
    toml.write_text(toml.read_text() + '\n[lists.lkml]\naddresses = ["linux-kernel@vger.kernel.org"]\n')
    run_listlib("import", maildir, cwd=site, check=True)
    build(site)
    output = site / "output"
    before, before_answers = tree(output), answers(site)
    shutil.rmtree(output)
    assert build(site).damaged
    assert (tree(output), answers(site)) == (before, before_answers)
    page = sorted(p for p in files(output) if p.endswith(".html") and p.count("/") == 3)[len(before) // 7]
    (output / page).unlink()
    assert build(site).written == [page]
    assert clean_result(site) == (before, before_answers)


def assert_manifest_is_output(site: Path) -> None:
    config = load_config(site / "listlib.toml")
    output = config.site.output_dir
    manifest = load_manifest(config)
    foreign = {"CNAME", ".well-known/security.txt"}
    assert set(manifest) == files(output) - foreign
    for path, (digest, size) in manifest.items():
        data = (output / path).read_bytes()
        assert (hashlib.blake2b(data, digest_size=16).hexdigest(), len(data)) == (digest, size), path


def test_the_manifest_lists_exactly_the_files_the_build_owns(built: Path) -> None:
    output = built / "output"
    (output / "CNAME").write_text("lists.example.org\n")
    (output / ".well-known").mkdir()
    (output / ".well-known" / "security.txt").write_text("Contact: mailto:a@example.org\n")
    assert_manifest_is_output(built)
    assert any(path.startswith("search/seg/") for path in load_manifest(load_config(built / "listlib.toml")))
    # Incremental: a new reply (a new segment, pages rewritten).
    add(built, post(6, "Re: A thread", reply_to=5))
    build(built)
    assert_manifest_is_output(built)
    # Removals: a message gone from the store (pages and index entries removed).
    config = load_config(built / "listlib.toml")
    _call, path = call_of(built, 9)
    (config.site.content_dir / path).unlink()
    with Store(config.site.content_dir).open() as store:
        repair_store(store)
    build(built)
    assert_manifest_is_output(built)
    # Repairs and clean builds.
    damage(built, "page")
    build(built)
    assert_manifest_is_output(built)
    build(built, clean=True)
    assert_manifest_is_output(built)
    (output / "static" / "style.css").unlink()
    shutil.rmtree(output / "search")
    build(built)
    assert_manifest_is_output(built)


def test_the_manifest_token_is_the_same_only_for_the_same_manifest_and_kept_by_a_build_of_nothing(
    built: Path,
) -> None:
    """``manifest_stamp`` lets a publish with nothing new skip reading the manifest: after
    every kind of change a build makes (new pages, removals, repairs, a lost search
    index, a clean build) the token is one never seen before, unless the manifest is
    the very one it stood for; a build with nothing to do keeps it."""
    config = load_config(built / "listlib.toml")
    seen: dict[str, dict[str, tuple[str, int]]] = {}

    def step() -> str:
        token = manifest_stamp(config)
        assert token is not None
        manifest = load_manifest(config)
        assert seen.setdefault(token, manifest) == manifest, "one token, two manifests"
        return token

    first = step()
    build(built)
    assert step() == first, "a build with nothing to do keeps the token"
    add(built, post(6, "Re: A thread", reply_to=5))
    build(built)
    assert step() != first
    _call, path = call_of(built, 9)
    (config.site.content_dir / path).unlink()
    with Store(config.site.content_dir).open() as store:
        repair_store(store)
    build(built)
    step()
    for what in ("page", "page-edited", "search-segment", "search-manifest", "output"):
        before = step()
        damage(built, what)
        build(built, verify=what.endswith("-edited"))
        assert step() != before, what
    shutil.rmtree(built / "output" / "search")
    build(built)
    step()
    before = step()
    build(built, clean=True)
    assert step() != before
    assert len(seen) >= 9


def test_the_search_index_records_its_files_as_they_are_on_disk(built: Path) -> None:
    """The files of new segments are recorded as they are written (not read back): the
    record is the files' bytes and stat, and the next build finds nothing damaged."""
    config = load_config(built / "listlib.toml")
    folder = config.site.output_dir / "search"
    state = SearchState(config.site.cache_dir / "search.sqlite")
    try:
        recorded = state.files()
    finally:
        state.close()
    assert any(path.startswith("seg/") for path in recorded)
    for path, (digest, size, mtime) in recorded.items():
        data = (folder / path).read_bytes()
        found = os.stat(folder / path)
        assert (hashlib.blake2b(data, digest_size=16).hexdigest(), size, mtime) == (
            digest,
            found.st_size,
            found.st_mtime_ns,
        ), path
    again = build(built, verify=True).search
    assert again is not None and not again.damaged and not again.rebuilt
