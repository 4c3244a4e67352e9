"""The UI language: every word of the theme goes through one translation table per
language (``listlib/themes/default/locales/<language>.toml``), ``[site] language``
picks it, a site's theme overrides strings or adds a language, the shipped languages
are complete, a site built in German keeps no English of its own, and editing a
translation rebuilds exactly the pages that show it."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from listlib.build import build_site, plan_site
from listlib.config import load_config
from listlib.errors import BuildError
from listlib.filing import file_sources
from listlib.store.core import Store
from listlib.theme import DEFAULT_THEME, Theme, _Layer
from listlib.translation import (
    DEFAULT_LOCALES,
    PLURAL_RULES,
    Texts,
    available_languages,
    load_texts,
    placeholders,
    read_table,
)

from ..build.test_build import add, build, call_of, post
from ..support.helpers import CORPORA, REPO, run_listlib
from ..support.wording import english_fragments, english_left, mail_strings, site_pages

SHIPPED = available_languages([DEFAULT_LOCALES])


def _table(language: str) -> dict[str, object]:
    return dict(read_table(DEFAULT_LOCALES / f"{language}.toml")[1])


def _set_language(site: Path, language: str) -> None:
    toml = site / "listlib.toml"
    toml.write_text(toml.read_text().replace("[site]\n", f'[site]\nlanguage = "{language}"\n', 1))


# -- the tables ---------------------------------------------------------------------------


def test_english_german_and_french_are_shipped() -> None:
    assert {"en", "de", "fr"} <= set(SHIPPED)


@pytest.mark.parametrize("language", SHIPPED)
def test_every_shipped_language_has_every_key_with_the_same_placeholders(language: str) -> None:
    english, theirs = _table("en"), _table(language)
    assert sorted(set(english) - set(theirs)) == [], "untranslated"
    assert sorted(set(theirs) - set(english)) == [], "not in the English table"
    texts = load_texts([DEFAULT_LOCALES], language)
    assert texts.warnings == ()
    needed = PLURAL_RULES[texts.plural][1]
    for key, entry in english.items():
        theirs_entry = theirs[key]
        assert isinstance(entry, str) == isinstance(theirs_entry, str), f"{key}: plural in one table only"
        assert placeholders(theirs_entry) == placeholders(entry), key  # type: ignore[arg-type]
        forms = [theirs_entry] if isinstance(theirs_entry, str) else list(theirs_entry.values())  # type: ignore[union-attr]
        assert all(form.strip() for form in forms), f"{key}: empty"
        if not isinstance(theirs_entry, str):
            assert set(needed) <= set(theirs_entry), f"{key}: lacks a form its plural rule needs"  # type: ignore[arg-type]


def test_plural_rules_pick_the_form_each_language_needs() -> None:
    entry = {"one": "{n} one", "few": "{n} few", "many": "{n} many", "other": "{n} other"}
    said = {
        rule: [Texts("x", {"k": entry}, plural=rule).text("k", n=n) for n in (0, 1, 2, 5, 21, 22, 112)]
        for rule in PLURAL_RULES
    }
    assert said["one-other"] == ["0 other", "1 one", "2 other", "5 other", "21 other", "22 other", "112 other"]
    assert said["zero-one-other"][:3] == ["0 one", "1 one", "2 other"]  # French: "0 message"
    assert said["east-slavic"] == ["0 many", "1 one", "2 few", "5 many", "21 one", "22 few", "112 many"]
    assert said["polish"] == ["0 many", "1 one", "2 few", "5 many", "21 many", "22 few", "112 many"]
    assert said["other"] == [f"{n} other" for n in (0, 1, 2, 5, 21, 22, 112)]
    german = load_texts([DEFAULT_LOCALES], "de")
    assert [german.text("count.message", n=n) for n in (0, 1, 2)] == ["0 Nachrichten", "1 Nachricht", "2 Nachrichten"]
    assert german.number(12345.5, 1) == "12.345,5"


def test_filled_texts_are_kept_per_table_and_asked_again_give_the_same() -> None:
    entry = {"one": "{n} line", "other": "{n} lines"}
    texts = Texts("x", {"k": entry, "plain": "Signature", "named": "by {who}"})
    french = Texts("fr", {"k": {"one": "{n} ligne", "other": "{n} lignes"}}, plural="zero-one-other")
    for _ in range(2):  # the second round answers from what the first kept
        assert [texts.text("k", n=n) for n in (0, 1, 2)] == ["0 lines", "1 line", "2 lines"]
        assert [french.text("k", n=n) for n in (0, 1, 2)] == ["0 ligne", "1 ligne", "2 lignes"]
        assert texts.text("plain") == "Signature"
        assert texts.text("named", who="Ann") == "by Ann"
        assert texts.text("named", who="Bob") == "by Bob"  # other values than a count are not kept
        with pytest.raises(KeyError, match="plural entry"):
            texts.text("k")
    assert texts == Texts("x", {"k": entry, "plain": "Signature", "named": "by {who}"})  # what is kept is no part of it


def test_a_regional_tag_falls_back_to_its_language_and_the_site_wins_key_by_key(tmp_path: Path) -> None:
    site, theme = tmp_path / "site", tmp_path / "theme"
    site.mkdir()
    theme.mkdir()
    (site / "de.toml").write_text('[list]\nfeed = "Newsfeed"\n')
    (theme / "de-CH.toml").write_text('[list]\nfeed = "Atom-Feed (CH)"\nlatest = "Neuste Threads"\n')
    texts = load_texts([site, theme, DEFAULT_LOCALES], "de-CH")
    assert texts.text("list.feed") == "Newsfeed"  # the site's own words win
    assert texts.text("list.latest") == "Neuste Threads"
    assert texts.text("list.archive") == "Archiv"
    assert texts.warnings == ()


def test_a_language_the_site_adds_shows_what_it_lacks_in_english_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "nl.toml").write_text('[language]\nname = "Nederlands"\n[list]\narchive = "Archief"\nfeeed = "x"\n')
    texts = load_texts([tmp_path, DEFAULT_LOCALES], "nl")
    assert texts.text("list.archive") == "Archief"
    assert texts.text("list.feed") == "Atom feed"
    assert any("shown in English" in warning for warning in texts.warnings)
    assert any("list.feeed: no such string" in w and "did you mean list.feed" in w for w in texts.warnings)


def test_an_unknown_language_is_an_error_naming_the_key_and_the_languages_there_are(site: Path) -> None:
    _set_language(site, "xx")
    result = run_listlib("build", cwd=site)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert "site.language" in line and "'xx'" in line and ", ".join(SHIPPED) in line
    with pytest.raises(BuildError, match=r"site\.language"):
        load_texts([DEFAULT_LOCALES], "xx")


def test_a_template_naming_a_string_the_table_lacks_names_file_and_key(site: Path) -> None:
    theme = site / "mytheme" / "templates"
    theme.mkdir(parents=True)
    (theme / "404.html").write_text(
        '{% extends "!default/404.html" %}{% block main %}{{ t("not_found.nope") }}{% endblock %}'
    )
    with (site / "listlib.toml").open("a") as handle:
        handle.write('\n[theme]\ndir = "mytheme"\n')
    result = run_listlib("build", cwd=site)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "404.html" in result.stderr and "not_found.nope" in result.stderr


# -- no words of their own in templates and scripts --------------------------------------

TEMPLATES = DEFAULT_LOCALES.parent / "templates"
STATIC = DEFAULT_LOCALES.parent / "static"
MACHINE_TEMPLATES = {"robots.txt", "sitemap.xml", "sitemap-index.xml"}
"""Read by crawlers, not people."""
ALLOWED_TEMPLATE_TEXT = {("feed.atom", "listlib"), ("series.atom", "listlib")}
"""(template, text) a reader never sees as words: the feed's generator is a program's name."""
VISIBLE_ATTRIBUTE_RE = re.compile(r'\b(title|aria-label|aria-description|placeholder|alt|label|summary)="([^"]*)"')
_WORD_RE = re.compile(r"[^\W\d_]{2,}")
_KEY_FUNCTIONS = {"t", "texts_json", "code"}
"""Template functions whose string arguments are keys (or code, which is not translated)."""


def _template_words(name: str, source: str) -> list[str]:
    """Words a template shows that do not come from the table."""
    import jinja2
    from jinja2 import nodes

    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    tree = env.parse(source)
    found: list[str] = []
    # The template's own text, each expression or tag of it as "\x01".
    text = "".join(
        value if kind == "data" else "\x01" if kind in ("variable_begin", "block_begin") else ""
        for _line, kind, value in env.lex(source)
    )
    text = re.sub(r"<!--.*?-->|<!doctype[^>]*>|<\?xml[^>]*\?>", " ", text, flags=re.S | re.I)
    for _attr, value in VISIBLE_ATTRIBUTE_RE.findall(text):
        found.extend(_WORD_RE.findall(value))
    text = re.sub(r"<[^<>]*>", " ", text)  # markup, not words
    text = re.sub(r"&[a-z]+;|&#\d+;", " ", text)
    found.extend(_WORD_RE.findall(text))

    def visit(node: nodes.Node, allowed: bool) -> None:
        if isinstance(node, nodes.Const) and isinstance(node.value, str) and not allowed:
            found.extend(_WORD_RE.findall(node.value))
        for child in node.iter_child_nodes():
            visit(child, allowed or _keeps_words_out(node, child))

    visit(tree, False)
    return [word for word in found if (name, word) not in ALLOWED_TEMPLATE_TEXT]


def _keeps_words_out(parent: object, child: object) -> bool:
    """Whether a constant below ``child`` is not shown as text: a key of the table, a
    template's or a static file's name, an operand of a comparison, the name of a
    field (``set view = "date_path"``), a filter's argument (``counted("message")``)."""
    from jinja2 import nodes

    if isinstance(parent, nodes.Call):
        func = parent.node
        if isinstance(func, nodes.Name) and func.name in _KEY_FUNCTIONS:
            return True
        if isinstance(func, nodes.Getattr) and isinstance(func.node, nodes.Name) and func.node.name == "paths":
            return True
    if isinstance(parent, nodes.Filter) and parent.name in ("counted", "join"):
        return child is not parent.node
    if isinstance(parent, nodes.Compare | nodes.Operand):
        return True
    if isinstance(parent, nodes.Extends | nodes.Include | nodes.Import | nodes.FromImport):
        return True
    return isinstance(parent, nodes.Assign) and isinstance(parent.target, nodes.Name) and parent.target.name == "view"


@pytest.mark.parametrize("name", sorted(p.name for p in TEMPLATES.iterdir() if p.name not in MACHINE_TEMPLATES))
def test_templates_say_every_word_through_the_table(name: str) -> None:
    assert _template_words(name, (TEMPLATES / name).read_text()) == []


def test_the_template_check_finds_words_that_bypass_the_table() -> None:
    source = (
        '<p title="Hello there">Plain words</p>{{ "Removed" if x else y }}'
        '<input aria-label="Search {{ list.name }}">{{ t("page.skip") }}{% set view = "path" %}'
    )
    assert _template_words("x.html", source) == ["Hello", "there", "Search", "Plain", "words", "Removed"]


_JS_TOKEN_RE = re.compile(
    r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|/(?![*/])(?:\\.|\[(?:\\.|[^\]\\\n])*\]|[^/\\\n\[])+/[gimsuy]*"""
    r"""|[A-Za-z_$][\w$]*|\d[\w.]*|\S""",
    re.S,
)
_REGEX_AFTER = set("(,=:[!&|?{};+-*%<>~^") | {"return", "typeof", "case", "in", "of", "void"}
ALLOWED_JS_TEXT = {
    "times.js": {"use strict"},
    "visits.js": {  # CSS selectors and class names
        "use strict",
        ".toc li > a[href]",
        ".message-header time[datetime]",
        "note new-since",
        "article.thread h1",
    },
    "search.js": {
        "use strict",
        "cannot load ",
        "search index format ",
        " is not 4",
        "; the search index changed twice while it was read, try again",
        "DOMContentLoaded",
    },
}
"""Strings of the scripts that are not words for readers: the search index's errors
are for developers and node (the page shows the words of their ``code`` instead)."""


def _js_strings(source: str) -> list[str]:
    """The string literals of a script (comments and regular expressions skipped)."""
    strings: list[str] = []
    previous = ""
    for match in _JS_TOKEN_RE.finditer(source):
        token = match.group(0)
        if token.startswith(("//", "/*")):
            continue
        if token.startswith("/") and len(token) > 1 and previous not in _REGEX_AFTER and previous:
            # A division, not a regular expression: take the slash alone and go on.
            previous = "/"
            continue
        if token[0] in "\"'":
            strings.append(token[1:-1])
        previous = token
    return strings


def _prose(text: str) -> bool:
    return bool(re.search(r"[A-Za-z]{2,}", text)) and bool(
        re.search(r"[A-Za-z]\s+[A-Za-z]|^[A-Z][a-z]+\b|\\u2026|…", text)
    )


@pytest.mark.parametrize("name", sorted(p.name for p in STATIC.glob("*.js")))
def test_scripts_say_every_word_through_the_table(name: str) -> None:
    words = [s for s in _js_strings((STATIC / name).read_text()) if _prose(s)]
    assert sorted(set(words) - ALLOWED_JS_TEXT.get(name, set())) == []


def test_the_script_check_finds_words_that_bypass_the_table() -> None:
    source = 'var a = /"x"/g; status.textContent = "No messages match."; b = c / 2 / d; e = "search-app";'
    assert [s for s in _js_strings(source) if _prose(s)] == ["No messages match."]


# -- a site in German -----------------------------------------------------------------------


def _sample_site(tmp_path: Path, language: str) -> Path:
    site = tmp_path / "sample"
    site.mkdir(parents=True)
    shutil.copy(REPO / "listlib.toml", site)
    shutil.copytree(REPO / "content", site / "content")
    _set_language(site, language)
    return site


def _raws(content: Path) -> list[bytes]:
    return [path.read_bytes() for path in sorted(content.rglob("*.eml"))]


def _config_strings(site: Path) -> list[str]:
    config = load_config(site / "listlib.toml")
    return [config.site.title, *(s for lst in config.lists for s in (lst.name, lst.description, lst.slug))]


def _assert_no_english(output: Path, mail: list[str], language: str = "de") -> int:
    fragments = english_fragments(_table("en"), _table(language))  # type: ignore[arg-type]
    pages = site_pages(output)
    left = {}
    for page in pages:
        found = english_left(page.read_text(), fragments, mail, feed=page.suffix == ".atom")
        if found:
            left[page.relative_to(output).as_posix()] = found[:3]
    assert left == {}
    return len(pages)


OTHER_LANGUAGES = [language for language in SHIPPED if language != "en"]
SAID = {
    "de": ("Diese Liste durchsuchen", "Nachrichten in", '"searching": "Suche läuft …"', "Hinweise zur Suche"),
    "fr": ("Rechercher dans cette liste", "messages dans", '"searching": "Recherche en cours…"', "Comment rechercher"),
}
"""What a list's page and the search page say in each language (the check of its own
words sees nothing wrong in an empty page)."""


@pytest.mark.parametrize("language", OTHER_LANGUAGES)
def test_the_sample_site_in_another_language_keeps_no_english_of_its_own(tmp_path: Path, language: str) -> None:
    site = _sample_site(tmp_path, language)
    build_site(load_config(site / "listlib.toml"), workers=1)
    output = site / "output"
    assert _assert_no_english(output, mail_strings(_raws(site / "content"), _config_strings(site)), language) > 50
    index = (output / "dev" / "index.html").read_text()
    search = (output / "search" / "index.html").read_text()
    button, summary, searching, help_title = SAID[language]
    assert f'<html lang="{language}">' in index and button in index and summary in index
    assert searching in search and help_title in search


def test_the_check_for_english_finds_it(tmp_path: Path) -> None:
    # The check can fail: the same site in English is full of English.
    english = _sample_site(tmp_path, "en")
    build_site(load_config(english / "listlib.toml"), workers=1)
    with pytest.raises(AssertionError):
        _assert_no_english(english / "output", mail_strings(_raws(english / "content"), _config_strings(english)))


@pytest.fixture(scope="module", params=OTHER_LANGUAGES[:1])
def corpus_site(request: pytest.FixtureRequest) -> Iterator[tuple[Path, str]]:
    """The test corpora's oddities (signed, encrypted, HTML-only, nested, huge mail),
    built in the first language but English (each costs a corpus build: the sample
    site's test covers every language)."""
    language = request.param
    if not (CORPORA / "edge").is_dir():
        pytest.skip(f"{CORPORA / 'edge'} not present")
    folder = Path(tempfile.mkdtemp(prefix="listlib-i18n-"))
    site = folder / "site"
    site.mkdir()
    (site / "listlib.toml").write_text(
        f'[site]\ntitle = "Korpora"\nbase_url = "https://x.example/"\nlanguage = "{language}"\n'
        '[lists.edge]\naddresses = ["edge@example.org"]\n'
    )
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        file_sources(store, config.lists, [CORPORA / "edge"], forced_list="edge")
    build_site(config, workers=2)
    yield site, language
    shutil.rmtree(folder, ignore_errors=True)


NOTES = {"de": ("zitierte Zeile", "Diese Nachricht ist signiert"), "fr": ("lignes citées", "Ce message est signé")}


def test_a_corpus_site_in_another_language_keeps_no_english_of_its_own(corpus_site: tuple[Path, str]) -> None:
    site, language = corpus_site
    output = site / "output"
    pages = "".join(p.read_text() for p in site_pages(output) if p.name != "index.html")
    # The corpus shows the site's notes in message bodies: they are in its language too.
    assert all(note in pages for note in NOTES[language])
    mail = mail_strings(_raws(site / "content"), _config_strings(site))
    assert _assert_no_english(output, mail, language) > 20


# -- editing a translation --------------------------------------------------------------------


def _override(site: Path, text: str) -> None:
    folder = site / "mytheme" / "locales"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "en.toml").write_text(text)


def _planned_kinds(site: Path) -> set[str]:
    plan = plan_site(load_config(site / "listlib.toml"))
    return {item["job"].split(":")[0] for item in plan.planned}


def test_editing_a_translation_rebuilds_exactly_the_pages_that_show_it(site: Path) -> None:
    quote = "".join(f"> Line {n} of the plans.\n" for n in range(1, 6))
    add(site, post(1, "Plans"), post(2, "Re: Plans", reply_to=1, refs=(1,), body=f"Ann wrote:\n{quote}\nYes.\n"))
    with (site / "listlib.toml").open("a") as handle:
        handle.write('\n[theme]\ndir = "mytheme"\n')
    (site / "mytheme").mkdir()
    build(site)
    assert build(site).jobs_run == 0
    feed = '[list]\nfeed = "Subscribe (Atom)"\n'
    quoted = '[display.quoted_lines]\none = "{n} line quoted"\nother = "{n} lines quoted"\n'
    _override(site, feed)  # list.html only
    assert _planned_kinds(site) == {"list"}
    report = build(site)
    assert report.written and set(report.written) <= {"dev/index.html", "announce/index.html"}
    assert "Subscribe (Atom)" in (site / "output" / "dev" / "index.html").read_text()
    assert build(site).jobs_run == 0
    _override(site, feed + quoted)
    assert _planned_kinds(site) == {"thread"}  # written by the message display, on thread pages
    build(site)
    _call, path = call_of(site, 1)
    assert "5 lines quoted" in (site / "output" / path.replace(".eml", ".html")).read_text()
    _override(site, feed + quoted + '[months]\n3 = "Mar."\n')
    assert _planned_kinds(site) == {"thread", "month", "date"}  # a month's name
    build(site)
    _override(site, feed + quoted + '[months]\n3 = "Mar."\n[shown]\nno_subject = "(none)"\n')
    assert _planned_kinds(site) == set()  # no message lacks a subject
    build(site)
    _override(site, '[search]\nhelp_title = "Search tips"\n[js.search]\nnone = "Nothing found."\n')
    assert _planned_kinds(site) == {"site", "list", "thread", "month", "date"}  # the search page, and back


def test_constant_words_are_said_when_a_template_is_compiled_and_read_the_same(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "words.html").write_text(
        '{{ t("list.feed") }}|{{ t("count.message", n=2) }}|{{ t("page.title", page=t("search.title"), site=s) }}'
        '|{{ t("count.message", n=k) }}|{{ texts_json("js.search") }}\n'
    )
    (tmp_path / "templates" / "own.html").write_text('{% set t = f %}{{ t("list.feed") }}{{ texts_json("js") }}\n')
    layers = (_Layer("site", tmp_path), _Layer("default", DEFAULT_THEME))
    theme = Theme(layers, language="de")
    source, _filename, _ = theme.env.loader.get_source(theme.env, "words.html")  # type: ignore[union-attr]
    compiled = theme.env.compile(source, "words.html", raw=True)
    assert "context.call(" not in compiled  # the rest is called as a filter: page.title of s, count of k
    assert re.findall(r"\bt_\d+\('([\w.]+)'", compiled) == ["page.title", "count.message"]
    unfolded = Theme(layers, language="de")
    unfolded.env.said = {}  # type: ignore[attr-defined]
    said = theme.render("words.html", s="<Site & co>", k=1)
    assert said == unfolded.render("words.html", s="<Site & co>", k=1)
    assert said.startswith(f"{load_texts([DEFAULT_LOCALES], 'de').text('list.feed')}|")
    assert "&lt;Site &amp; co&gt;" in said and '"plural": "one-other"' in said
    # A template's own t is its own: never replaced by the table's words.
    assert theme.render("own.html", f=lambda key: key.upper()).startswith("LIST.FEED{")
