"""Hostile input: nothing from a message may run in a reader's browser or escape its folder."""

from __future__ import annotations

import dataclasses
import re
import time
import unicodedata
from html import escape
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from listlib.display import DisplayOptions, MessageDisplay, display_message, safe_filename
from listlib.display.attachments import MAX_BYTES, MAX_LABEL, SAFE_EXTENSIONS, display_name
from listlib.display.textbody import markup_text, render_plain

from ..support.display_safety import assert_nothing_executable, executable_problems
from ..support.helpers import make_message

DATA = Path(__file__).parent.parent / "data" / "display"
FIXTURES = sorted(p.read_bytes() for p in DATA.glob("*.eml"))


def html_mail(html: str, content_type: str = "text/html") -> bytes:
    return f"From: m@example.net\nSubject: x\nContent-Type: {content_type}; charset=utf-8\n\n{html}".encode()


def test_the_checker_catches_what_it_must() -> None:
    def part(html: str) -> str:
        return f'<div class="html-part">{html}</div>'

    assert executable_problems(part('<a href="javascript:x">x</a>'))
    assert executable_problems(part('<a href=" jav&#x09;ascript:x">x</a>'))
    assert executable_problems(part('<p onclick="x">x</p>'))
    assert executable_problems(part('<p style="x">x</p>'))
    assert executable_problems(part("<svg></svg>"))
    assert executable_problems(part("</div>"))
    assert not executable_problems(part('<div><a href="https://x.example/">x</a><img src="att/a.png"><br></div>'))
    # Without an HTML part only listlib's own markup may appear, around text without '<' or '>'.
    link = '<a href="https://x/" rel="nofollow noopener noreferrer">x</a>'
    own = f'<div class="msg-body"><pre class="text">a &lt; {link}</pre>'
    assert not executable_problems(own + "</div>")
    assert executable_problems(own + "<b>x</b></div>")
    assert executable_problems(own + "a > b</div>")
    assert executable_problems(own)
    assert executable_problems('<a href="javascript:x">x</a>')


def test_hostile_html_mail_keeps_text_and_loses_everything_executable() -> None:
    shown = display_message((DATA / "html-only-hostile.eml").read_bytes())
    html = shown.body_html
    assert_nothing_executable(html)
    inner = html.removeprefix('<div class="msg-body">')
    for gone in ("alert", "javascript", "vbscript", "data:", "expression(", "evil.example", "<img", "msg-body", "<!--"):
        assert gone not in inner, gone
    assert "<p>Hello <b>world</b></p>" in html
    assert '<a href="https://example.org/ok" rel="nofollow noopener noreferrer">fine link</a>' in html
    assert '<span class="remote-image" title="https://tracker.example/pixel.gif">[image: logo]</span>' in html
    assert "<blockquote>quoted in html</blockquote>" in html
    assert "mallory@example.net" not in html
    assert "quoted in html" not in shown.text and "Hello world" in shown.text


@pytest.mark.parametrize(
    "attack",
    [
        "<script>alert(1)</script>",
        "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
        "<scr<script>ipt>alert(1)</scr</script>ipt>",
        '<img src=x onerror="alert(1)">',
        "<img src=x onerror=alert(1)//",
        '<svg onload="alert(1)"><circle r="1"/></svg>',
        '<svg><a xlink:href="javascript:alert(1)"><text>x</text></a></svg>',
        '<a href="javascript:alert(1)">x</a>',
        '<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">x</a>',
        '<a href="java\tscript:alert(1)">x</a>',
        '<a href=" javascript:alert(1)">x</a>',
        '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
        '<iframe src="https://evil.example/"></iframe>',
        '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
        '<object data="https://evil.example/x.swf"></object><embed src="x.swf">',
        '<p style="background:url(javascript:alert(1))">x</p>',
        '<p style="width: expression(alert(1))">x</p>',
        "<style>@import 'https://evil.example/x.css'; p { width: expression(alert(1)) }</style>",
        '<meta http-equiv="refresh" content="0;url=https://evil.example/">',
        '<base href="https://evil.example/">',
        '<link rel="stylesheet" href="https://evil.example/x.css">',
        '<form action="https://evil.example/"><input name="p"><button formaction="javascript:alert(1)">x</button>',
        "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)></style></mglyph></table></mtext></math>",
        '<details open ontoggle="alert(1)"><summary>x</summary></details>',
        '<body onload="alert(1)">x</body>',
        '<video poster="https://evil.example/p.png"><source src="x.mp4"></video>',
        '<img srcset="https://evil.example/x.png 1x">',
        '<table background="https://evil.example/x.png"><tr><td>x</td></tr></table>',
        '<div class="msg-body" id="main" name="x">x</div>',
        "</div></div></section></details><p>escaped?</p>",
        "<!--<script>alert(1)</script>--><![CDATA[<script>alert(1)</script>]]>",
        '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
        "<template><script>alert(1)</script></template>",
        '<a href="vbscript:msgbox(1)">x</a><a href="file:///etc/passwd">x</a>',
        '<a href="//evil.example/">protocol-relative</a><a href="../../etc">relative</a>',
        '<blockquote cite="mid:x@example.org">q</blockquote><q cite="javascript:alert(1)">z</q>',
    ],
)
def test_html_attack_is_neutralised(attack: str) -> None:
    for options in (DisplayOptions(), DisplayOptions(load_remote_images=True, obfuscate_addresses=False)):
        html = display_message(html_mail(attack), options).body_html
        assert_nothing_executable(html)


def test_hostile_html_inside_alternative_and_mixed_is_sanitized_too() -> None:
    attack = '<img src=x onerror="alert(1)"><script>alert(2)</script><p>ok</p>'
    for container in ("multipart/alternative", "multipart/mixed", "multipart/related"):
        raw = (
            f'Subject: x\nContent-Type: {container}; boundary="b"\n\n--b\nContent-Type: text/html\n\n{attack}\n--b--\n'
        ).encode()
        html = display_message(raw).body_html
        assert_nothing_executable(html)
        assert "<p>ok</p>" in html


def test_plain_text_that_looks_like_html_is_only_text() -> None:
    shown = display_message(make_message(body='<script>alert(1)</script>\n<a href="javascript:x">y</a>\n'))
    assert_nothing_executable(shown.body_html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown.body_html


def test_headers_are_plain_text_that_escaping_makes_inert() -> None:
    raw = make_message(
        subject="<script>alert('s')</script>",
        sender='"<img src=x onerror=alert(1)>" <a@example.org>',
        message_id='<"><script>alert(1)</script>@example.org>',
    )
    shown = display_message(raw, DisplayOptions(obfuscate_addresses=False))
    assert shown.subject == "<script>alert('s')</script>"
    assert shown.author_name == "<img src=x onerror=alert(1)>" == shown.author_shown
    for field in (shown.subject, shown.author_name, shown.author_shown, shown.author_address, shown.message_id or ""):
        page = f'<h1 title="{escape(field)}">{escape(field)}</h1>'
        assert_nothing_executable(f'<div class="html-part">{page}</div>')  # parsed as a browser would


def test_encoded_words_cannot_inject_lines_or_markup_into_fields() -> None:
    raw = make_message(subject="=?utf-8?q?a=0D=0A=3Cscript=3E=00b?=")
    shown = display_message(raw)
    assert "\n" not in shown.subject and "\r" not in shown.subject and "\x00" not in shown.subject
    assert shown.subject == "a <script>\u2400b"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../../x", "x.bin"),
        ("/etc/passwd", "passwd.bin"),
        ("con.txt", "_con.txt"),
        ("CON", "_CON.bin"),
        ("com1.tar.gz", "_com1.tar.gz"),
        ("a\\b", "b.bin"),
        ("C:\\Users\\me\\report.doc", "report.doc"),
        ("nul\x00byte.txt", "nul_byte.txt"),
        ("...", "attachment-1.bin"),
        ("..", "attachment-1.bin"),
        (".htaccess", "htaccess.bin"),
        ("  .hidden  ", "hidden.bin"),
        ("trailing. . .", "trailing.bin"),
        ("a..b...c", "a.b.c.txt"),
        ('what?<>|*:".txt', "what_______.txt"),
        ("\u202egpj.exe", "_gpj.exe.bin"),
        ("index.html", "index.html.txt"),
        ("image.SVG", "image.SVG.txt"),
        ("shell.php.jpg", "shell_php.jpg"),
        ("shell.php", "shell_php.bin"),
        ("nul", "_nul.bin"),
        ("notes", "notes.bin"),
        ("x.xhtm", "x.xhtm.txt"),
        ("x.html.en", "x.html.en.bin"),
        ("x.var", "x_var.bin"),
        ("map.var.txt", "map_var.txt"),
        ("x.log", "x.log.txt"),
        ("x.unknownext", "x.unknownext.bin"),
        ("x.eml", "x.eml.txt"),
        ("REPORT.PDF", "REPORT.PDF"),
        ("photo.JPG", "photo.JPG"),
        ("0001-fix.patch", "0001-fix.patch"),
        ("x.tar.gz", "x.tar.gz"),
        ("x.tar.bz2", "x.tar.bz2.bin"),
        ("", "attachment-1.bin"),
        (None, "attachment-1.bin"),
    ],
)
def test_attachment_names_are_made_safe(name: str | None, expected: str) -> None:
    assert safe_filename(name, "application/octet-stream", set()) == expected


def test_long_names_are_cut_to_100_bytes_keeping_the_extension() -> None:
    name = safe_filename("a" * 300 + ".pdf", "application/pdf", set())
    assert name == "a" * 96 + ".pdf"
    wide = safe_filename("\u00e9" * 300 + ".txt", "text/plain", set())
    assert len(wide.encode()) <= MAX_BYTES and wide.endswith(".txt") and wide.startswith("\u00e9")
    no_ext = safe_filename("b" * 300, "text/plain", set())
    assert no_ext == "b" * 96 + ".txt"


def test_names_are_unique_case_insensitively_with_numbered_suffixes() -> None:
    taken: set[str] = set()
    names = [safe_filename(n, "application/pdf", taken) for n in ("r.pdf", "R.PDF", "r.pdf", None, None)]
    assert names == ["r.pdf", "R-2.PDF", "r-3.pdf", "attachment-1.pdf", "attachment-2.pdf"]
    assert taken == set(names)
    long_taken: set[str] = set()
    first = safe_filename("x" * 300 + ".pdf", "application/pdf", long_taken)
    second = safe_filename("x" * 300 + ".pdf", "application/pdf", long_taken)
    assert second != first and second.endswith("-2.pdf") and len(second.encode()) <= MAX_BYTES


def test_empty_names_take_their_extension_from_the_content_type() -> None:
    assert safe_filename(None, "image/png", set()) == "attachment-1.png"
    assert safe_filename(None, "text/html", set()) == "attachment-1.html.txt"
    assert safe_filename(None, "application/x-unheard-of", set()) == "attachment-1.bin"
    assert safe_filename(None, "image/svg+xml", set()) == "attachment-1.svg.txt"
    assert safe_filename(None, "message/rfc822", set()) == "attachment-1.eml.txt"
    taken: set[str] = set()
    assert [safe_filename(None, "text/html", taken) for _ in range(2)] == [
        "attachment-1.html.txt",
        "attachment-2.html.txt",
    ]


@pytest.mark.parametrize(
    ("name", "content_type", "expected"),
    [
        ("README", "text/plain", "README.txt"),
        ("README", "application/octet-stream", "README.bin"),
        ("Makefile", "text/x-makefile", "Makefile.txt"),
        (".htaccess", "text/plain", "htaccess.txt"),
        ("x.php", "text/x-php", "x_php.txt"),
        ("page.html", "application/octet-stream", "page.html.txt"),
        ("x.json", "application/json", "x.json.txt"),
        ("x.png", "text/html", "x.png"),
        ("x.txt", "text/html", "x.txt"),
    ],
)
def test_names_without_an_allowed_extension_end_in_txt_for_text_and_bin_for_the_rest(
    name: str, content_type: str, expected: str
) -> None:
    assert safe_filename(name, content_type, set()) == expected


def test_every_allowed_extension_is_served_as_a_passive_type_by_debian_apache_and_nginx() -> None:
    apache = _mime_types(Path("/etc/mime.types"), ";")
    nginx = _mime_types(Path("/etc/nginx/mime.types"), ";")
    if not apache:
        pytest.skip("/etc/mime.types is missing (apt-get install media-types)")
    active = re.compile(r"html|[+/]xml|svg|javascript|ecmascript|text/css|multipart|message/|x-shockwave")
    for ext in SAFE_EXTENSIONS:
        # Apache sends no type for an extension missing from TypesConfig (the browser sniffs);
        # nginx sends its default_type (application/octet-stream), which is safe.
        assert ext in apache, f".{ext} is not in /etc/mime.types"
        for kind in (apache[ext], nginx.get(ext, "application/octet-stream")):
            assert not active.search(kind), f".{ext} is served as {kind}"


def _mime_types(path: Path, end: str) -> dict[str, str]:
    """extension -> type of a mime.types file (Debian's or nginx's syntax)."""
    if not path.is_file():
        return {}
    types = {}
    for line in path.read_text().splitlines():
        words = line.split("#")[0].replace(end, " ").split()
        if len(words) > 1 and "/" in words[0]:
            for ext in words[1:]:
                types.setdefault(ext.lower(), words[0])
    return types


def test_pages_show_the_name_from_the_message_and_link_the_safe_file() -> None:
    raw = make_message(
        "names",
        "--b\nContent-Type: text/plain\n\nhi\n"
        '--b\nContent-Type: text/html\nContent-Disposition: attachment; filename="../\u202eindex.html"\n\n<b>x</b>\n'
        "--b\nContent-Type: application/octet-stream\nContent-Disposition: attachment\n\nx\n--b--\n",
        extra={"MIME-Version": "1.0", "Content-Type": 'multipart/mixed; boundary="b"'},
    )
    shown = display_message(raw)
    assert [(a.filename, a.label) for a in shown.attachments] == [
        ("_index.html.txt", "_index.html"),
        ("attachment-1.bin", "attachment-1.bin"),
    ]
    assert display_name("x" * 500, "x.bin") == "x" * (MAX_LABEL - 1) + "\u2026"
    assert display_name("C:\\dir\\<b>.php", "_b__php.bin") == "_b_.php"


def test_hostile_attachment_names_in_a_message() -> None:
    shown = display_message((DATA / "hostile-attachment-names.eml").read_bytes())
    names = [a.filename for a in shown.attachments]
    assert names == [
        "x.bin",
        "passwd.bin",
        "_con.txt",
        "b.bin",
        "A" * 96 + ".pdf",
        "nul_byte.txt",
        "attachment-1.bin",
        "index.html.txt",
        "shell_php.jpg",
        "report.pdf",
        "REPORT-2.PDF",
        "report-3.pdf",
        "attachment-2.bin",
    ]
    assert [a.data for a in shown.attachments] == [f"part {i}".encode() for i in range(13)]
    assert [a.label for a in shown.attachments][:4] == ["x", "passwd", "con.txt", "b"]


def test_attachment_names_lose_noncharacters_and_lone_surrogates() -> None:
    name = safe_filename("a\uffffb\ufffe\udcffc.txt", "text/plain", set())
    assert name == "a_b__c.txt"
    name.encode("utf-8")


# -- Properties --------------------------------------------------------------------------------------

_names = st.one_of(
    st.none(),
    st.text(max_size=300),
    st.text(alphabet=st.sampled_from("./\\:\x00 \t.aA-_\u00e9\u202e"), max_size=40),
    st.lists(st.sampled_from(["..", ".", "/", "\\", "con", "nul", "x", "html", "php", " "]), max_size=12).map("".join),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_names, min_size=1, max_size=12), st.sampled_from(["text/plain", "image/png", "a/b", "text/html"]))
def test_safe_filename_never_yields_a_path_a_control_char_an_empty_name_or_a_duplicate(
    names: list[str | None], content_type: str
) -> None:
    taken: set[str] = set()
    results = [safe_filename(name, content_type, taken) for name in names]
    folded = [r.casefold() for r in results]
    assert len(set(folded)) == len(folded)
    for result in results:
        assert result and result == result.strip() and not result.startswith(".")
        assert "/" not in result and "\\" not in result and ".." not in result
        assert not any(unicodedata.category(c) in ("Cc", "Cs") for c in result)
        assert len(result.encode("utf-8")) <= MAX_BYTES
        assert result.rpartition(".")[2].lower() in SAFE_EXTENSIONS


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000))
def test_display_never_raises_on_arbitrary_bytes(raw: bytes) -> None:
    shown = display_message(raw)
    assert "<script" not in shown.body_html.lower()
    shown.body_html.encode("utf-8")
    shown.text.encode("utf-8")


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    raw = bytearray(draw(st.sampled_from(FIXTURES)))
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(raw)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        chunk = draw(
            st.one_of(
                st.binary(max_size=20),
                st.sampled_from(
                    [b"\n", b"\r\n", b"--", b"\n--b--\n", b"=?utf-8?b?", b"?=", b"\x00", b"\xff\xfe", b"<script>", b">"]
                ),
            )
        )
        end = min(len(raw), at + draw(st.integers(0, 40)))
        if action == "insert":
            raw[at:at] = chunk
        elif action == "delete":
            del raw[at:end]
        else:
            raw[at:end] = chunk
    return bytes(raw)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.booleans(), st.booleans())
def test_display_never_raises_on_mutated_messages_and_nothing_executes(raw: bytes, hide: bool, remote: bool) -> None:
    shown = display_message(raw, DisplayOptions(obfuscate_addresses=hide, load_remote_images=remote))
    assert_nothing_executable(shown.body_html)
    shown.body_html.encode("utf-8")
    for field in (shown.subject, shown.author_name, shown.author_shown, shown.text):
        field.encode("utf-8")
        assert "\x00" not in field or field is shown.text


@settings(max_examples=300, deadline=None)
@given(st.text(), st.booleans())
def test_any_plain_text_renders_to_balanced_inert_html(text: str, hide: bool) -> None:
    from listlib.display.textbody import clean_text

    html, _ = render_plain(clean_text(text), hide)
    assert_nothing_executable(f'<div class="msg-body">{html}</div>')
    assert_nothing_executable(f'<pre class="text">{markup_text(text, hide)}</pre>')


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=30).map("\n".join), st.booleans())
def test_quotes_of_a_parent_render_to_balanced_inert_html(parent: str, hide: bool) -> None:
    """A reply quoting any parent (its lines, re-quoted): folded as a repeat, still safe."""
    from listlib.display.textbody import clean_text, quote_keys

    reply = "".join(f"> {line}\n" for line in parent.split("\n")) + "\nMy answer.\n"
    html, plain = render_plain(clean_text(reply), hide, parent=quote_keys(clean_text(parent)))
    assert_nothing_executable(f'<div class="msg-body">{html}</div>')
    assert plain == render_plain(clean_text(reply), hide)[1]  # the new text is the same either way


_LINES = st.sampled_from(
    [
        "",
        "> quoted",
        ">> deeper",
        ">",
        "-- ",
        "--",
        "On Mon, Ann <ann@example.org> wrote:",
        "-----Original Message-----",
        "_" * 40,
        "dev mailing list",
        "see https://example.org/a@b.c (and mailto:bo@example.org)",
        "mail neilb@suse.de now",
        "plain words",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_LINES, st.text(max_size=30)), max_size=60).map("\n".join), st.booleans())
def test_the_text_without_html_is_the_text_that_comes_with_it(text: str, hide: bool) -> None:
    from listlib.display.textbody import clean_text, plain_text

    cleaned = clean_text(text)
    assert plain_text(cleaned, hide) == render_plain(cleaned, hide)[1]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.booleans())
def test_a_text_only_display_has_the_text_fields_of_the_full_one(raw: bytes, hide: bool) -> None:
    full = display_message(raw, DisplayOptions(obfuscate_addresses=hide))
    text_only = display_message(raw, DisplayOptions(obfuscate_addresses=hide, text_only=True))
    assert _text_fields(text_only) == _text_fields(full)


def _text_fields(shown: MessageDisplay) -> tuple[object, ...]:
    """Everything but the HTML (and what only the HTML decides: which attachments it shows inline,
    and the lines its replies' quotes are compared with, which only pages use)."""
    fields = dataclasses.astuple(dataclasses.replace(shown, body_html="", attachments=(), quote_keys=frozenset()))
    return (*fields, [(a.filename, a.content_type, a.data) for a in shown.attachments])


# -- Complexity guards (not speed targets: each input takes minutes when a step is quadratic) -------------

_HEADER = b"From: a@example.org\nSubject: x\nContent-Type: text/plain\n\n"
_SLOW_INPUTS = {
    "quotes and text alternating": _HEADER + b"text\n> a\n> b\n> c\n> d\n" * 40_000,
    "attributions": _HEADER + (b"On x wrote:\n" * 3 + b"> a\n> b\n> c\n> d\n") * 20_000,
    "signature separators": _HEADER + b"-- \nx\n" * 150_000,
    "closing parentheses after a URL": _HEADER + b"http://x.example/" + b")" * 300_000,
    "a long From without an address": b"From: " + b"x" * 300_000 + b"\n\nbody",
    "nested divs": b"Subject: x\nContent-Type: text/html\n\n" + b"<div>" * 100_000,
    "nested lists": b"Subject: x\nContent-Type: text/html\n\n" + b"<ul><li>" * 60_000,
    "blank HTML": b"Subject: x\nContent-Type: text/html\n\n" + b"&nbsp; " * 100_000 + b"<p>x</p>",
    "parts with one name": b"Subject: x\nContent-Type: multipart/mixed; boundary=b\n\n"
    + b"--b\nContent-Type: application/octet-stream; name=a.txt\n\nx\n" * 2_000
    + b"--b--\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_SLOW_INPUTS))
def test_hostile_sizes_take_linear_time(name: str) -> None:
    started = time.process_time()
    shown = display_message(_SLOW_INPUTS[name])
    assert time.process_time() - started < 20, name
    assert 'class="note unreadable"' not in shown.body_html


def test_deeply_nested_html_is_shown_as_text() -> None:
    shown = display_message(b"Subject: x\nContent-Type: text/html\n\n" + b"<div>" * 600 + b"<b>deep</b><script>x")
    assert '<div class="note too-deep">' in shown.body_html and "deep" in shown.body_html
    assert_nothing_executable(shown.body_html)
    shallow = display_message(b"Subject: x\nContent-Type: text/html\n\n" + b"<p>para" * 2_000)
    assert '<div class="html-part">' in shallow.body_html


def test_mime_nesting_5000_deep_shows_its_text_without_recursing_out() -> None:
    # Nesting past mime.MAX_DEPTH is cut off with a note; past what the stdlib parser can
    # recurse through (about 1,000), the body is shown as text: never an error, never a crash.
    multipart = b"Subject: x\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b0\n\n"
    multipart += b"".join(b"--b%d\nContent-Type: multipart/mixed; boundary=b%d\n\n" % (n, n + 1) for n in range(5_000))
    multipart += b"--b5000\nContent-Type: text/plain\n\nbottom text\n"
    forwarded = b"Subject: x\nContent-Type: message/rfc822\n\n" * 5_000 + b"Subject: bottom\n\nbottom text\n"
    for raw in (multipart, forwarded):
        shown = display_message(raw)
        assert "bottom text" in shown.body_html and 'class="note unreadable"' not in shown.body_html
        assert_nothing_executable(shown.body_html)
