"""Message display: headers, charsets, text bodies, MIME structures, attachments, privacy."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest

from listlib.display import DisplayOptions, MessageDisplay, display_message
from listlib.display.walk import MAX_INDEXED_BYTES, MAX_SHOWN_BYTES

from ..support.display_safety import assert_nothing_executable
from ..support.helpers import make_message

DATA = Path(__file__).parent.parent / "data" / "display"
PLAIN = DisplayOptions(obfuscate_addresses=False)


DEFAULT = DisplayOptions()


def show(name: str, options: DisplayOptions = DEFAULT) -> MessageDisplay:
    shown = display_message((DATA / name).read_bytes(), options)
    assert_nothing_executable(shown.body_html)
    return shown


def body_of(body: str, options: DisplayOptions = PLAIN, **headers: str) -> MessageDisplay:
    shown = display_message(make_message(body=body, extra=headers or None), options)
    assert_nothing_executable(shown.body_html)
    return shown


# -- Headers -----------------------------------------------------------------------------------------


def test_headers_are_decoded_and_the_date_keeps_the_senders_offset() -> None:
    shown = show("plain-quotes-signature.eml")
    assert shown.subject == "Re: [dev] RAID rebuild is slow"
    assert (shown.author_name, shown.author_address) == ("Bob Builder", "bob@example.com")
    assert shown.author_shown == "Bob Builder"
    assert shown.message_id == "reply-1@example.com"
    assert shown.date is not None and shown.date.utcoffset() == timedelta(hours=-7)
    assert shown.date.isoformat() == "2019-04-02T09:15:00-07:00"


def test_encoded_and_8bit_headers_are_decoded() -> None:
    shown = show("latin1-really-cp1252.eml")
    assert shown.subject == "caf\u00e9" and shown.author_name == "Fran\u00e7ois"
    shown = show("unlabelled-8bit.eml")
    assert shown.subject == "Caf\u00e9 talk"
    assert (shown.author_name, shown.author_address) == ("Some One", "someone@example.org")


def test_missing_headers_give_empty_fields() -> None:
    shown = show("no-headers-at-all.eml")
    assert (shown.subject, shown.author_name, shown.author_address, shown.author_shown) == ("", "", "", "")
    assert shown.date is None and shown.message_id is None
    assert "and a body" in shown.body_html


def test_author_without_a_name_is_shown_obfuscated_and_named_by_its_local_part() -> None:
    shown = display_message(make_message(sender="neilb@suse.de"))
    assert shown.author_name == "neilb"
    assert shown.author_address == "neilb@suse.de"
    assert shown.author_shown == "ne\u2026@suse.de"
    assert display_message(make_message(sender="neilb@suse.de"), PLAIN).author_shown == "neilb@suse.de"


def test_an_address_used_as_display_name_is_obfuscated_too() -> None:
    shown = display_message(make_message(sender='"ann@example.org" <ann@example.org>'))
    assert "ann@example.org" not in shown.author_shown and "ann@example.org" not in shown.author_name


def test_control_characters_in_headers_show_as_symbols_and_absurd_fields_are_cut() -> None:
    shown = show("nul-and-controls.eml")
    assert shown.subject == "nul\u2400 \u241b[31mred"
    long = display_message(make_message(subject="x" * 5000, sender="y" * 5000 + " <a@example.org>"))
    assert len(long.subject) == 300 and long.subject.endswith("\u2026")
    assert len(long.author_name) == 1000 and long.author_name.endswith("\u2026")


@pytest.mark.parametrize(
    "date", ["not a date", "Sat, 1 Jan 0999 00:00:00 +0000", "Fri, 31 Dec 9999 23:59:59 -1200", None]
)
def test_unusable_dates_give_none(date: str | None) -> None:
    assert display_message(make_message(date=date)).date is None


def test_absurd_offsets_are_read_as_utc() -> None:
    shown = display_message(make_message(date="Mon, 1 Apr 2019 12:00:00 +2300"))
    assert shown.date is not None and shown.date.isoformat() == "2019-04-01T12:00:00+00:00"


# -- Charsets ----------------------------------------------------------------------------------------


def test_latin1_that_is_really_cp1252_shows_curly_quotes_and_the_euro() -> None:
    assert "\u201cQuoted\u201d \u2013 d\u00e9j\u00e0 vu \u20ac 5" in show("latin1-really-cp1252.eml").body_html


def test_unlabelled_8bit_tries_utf8_then_cp1252() -> None:
    assert "na\u00efve caf\u00e9" in show("unlabelled-8bit.eml").body_html
    utf8 = display_message(b"Subject: x\n\n" + "na\u00efve".encode())
    assert "na\u00efve" in utf8.body_html


@pytest.mark.parametrize("label", ["y", "x-unknown", "non-existing-codec", '"utf-8"', "UTF8"])
def test_bogus_charset_names_fall_back_sensibly(label: str) -> None:
    raw = f"Subject: x\nContent-Type: text/plain; charset={label}\n\nGr\u00fc\u00dfe\n".encode()
    assert "Gr\u00fc\u00dfe" in display_message(raw).body_html
    assert "Gr\u00fc\u00dfe aus K\u00f6ln" in show("bogus-charset.eml").body_html


def test_declared_charsets_are_used() -> None:
    raw = b"Subject: x\nContent-Type: text/plain; charset=koi8-r\n\n" + "\u041f\u0440\u0438\u0432\u0435\u0442".encode(
        "koi8-r"
    )
    assert "\u041f\u0440\u0438\u0432\u0435\u0442" in display_message(raw).body_html
    raw = b"Subject: x\nContent-Type: text/plain; charset=gb2312\n\n" + "\u4e2d\u6587".encode("gbk")
    assert "\u4e2d\u6587" in display_message(raw).body_html


def test_quoted_printable_and_base64_bodies_are_decoded() -> None:
    qp = b"Subject: x\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n"
    assert "caf\u00e9 and a very long line" in display_message(qp + b"caf=C3=A9 and a very =\nlong line\n").body_html
    b64 = b"Subject: x\nContent-Transfer-Encoding: base64\n\nSGVsbG8sIHdvcmxkLg==\n"
    assert "Hello, world." in display_message(b64).body_html


# -- Plain text --------------------------------------------------------------------------------------


def test_plain_text_is_escaped_and_monospaced() -> None:
    shown = body_of('if (a < b && c > d) { x = "y"; }\n    indented\n')
    assert '<pre class="text">if (a &lt; b &amp;&amp; c &gt; d) { x = "y"; }\n    indented</pre>' in shown.body_html
    assert shown.body_html.startswith('<div class="msg-body">') and shown.body_html.endswith("</div>")


def test_patches_and_ascii_art_survive_byte_for_byte() -> None:
    art = "  +------+------+\n  | disk | MB/s |\n  +------+------+"
    assert art in show("plain-quotes-signature.eml", PLAIN).body_html
    patch = show("patch-attached.eml")
    # Marked up as a diff (test_display_diffs), every character kept.
    assert "-\tif (a &lt; b)\n+\tif (a &lt;= b)\n \t\treturn;" in re.sub(r"<[^>]*>", "", patch.body_html)
    assert '<span class="diff-add">+\tif (a &lt;= b)</span>' in patch.body_html


def test_long_quotes_fold_with_their_attribution_in_the_summary() -> None:
    html = show("plain-quotes-signature.eml", PLAIN).body_html
    assert (
        '<details class="quote"><summary><span class="attribution">On Mon, 1 Apr 2019 at 12:00, Ann Example '
        '&lt;ann@example.org&gt; wrote:</span> <span class="lines">5 quoted lines</span></summary>'
    ) in html
    assert "&gt; The disks are idle most of the time." in html


def test_short_quotes_stay_unfolded() -> None:
    html = show("plain-quotes-signature.eml", PLAIN).body_html
    assert '<span class="quote">&gt; Any idea?</span>\nYes:' in html


def test_quote_folding_threshold_counts_lines_with_text() -> None:
    three = body_of("Ann wrote:\n> one\n>\n> two\n>\n> three\nreply\n").body_html
    four = body_of("Ann wrote:\n> one\n> two\n> three\n> four\nreply\n").body_html
    assert "<details" not in three and '<span class="quote">' in three
    assert '<details class="quote"><summary><span class="attribution">Ann wrote:</span>' in four


def test_attribution_over_two_lines_moves_into_the_summary() -> None:
    text = "Thanks.\nOn Mon, 1 Jan 2024, Ann Example\n<ann@example.org> wrote:\n> a\n> b\n> c\n> d\n"
    shown = body_of(text)
    assert "On Mon, 1 Jan 2024, Ann Example &lt;ann@example.org&gt; wrote:</span>" in shown.body_html
    assert shown.text == "Thanks."


def test_attribution_with_a_full_width_colon_is_recognised() -> None:
    text = "Song Liu <song@example.org> \u4e8e2021\u5e742\u670811\u65e5\u5199\u9053\uff1a\n> a\n> b\n> c\n> d\nright.\n"
    shown = body_of(text)
    assert '<span class="attribution">Song Liu &lt;song@example.org&gt; \u4e8e2021' in shown.body_html
    assert shown.text == "right."


def test_quotes_separated_by_blank_lines_fold_together() -> None:
    html = body_of("> a\n> b\n\n> c\n> d\n\nreply\n").body_html
    assert html.count("<details") == 1 and "&gt; b\n\n&gt; c" in html


def test_signature_folds_and_is_left_out_of_the_text() -> None:
    shown = show("plain-quotes-signature.eml", PLAIN)
    assert '<details class="signature"><summary>Signature</summary><pre class="text">Bob Builder\n' in shown.body_html
    assert "Bob Builder" not in shown.text
    assert "Check the bitmap" in shown.text and "The rebuild" not in shown.text


def test_overlong_signature_is_not_folded() -> None:
    html = body_of("text\n-- \n" + "line\n" * 40).body_html
    assert "<details" not in html


def test_git_format_patch_version_trailer_is_a_signature() -> None:
    html = body_of("---\n md.c | 2 +-\n\ndiff --git a/md.c b/md.c\n-- \n2.20.1\n").body_html
    assert '<details class="signature"><summary>Signature</summary><pre class="text">2.20.1</pre>' in html


def test_mailman_footer_folds() -> None:
    footer = "_______________________________________________\ndev mailing list\ndev@lists.example.org\n"
    shown = body_of("Hello.\n" + footer)
    assert '<details class="footer"><summary>List footer</summary>' in shown.body_html
    assert shown.text == "Hello."


def test_outlook_original_message_folds_to_the_end() -> None:
    shown = show("outlook-top-post.eml")
    assert '<span class="attribution">-----Original Message-----</span>' in shown.body_html
    assert shown.text == "Tuesday works for me."


def test_format_flowed_with_delsp_is_joined() -> None:
    shown = show("flowed-delsp.eml")
    assert "This is a long paragraph that was wrapped by the client and must be joined." in shown.body_html
    assert "&gt; A quoted flowed line that was also wrapped by the client." in shown.body_html
    assert "\nFrom here on the line was space-stuffed." in shown.body_html
    assert '<details class="signature">' in shown.body_html


def test_format_flowed_without_delsp_keeps_the_space() -> None:
    shown = body_of("one \ntwo\n", **{"Content-Type": "text/plain; format=flowed"})
    assert "one two" in shown.body_html


def test_urls_are_linked_without_trailing_punctuation() -> None:
    html = show("plain-quotes-signature.eml").body_html
    link = '<a href="{0}" rel="nofollow noopener noreferrer">{0}</a>'
    assert link.format("https://example.org/logs/md0.txt") + " (see the end)" in html
    assert "(" + link.format("https://example.org/wiki/Bitmap_(md)") + ")." in html
    assert "&lt;" + link.format("http://example.org/faq") + "&gt;" in html


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("see ftp://ftp.example.org/pub/.", "ftp://ftp.example.org/pub/"),
        ("'https://example.org/a?b=1&c=2'", "https://example.org/a?b=1&amp;c=2"),
        ("HTTPS://EXAMPLE.ORG/X!", "HTTPS://EXAMPLE.ORG/X"),
        ("[https://example.org/list]", "https://example.org/list"),
        (
            "https://lore.kernel.org/r/20190101.1234@host.example,",
            "https://lore.kernel.org/r/20190101.1234@host.example",
        ),
    ],
)
def test_url_edges(text: str, url: str) -> None:
    assert f'<a href="{url}" rel="nofollow noopener noreferrer">{url}</a>' in body_of(text).body_html


def test_things_that_are_not_urls_stay_text() -> None:
    html = body_of("xhttp://a.example/ http:// javascript:alert(1) file:///etc/passwd\n").body_html
    assert "<a " not in html


def test_addresses_are_obfuscated_by_default_and_linked_when_not() -> None:
    text = "Write to raid-help@example.net or mailto:ann@example.org?subject=hi."
    hidden = body_of(text, DisplayOptions()).body_html
    assert "raid-help@" not in hidden and "rai\u2026@example.net" in hidden
    assert "ann@example.org" not in hidden and "mailto:" in hidden and "<a " not in hidden
    shown = body_of(text).body_html
    assert '<a href="mailto:raid-help@example.net" rel="nofollow noopener noreferrer">' in shown
    assert '<a href="mailto:ann@example.org?subject=hi" rel="nofollow noopener noreferrer">' in shown


def test_addresses_in_message_ids_inside_urls_are_left_alone() -> None:
    html = body_of("Link: https://lore.kernel.org/r/abc@example.org\n", DisplayOptions()).body_html
    assert 'href="https://lore.kernel.org/r/abc@example.org"' in html


def test_text_has_addresses_obfuscated_when_the_body_has() -> None:
    assert body_of("mail bob@example.com\n", DisplayOptions()).text == "mail b\u2026@example.com"
    assert body_of("mail bob@example.com\n").text == "mail bob@example.com"


def test_obfuscation_keeps_at_most_three_and_at_most_half_of_the_local_part() -> None:
    from listlib.display.textbody import obfuscate_address

    assert obfuscate_address("a@x.org") == "a\u2026@x.org"
    assert obfuscate_address("ann@x.org") == "a\u2026@x.org"
    assert obfuscate_address("neilb@x.org") == "ne\u2026@x.org"
    assert obfuscate_address("linux-raid@x.org") == "lin\u2026@x.org"


def test_control_characters_and_nul_bytes_become_visible() -> None:
    shown = show("nul-and-controls.eml")
    assert '<pre class="text">a\u2400b\u2407c\u240cd\ne\nf</pre>' in shown.body_html


# -- MIME structures ---------------------------------------------------------------------------------


def test_alternative_prefers_plain_text() -> None:
    shown = show("alternative.eml")
    assert "The plain version." in shown.body_html and "HTML" not in shown.body_html
    assert shown.attachments == ()


def test_alternative_with_an_empty_plain_part_shows_the_html() -> None:
    shown = show("alternative-empty-plain.eml")
    assert '<div class="html-part"><p>Only the HTML version has text \u2713.</p></div>' in shown.body_html
    assert shown.text == "Only the HTML version has text \u2713."


def test_pictures_of_an_unshown_alternative_are_listed() -> None:
    shown = show("apple-alternative-pictures.eml")
    assert [(a.filename, a.inline) for a in shown.attachments] == [("photo.png", False)]


def test_cid_images_point_at_their_attachment() -> None:
    shown = show("related-cid-image.eml", DisplayOptions(attachment_base="../att/m1/"))
    assert '<img src="../att/m1/chart.png" alt="chart">' in shown.body_html
    chart, other = shown.attachments
    assert (chart.filename, chart.inline, chart.content_id, chart.content_type) == (
        "chart.png",
        True,
        "image001.png@01D4E5F6.12345678",
        "image/png",
    )
    assert chart.data.startswith(b"\x89PNG") and chart.size == len(chart.data) == 48
    assert (other.filename, other.inline) == ("attachment-1.png", False)


def test_attachment_urls_are_quoted() -> None:
    raw = (DATA / "related-cid-image.eml").read_bytes().replace(b'"chart.png"', b'"my chart #1.png"')
    shown = display_message(raw, DisplayOptions(attachment_base="a/"))
    assert '<img src="a/my%20chart%20%231.png" alt="chart">' in shown.body_html


def test_remote_images_are_blocked_unless_allowed() -> None:
    html = '<p><img src="https://tracker.example/p.gif" alt="logo"></p>'
    raw = b"Subject: x\nContent-Type: text/html\n\n" + html.encode()
    blocked = display_message(raw).body_html
    assert "<img" not in blocked
    assert '<span class="remote-image" title="https://tracker.example/p.gif">[image: logo]</span>' in blocked
    loaded = display_message(raw, DisplayOptions(load_remote_images=True)).body_html
    assert '<img src="https://tracker.example/p.gif" alt="logo" referrerpolicy="no-referrer" loading="lazy">' in (
        loaded
    )


def test_dmarc_wrapped_message_shows_the_inner_header_and_body() -> None:
    shown = show("dmarc-wrapped.eml", PLAIN)
    assert (
        '<section class="attached-message"><dl class="attached-header"><dt>From</dt>'
        "<dd>Ann Example &lt;ann@example.org&gt;</dd><dt>Date</dt>"
        '<dd><time datetime="2019-04-01T14:00:00+02:00">2019-04-01 14:00 +0200</time></dd>'
        "<dt>Subject</dt><dd>The real subject</dd></dl>"
        '<pre class="text">The original body.</pre></section>'
    ) in shown.body_html
    assert shown.text == "The original body."
    assert "ann@example.org" not in show("dmarc-wrapped.eml").body_html


def test_digest_shows_every_message() -> None:
    shown = show("digest.eml")
    assert shown.body_html.count('<section class="attached-message">') == 2
    assert "First message body." in shown.text and "Second message body." in shown.text


def test_signed_message_shows_its_content_a_note_and_lists_the_signature() -> None:
    shown = show("pgp-signed.eml")
    assert '<pre class="text">This text is signed.</pre>' in shown.body_html
    assert '<div class="note signed">This message is signed (OpenPGP).</div>' in shown.body_html
    assert [(a.filename, a.content_type) for a in shown.attachments] == [("signature.asc", "application/pgp-signature")]


def test_encrypted_messages_get_a_note_and_the_ciphertext_as_attachment() -> None:
    pgp = show("pgp-encrypted.eml")
    assert '<div class="note encrypted">' in pgp.body_html
    assert [a.filename for a in pgp.attachments] == ["encrypted.asc"]
    assert pgp.attachments[0].data.startswith(b"-----BEGIN PGP MESSAGE-----")
    smime = show("smime-encrypted.eml")
    assert '<div class="note encrypted">' in smime.body_html
    assert [(a.filename, a.content_type) for a in smime.attachments] == [("smime.p7m", "application/pkcs7-mime")]


def test_inline_text_attachments_are_shown_and_listed_real_attachments_only_listed() -> None:
    shown = show("patch-attached.eml")
    assert [(a.filename, a.content_type, a.inline) for a in shown.attachments] == [
        ("0001-fix.patch", "text/x-patch", True),
        ("config.txt", "text/plain", False),
    ]
    assert "CONFIG_MD" not in shown.body_html


def test_too_long_text_parts_are_attached_instead_of_shown() -> None:
    shown = body_of("x" * (2 << 20))
    assert '<div class="note too-long">' in shown.body_html
    assert shown.attachments[0].size == 2 << 20


def test_a_kernel_log_too_long_for_a_page_is_attached_but_still_searched() -> None:
    log = "".join(f"[{n:6d}.000] md/raid:md0: read error corrected (8 sectors at {n})\n" for n in range(5_000))
    assert MAX_SHOWN_BYTES < len(log) <= MAX_INDEXED_BYTES
    shown = body_of(log)
    assert '<div class="note too-long">' in shown.body_html and "read error corrected" not in shown.body_html
    assert shown.attachments[0].size == len(log)
    assert "md0: read error corrected (8 sectors at 3999)" in shown.text
    assert display_message(make_message(body=log), DisplayOptions(text_only=True)).text == shown.text


def test_broken_boundary_shows_the_body_as_text() -> None:
    assert "The body is still shown." in show("broken-boundary.eml").body_html


def test_base64_garbage_and_unknown_transfer_encodings_still_show_something() -> None:
    assert "Hello world" in show("base64-garbage.eml").body_html
    assert "Plain text under a made-up encoding." in show("wrong-transfer-encoding.eml").body_html


def test_message_without_text_says_so() -> None:
    raw = b"Subject: x\nContent-Type: application/pdf\nContent-Transfer-Encoding: base64\n\nJVBERi0=\n"
    shown = display_message(raw)
    assert '<div class="note empty">' in shown.body_html
    assert [(a.filename, a.data) for a in shown.attachments] == [("attachment-1.pdf", b"%PDF-")]


def test_deep_nesting_is_cut_off_with_a_note() -> None:
    raw = b"Subject: x\nContent-Type: message/rfc822\n\n" * 60 + b"Subject: bottom\n\nbottom text\n"
    shown = display_message(raw)
    assert '<div class="note truncated">' in shown.body_html
    assert_nothing_executable(shown.body_html)


# -- X-No-Archive --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["x-no-archive.eml", "archive-no.eml"])
def test_no_archive_messages_keep_only_their_date(name: str) -> None:
    shown = show(name)
    assert shown.no_archive
    assert (shown.subject, shown.author_name, shown.author_address, shown.author_shown) == ("", "", "", "")
    assert shown.message_id is None and shown.attachments == () and shown.text == ""
    assert shown.date is not None and shown.date.isoformat() == "2019-04-01T12:00:00+02:00"
    assert '<div class="note no-archive">' in shown.body_html and "Secret" not in shown.body_html


@pytest.mark.parametrize(("field", "value"), [("X-No-Archive", "no"), ("Archive", "yes")])
def test_other_archive_values_are_archived(field: str, value: str) -> None:
    assert not display_message(make_message(extra={field: value})).no_archive


def _related(*images: str, language: str = "") -> bytes:
    """An HTML message whose images are parts of it (``cid:``); each of ``images`` is
    the header lines of one image part after its Content-ID."""
    parts = "".join(
        f'--b\nContent-Type: image/png; name="img{n}.png"\nContent-ID: <i{n}@x>\n{headers}'
        "Content-Transfer-Encoding: base64\n\niVBORw0KGgo=\n"
        for n, headers in enumerate(images)
    )
    own_alt = ' alt="own"'  # the third image's HTML has alt text of its own
    html = "".join(f'<img src="cid:i{n}@x"{own_alt if n == 2 else ""}>' for n in range(len(images)))
    body = f"--b\nContent-Type: text/html; charset=utf-8\n\n<p>{html}</p>\n{parts}--b--\n"
    extra = {"Content-Type": 'multipart/related; boundary="b"', "MIME-Version": "1.0"}
    if language:
        extra["Content-Language"] = language
    return make_message(body=body, extra=extra)


def test_an_inline_image_without_alt_text_is_described_by_its_part_or_named_by_its_file() -> None:
    shown = display_message(_related("Content-Description: =?utf-8?q?Gr=C3=BC=C3=9Fe?= from  Bern\n", "", ""))
    alts = re.findall(r'<img [^>]*alt="([^"]*)"', shown.body_html)
    assert alts == ["Grüße from Bern", "img1.png", "own"]  # the HTML's own alt text stays


def test_a_message_s_language_is_the_first_tag_of_its_content_language() -> None:
    assert display_message(_related("", language="de-CH, en")).language == "de-CH"
    assert display_message(_related("", language="<script>")).language == ""
    assert display_message(_related("")).language == ""
