"""Diffs in message bodies (display.diff): golden pages of tricky patches, and the rules
one by one. ``LISTLIB_UPDATE_GOLDEN=1`` rewrites the golden files (then read the diff)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from listlib.display import DisplayOptions, MessageDisplay, display_message
from listlib.display.diff import split
from listlib.display.textbody import clean_text

from ..support.display_safety import assert_nothing_executable
from ..support.helpers import CORPORA, make_message

CASES = Path(__file__).parent / "diffs"
NAMES = sorted(path.stem for path in CASES.glob("*.eml"))
PLAIN = DisplayOptions(obfuscate_addresses=False)


DEFAULT = DisplayOptions()


def show(name: str, options: DisplayOptions = DEFAULT) -> MessageDisplay:
    shown = display_message((CASES / f"{name}.eml").read_bytes(), options)
    assert_nothing_executable(shown.body_html)
    return shown


def spans(html: str, css: str) -> list[str]:
    """The contents of the spans of one class in the diffs (not the diffstats) of a body."""
    diffs = "".join(re.findall(r'<div class="diff">(.*?)</div>', html, re.S))
    return re.findall(rf'<span class="{css}">(.*?)</span>', diffs, re.S)


@pytest.mark.parametrize("name", NAMES)
def test_tricky_diffs_render_as_their_golden_files(name: str) -> None:
    html = show(name).body_html
    golden = CASES / f"{name}.html"
    if os.environ.get("LISTLIB_UPDATE_GOLDEN"):
        golden.write_text(html + "\n", encoding="utf-8")
    assert html + "\n" == golden.read_text(encoding="utf-8")


def test_the_golden_cases_are_all_there() -> None:
    assert len(NAMES) >= 8 and all((CASES / f"{name}.html").exists() for name in NAMES)


def test_a_format_patch_has_file_headers_hunks_and_marked_lines() -> None:
    html = show("format-patch", PLAIN).body_html
    assert html.count('<div class="diff">') == 1 and html.count('<div class="diff diffstat">') == 1
    files = spans(html, "diff-file")
    assert files[0].startswith("diff --git a/drivers/md/md-bitmap.c") and files[0].endswith(
        "+++ b/drivers/md/md-bitmap.c"
    )
    assert any(f.startswith("diff --git a/drivers/md/old-name.h") and "rename to" in f for f in files)
    assert spans(html, "diff-hunk")[:2] == [
        "@@ -10,6 +10,8 @@ static int bitmap_check(struct bitmap *b)",
        "@@ -40,2 +42,2 @@ static void bitmap_free(struct bitmap *b)",
    ]
    # The marks stay visible: every added line starts with "+", every removed one with "-".
    added = [line for run in spans(html, "diff-add") for line in run.split("\n")]
    removed = [line for run in spans(html, "diff-del") for line in run.split("\n")]
    assert "+\tif (a &lt;= b &amp;&amp; c &gt;= d)" in added and "-\tif (a &lt; b &amp;&amp; c &gt; d)" in removed
    assert all(line.startswith("+") for line in added if "diffstat" not in line and not set(line) <= {"+"})
    assert all(line.startswith("-") for line in removed)
    assert spans(html, "diff-meta")[-1] == "\\ No newline at end of file"
    # The commit message keeps its links; the version line after "-- " folds as a signature.
    assert '<a href="https://bugs.example.org/123"' in html
    assert '<details class="signature"><summary>Signature</summary><pre class="text">2.39.2</pre>' in html


def test_a_diff_with_a_long_line_scrolls_in_its_box_and_a_short_one_does_not() -> None:
    html = show("format-patch").body_html
    assert '<div class="diff"><pre class="text wide" tabindex="0" role="region"' in html
    assert '<div class="diff"><pre class="text">' in show("crlf").body_html


def test_a_diffstat_colours_its_histogram_and_keeps_its_lines() -> None:
    html = show("format-patch").body_html
    stat = html.split('<div class="diff diffstat">')[1].split("</div>")[0]
    assert ' drivers/md/md-bitmap.c                   | 7 <span class="diff-add">+++++</span>' in stat
    assert '<span class="diff-del">--</span>' in stat
    assert " 3 files changed, 8 insertions(+), 2 deletions(-)\n rename drivers/md/{old-name.h =&gt; new-name.h}" in stat
    assert stat.endswith(" create mode 100755 tools/md-test.sh</pre>")


def test_a_binary_patch_keeps_its_blocks_together() -> None:
    html = show("binary-patch").body_html
    assert "GIT binary patch" in spans(html, "diff-file")[0]
    assert spans(html, "diff-meta") == ["literal 136", "literal 0"]
    data = spans(html, "diff-bin")
    assert data[0].startswith("zcmeAS@N?(olHy") and data[0].count("\n") == 2 and data[1] == "HcmV?d00001"
    assert "Binary files a/Documentation/old.bin and /dev/null differ" in spans(html, "diff-file")[1]
    assert "Bin 0 -&gt; 136 bytes" in html and '<details class="signature">' in html


def test_crlf_mail_shows_as_its_lf_twin() -> None:
    raw = (CASES / "crlf.eml").read_bytes()
    assert b"\r\n" in raw
    assert display_message(raw).body_html == display_message(raw.replace(b"\r\n", b"\n")).body_html
    assert spans(show("crlf").body_html, "diff-add") == ["+long b;"]


def test_a_diff_in_a_quote_stays_a_quote() -> None:
    html = show("quoted-diff", PLAIN).body_html
    quoted = html.split("Why")[0]
    assert "diff-" not in quoted and '<details class="quote">' in quoted
    assert "&gt; -\tif (a &lt; b &amp;&amp; c &gt; d)" in quoted
    assert '<span class="quote">&gt; -\treturn 0;\n&gt; +\treturn size &amp; 1;</span>' in html
    # The reviewer's own suggestion below the quotes is a diff.
    assert html.count('<div class="diff">') == 1 and spans(html, "diff-add") == ["+\tif (a &lt;= b)"]


def test_dashes_and_headers_alone_are_text() -> None:
    html = show("mentions-dashes").body_html
    assert "diff" not in re.sub(r"diff --git a/x b/x|read a diff|not a diff", "", html)
    assert "--- a/file\n+++ b/file\nnothing follows it." in html


def test_a_removed_dash_dash_line_is_a_line_and_the_signature_after_the_patch_folds() -> None:
    html = show("signature-after-patch").body_html
    assert spans(html, "diff-del") == ["--- "]
    assert spans(html, "diff-file")[0].startswith("diff -u a/README b/README\n--- a/README\t2019")
    assert '<details class="signature"><summary>Signature</summary><pre class="text">Dan Example' in html


def test_a_damaged_hunk_ends_the_diff_before_the_signature() -> None:
    html = show("damaged-patch").body_html
    diff = html.split('<div class="diff">')[1].split("</div>")[0]
    assert "-- " not in diff.replace("--- a/md.c", "") and "return -ENOMEM;" in diff
    assert '<details class="signature"><summary>Signature</summary><pre class="text">2.29.2</pre>' in html


def test_an_inline_patch_part_shows_as_a_diff_and_an_attached_one_only_downloads() -> None:
    shown = show("attached-patch")
    assert spans(shown.body_html, "diff-add") == ["+c"] and "+y" not in shown.body_html
    assert [(a.filename, a.inline) for a in shown.attachments] == [
        ("0001-inline.patch", True),
        ("0002-download.diff", False),
    ]
    assert shown.attachments[1].data == b"--- a/md.c\n+++ b/md.c\n@@ -1 +1 @@\n-x\n+y"


def test_addresses_in_a_diff_are_obfuscated_and_not_linked() -> None:
    html = show("format-patch").body_html
    added = spans(html, "diff-add")
    assert any("&lt;md-…@example.org&gt;" in run for run in added)
    assert "md-maint@example.org" not in html and "mailto:" not in html


def test_the_search_text_keeps_the_patch() -> None:
    text = show("format-patch", PLAIN).text
    assert "+\tif (a <= b && c >= d)" in text and "rename to drivers/md/new-name.h" in text
    assert "2.39.2" not in text


def test_split_pieces_join_back_to_the_text() -> None:
    for name in NAMES:
        text = clean_text((CASES / f"{name}.eml").read_bytes().decode("utf-8")).split("\n\n", 1)[1]
        pieces = split(text)
        assert "\n".join(piece.text for piece in pieces) == text
        assert name == "mentions-dashes" or any(piece.kind == "diff" for piece in pieces)


def test_a_patch_without_a_trailing_newline_or_with_hunk_counts_of_one() -> None:
    for body in ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n"):
        html = display_message(make_message(body=body), PLAIN).body_html
        assert spans(html, "diff-del") == ["-x"] and spans(html, "diff-add") == ["+y"]


@pytest.mark.parametrize(
    "body",
    [
        "--- a\n+++ b\n@@ -1,99999 +1,99999 @@\n-x\n" * 5000,
        "--- a\n+++ b\n@@ -1,99999 +1,99999 @@\n" + " x\n" * 40000 + "-- \n" * 40000,
        "diff --git a/x b/x\nindex 1..2 100644\n" * 20000,
        "--- a\n+++ b\n@@ -1 +1 @@\n" * 20000,
        " f | 1 +\n" * 20000 + " 1 file changed, 1 insertion(+)\n" * 2000,
    ],
    ids=["files-announcing-long-hunks", "a-long-hunk-of-signatures", "header-only-files", "empty-hunks", "diffstats"],
)
def test_hostile_diffs_take_linear_time(body: str) -> None:
    started = time.process_time()
    shown = display_message(make_message(body=body), PLAIN)
    assert time.process_time() - started < 5
    assert_nothing_executable(shown.body_html)


def test_every_linux_raid_patch_splits_and_joins_back() -> None:
    source = CORPORA / "mbox" / "linux-raid.mboxrd.gz"
    if not source.exists():
        pytest.skip("the linux-raid corpus is not present")
    from listlib.filers import open_source

    diffs = 0
    for number, mail in enumerate(open_source(source).iter_mail()):
        if number >= 3000:
            break
        shown = display_message(mail.raw)
        diffs += '<div class="diff">' in shown.body_html
        body = clean_text(mail.raw.decode("utf-8", "replace").split("\n\n", 1)[-1])
        assert "\n".join(piece.text for piece in split(body)) == body
    assert diffs > 300
