"""Quotes on thread pages: a quote that merely repeats the parent message folds from two
lines on (its first line kept in the summary), a quote of anything else only from four
(``display.textbody``'s rules), and without a parent nothing changes."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from listlib.display import DisplayOptions, display_message
from listlib.display.textbody import _WHITESPACE, _key, clean_text, plain_text, quote_keys, render_plain

from ..support.helpers import make_message

PARENT = "I rebuilt the array last night.\nThe resync finished at 03:12.\nNo errors in dmesg.\n"
REPLY = """\
> I rebuilt the array last night.
>   The resync   finished at 03:12.

Good to hear. The manual says:

> Writes to a degraded array are slower.
> Plan for it.

So expect that.
"""


def _folds(html: str) -> list[str]:
    return re.findall(r'<details class="([^"]+)"><summary>(.*?)</summary>', html)


def test_a_quote_that_repeats_the_parent_folds_from_two_lines() -> None:
    html, _ = render_plain(clean_text(REPLY), False, parent=quote_keys(PARENT))
    folds = _folds(html)
    assert len(folds) == 1, html
    kind, summary = folds[0]
    assert kind == "quote repeat"
    assert "I rebuilt the array last night." in summary and "2 lines quoted from the parent message" in summary
    # The two lines quoted from elsewhere stay in the text, as any short quote.
    assert '<span class="quote">&gt; Writes to a degraded array are slower.' in html


def test_without_the_parent_short_quotes_stay_in_the_text() -> None:
    html, _ = render_plain(clean_text(REPLY), False)
    assert _folds(html) == [], html


def test_a_quote_of_something_else_folds_only_when_long() -> None:
    other = "\n".join(f"> A line of the manual, number {n}." for n in range(1, 4)) + "\n\nMy answer.\n"
    html, _ = render_plain(clean_text(other), False, parent=quote_keys(PARENT))
    assert _folds(html) == [], html
    longer = "\n".join(f"> A line of the manual, number {n}." for n in range(1, 5)) + "\n\nMy answer.\n"
    html, _ = render_plain(clean_text(longer), False, parent=quote_keys(PARENT))
    assert [kind for kind, _ in _folds(html)] == ["quote"], html


def test_a_messages_quote_keys_reach_its_replies_display() -> None:
    parent = display_message(make_message("Array", PARENT), DisplayOptions(keys=True))
    assert "no errors in dmesg." in parent.quote_keys
    assert not display_message(make_message("Array", PARENT)).quote_keys, "worked out only when asked"
    reply = display_message(make_message("Re: Array", REPLY), DisplayOptions(parent=parent.quote_keys))
    assert 'class="quote repeat"' in reply.body_html
    # The reply's new text (what search and feeds read) is the same either way.
    assert reply.text == display_message(make_message("Re: Array", REPLY)).text


def test_an_attribution_folded_with_a_repeated_quote_stays_in_the_new_text() -> None:
    """The attribution above a quote that folds only because the parent is on the page
    goes into the fold's summary, but the new text (what search indexes, from the
    render pass or from the indexer's own display) is the same with or without the parent."""
    reply = "Thanks.\nOn Mon, 1 Jan 2024, Ann Example wrote:\n" + REPLY
    html, text = render_plain(clean_text(reply), False, parent=quote_keys(PARENT))
    assert '<span class="attribution">On Mon, 1 Jan 2024, Ann Example wrote:</span>' in html
    assert text == plain_text(clean_text(reply), False) == render_plain(clean_text(reply), False)[1]
    assert "Ann Example wrote:" in text


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "> I rebuilt the array last night.",
                "> The resync finished at 03:12.",
                "> No errors in dmesg.",
                "> Something else entirely.",
                ">",
                "",
                "On Tue, Bob <bob@example.org> wrote:",
                "Ann Example",
                "<ann@example.org> wrote:",
                "My answer, see https://example.org/x.",
                "-- ",
                "Bob",
                "diff --git a/x b/x",
            ]
        ),
        max_size=14,
    ),
    st.booleans(),
)
def test_the_new_text_never_depends_on_the_parent(lines: list[str], obfuscate: bool) -> None:
    body = clean_text("\n".join(lines) + "\n")
    assert render_plain(body, obfuscate, parent=quote_keys(PARENT))[1] == plain_text(body, obfuscate)


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(">  \t\n\r\x0b\x1c\x85\u2028\u00a0\u3000aBxΣßİﬁǅ"), max_size=40))
def test_quote_keys_are_the_keys_of_the_lines_one_by_one(text: str) -> None:
    assert quote_keys(text) == frozenset(key for key in map(_key, text.split("\n")) if key)


def test_the_whitespace_stripped_is_what_regex_and_str_call_whitespace() -> None:
    everything = [chr(code) for code in range(0x110000)]
    spaces = {char for char in everything if char.isspace()}
    space = re.compile(r"\s")
    assert set(_WHITESPACE) == spaces == {char for char in everything if space.match(char)}
