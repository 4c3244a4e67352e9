import bz2
import gzip
import json
import lzma
import os
import random
from pathlib import Path

import pytest

from listlib.errors import SourceError
from listlib.filers import open_source

from ..support.helpers import SITE_TOML, early_pipermail, make_message, mboxrd, run_listlib


def read_all(path: Path) -> list[tuple[str, bytes]]:
    return [(m.origin, m.raw) for m in open_source(path).iter_mail()]


def tree_state(root: Path) -> list[tuple[str, int, float]]:
    return sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime) for p in root.rglob("*"))


def test_maildir_with_nested_folders_is_read_and_never_modified(tmp_path: Path) -> None:
    root = tmp_path / "Maildir"
    for folder in ("cur", "new", "tmp", ".Sent/cur", ".Sent/new", "sub/cur", "sub/new"):
        (root / folder).mkdir(parents=True)
    (root / "cur" / "1.M1:2,S").write_bytes(make_message(message_id="<a@x>"))
    (root / "new" / "2.M2").write_bytes(make_message(message_id="<b@x>"))
    (root / "tmp" / "3.M3").write_bytes(make_message(message_id="<half-delivered@x>"))
    (root / ".Sent" / "cur" / "4:2,S").write_bytes(make_message(message_id="<c@x>"))
    (root / "sub" / "new" / "5").write_bytes(make_message(message_id="<d@x>"))
    (root / ".gitkeep").write_bytes(b"")
    (root / "cur" / ".hidden").write_bytes(b"not mail")
    before = tree_state(root)
    ids = sorted(raw.split(b"Message-ID: ")[1].split(b"\n")[0].decode() for _, raw in read_all(root))
    assert ids == ["<a@x>", "<b@x>", "<c@x>", "<d@x>"]
    assert tree_state(root) == before


@pytest.mark.parametrize("opener", [gzip.open, bz2.open, lzma.open])
def test_compressed_mbox_is_recognised_by_content(tmp_path: Path, opener) -> None:  # type: ignore[no-untyped-def]
    messages = [make_message(message_id=f"<{i}@x>") for i in range(3)]
    path = tmp_path / "archive.data"
    with opener(path, "wb") as out:
        out.write(mboxrd(messages))
    assert [raw for _, raw in read_all(path)] == messages
    assert [origin for origin, _ in read_all(path)] == [f"{path}#{i}" for i in (1, 2, 3)]


def test_pipermail_folder_is_read_in_month_order_and_skips_non_mail(tmp_path: Path) -> None:
    for name, month in [("2002-October.txt.gz", "Oct"), ("2002-February.txt", "Feb"), ("2001-December.txt.gz", "Dec")]:
        data = b"From a at b.org  Tue %s  1 01:41:07 2002\n" % month.encode() + make_message(subject=name) + b"\n"
        if name.endswith(".gz"):
            with gzip.open(tmp_path / name, "wb") as out:
                out.write(data)
        else:
            (tmp_path / name).write_bytes(data)
    (tmp_path / "LICENSE").write_text("MIT License\n")
    (tmp_path / "index.html").write_text("<html>")
    source = open_source(tmp_path)
    subjects = [m.raw.split(b"Subject: ")[1].split(b"\n")[0] for m in source.iter_mail()]
    assert subjects == [b"2001-December.txt.gz", b"2002-February.txt", b"2002-October.txt.gz"]
    assert sorted(p.name for p in source.skipped) == ["LICENSE", "index.html"]


def test_early_pipermail_months_with_rfc2822_separators_are_split_and_ordered(tmp_path: Path) -> None:
    dates = ["Thu, 1 Jul 1999 06:06:56 -0400 (EDT)", "2 Jul 1999 10:00:00 +0000", "Sat, 3 Jul 99 11:00:00 GMT"]
    july = [make_message(subject=f"july {i}", message_id=f"<j{i}@x>", date=d) for i, d in enumerate(dates)]
    august = [make_message(subject="august", message_id="<a@x>", date="Sun, 1 Aug 1999 09:00:00 -0700 (PDT)")]
    (tmp_path / "1999-July.txt").write_bytes(early_pipermail(july, dates))
    with gzip.open(tmp_path / "1999-August.txt.gz", "wb") as out:
        out.write(early_pipermail(august, ["Sun, 1 Aug 1999 09:00:00 -0700 (PDT)"]))
    (tmp_path / "1999-June.txt").write_bytes(
        b"From a at b.org  Tue Jun  1 01:41:07 1999\n" + make_message(subject="june")
    )
    got = read_all(tmp_path)
    assert [raw for _, raw in got] == [make_message(subject="june"), *july, *august]
    assert [origin.rsplit("/", 1)[1] for origin, _ in got] == [
        "1999-June.txt#1",
        "1999-July.txt#1",
        "1999-July.txt#2",
        "1999-July.txt#3",
        "1999-August.txt.gz#1",
    ]


def test_single_message_files_with_and_without_separator(tmp_path: Path) -> None:
    (tmp_path / "a.eml").write_bytes(make_message())
    (tmp_path / "b.txt").write_bytes(b"From x@y Mon Jan 12 10:00:00 2009\n" + make_message(message_id="<b@x>"))
    (tmp_path / "empty").write_bytes(b"")
    got = dict(read_all(tmp_path))
    assert got[str(tmp_path / "a.eml")] == make_message()
    assert got[str(tmp_path / "b.txt#1")] == make_message(message_id="<b@x>")
    assert got[str(tmp_path / "empty")] == b""


def test_unusable_sources_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        open_source(tmp_path / "missing.mbox")
    (tmp_path / "empty-dir").mkdir()
    with pytest.raises(SourceError, match="no mail found"):
        open_source(tmp_path / "empty-dir")
    broken = tmp_path / "broken.mbox.gz"
    broken.write_bytes(gzip.compress(mboxrd([make_message()] * 50))[:200])
    with pytest.raises(SourceError, match=r"broken\.mbox\.gz"):
        list(open_source(broken).iter_mail())


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda whole: whole[: len(whole) // 2], id="cut short"),
        pytest.param(lambda whole: whole[:40] + bytes(b ^ 0x5A for b in whole[40:400]) + whole[400:], id="bad deflate"),
        pytest.param(lambda whole: whole + b"garbage after the end", id="trailing garbage"),
    ],
)
def test_damaged_gzip_source_is_an_error_naming_the_path(tmp_path: Path, damage) -> None:  # type: ignore[no-untyped-def]
    whole = gzip.compress(mboxrd([make_message(message_id=f"<{i}@x>") for i in range(200)]))
    broken = tmp_path / "broken.mbox.gz"
    broken.write_bytes(damage(whole))
    with pytest.raises(SourceError, match=r"broken\.mbox\.gz: cannot be read"):
        list(open_source(broken).iter_mail())


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read anything")
def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.mbox"
    path.write_bytes(mboxrd([make_message()]))
    path.chmod(0)
    with pytest.raises(SourceError, match="permission denied"):
        list(open_source(path).iter_mail())
    told: list[tuple[Path, str]] = []
    assert list(open_source(path).iter_mail(on_error=lambda p, why: told.append((p, why)))) == []
    assert told == [(path, "permission denied")]


def test_a_broken_file_in_a_folder_is_reported_and_the_rest_still_read(tmp_path: Path) -> None:
    for name in ("cur", "new", "tmp"):
        (tmp_path / name).mkdir()
    for n in range(3):
        (tmp_path / "cur" / f"{n}:2,S").write_bytes(make_message(message_id=f"<{n}@x>"))
    (tmp_path / "cur" / "gone:2,S").symlink_to(tmp_path / "nowhere")
    noise = random.Random(7)
    bodies = ["".join(noise.choice("abcdefgh ") for _ in range(8000)) + "\n" for _ in range(200)]
    whole = gzip.compress(mboxrd([make_message(message_id=f"<z{i}@x>", body=bodies[i]) for i in range(200)]))
    (tmp_path / "new" / "a.mbox.gz").write_bytes(whole[: len(whole) * 3 // 4])
    told: list[tuple[Path, str]] = []
    mail = list(open_source(tmp_path).iter_mail(on_error=lambda p, why: told.append((p, why))))
    assert sorted(p.name for p, _why in told) == ["a.mbox.gz", "gone:2,S"]
    assert all(why for _p, why in told)
    # Every message of the readable files, and what the broken one held before its break.
    assert sum(1 for m in mail if "#" not in m.origin) == 3
    assert 0 < sum(1 for m in mail if "#" in m.origin) < 200
    with pytest.raises(SourceError, match="gone"):
        list(open_source(tmp_path).iter_mail())


CUT_SHORT = "Compressed file ended before the end-of-stream marker was reached"


def _complete_before_the_break(data: bytes, decompressor) -> int:  # type: ignore[no-untyped-def]
    """Messages whose end a streaming decompressor reaches in a damaged file: those
    followed by another message's separator in what it inflates."""
    out = bytearray()
    for at in range(0, len(data), 1024):
        try:
            out += decompressor.decompress(data[at : at + 1024])
        except (OSError, EOFError, ValueError, lzma.LZMAError):
            break
    return bytes(out).count(b"\nFrom ")


@pytest.mark.parametrize(
    ("compress", "decompressor"),
    [
        pytest.param(gzip.compress, lambda: __import__("zlib").decompressobj(31), id="gzip"),
        pytest.param(bz2.compress, bz2.BZ2Decompressor, id="bzip2"),
        pytest.param(lzma.compress, lzma.LZMADecompressor, id="xz"),
    ],
)
@pytest.mark.parametrize("keep", [0.3, 0.7, 0.97])
def test_a_cut_short_compressed_mbox_yields_every_complete_message_before_the_break(
    tmp_path: Path, compress, decompressor, keep: float
) -> None:  # type: ignore[no-untyped-def]
    noise = random.Random(3)
    bodies = ["".join(noise.choice("abcdefgh \n") for _ in range(3000)) + "\n" for _ in range(400)]
    whole = compress(mboxrd([make_message(message_id=f"<c{i}@x>", body=bodies[i]) for i in range(400)]))
    cut = whole[: int(len(whole) * keep)]
    (tmp_path / "cut.mbox").write_bytes(cut)
    told: list[tuple[Path, str]] = []
    mail = list(open_source(tmp_path / "cut.mbox").iter_mail(on_error=lambda p, why: told.append((p, why))))
    assert [why for _p, why in told] == [f"cannot be read: {CUT_SHORT}"]
    expected = _complete_before_the_break(cut, decompressor())
    assert [m.origin for m in mail] == [f"{tmp_path / 'cut.mbox'}#{n}" for n in range(1, expected + 1)]
    assert all(f"<c{n}@x>".encode() in m.raw for n, m in enumerate(mail))
    if compress is gzip.compress:  # deflate streams inflate up to the last byte: only the cut message is lost
        assert expected >= int(400 * keep) - 2


def test_concatenated_gzip_members_and_zero_padding_are_read_whole(tmp_path: Path) -> None:
    first = mboxrd([make_message(message_id=f"<a{i}@x>") for i in range(30)])
    second = mboxrd([make_message(message_id=f"<b{i}@x>") for i in range(20)])
    (tmp_path / "two.mbox").write_bytes(gzip.compress(first) + gzip.compress(second) + bytes(512))
    assert len(read_all(tmp_path / "two.mbox")) == 50


def test_an_import_of_a_cut_short_source_files_and_reports_what_it_read(tmp_path: Path) -> None:
    (tmp_path / "listlib.toml").write_text(SITE_TOML)
    noise = random.Random(5)
    bodies = ["".join(noise.choice("abcdefgh \n") for _ in range(3000)) + "\n" for _ in range(300)]
    whole = gzip.compress(mboxrd([make_message(message_id=f"<i{i}@x>", body=bodies[i]) for i in range(300)]))
    cut = whole[: len(whole) // 2]
    (tmp_path / "cut.mbox.gz").write_bytes(cut)
    expected = _complete_before_the_break(cut, __import__("zlib").decompressobj(31))
    result = run_listlib("import", "--list", "dev", "--json", "cut.mbox.gz", cwd=tmp_path)
    assert result.returncode == 1 and "cut.mbox.gz: cannot be read" in result.stderr
    data = json.loads(result.stdout)
    assert data["filed"] == expected > 100 and data["unreadable"][0]["path"] == "cut.mbox.gz"
    result = run_listlib("import", "--list", "dev", "cut.mbox.gz", cwd=tmp_path)
    assert f"{expected} messages" in result.stdout and f"{expected} duplicates" in result.stdout
