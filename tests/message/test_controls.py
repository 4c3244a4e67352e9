"""Control characters from mail: never raw on a page, in a feed or on the operator's
terminal, and subjects never copied whole into other pages when absurdly long."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

from listlib.build import build_site
from listlib.config import load_config
from listlib.controls import SUBJECT_CHARS, clean_header_text, terminal_text
from listlib.display.textbody import clean_text
from listlib.filing import file_sources
from listlib.store.core import Store

from ..support.helpers import make_message, mboxrd, run_listlib
from ..support.hostile.checks import RAW_CONTROL_RE, assert_terminal_safe
from ..support.hostile.headers import control_header_messages


def test_header_text_shows_controls_as_symbols_and_replaces_what_xml_refuses() -> None:
    assert clean_header_text(" a\tb\nc\rd\x00\x1b[2J\x07\x7f ") == "a b c d\u2400\u241b[2J\u2407\u2421"
    assert clean_header_text("c1\x85\x9b ff\uffff fe\ufffe sur\ud800") == "c1\ufffd\ufffd ff\ufffd fe\ufffd sur\ufffd"
    assert clean_header_text("Grüße,\u2028日本") == "Grüße,\u2028日本"  # text is text
    cut = clean_header_text("x" * 5000, SUBJECT_CHARS)
    assert cut == "x" * (SUBJECT_CHARS - 1) + "\u2026"


def test_bodies_and_terminals_use_the_same_symbols() -> None:
    assert clean_text("a\tb\r\nc\x1b\uffff\x9b") == "a\tb\nc\u241b\ufffd\ufffd"
    assert terminal_text("one\ttwo\nthree\x1b]52;c;eA==\x07\x9b\ud800") == (
        "one\u2409two\nthree\u241b]52;c;eA==\u2407\ufffd\ufffd"
    )


def build_hostile_site(site: Path) -> Path:
    config = load_config(site / "listlib.toml")
    source = site.parent / "hostile.mbox"
    source.write_bytes(mboxrd(control_header_messages()))
    with Store(config.site.content_dir).open() as store:
        report = file_sources(store, config.lists, [source])
    assert report.filed == len(control_header_messages()), report.summary()
    build_site(config, workers=1)
    return site / "output"


class _Strict(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.texts.extend(value or "" for _name, value in attrs)


def test_a_site_of_hostile_headers_has_no_raw_control_character_and_a_well_formed_feed(site: Path) -> None:
    output = build_hostile_site(site)
    feed = ET.parse(output / "dev" / "feed.atom").getroot()  # a real XML parser: ill-formed XML raises
    titles = [entry.findtext("{http://www.w3.org/2005/Atom}title") for entry in feed]
    assert "hello \u241b[31mworld\u241b[0m" in titles
    checked = 0
    for path in sorted(output.rglob("*")):
        if not path.is_file() or path.suffix not in (".html", ".atom", ".xml", ".txt"):
            continue
        text = path.read_bytes().decode("utf-8")  # strict: a lone surrogate could not have been written
        found = RAW_CONTROL_RE.search(text)
        assert found is None, f"{path.relative_to(output)} has {found.group()!r}"
        if path.suffix == ".html":
            parser = _Strict()
            parser.feed(text)
            parser.close()
            assert not any(RAW_CONTROL_RE.search(piece) for piece in parser.texts)  # nor as character references
        checked += 1
    assert checked > 20


def test_a_2mb_subject_is_shown_cut_short_everywhere(site: Path) -> None:
    output = build_hostile_site(site)
    for path in output.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".atom", ".xml"):
            text = path.read_text()
            assert len(text) < 100_000, f"{path.relative_to(output)} is {len(text)} characters"
            if "spam spam" in text:
                assert "spam " * 61 not in text  # at most 300 characters of it
                assert "spam spam\u2026" in text or "spam\u2026" in text


def import_hostile(site: Path) -> None:
    (site / "hostile.mbox").write_bytes(mboxrd(control_header_messages()))
    run_listlib("import", "hostile.mbox", cwd=site, check=True)


def test_listlib_threads_shows_control_characters_as_symbols(site: Path) -> None:
    import_hostile(site)
    result = run_listlib("threads", cwd=site, check=True)
    assert_terminal_safe(result.stdout + result.stderr)
    assert "osc \u241b]52;c;aGVsbG8=\u2407 clear \u241b[2J\u241b[H" in result.stdout


def test_listlib_json_output_escapes_every_control_character(site: Path) -> None:
    import_hostile(site)
    result = run_listlib("threads", "--json", cwd=site, check=True)
    assert_terminal_safe(result.stdout + result.stderr)
    subjects = [t["root"]["subject"] for t in json.loads(result.stdout)["threads"]]
    assert any("\x9b and ffff\uffff" in (s or "") for s in subjects)  # the data itself is exact


def test_import_prints_colliding_message_ids_without_their_control_characters(site: Path) -> None:
    first = make_message("one", message_id="<same\x1b]52;c;eA==\x07@example.org>")
    second = make_message("two", body="Other text.\n", message_id="<same\x1b]52;c;eA==\x07@example.org>")
    (site / "a.mbox").write_bytes(mboxrd([first]))
    (site / "b.mbox").write_bytes(mboxrd([second]))
    run_listlib("import", "a.mbox", cwd=site, check=True)
    result = run_listlib("import", "b.mbox", cwd=site, check=True)
    assert "Message-ID collision: <same\u241b]52;c;eA==\u2407@example.org>" in result.stderr
    assert_terminal_safe(result.stdout + result.stderr)


def test_listlib_search_prints_no_control_characters(site: Path) -> None:
    import_hostile(site)
    run_listlib("build", cwd=site, check=True)
    for query in (["hello"], ["osc"], ["body"], ["twin"]):
        result = run_listlib("search", *query, cwd=site, check=True)
        assert_terminal_safe(result.stdout + result.stderr)
        assert " message" in result.stdout
