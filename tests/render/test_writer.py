"""The output writer: atomic replacement, no rewrite of identical bytes, no escapes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from listlib.render.writer import Writer, changed_files, changed_folders, digest_of, folder_marks, link_digest


def test_files_in_folders_the_writer_made_are_written_without_reading_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(target: str, data: bytes) -> bool:
        raise AssertionError(f"read back {target}, in a folder that did not exist")

    monkeypatch.setattr(Writer, "_same_on_disk", staticmethod(never))
    writer = Writer(tmp_path)
    writer.put("a/b/c/one.html", b"one", None)
    writer.put("a/b/c/two.html", b"two", None)
    assert writer.written_paths == ["a/b/c/one.html", "a/b/c/two.html"]
    assert (tmp_path / "a/b/c/two.html").read_bytes() == b"two"


def test_identical_bytes_in_an_existing_folder_are_left_alone(tmp_path: Path) -> None:
    Writer(tmp_path).put("a/page.html", b"same", None)
    before = os.stat(tmp_path / "a/page.html")
    again = Writer(tmp_path)
    assert again.put("a/page.html", b"same", None) == digest_of(b"same")
    again.put("a/other.html", b"new", None)
    assert (again.unchanged, again.written_paths) == (1, ["a/other.html"])
    assert os.stat(tmp_path / "a/page.html").st_ino == before.st_ino
    assert not [p for p in (tmp_path / "a").iterdir() if p.name.startswith(".listlib-tmp-")]


def test_a_copy_another_job_made_already_is_left_alone(tmp_path: Path) -> None:
    """A raw copy whose job is new (its message's thread got another root) is compared
    with the file there, not written again; one of other bytes is replaced."""
    source = tmp_path / "m.eml"
    source.write_bytes(b"raw bytes")
    output = tmp_path / "out"
    Writer(output).copy("a/m.eml", source, "h1", None)
    before = os.stat(output / "a/m.eml")
    again = Writer(output)
    again.copy("a/m.eml", source, "h1", None)
    assert (again.unchanged, again.written_paths) == (1, [])
    assert os.stat(output / "a/m.eml").st_ino == before.st_ino
    source.write_bytes(b"other bytes")
    again.copy("a/m.eml", source, "h2", None)
    assert again.written_paths == ["a/m.eml"] and (output / "a/m.eml").read_bytes() == b"other bytes"


def test_changed_bytes_replace_the_file(tmp_path: Path) -> None:
    Writer(tmp_path).put("page.html", b"old", None)
    writer = Writer(tmp_path)
    writer.put("page.html", b"new", digest_of(b"old"))
    assert (tmp_path / "page.html").read_bytes() == b"new"
    assert writer.written_paths == ["page.html"]


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/x", "a//b", "a/./b", "a\\b", "a/\0b", ""])
def test_paths_leaving_the_output_folder_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(ValueError, match="outside the output folder"):
        Writer(tmp_path / "out").put(path, b"x", None)
    assert not (tmp_path / "x").exists()


def test_folder_marks_are_the_folders_mtimes(tmp_path: Path) -> None:
    Writer(tmp_path / "out").put("a/b/page.html", b"page", None)
    os.utime(tmp_path / "out/a/b", ns=(10**18, 10**18))  # long ago: the unlink below changes it for sure
    marks = folder_marks(tmp_path / "out", ["", "a", "a/b", "gone"])
    assert marks == {
        "": os.stat(tmp_path / "out").st_mtime_ns,
        "a": os.stat(tmp_path / "out/a").st_mtime_ns,
        "a/b": os.stat(tmp_path / "out/a/b").st_mtime_ns,
        "gone": None,
    }
    assert folder_marks(tmp_path / "missing", ["", "a"]) == {"": None, "a": None}
    recorded = {folder: mark for folder, mark in marks.items() if mark is not None}
    assert changed_folders(tmp_path / "out", recorded) == []
    (tmp_path / "out/a/b/page.html").unlink()
    assert changed_folders(tmp_path / "out", recorded) == ["a/b"]


def test_links_are_made_kept_and_replaced_like_files(tmp_path: Path) -> None:
    Writer(tmp_path).put("2024/05/x.eml", b"message", None)
    writer = Writer(tmp_path)
    digest = writer.link("dev/m@h/raw", "../../2024/05/x.eml", None)
    raw = tmp_path / "dev/m@h/raw"
    assert digest == link_digest("../../2024/05/x.eml") != digest_of(b"../../2024/05/x.eml")
    assert raw.is_symlink() and raw.read_bytes() == b"message"
    made = os.lstat(raw)
    again = Writer(tmp_path)
    again.link("dev/m@h/raw", "../../2024/05/x.eml", digest)
    assert (again.written_paths, again.unchanged, os.lstat(raw).st_ino) == ([], 1, made.st_ino)
    # The stat pass sees a link left alone as unchanged, and a file put in its place as changed.
    recorded = [("dev/m@h/raw", again.stats["dev/m@h/raw"])]
    assert changed_files(tmp_path, recorded) == []
    raw.unlink()
    raw.write_bytes(b"message")
    assert changed_files(tmp_path, recorded) == ["dev/m@h/raw"]
    third = Writer(tmp_path)
    third.link("dev/m@h/raw", "../../2024/05/x.eml", digest)
    assert third.written_paths == ["dev/m@h/raw"] and raw.is_symlink()
    # A file wanted where a link is: written, never taken for the same bytes through the link.
    fourth = Writer(tmp_path)
    fourth.put("dev/m@h/raw", b"message", None)
    assert fourth.written_paths == ["dev/m@h/raw"] and not raw.is_symlink()
